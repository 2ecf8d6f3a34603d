"""What every engine of ``count`` runs: files cut into pieces, pieces grouped into tasks, and a
task counted.

Work is a list of :class:`Piece`\\ s (a small file, or a block of a large one, cut where
``tokenize --count`` proves a cut changes nothing) grouped into tasks, largest first;
:func:`count_task` is the one function every engine runs, in this process, in a pool of
processes (one per core), or on Dask workers: only paths, offsets and counts travel.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from embedcli.corpus.selection import BLOCK_BYTES, FIRST_BLOCK, Found
from embedcli.errors import InputTextError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.tokenization.counts import count_ordinary
from embedcli.tokenization.encodings import get_encoding
from embedcli.tokenization.engines import used_by, worth_it

TASK_BYTES = 4 << 20  # small files are grouped into tasks of about this size
TASK_FILES = 512  # ... and at most this many files
MAX_PIECE_BYTES = 32 << 20  # bytes encoded at once: tokenizing takes ~50x that in memory


@dataclass(frozen=True)
class Piece:
    """Bytes ``start`` to ``end`` of file number ``file`` (a whole file, or one block)."""

    file: int
    location: str
    start: int
    end: int
    size: int = -1  # the whole file's size when it was listed
    stamp: tuple[int, int] | None = None  # its (inode, mtime in ns) then; None: not checked


@dataclass(frozen=True)
class PieceResult:
    """Tokens of one piece under each encoding, or why it could not be counted."""

    file: int
    counts: tuple[int, ...] | None
    error: str | None = None
    # the engines that have counted each encoding in the process that counted this piece
    # (engines.used_by), keyed by the task's encoding names, on a task's last piece: how a
    # worker says which engine counted
    engines: dict[str, list[str]] | None = None


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


def _stamp(handle: Any) -> tuple[int, int, int] | None:
    """(size, inode, mtime in ns) of an open local file; None for a URL's."""
    try:
        info = os.fstat(handle.fileno())
    except (AttributeError, OSError, ValueError):  # fsspec files have no descriptor
        return None
    return (info.st_size, info.st_ino, info.st_mtime_ns)


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
    files: Sequence[Found],
    block_bytes: int = BLOCK_BYTES,
    cuttable: bool = True,
    *,
    numbers: Sequence[int] | None = None,
) -> list[Piece]:
    """Each file as one piece, or (large, with encodings that allow it) as blocks; a piece's
    ``file`` is the file's number in ``numbers`` (by default its place in ``files``)."""
    pieces = []
    for number, found in zip(numbers or range(len(files)), files, strict=True):
        if not cuttable or found.size < 2 * block_bytes:
            pieces.append(Piece(number, found.location, 0, found.size, found.size, found.stamp))
            continue
        try:
            pieces += _blocks(number, found, block_bytes)
        except OSError:  # gone or changed since it was listed: its worker says how
            pieces.append(Piece(number, found.location, 0, found.size, found.size, found.stamp))
    return pieces


def _blocks(number: int, found: Found, block_bytes: int) -> list[Piece]:
    blocks = []
    with _open(found.location) as handle:
        if b"\0" in handle.read(FIRST_BLOCK):  # binary: its one piece's worker says so
            return [Piece(number, found.location, 0, found.size, found.size, found.stamp)]
        start = 0
        while start < found.size:
            cut = find_cut(handle, start + block_bytes, found.size)
            end = found.size if cut is None or found.size - cut < block_bytes // 2 else cut
            blocks.append(Piece(number, found.location, start, end, found.size, found.stamp))
            start = end
    return blocks


def tasks_of(pieces: Sequence[Piece], task_bytes: int = TASK_BYTES) -> list[tuple[Piece, ...]]:
    """Pieces grouped into tasks of about ``task_bytes``, largest first (one big file does not
    finish last)."""
    ordered = sorted(pieces, key=lambda p: p.end - p.start, reverse=True)
    tasks: list[tuple[Piece, ...]] = []
    current: list[Piece] = []
    held = 0
    for piece in ordered:
        size = piece.end - piece.start
        if size >= task_bytes:
            tasks.append((piece,))
            continue
        current.append(piece)
        held += size
        if held >= task_bytes or len(current) >= TASK_FILES:
            tasks.append(tuple(current))
            current, held = [], 0
    if current:
        tasks.append(tuple(current))
    return tasks


_ENCODINGS: dict[tuple[str, ...], list[Any]] = {}


def encodings_for(names: tuple[str, ...], access: HubAccess = OFFLINE) -> list[Any]:
    """The encodings ``names`` names, loaded once per process (``access``: what this command
    allows of the hub, for an hf: tokenizer)."""
    if names not in _ENCODINGS:
        _ENCODINGS[names] = [get_encoding(name, access) for name in names]
    return _ENCODINGS[names]


def count_text(text: str, encodings: Sequence[Any], fast: Sequence[bool] = ()) -> tuple[int, ...]:
    """Tokens of ``text`` under each encoding, special-token text counted as text; ``fast``:
    for each encoding, whether the job chose fastokens (engines.worth_it; none given: only if
    EMBEDCLI_COUNT_ENGINE=fastokens)."""

    chosen = list(fast) or [None] * len(encodings)
    return tuple(count_ordinary(enc, text, f) for enc, f in zip(encodings, chosen, strict=True))


def fast_choice(encodings: Sequence[Any], chars: int, processes: int) -> tuple[bool, ...]:
    """For each encoding, whether fastokens repays its build on a job of ``chars`` spread
    over ``processes`` (engines.worth_it)."""

    return tuple(worth_it(enc, chars, processes) for enc in encodings)


def count_task(
    task: Sequence[Piece],
    encoding_names: tuple[str, ...],
    errors: str = "skip",
    fast: tuple[bool, ...] = (),
) -> list[PieceResult]:
    """Count every piece of a task: the one function each engine runs, wherever it runs;
    ``fast``: for each encoding, whether the job chose fastokens (:func:`fast_choice`)."""
    from dataclasses import replace

    encodings = encodings_for(tuple(encoding_names))
    results = [_count_piece(piece, encodings, errors, fast) for piece in task]
    if results:  # keyed by the names this task was given (a tokenizer's own name may differ)
        engines = {n: used_by(e) for n, e in zip(encoding_names, encodings, strict=True)}
        results[-1] = replace(results[-1], engines=engines)
    return results


def _count_piece(
    piece: Piece, encodings: Sequence[Any], errors: str, fast: tuple[bool, ...]
) -> PieceResult:
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
            before = _stamp(handle)
            handle.seek(piece.start)
            # a piece that ends the file reads one byte more: a file that holds more than its
            # size says (/proc's say 0) is caught, not counted short
            data = handle.read(piece.end - piece.start + (piece.end == piece.size))
            after = _stamp(handle)
    except OSError as exc:
        return PieceResult(piece.file, None, f"unreadable: {exc.strerror or exc}")
    listed = None if piece.stamp is None else (piece.size, *piece.stamp)
    if listed is not None and before != listed:  # rewritten, or another file (a link) now
        return PieceResult(piece.file, None, "changed after it was listed (not counted)")
    if before != after:
        return PieceResult(piece.file, None, "changed while it was read (not counted)")
    if len(data) != piece.end - piece.start:  # unchanged, yet not the size it says it has
        return PieceResult(
            piece.file,
            None,
            f"reads {'more' if len(data) > piece.end - piece.start else 'fewer'} bytes than its "
            f"size ({piece.size:,}) says, as /proc and /sys files do (not counted)",
        )
    if piece.start == 0 and b"\0" in data[:FIRST_BLOCK]:
        return PieceResult(piece.file, None, "binary")
    try:
        text = data.decode("utf-8", errors="replace" if errors == "replace" else "strict")
    except UnicodeDecodeError as exc:
        where = piece.start + exc.start
        return PieceResult(
            piece.file, None, f"not UTF-8 (byte 0x{data[exc.start]:02X} at offset {where:,})"
        )

    try:
        return PieceResult(piece.file, count_text(text, encodings, fast))
    except InputTextError as exc:  # a whitespace run tiktoken cannot split (runs.py)
        return PieceResult(piece.file, None, str(exc))
