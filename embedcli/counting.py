"""`embedcli count`: exact token counts of files, folders and corpora.

Selection (which files): paths, folders walked recursively, globs, ``-`` for stdin, and fsspec URLs;
``.gitignore`` files are honoured as git does (nested ones too, through ``pathspec``), hidden files
are left out unless asked for, binaries (a NUL byte in the first block) and files over
``--max-file-size`` are skipped and reported, and so are unreadable files and symlink loops.

Counting (how many tokens): a file's count is ``len(encode_ordinary(text))`` for the whole text
in one pass (special-token text counted as text); a large file is cut into blocks at the points
``tokenize --count`` proves safe (a space after a non-whitespace character), which changes nothing.
Work is a list of :class:`Piece`\\ s (a small file, or a block of a large one) grouped into tasks,
largest first; :func:`count_task` is the one function every engine runs, in this process, in a
pool of processes (one per core), or on Dask workers: only paths, offsets and counts travel.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedcli.errors import InputTextError, UsageError

FIRST_BLOCK = 8192  # bytes read to tell a binary file (a NUL among them), as git does
BLOCK_BYTES = 8 << 20  # large files are cut into blocks of about this size
TASK_BYTES = 4 << 20  # small files are grouped into tasks of about this size
TASK_FILES = 512  # ... and at most this many files
MAX_PIECE_BYTES = 32 << 20  # bytes encoded at once: tokenizing takes ~50x that in memory
MAX_STDIN_BYTES = 64 << 20  # standard input is counted whole, in this process
ERRORS = ("skip", "replace", "strict")
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


@dataclass(frozen=True)
class Piece:
    """Bytes ``start`` to ``end`` of file number ``file`` (a whole file, or one block)."""

    file: int
    location: str
    start: int
    end: int


@dataclass(frozen=True)
class PieceResult:
    """Tokens of one piece under each encoding, or why it could not be counted."""

    file: int
    counts: tuple[int, ...] | None
    error: str | None = None


# ---------------------------------------------------------------- selection


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


# ---------------------------------------------------------------- cutting into pieces


def _open(location: str) -> Any:
    if "://" in location:
        import fsspec

        return fsspec.open(location, "rb").open()
    import stat

    # Never blocks (a FIFO swapped in after listing), and reads regular files only.
    fd = os.open(location, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(0, "not a regular file any more")
    return os.fdopen(fd, "rb")


def find_cut(handle: Any, target: int, end: int) -> int | None:
    """The first offset at or after ``target`` (and before ``end``) where a text may be cut
    without changing its tokens: a space after a character that is not whitespace."""
    window = 1 << 16
    position = max(0, target - 8)
    while position < end:
        handle.seek(position)
        data = handle.read(min(window, end - position))
        if not data:
            return None
        start = 0
        while True:
            at = data.find(b" ", start)
            if at < 0:
                break
            absolute = position + at
            if absolute >= target and absolute > 0 and _follows_text(handle, absolute):
                return absolute
            start = at + 1
        position += max(1, len(data) - 8)  # keep a few bytes to see a split character
    return None


def _follows_text(handle: Any, absolute: int) -> bool:
    """Whether the character before byte ``absolute`` is not whitespace (decoded, as Python
    sees whitespace: U+0085, U+2028 and U+3000 are whitespace too)."""
    begin = max(0, absolute - 4)
    handle.seek(begin)
    before = handle.read(absolute - begin)
    lead = len(before) - 1
    while lead > 0 and before[lead] & 0xC0 == 0x80:  # back over continuation bytes
        lead -= 1
    try:
        text = before[lead:].decode("utf-8")
    except UnicodeDecodeError:
        return True  # not UTF-8 there: decoded with --errors replace, it is U+FFFD, not space
    return bool(text) and not text[-1].isspace()


def pieces_of(
    files: Sequence[Found], block_bytes: int = BLOCK_BYTES, cuttable: bool = True
) -> list[Piece]:
    """Each file as one piece, or (large, with encodings that allow it) as blocks."""
    pieces = []
    for number, found in enumerate(files):
        if not cuttable or found.size < 2 * block_bytes:
            pieces.append(Piece(number, found.location, 0, found.size))
            continue
        with _open(found.location) as handle:
            start = 0
            while start < found.size:
                cut = find_cut(handle, start + block_bytes, found.size)
                end = found.size if cut is None or found.size - cut < block_bytes // 2 else cut
                pieces.append(Piece(number, found.location, start, end))
                start = end
    return pieces


def tasks_of(pieces: Sequence[Piece]) -> list[tuple[Piece, ...]]:
    """Pieces grouped into tasks of about TASK_BYTES, largest first (one big file does not
    finish last)."""
    ordered = sorted(pieces, key=lambda p: p.end - p.start, reverse=True)
    tasks: list[tuple[Piece, ...]] = []
    current: list[Piece] = []
    held = 0
    for piece in ordered:
        size = piece.end - piece.start
        if size >= TASK_BYTES:
            tasks.append((piece,))
            continue
        current.append(piece)
        held += size
        if held >= TASK_BYTES or len(current) >= TASK_FILES:
            tasks.append(tuple(current))
            current, held = [], 0
    if current:
        tasks.append(tuple(current))
    return tasks


# ---------------------------------------------------------------- counting


_ENCODINGS: dict[tuple[str, ...], list[Any]] = {}


def _encodings(names: tuple[str, ...]) -> list[Any]:
    if names not in _ENCODINGS:
        from embedcli.encodings import get_encoding

        _ENCODINGS[names] = [get_encoding(name) for name in names]
    return _ENCODINGS[names]


def count_text(text: str, encodings: Sequence[Any]) -> tuple[int, ...]:
    """Tokens of ``text`` under each encoding, special-token text counted as text."""
    return tuple(len(enc.encode_ordinary(text)) for enc in encodings)


def count_task(
    task: Sequence[Piece], encoding_names: tuple[str, ...], errors: str = "skip"
) -> list[PieceResult]:
    """Count every piece of a task: the one function each engine runs, wherever it runs."""
    encodings = _encodings(tuple(encoding_names))
    return [_count_piece(piece, encodings, errors) for piece in task]


def _count_piece(piece: Piece, encodings: Sequence[Any], errors: str) -> PieceResult:
    if piece.end - piece.start > MAX_PIECE_BYTES:  # encoding it would take ~50x in memory
        return PieceResult(
            piece.file,
            None,
            f"{piece.end - piece.start:,} bytes with no place to cut (a run with no space, or a "
            f"tokenizer that must see a file whole): over the {MAX_PIECE_BYTES >> 20} MiB "
            "counted at once",
        )
    try:
        with _open(piece.location) as handle:
            handle.seek(piece.start)
            data = handle.read(piece.end - piece.start)
    except OSError as exc:
        return PieceResult(piece.file, None, f"unreadable: {exc.strerror or exc}")
    if len(data) != piece.end - piece.start:
        return PieceResult(piece.file, None, "changed while it was read (shorter than listed)")
    if piece.start == 0 and b"\0" in data[:FIRST_BLOCK]:
        return PieceResult(piece.file, None, "binary")
    try:
        text = data.decode("utf-8", errors="replace" if errors == "replace" else "strict")
    except UnicodeDecodeError as exc:
        where = piece.start + exc.start
        return PieceResult(
            piece.file, None, f"not UTF-8 (byte 0x{data[exc.start]:02X} at offset {where:,})"
        )
    return PieceResult(piece.file, count_text(text, encodings))


# ---------------------------------------------------------------- engines


def local_results(
    tasks: Sequence[tuple[Piece, ...]],
    encoding_names: tuple[str, ...],
    errors: str,
    workers: int | None = None,
) -> Iterator[list[PieceResult]]:
    """Results of each task as it finishes: in this process for small jobs, else in a pool of
    processes, one per core."""
    workers = workers or os.cpu_count() or 1
    total = sum(p.end - p.start for task in tasks for p in task)
    if workers == 1 or len(tasks) == 1 or total < TASK_BYTES:
        for task in tasks:
            yield count_task(task, encoding_names, errors)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    _encodings(encoding_names)  # loaded once here: forked workers inherit them
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    size = min(workers, len(tasks), 4 * (os.cpu_count() or 1))
    pool = ProcessPoolExecutor(size, mp_context=context, initializer=_worker_signals)
    try:
        futures = [pool.submit(count_task, t, encoding_names, errors) for t in tasks]
        for future in as_completed(futures):
            yield future.result()
    except BrokenProcessPool:
        raise InputTextError(
            "a counting process died before its files were counted (killed, or out of "
            "memory); run again, with fewer --workers"
        ) from None
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()  # Ctrl-C, SIGTERM, a closed pipe: stop them now, quietly
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _worker_signals() -> None:
    """Workers leave signals to the command: SIGTERM ends them silently (the pool's own
    terminate), Ctrl-C reaches the command alone, which stops them."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# ---------------------------------------------------------------- gathering


@dataclass
class FileCount:
    """One file's tokens under each encoding (or why it was skipped)."""

    path: str
    bytes: int
    tokens: dict[str, int]


@dataclass
class CountReport:
    """What ``count`` shows: files (as they finished), what was skipped, and the totals."""

    encodings: list[str]
    files: list[FileCount] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def sorted_files(self, sort: str = "tokens") -> list[FileCount]:
        """Files by tokens of the first encoding (most first; ties by path), by bytes, or by
        path."""
        first = self.encodings[0]
        if sort == "path":
            return sorted(self.files, key=lambda f: f.path)
        if sort == "bytes":
            return sorted(self.files, key=lambda f: (-f.bytes, f.path))
        return sorted(self.files, key=lambda f: (-f.tokens[first], f.path))

    @property
    def totals(self) -> dict[str, Any]:
        """Files counted and skipped, bytes, and tokens per encoding."""
        return {
            "files": len(self.files),
            "skipped": len(self.skipped),
            "bytes": sum(f.bytes for f in self.files),
            "tokens": {name: sum(f.tokens[name] for f in self.files) for name in self.encodings},
        }


def gather(
    found: Sequence[Found],
    pieces: Sequence[Piece],
    results: Iterable[list[PieceResult]],
    encodings: Sequence[str],
) -> Iterator[FileCount | Skipped]:
    """Each file's count (or its skip) as soon as all its pieces are in."""
    waiting: dict[int, int] = {}
    for piece in pieces:
        waiting[piece.file] = waiting.get(piece.file, 0) + 1
    sums: dict[int, list[int]] = {}
    failed: dict[int, str] = {}
    for batch in results:
        for result in batch:
            if result.error is not None:
                failed.setdefault(result.file, result.error)
            else:
                into = sums.setdefault(result.file, [0] * len(encodings))
                for i, n in enumerate(result.counts or ()):
                    into[i] += n
            waiting[result.file] -= 1
            if waiting[result.file] == 0:
                item = found[result.file]
                if result.file in failed:
                    yield Skipped(item.path, failed[result.file])
                else:
                    counts = sums.get(result.file, [0] * len(encodings))
                    yield FileCount(item.path, item.size, dict(zip(encodings, counts, strict=True)))
