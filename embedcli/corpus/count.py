"""`embedcli count`: exact token counts of files, folders and corpora, from PATHs to a report.

Which files is selection.py's business; how a file is cut and counted, pieces.py's (the one
function every engine runs); where the work runs, an engine's: this machine's processes
(engine_local.py) or a Dask cluster (engine_dask.py); what is kept of it, report.py's. This
module streams the job: the walk is cut into windows (a few thousand files), each window's work
is scheduled largest first, and each file's count (or skip) is handed on in walk order as soon
as it and every file before it are done. Memory follows the window, not the tree: when finished
files wait too long for an earlier one, no new window is scheduled until it is done.

Counting (how many tokens): a file's count is ``len(encode_ordinary(text))`` for the whole text
in one pass (special-token text counted as text); a large file is cut into blocks at the points
``tokenize --count`` proves safe (a space after a non-whitespace character), which changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from embedcli.corpus.engine_dask import dask_results
from embedcli.corpus.engine_local import local_results
from embedcli.corpus.pieces import (
    TASK_BYTES,
    Piece,
    PieceResult,
    encodings_for,
    pieces_of,
    tasks_of,
)
from embedcli.corpus.plan import POOL_TEXT, FirstWindow
from embedcli.corpus.report import CountReport, FileCount, Keep, collect
from embedcli.corpus.selection import BLOCK_BYTES, Found, Selection, Skipped, walk
from embedcli.corpus.stdin import count_stdin
from embedcli.errors import InputTextError, UsageError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.tokenization.encodings import cut_safe
from embedcli.tokenization.engines import note_used

__all__ = ["CountReport", "FileCount", "Keep", "collect", "count_paths", "gather"]

ERRORS = ("skip", "replace", "strict")
WINDOW_FILES = 4096  # files scheduled together (largest first among them)
WINDOW_BYTES = 256 << 20  # ... or this many bytes of them
MIN_BLOCK = 1 << 20  # bytes: a finer cut costs more in looking for cuts than it shares
HELD_FILES = 4 * WINDOW_FILES  # files waiting for an earlier one before scheduling waits


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
    on_done: Any = None,
    block_bytes: int = BLOCK_BYTES,
    access: HubAccess = OFFLINE,
) -> Iterator[FileCount | Skipped]:
    """Every file's count (or skip) in walk order (stdin first), as soon as it is known.
    ``on_plan(items, bytes)`` is told the size of the job found so far (files and skips), as
    the walk goes on; ``on_done(items, bytes)`` what is finished, after each batch of results
    (files finish largest first, so walk order alone would say 0 until the end).
    ``access``: what this command allows of the hub, for hf: tokenizers
    (loaded here, before any file is read; workers find them in the cache)."""
    if errors not in ERRORS:
        raise UsageError(f"--errors must be one of {', '.join(ERRORS)}, got {errors!r}")
    selection = selection or Selection()
    names = tuple(encoding_names)
    encodings = encodings_for(names, access)  # loaded (and checked) before any file is read

    cuttable = all(cut_safe(e) for e in encodings)
    items = walk(paths, selection)
    first = next(items, None)  # a PATH that names nothing fails here, before stdin is read
    if "-" in paths:
        item = count_stdin(stdin, names, errors, cuttable=cuttable)
        _strict(item, errors)
        yield item
    if first is None:
        return
    order = InOrder(len(names))
    window = FirstWindow()  # what the engines are chosen from, once it is planned
    grain = Grain(block_bytes, 1 if engine == "dask" else workers or os.cpu_count() or 1)
    tasks = _scheduled(_chain(first, items), order, grain, cuttable, on_plan, window)

    def fast(processes: int) -> tuple[bool, ...]:
        """Whether fastokens repays its build for each encoding: from the first window."""
        return window.fast(encodings, processes)

    if engine == "dask":
        import tiktoken

        # a tokenizer named by a relative path is found by the workers too; an encoding's
        # name stays one (-e gpt2 is tiktoken's gpt2 there too, beside a folder named gpt2)
        portable = tuple(
            os.path.abspath(n) if os.path.exists(n) and type(e) is not tiktoken.Encoding else n
            for n, e in zip(names, encodings, strict=True)
        )
        results = _noted(
            dask_results(tasks, portable, errors, scheduler=scheduler, workers=workers, fast=fast),
            dict(zip(portable, encodings, strict=True)),
        )
    else:
        results = _noted(
            local_results(tasks, names, errors, workers, fast, window.pooled),
            dict(zip(names, encodings, strict=True)),
        )
    for batch in results:
        for item in order.take(batch, names):
            _strict(item, errors)
            yield item
        if on_done is not None:
            on_done(order.finished, order.finished_bytes)
    for item in order.take([], names):  # skips after the last file counted
        _strict(item, errors)
        yield item


def _noted(
    batches: Iterable[list[PieceResult]], encodings: dict[str, Any]
) -> Iterator[list[PieceResult]]:
    """Workers' results, each engine a worker names noted in this process (engines.note_used)
    for the encoding the task named: a tokenizer file by the path it was given, or, for Dask
    workers, by its absolute path."""

    for batch in batches:
        for result in batch:
            for name, labels in (result.engines or {}).items():
                note_used(encodings[name], labels)
        yield batch


def _chain(first: Found | Skipped, rest: Iterator[Found | Skipped]) -> Iterator[Found | Skipped]:
    yield first
    yield from rest


def _strict(item: FileCount | Skipped, errors: str) -> None:
    if errors == "strict" and isinstance(item, Skipped) and item.reason.startswith("not UTF-8"):
        raise InputTextError(f"{item.path} is {item.reason} (--errors strict)")


def _scheduled(
    items: Iterable[Found | Skipped],
    order: InOrder,
    grain: Grain,
    cuttable: bool,
    on_plan: Any,
    first: FirstWindow,
) -> Iterator[tuple[Piece, ...] | None]:
    """The tasks of the walk, window by window, largest first within each; None (hold: no new
    task until a result comes in) while too many finished files wait for an earlier one."""
    window: list[tuple[int, Found]] = []
    size = total = 0
    for item in items:
        number = order.register(item)
        if isinstance(item, Skipped):
            continue
        window.append((number, item))
        size += item.size
        if len(window) >= WINDOW_FILES or size >= WINDOW_BYTES:
            total += size
            first.plan([found for _, found in window], complete=False)
            yield from _window(window, order, grain, cuttable, on_plan, total)
            window, size = [], 0
            while order.waiting > HELD_FILES:
                yield None
    if window:
        first.plan([found for _, found in window], complete=True)
        if not total:  # the whole job is this window: its share of each process sets the grain
            grain = grain.shared(size)
        yield from _window(window, order, grain, cuttable, on_plan, total + size)
    elif on_plan is not None:
        on_plan(order.count, total)


def _window(window, order, grain, cuttable, on_plan, total):
    numbers = [number for number, _ in window]
    pieces = pieces_of([found for _, found in window], grain.block, cuttable, numbers=numbers)
    order.expect(pieces)
    if on_plan is not None:
        on_plan(order.count, total)  # items met so far (files and skips), and their bytes
    yield from tasks_of(pieces, grain.task)


@dataclass(frozen=True)
class Grain:
    """How finely a window's work is cut: blocks of a large file, bytes of a task. A job that
    is one window is cut so that each of its processes has a few tasks (a 12 MB file is
    counted in blocks on every core, not whole on one; 500 small files make more than two
    tasks), never finer than MIN_BLOCK, never below the pool's bound of text."""

    block: int
    processes: int
    task: int = TASK_BYTES

    def shared(self, size: int) -> Grain:
        if self.processes < 2 or size < POOL_TEXT:
            return self
        share = max(MIN_BLOCK, size // (2 * self.processes))
        return Grain(min(self.block, share), self.processes, min(self.task, share))


class InOrder:
    """The files in flight, numbered in walk order: each one's pieces still out and its counts
    so far; an item is handed on once it and every item before it are done."""

    def __init__(self, encodings: int) -> None:
        self.encodings = encodings
        self.next = 0  # the number of the next item to hand on
        self.count = 0  # items registered
        self.done: dict[int, FileCount | Skipped] = {}
        self.files: dict[int, list[Any]] = {}  # number -> [found, pieces left, sums, error]
        self.finished_bytes = 0  # of the files done, handed on or not

    @property
    def finished(self) -> int:
        """Items done (counted or skipped), handed on or waiting for an earlier one."""
        return self.next + len(self.done)

    @property
    def waiting(self) -> int:
        """Items registered and not handed on yet."""
        return self.count - self.next

    def register(self, item: Found | Skipped) -> int:
        number = self.count
        self.count += 1
        if isinstance(item, Skipped):
            self.done[number] = item
        else:
            self.files[number] = [item, 0, [0] * self.encodings, None]
        return number

    def expect(self, pieces: Iterable[Piece]) -> None:
        for piece in pieces:
            self.files[piece.file][1] += 1

    def take(self, batch: Iterable[PieceResult], names: Sequence[str]) -> Iterator[Any]:
        """Fold in a batch of results; hand on every item now ready, in order."""
        for result in batch:
            state = self.files[result.file]
            if result.error is not None:
                state[3] = state[3] or result.error
            else:
                for i, n in enumerate(result.counts or ()):
                    state[2][i] += n
            state[1] -= 1
            if state[1] == 0:
                del self.files[result.file]
                found = state[0]
                self.finished_bytes += found.size
                self.done[result.file] = (
                    Skipped(found.path, state[3])
                    if state[3] is not None
                    else FileCount(found.path, found.size, dict(zip(names, state[2], strict=True)))
                )
        while self.next in self.done:
            yield self.done.pop(self.next)
            self.next += 1


def gather(
    found: Sequence[Found],
    pieces: Sequence[Piece],
    results: Iterable[list[PieceResult]],
    encodings: Sequence[str],
) -> Iterator[FileCount | Skipped]:
    """Each file's count (or its skip), in the order of ``found``, from an engine's results for
    ``pieces`` (numbered by their place in ``found``)."""
    order = InOrder(len(encodings))
    for item in found:
        order.register(item)
    order.expect(pieces)
    for batch in results:
        yield from order.take(batch, encodings)
