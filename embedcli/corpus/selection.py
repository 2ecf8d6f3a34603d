"""Which files ``count`` reads: paths, folders walked recursively, globs, ``-`` for stdin, and
fsspec URLs. ``.gitignore`` files are honoured as git does (nested ones too, through
``pathspec``), hidden files are left out unless asked for, and binaries (a NUL byte in the first
block), files over ``--max-file-size``, unreadable files and symlink loops are skipped and
reported with their reason.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedcli.errors import InputTextError, UsageError

FIRST_BLOCK = 8192  # bytes read to tell a binary file (a NUL among them), as git does
BLOCK_BYTES = 8 << 20  # large files are cut into blocks of about this size


GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Selection:
    """Which files ``count`` reads."""

    no_ignore: bool = False  # --no-ignore: .gitignore files are not read
    ignore: tuple[str, ...] = ()  # --ignore PATTERN, gitignore syntax
    include: tuple[str, ...] = ()  # --include PATTERN: only files matching one of these
    hidden: bool = False  # --hidden: dotfiles and dot-folders too (never .git)
    max_file_size: int | None = None  # --max-file-size: larger files are skipped


@dataclass(frozen=True)
class Found:
    """A file to count."""

    path: str  # as reports show it
    location: str  # what to open: a path, or an fsspec URL
    size: int


@dataclass(frozen=True)
class Skipped:
    """A file that was not counted, and why."""

    path: str
    reason: str


class _Ignores:
    """The .gitignore rules in force in one folder, each ancestor's, deepest last; and the
    --ignore patterns, which have the last word (a .gitignore negation cannot undo them)."""

    def __init__(
        self, rules: tuple[tuple[Path, Any], ...] = (), extra: tuple[Path, Any] | None = None
    ) -> None:
        self.rules = rules
        self.extra = extra
        self.prefixes = [(os.path.join(base, ""), spec) for base, spec in rules]
        if extra is not None:
            self.prefixes.append((os.path.join(extra[0], ""), extra[1]))

    def below(self, folder: Path, extra: Any = None) -> _Ignores:
        """The rules for a sub-folder: these, then its own .gitignore (if any)."""
        rules = self.rules
        gitignore = folder / ".gitignore"
        try:
            present = gitignore.is_file()
        except OSError:  # an unreadable folder: the walk reports it
            present = False
        if present:
            spec = _spec(_read_lines(gitignore), str(gitignore))
            if spec is not None:
                rules = (*rules, (folder, spec))
        return _Ignores(rules, (folder, extra) if extra is not None else self.extra)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Git's answer: the last rule that matches decides (a negation re-includes)."""
        decision = False
        for prefix, spec in self.prefixes:
            if not path.startswith(prefix):
                continue
            relative = path[len(prefix) :].replace(os.sep, "/")
            result = spec.check_file(relative + ("/" if is_dir else ""))
            if result.include is None:
                continue
            if is_dir and spec.patterns[result.index].pattern.rstrip().endswith("/**"):
                continue  # in git, dir/** matches what is inside dir, not dir itself
            decision = result.include
        return decision


def _read_lines(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20).splitlines()
    except OSError:
        return []


def _spec(lines: Sequence[str], source: str | None = None) -> Any:
    """Patterns in gitignore syntax. In a .gitignore (``source``), a line git would not
    understand is left out, as git leaves it out; given as --ignore/--include, it is an error."""
    from pathspec import GitIgnoreSpec

    lines = list(lines)
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception as exc:  # pathspec's errors for a pattern it cannot parse
        if source is None:
            raise UsageError(f"cannot read the pattern {lines[:3]}: {exc}") from None
    usable = []
    for line in lines:
        try:
            GitIgnoreSpec.from_lines([line])
        except Exception:
            continue
        usable.append(line)
    return GitIgnoreSpec.from_lines(usable)


def _display(path: Path | str) -> str:
    """A path as reports show it: relative to the working folder when inside it."""
    text = os.fspath(path)
    if os.path.isabs(text):
        here = os.path.join(os.getcwd(), "")
        if text.startswith(here):
            text = text[len(here) :]
    text = text.replace(os.sep, "/")
    text = text[2:] if text.startswith("./") else text
    # a name that is not UTF-8 (its bytes kept as surrogates) is shown escaped: \xff
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@dataclass
class Discovery:
    """What selection found: files to count, and files skipped with their reasons."""

    found: list[Found] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    stdin: bool = False


def discover(paths: Sequence[str], selection: Selection = Selection()) -> Discovery:
    """Every file the PATHs name, in order, with what was skipped and why."""
    out = Discovery()
    extra = _spec(selection.ignore) if selection.ignore else None
    include = _spec(selection.include) if selection.include else None
    seen: set[str] = set()
    for given in paths:
        if given == "-":
            out.stdin = True
            continue
        if not given:
            raise InputTextError("an empty PATH names nothing (. is this folder)")
        if "://" in given:
            _discover_url(given, selection, out, include, extra)
            continue
        path = Path(given)
        try:
            is_dir, exists = path.is_dir(), path.exists() or path.is_symlink()
        except OSError as exc:  # inside an unreadable folder, or a name too long
            out.skipped.append(Skipped(_display(given), f"unreadable: {exc.strerror or exc}"))
            continue
        if is_dir:
            _walk(path, selection, out, extra, include, None, seen)
        elif exists:
            _consider(path, selection, out, seen)
        elif GLOB_CHARS & set(given):
            _glob(given, selection, out, extra, include, seen)
        else:
            raise InputTextError(f"cannot read {given}: no such file or folder")
    return out


def _glob(pattern: str, selection: Selection, out: Discovery, extra, include, seen) -> None:
    """A glob: the folder before its first wildcard is walked (ignore rules apply there), and
    the files the pattern matches are kept."""
    parts = Path(pattern).parts
    first = next(i for i, part in enumerate(parts) if GLOB_CHARS & set(part))
    root = Path(*parts[:first]) if first else Path(".")
    rest = "/".join(parts[first:])
    matcher = _spec(["/" + rest])
    before = len(out.found)
    if root.is_dir():
        _walk(root, selection, out, extra, include, matcher, seen)
    if len(out.found) == before:
        raise InputTextError(f"no file matches {pattern}")


def _repository_rules(root: Path) -> _Ignores:
    """The rules git applies inside ``root`` from above it: the .gitignore files of the
    folders from the repository's top (the folder holding .git) down to ``root``'s parent,
    and .git/info/exclude."""
    top = next((p for p in (root, *root.parents) if (p / ".git").exists()), None)
    if top is None:
        return _Ignores()
    rules: tuple[tuple[Path, Any], ...] = ()
    exclude = top / ".git" / "info" / "exclude"
    if exclude.is_file():
        spec = _spec(_read_lines(exclude), str(exclude))
        rules = ((top, spec),)
    ignores = _Ignores(rules)
    for folder in reversed(root.parents):
        if folder == top or top in folder.parents:
            ignores = ignores.below(folder)
    return ignores


def _walk(
    root: Path, selection: Selection, out: Discovery, extra, include, matcher, seen: set[str]
) -> None:
    """Walk a folder as git would list it: .gitignore rules (its own, its repository's above
    it, .git/info/exclude), hidden entries, no .git. Paths are absolute inside the walk."""
    root = Path(os.path.abspath(root))
    if selection.no_ignore:
        rules = _Ignores((), None if extra is None else (root, extra))
    else:
        rules = _repository_rules(root).below(root, extra)
    visited: set[tuple[int, int]] = set()
    base = os.path.join(os.fspath(root), "")  # paths below root, made relative by cutting this
    stack: list[tuple[Path, _Ignores]] = [(root, rules)]
    while stack:
        folder, rules = stack.pop()
        try:
            info = folder.stat()
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            out.skipped.append(Skipped(_display(folder), f"unreadable folder: {exc.strerror}"))
            continue
        key = (info.st_dev, info.st_ino)
        if key in visited:
            out.skipped.append(Skipped(_display(folder), "symlink loop"))
            continue
        visited.add(key)
        for entry in entries:
            if entry.name == ".git" or (entry.name.startswith(".") and not selection.hidden):
                continue
            try:
                is_dir = entry.is_dir()  # follows links: a link to a folder is walked
            except OSError:
                is_dir = False
            if rules.ignored(entry.path, is_dir):
                continue
            if is_dir:
                path = Path(entry.path)
                below = rules if selection.no_ignore else rules.below(path)
                stack.append((path, below))
                continue
            relative = entry.path[len(base) :].replace(os.sep, "/")
            if matcher is not None and not matcher.check_file(relative).include:
                continue
            if include is not None and not include.check_file(relative).include:
                continue
            _consider(entry.path, selection, out, seen, entry=entry)


def _consider(
    path: str | Path,
    selection: Selection,
    out: Discovery,
    seen: set[str],
    *,
    entry: os.DirEntry | None = None,
) -> None:
    """Keep a file, or skip it with its reason: unreadable, binary, too large, not a file."""
    shown = _display(path)
    if shown in seen:
        return
    seen.add(shown)
    try:
        info = entry.stat() if entry is not None else os.stat(path)
    except OSError as exc:
        reason = "broken link" if os.path.islink(path) else f"unreadable: {exc.strerror}"
        if getattr(exc, "errno", None) == 40:  # ELOOP
            reason = "symlink loop"
        out.skipped.append(Skipped(shown, reason))
        return
    import stat

    if not stat.S_ISREG(info.st_mode):
        out.skipped.append(Skipped(shown, "not a regular file"))
        return
    if selection.max_file_size is not None and info.st_size > selection.max_file_size:
        out.skipped.append(Skipped(shown, f"{info.st_size:,} bytes, over --max-file-size"))
        return
    if info.st_size >= 2 * BLOCK_BYTES:  # a file that may be cut: its kind is told here
        try:
            with open(path, "rb") as handle:
                head = handle.read(FIRST_BLOCK)
        except OSError as exc:
            out.skipped.append(Skipped(shown, f"unreadable: {exc.strerror}"))
            return
        if b"\0" in head:
            out.skipped.append(Skipped(shown, "binary"))
            return
    # smaller files are told binary by the worker that reads them: one open a file, not two
    out.found.append(Found(shown, str(path), info.st_size))


def _discover_url(url: str, selection: Selection, out: Discovery, include, extra=None) -> None:
    """Files under an fsspec URL (s3://, gs://, file://, ...): listed by its file system, with
    the same rules for dot-names, .git and --ignore/--include (no .gitignore files are read
    there)."""
    before = len(out.found) + len(out.skipped)
    fs, root = _filesystem(url)
    protocol = url.split("://", 1)[0]
    try:
        if GLOB_CHARS & set(root):
            names = fs.glob(root)
        elif fs.isdir(root):
            names = fs.find(root)
        else:
            names = [root]
        for name in sorted(names):
            info = fs.info(name)
            if info.get("type") == "directory":
                continue
            location = name if "://" in name else f"{protocol}://{name}"
            relative = name[len(root) :].lstrip("/") if name.startswith(root) else name
            parts = relative.split("/")
            if ".git" in parts or (not selection.hidden and any(p.startswith(".") for p in parts)):
                continue
            if extra is not None and extra.check_file(relative).include:
                continue
            if include is not None and not include.check_file(relative).include:
                continue
            size = int(info.get("size") or 0)
            if selection.max_file_size is not None and size > selection.max_file_size:
                out.skipped.append(Skipped(location, f"{size:,} bytes, over --max-file-size"))
                continue
            with fs.open(name, "rb") as handle:
                head = handle.read(FIRST_BLOCK)
            if b"\0" in head:
                out.skipped.append(Skipped(location, "binary"))
                continue
            out.found.append(Found(location, location, size))
    except FileNotFoundError:
        raise InputTextError(f"cannot read {url}: no such file or folder") from None
    except Exception as exc:  # each file system raises its own (connection, parse errors)
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise InputTextError(f"cannot read {url}: {first}") from None
    if len(out.found) + len(out.skipped) == before and GLOB_CHARS & set(root):
        raise InputTextError(f"no file matches {url}")


def _filesystem(url: str) -> tuple[Any, str]:
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise UsageError(
            f"{url} is a URL: reading it needs fsspec, which the dask extra brings "
            "(pip install 'embedcli[dask]'), or pip install fsspec"
        ) from None
    try:
        return url_to_fs(url)
    except ImportError as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise UsageError(f"cannot open {url}: {first}") from None
    except Exception as exc:  # a bad URL, or a file system that cannot start
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise InputTextError(f"cannot open {url}: {first}") from None
