"""`embedcli count`: exact token counts of files, folders and corpora, from PATHs to a report.

Which files is selection.py's business; how a file is cut and counted, pieces.py's (the one
function every engine runs); where the work runs, an engine's: this machine's processes
(engine_local.py) or a Dask cluster (engine_dask.py). This module chooses the engine and
gathers the results, in the order files finish, into the report ``count`` shows.

Counting (how many tokens): a file's count is ``len(encode_ordinary(text))`` for the whole text
in one pass (special-token text counted as text); a large file is cut into blocks at the points
``tokenize --count`` proves safe (a space after a non-whitespace character), which changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from embedcli.corpus.engine_local import local_results
from embedcli.corpus.pieces import (
    Piece,
    PieceResult,
    count_text,
    encodings_for,
    pieces_of,
    tasks_of,
)
from embedcli.corpus.selection import BLOCK_BYTES, FIRST_BLOCK, Found, Selection, Skipped, discover
from embedcli.errors import InputTextError, UsageError

MAX_STDIN_BYTES = 64 << 20  # standard input is counted whole, in this process
ERRORS = ("skip", "replace", "strict")


def count_stdin(data: bytes, encoding_names: tuple[str, ...], errors: str) -> FileCount | Skipped:
    """Standard input, counted here (it has no offsets to cut at, and is read once)."""
    if b"\0" in data[:FIRST_BLOCK]:
        return Skipped("-", "binary")
    try:
        text = data.decode("utf-8", errors="replace" if errors == "replace" else "strict")
    except UnicodeDecodeError as exc:
        return Skipped("-", f"not UTF-8 (byte 0x{data[exc.start]:02X} at offset {exc.start:,})")
    counts = count_text(text, encodings_for(encoding_names))
    return FileCount("-", len(data), dict(zip(encoding_names, counts, strict=True)))


def count_paths(
    paths: Sequence[str],
    encoding_names: Sequence[str],
    selection: Selection | None = None,
    *,
    errors: str = "skip",
    engine: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    stdin: Any = None,
    on_plan: Any = None,
    block_bytes: int = BLOCK_BYTES,
) -> Iterator[FileCount | Skipped]:
    """Every file's count (or skip) as it finishes: selection, pieces, the engine, gathering.
    ``on_plan(files, bytes)`` is told the size of the job before counting starts."""
    if errors not in ERRORS:
        raise UsageError(f"--errors must be one of {', '.join(ERRORS)}, got {errors!r}")
    selection = selection or Selection()
    names = tuple(encoding_names)
    encodings = encodings_for(names)  # loaded (and checked) before any file is read
    found = discover(paths, selection)
    yield from found.skipped
    if found.stdin:
        from embedcli.corpus.textinput import read_bounded

        limit = MAX_STDIN_BYTES
        data = read_bounded(stdin, "standard input", limit)  # a file is counted in blocks
        item = count_stdin(data, names, errors)
        _strict(item, errors)
        yield item
    from embedcli.tokenization.encodings import cut_safe

    cuttable = all(cut_safe(e) for e in encodings)
    pieces = pieces_of(found.found, block_bytes, cuttable=cuttable)
    if on_plan is not None:
        on_plan(len(found.found), sum(f.size for f in found.found))
    tasks = tasks_of(pieces)
    if engine == "dask":
        from embedcli.corpus.engine_dask import dask_results

        # a tokenizer named by a relative path is found by the workers too
        portable = tuple(os.path.abspath(n) if os.path.exists(n) else n for n in names)
        results = dask_results(tasks, portable, errors, scheduler=scheduler, workers=workers)
    else:
        results = local_results(tasks, names, errors, workers)
    for item in gather(found.found, pieces, results, names):
        _strict(item, errors)
        yield item


def _strict(item: FileCount | Skipped, errors: str) -> None:
    if errors == "strict" and isinstance(item, Skipped) and item.reason.startswith("not UTF-8"):
        raise InputTextError(f"{item.path} is {item.reason} (--errors strict)")


def collect(items: Iterable[FileCount | Skipped], encodings: Sequence[str]) -> CountReport:
    """A report of everything counted and skipped."""
    report = CountReport(list(encodings))
    for item in items:
        (report.files if isinstance(item, FileCount) else report.skipped).append(item)
    return report


# ---------------------------------------------------------------- the report


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
