"""Which files ``count`` reads, in walk order: paths, folders walked recursively, globs, ``-`` for
stdin, and fsspec URLs (urls.py). ``.gitignore`` files are honoured as git does (ignores.py),
hidden files are left out unless asked for, and binaries (a NUL byte in the first block), files
over ``--max-file-size``, unreadable files, broken links and what is not a regular file are
skipped and reported with their reason.

Symbolic links are handled as ripgrep does: a PATH named outright is followed, links met while
walking are not (each is reported as skipped) unless ``--follow``. Each real file is counted once
(told apart by ``st_dev`` and ``st_ino``, never by the name shown), whatever names reach it: a
second name of a file already counted is skipped as "the same file as" the first.

The walk streams: it holds the folders still to be walked and, to count each file once, the
identities of the files that another name may reach (hard links, files under --follow, files
named outright or matched by a glob when there are several PATHs); files met once are forgotten.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedcli.corpus.ignores import Ignores, repository_rules, spec_of
from embedcli.corpus.listing import BLOCK_BYTES as BLOCK_BYTES
from embedcli.corpus.listing import FIRST_BLOCK as FIRST_BLOCK
from embedcli.corpus.listing import GLOB_CHARS as GLOB_CHARS
from embedcli.corpus.listing import Found as Found
from embedcli.corpus.listing import Selection as Selection
from embedcli.corpus.listing import Skipped as Skipped
from embedcli.corpus.urls import walk_url
from embedcli.errors import SPECIAL_KINDS, InputTextError, os_reason

EVERY = Selection()  # the defaults: .gitignore honoured, no dotfiles, no size limit
LINK = "symlink, not followed (name it, or --follow)"
FOLDER_LINK = "symlink to a folder, not followed (name it, or --follow)"


def _display(path: Path | str, here: str | None = None) -> str:
    """A path as reports show it: relative to the working folder ``here`` when inside it; a
    backslash doubled and a byte that is not UTF-8 escaped (\\xff), so that two names never
    look the same."""
    text = os.fspath(path)
    if os.path.isabs(text):
        here = os.path.join(here or os.getcwd(), "")
        if text.startswith(here):
            text = text[len(here) :]
    text = text.replace(os.sep, "/")
    text = text[2:] if text.startswith("./") else text
    text = text.replace("\\", "\\\\")
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class _Met:
    """The real files and folders met so far, by (st_dev, st_ino), so that each is counted once
    whatever names reach it, and the name each was first counted under."""

    def __init__(self, follow: bool, explicit: set[tuple[int, int]]) -> None:
        self.files: dict[tuple[int, int], str] = {}
        self.folders: dict[tuple[int, int], str] = {}  # walked whole (not through a glob)
        self.explicit = explicit  # files named outright: another PATH may reach them
        self.everything = follow  # under --follow any file may be reached twice
        self.said: set[tuple[tuple[int, int], str]] = set()  # second names already reported

    def file(self, info: os.stat_result, shown: str, remember: bool) -> str | None:
        """The name this file was counted under already, else None (and it is remembered when
        another name may reach it)."""
        key = (info.st_dev, info.st_ino)
        first = self.files.get(key)
        if first is None and (
            remember or self.everything or info.st_nlink > 1 or key in self.explicit
        ):
            self.files[key] = shown
        return first

    def first_time_said(self, info: os.stat_result, shown: str) -> bool:
        """Whether this second name of a file is reported for the first time (a name met by the
        walk and named outright too is one skipped file, not two)."""
        said = ((info.st_dev, info.st_ino), shown)
        if said in self.said:
            return False
        self.said.add(said)
        return True


@dataclass
class Discovery:
    """What selection found: files to count, and files skipped with their reasons."""

    found: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    stdin: bool = False


def discover(paths: Sequence[str], selection: Selection = EVERY) -> Discovery:
    """Every file the PATHs name, in walk order, with what was skipped and why (held whole:
    :func:`walk` streams the same)."""
    out = Discovery(stdin="-" in paths)
    for item in walk(paths, selection):
        (out.found if isinstance(item, Found) else out.skipped).append(item)
    return out


def walk(paths: Sequence[str], selection: Selection = EVERY) -> Iterator[Found | Skipped]:
    """Every file the PATHs name (``-`` aside: stdin is the caller's), in walk order: each
    PATH in turn; in a folder, its files by name (bytes), then its folders."""
    explicit = _check(paths)
    extra = spec_of(selection.ignore) if selection.ignore else None
    include = spec_of(selection.include) if selection.include else None
    met = _Met(selection.follow, explicit)
    several = sum(p != "-" for p in paths) > 1
    here = os.getcwd()
    for given in paths:
        if given == "-":
            continue
        if "://" in given:
            yield from walk_url(given, selection, include, extra)
            continue
        path = Path(given)
        try:
            is_dir, exists = path.is_dir(), path.exists() or path.is_symlink()
        except OSError as exc:  # inside a folder that may not be searched, or a name too long
            if not GLOB_CHARS & set(given):
                yield Skipped(_display(given, here), f"unreadable: {exc.strerror or exc}")
                continue
            is_dir = exists = False  # a pattern: each file it matches is judged on its own
        if is_dir:
            yield from _walk(path, selection, extra, include, None, met, False)
        elif exists:
            item = _consider(given, _display(given, here), selection, met, True)
            if item is not None:
                yield item
        elif not (yield from _walk_glob(given, selection, extra, include, met, several)):
            raise InputTextError(f"no file matches {given}")


def _check(paths: Sequence[str]) -> set[tuple[int, int]]:
    """Refuse a PATH that names nothing before any file is read; the identities of the files
    named outright (another PATH may reach them too)."""
    explicit = set()
    for given in paths:
        if not given:
            raise InputTextError("an empty PATH names nothing (. is this folder)")
        if given == "-" or "://" in given:
            continue
        try:
            info = os.stat(given)
        except OSError as exc:
            if not (GLOB_CHARS & set(given) or os.path.lexists(given)):
                # lexists is False for a file in a folder that may not be searched, too
                raise InputTextError(f"cannot read {given}: {os_reason(exc)}") from None
            continue
        if not stat.S_ISDIR(info.st_mode):
            explicit.add((info.st_dev, info.st_ino))
        if os.path.islink(given):  # a walk that meets it leaves it to this PATH
            link = os.lstat(given)
            explicit.add((link.st_dev, link.st_ino))
    return explicit


def _walk_glob(
    pattern: str, selection: Selection, extra: Any, include: Any, met: _Met, remember: bool
) -> Generator[Found | Skipped, None, int]:
    """A glob: the folder before its first wildcard is walked (ignore rules apply there), and
    the files the pattern matches are kept; returns how many matched."""
    parts = Path(pattern).parts
    first = next((i for i, part in enumerate(parts) if GLOB_CHARS & set(part)), None)
    if first is None:
        raise InputTextError(f"cannot read {pattern}: no such file or folder")
    root = Path(*parts[:first]) if first else Path(".")
    matcher = spec_of(["/" + "/".join(parts[first:])])
    if not root.is_dir():
        return 0
    return (yield from _walk(root, selection, extra, include, matcher, met, remember))


def _walk(
    root: Path,
    selection: Selection,
    extra: Any,
    include: Any,
    matcher: Any,
    met: _Met,
    remember: bool,
) -> Generator[Found | Skipped, None, int]:
    """Walk a folder as git would list it: .gitignore rules (its own, its repository's above
    it, .git/info/exclude), hidden entries, no .git. Paths are absolute inside the walk. Folders
    reached through a link (--follow) are walked last, so that a real path is the name kept.
    Returns how many files matched ``matcher`` (a glob's), counted or not (a folder another
    PATH walked already counts as one)."""
    root = Path(os.path.abspath(root))
    here = os.getcwd()
    if selection.no_ignore:
        rules = Ignores((), None if extra is None else (root, extra))
    else:
        above = repository_rules(root)
        if above.ignored(os.fspath(root), True):  # named outright (a venv in a repo): walked,
            above = Ignores()  # as a file named outright is counted; its own rules still apply
        rules = above.below(root, extra)
    base = os.path.join(os.fspath(root), "")  # paths below root, made relative by cutting this
    mine: dict[tuple[int, int], str] = {}  # this walk's folders
    stack: list[tuple[Path, Ignores]] = [(root, rules)]
    linked: list[tuple[Path, Ignores]] = []
    matched = 0
    while stack or linked:
        folder, rules = stack.pop() if stack else linked.pop(0)
        shown = _display(folder, here)
        try:
            info = folder.stat()
            entries = sorted(os.scandir(folder), key=lambda e: os.fsencode(e.name))
        except OSError as exc:
            yield Skipped(shown, f"unreadable folder: {exc.strerror}")
            continue
        key = (info.st_dev, info.st_ino)
        first = met.folders.get(key) or mine.get(key)
        if first is not None:
            if first != shown:
                yield Skipped(shown, f"the same folder as {first}")
            matched += 1  # (a glob's matches there, if any, were counted under that name)
            continue
        (met.folders if matcher is None else mine)[key] = shown
        folders: list[tuple[Path, Ignores]] = []
        for entry in entries:
            if entry.name == ".git" or (entry.name.startswith(".") and not selection.hidden):
                continue
            try:
                link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=selection.follow)
            except OSError:
                link, is_dir = False, False
            if rules.ignored(entry.path, is_dir):
                continue
            if is_dir:
                path = Path(entry.path)
                below = rules if selection.no_ignore else rules.below(path)
                if not link:
                    folders.append((path, below))
                elif _loops(entry.path):
                    yield Skipped(_display(path, here), "symlink loop")
                else:
                    linked.append((path, below))
                continue
            relative = entry.path[len(base) :].replace(os.sep, "/")
            if link and not selection.follow and matcher is None and _points_to_folder(entry.path):
                if not _named(entry, met):
                    yield Skipped(_display(entry.path, here), FOLDER_LINK)
                continue
            if matcher is not None and not matcher.check_file(relative).include:
                continue
            if include is not None and not include.check_file(relative).include:
                continue
            matched += 1
            shown = _display(entry.path, here)
            if link and not selection.follow:
                if _named(entry, met):
                    continue
                item: Found | Skipped | None = _link(entry.path, shown)
            else:
                item = _consider(entry.path, shown, selection, met, remember, entry=entry)
            if item is not None:
                yield item
        stack.extend(reversed(folders))
    return matched


def _named(entry: os.DirEntry, met: _Met) -> bool:
    """Whether a link met while walking is a PATH named outright (which counts it)."""
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) in met.explicit


def _loops(path: str) -> bool:
    """Whether a link to a folder points at a folder it is inside (walking it never ends)."""
    target = os.path.realpath(path)
    parent = os.path.realpath(os.path.dirname(path))
    return parent == target or parent.startswith(os.path.join(target, ""))


def _points_to_folder(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _link(path: str, shown: str) -> Skipped:
    """A link met while walking (not followed), skipped with what it is."""
    try:
        os.stat(path)
    except OSError as exc:
        return Skipped(shown, "symlink loop" if exc.errno == errno.ELOOP else "broken link")
    return Skipped(shown, LINK)


def _consider(
    path: str,
    shown: str,
    selection: Selection,
    met: _Met,
    remember: bool,
    *,
    entry: os.DirEntry | None = None,
) -> Found | Skipped | None:
    """Keep a file, or skip it with its reason: unreadable, binary, too large, not a file, or
    a second name of a file already counted (None: the same name again)."""
    try:
        info = entry.stat() if entry is not None else os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Skipped(shown, "symlink loop")
        gone = exc.errno in (errno.ENOENT, errno.ENOTDIR)  # else the target is there: EACCES
        why = "broken link" if gone and os.path.islink(path) else f"unreadable: {exc.strerror}"
        return Skipped(shown, why)
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in SPECIAL_KINDS if test(info.st_mode)), "")
        return Skipped(shown, f"not a regular file ({kind})" if kind else "not a regular file")
    first = met.file(info, shown, remember)
    if first is not None:
        if first == shown or not met.first_time_said(info, shown):
            return None
        return Skipped(shown, f"the same file as {first}")
    if selection.max_file_size is not None and info.st_size > selection.max_file_size:
        return Skipped(shown, f"{info.st_size:,} bytes, over --max-file-size")
    if info.st_size >= 2 * BLOCK_BYTES:  # a file that may be cut: its kind is told here
        try:
            with open(path, "rb") as handle:
                head = handle.read(FIRST_BLOCK)
        except OSError as exc:
            return Skipped(shown, f"unreadable: {exc.strerror}")
        if b"\0" in head:
            return Skipped(shown, "binary")
    # smaller files are told binary by the worker that reads them: one open a file, not two
    return Found(shown, str(path), info.st_size, (info.st_ino, info.st_mtime_ns))
