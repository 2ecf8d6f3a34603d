"""The ``count`` job, from PATHs to per-file results: selection, pieces, an engine (this
machine's processes, or a Dask cluster), gathering. counting.py holds the parts every engine
shares; countdask.py the cluster; this module chooses between them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from embedcli.counting import (
    BLOCK_BYTES,
    ERRORS,
    FIRST_BLOCK,
    MAX_STDIN_BYTES,
    CountReport,
    FileCount,
    Selection,
    Skipped,
    _encodings,
    count_text,
    discover,
    gather,
    local_results,
    pieces_of,
    tasks_of,
)
from embedcli.errors import InputTextError, UsageError


def count_stdin(data: bytes, encoding_names: tuple[str, ...], errors: str) -> FileCount | Skipped:
    """Standard input, counted here (it has no offsets to cut at, and is read once)."""
    if b"\0" in data[:FIRST_BLOCK]:
        return Skipped("-", "binary")
    try:
        text = data.decode("utf-8", errors="replace" if errors == "replace" else "strict")
    except UnicodeDecodeError as exc:
        return Skipped("-", f"not UTF-8 (byte 0x{data[exc.start]:02X} at offset {exc.start:,})")
    counts = count_text(text, _encodings(encoding_names))
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
    encodings = _encodings(names)  # loaded (and checked) before any file is read
    found = discover(paths, selection)
    yield from found.skipped
    if found.stdin:
        from embedcli.textinput import read_bounded

        limit = MAX_STDIN_BYTES
        data = read_bounded(stdin, "standard input", limit)  # a file is counted in blocks
        item = count_stdin(data, names, errors)
        _strict(item, errors)
        yield item
    from embedcli.encodings import cut_safe

    cuttable = all(cut_safe(e) for e in encodings)
    pieces = pieces_of(found.found, block_bytes, cuttable=cuttable)
    if on_plan is not None:
        on_plan(len(found.found), sum(f.size for f in found.found))
    tasks = tasks_of(pieces)
    if engine == "dask":
        from embedcli.countdask import dask_results

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
