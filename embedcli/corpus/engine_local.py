"""The local engine of ``count``: tasks counted in this process, or in a pool of processes (one per
core), taken from the job as it streams, with a few tasks in flight per process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from embedcli.corpus.pieces import Piece, PieceResult, count_task, encodings_for
from embedcli.errors import InputTextError

IN_FLIGHT = 4  # tasks in flight per process: enough to keep it busy, few enough to hold little
Task = tuple[Piece, ...]
_END = object()


def local_results(
    tasks: Iterable[Task | None],
    encoding_names: tuple[str, ...],
    errors: str,
    workers: int | None = None,
    fast: Callable[[int], tuple[bool, ...]] = lambda processes: (),
    pooled: Callable[[], bool] = lambda: True,
) -> Iterator[list[PieceResult]]:
    """Results of each task as it finishes: in this process for small jobs, else in a pool of
    processes, one per core. A None among the tasks asks to hold (submit nothing more until a
    result is in); with nothing in flight an empty batch is yielded instead, so that the caller
    can hand on what it holds. ``fast(processes)``: the job's choice of engines, and
    ``pooled()``: whether it is worth a pool, both asked once its first tasks are planned
    (plan.FirstWindow: from the text the job will count)."""
    workers = workers or os.cpu_count() or 1
    source = iter(tasks)
    head = list(islice(source, 2))  # the first window is planned by now
    if workers == 1 or len(head) < 2 or not pooled():
        chosen = fast(1)
        for task in _chained(head, source):
            yield [] if task is None else count_task(task, encoding_names, errors, chosen)
        return
    size = min(workers, 4 * (os.cpu_count() or 1))
    yield from _pool(_chained(head, source), encoding_names, errors, size, fast(size))


def _chained(head: list[Task | None], source: Iterator[Task | None]) -> Iterator[Task | None]:
    yield from head
    yield from source


def _pool(
    source: Iterator[Task | None],
    encoding_names: tuple[str, ...],
    errors: str,
    size: int,
    chosen: tuple[bool, ...],
) -> Iterator[list[PieceResult]]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    encodings_for(encoding_names)  # loaded once here: forked workers inherit them
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pool = ProcessPoolExecutor(size, mp_context=context, initializer=_worker_signals)
    in_flight: set = set()
    exhausted = False
    try:
        while True:
            hold = False
            while not exhausted and not hold and len(in_flight) < IN_FLIGHT * size:
                task = next(source, _END)
                if task is _END:
                    exhausted = True
                elif task is None:
                    hold = True
                else:
                    in_flight.add(pool.submit(count_task, task, encoding_names, errors, chosen))
            if not in_flight:
                if exhausted:
                    break
                yield []  # held with nothing in flight: the caller hands on what it has
                continue
            done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    except BrokenProcessPool:
        raise InputTextError(
            "a counting process died before its files were counted (killed, or out of "
            "memory); run again, with fewer --workers"
        ) from None
    except BaseException:
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()  # Ctrl-C, SIGTERM, a closed pipe: stop them now, quietly
        # waited for: a manager thread left running wrote at exit to a wakeup pipe it had
        # closed ("Exception ignored ... Bad file descriptor" after | head -1)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _worker_signals() -> None:
    """Workers leave signals to the command: SIGTERM ends them silently (the pool's own
    terminate), Ctrl-C reaches the command alone, which stops them."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
