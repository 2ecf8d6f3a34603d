"""The local engine of ``count``: tasks counted in this process, or in a pool of processes (one per
core), largest first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from embedcli.corpus.pieces import TASK_BYTES, Piece, PieceResult, count_task, encodings_for
from embedcli.errors import InputTextError


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

    encodings_for(encoding_names)  # loaded once here: forked workers inherit them
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
