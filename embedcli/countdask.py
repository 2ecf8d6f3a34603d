"""`embedcli count --engine dask`: the same tasks as the local engine, counted on a Dask cluster.

Only tasks (paths and byte offsets) and results (counts) travel: each worker opens its files
itself, so a path must name the same file there (a shared file system, or an fsspec URL). Each
task is one Dask task running :func:`embedcli.counting.count_task`; Dask re-runs a task whose
worker died, and one that keeps failing comes back as skipped files with the reason, never lost.
dask and distributed are imported only when a count runs on them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from embedcli.counting import Piece, PieceResult, count_task
from embedcli.errors import EmbedCLIError, UsageError

CONNECT_TIMEOUT = 10  # seconds to reach a scheduler before saying that it cannot be reached
QUIET = logging.CRITICAL  # distributed's own logs: stderr carries an Error line or progress only
LOGGERS = ("distributed", "tornado", "asyncio")  # those a cluster writes to on this machine


def dask_results(
    tasks: Sequence[tuple[Piece, ...]],
    encoding_names: tuple[str, ...],
    errors: str,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    retries: int = 2,
) -> Iterator[list[PieceResult]]:
    """Results of each task as it finishes (each exactly once), on the Dask scheduler at
    ``scheduler``, else at $DASK_SCHEDULER_ADDRESS, else on a LocalCluster of ``workers``
    processes (one per core), closed at the end. ``workers`` sizes a LocalCluster only."""
    if not tasks:
        return
    distributed = _distributed()
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    with _quiet_logs(), contextlib.ExitStack() as stack:
        client = _client(distributed, address, workers, stack)
        yield from _results(distributed, client, tasks, tuple(encoding_names), errors, retries)


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        message = "--engine dask needs the dask extra: pip install 'embedcli[dask]'"
        raise UsageError(message) from None
    return distributed


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """distributed, tornado and asyncio say nothing on stderr while a count runs: a task's
    failure reaches the report as a skipped file instead."""
    loggers = [logging.getLogger(name) for name in LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(QUIET)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _client(distributed: Any, address: str | None, workers: int | None, stack: Any) -> Any:
    """A client of the scheduler at ``address``, or of a LocalCluster started here; both are
    closed when ``stack`` is (the client first)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # version-mismatch and port notices: not for stderr
        if address is None:
            return _local_client(distributed, workers, stack)
        _check_address(address)
        try:
            client = distributed.Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError):
            raise EmbedCLIError(
                f"cannot reach the Dask scheduler at {address} within {CONNECT_TIMEOUT} s; "
                "check that it runs there (--scheduler, or DASK_SCHEDULER_ADDRESS)"
            ) from None
        except ImportError as exc:  # a scheme whose package is missing here (ucx://)
            raise UsageError(f"cannot connect to {address}: {exc}") from None
    stack.callback(_close, client)
    return client


def _check_address(address: str) -> None:
    """An address distributed cannot parse is a usage error, found before a Client is made (one
    that fails on it is left half-open, and hangs for seconds when it is collected)."""
    from distributed.comm.addressing import get_address_host_port, parse_address
    from distributed.comm.registry import get_backend

    try:
        scheme = parse_address(address)[0]
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):  # HOST:PORT addresses
            get_address_host_port(address)
    except ValueError as exc:
        raise UsageError(
            f"{address} is not a Dask scheduler address ({exc}); one looks like tcp://HOST:8786"
        ) from None


def _local_client(distributed: Any, workers: int | None, stack: Any) -> Any:
    try:
        cluster = distributed.LocalCluster(
            n_workers=workers or os.cpu_count() or 1,
            threads_per_worker=1,  # the tokenizer holds the GIL: one process per core
            processes=True,
            dashboard_address=None,
            silence_logs=QUIET,
        )
    except (OSError, TimeoutError, RuntimeError) as exc:  # RuntimeError: a worker did not start
        raise EmbedCLIError(f"cannot start a local Dask cluster: {exc}") from None
    stack.callback(_close, cluster)
    client = distributed.Client(cluster, set_as_default=False)
    stack.callback(_close, client)
    return client


def _close(thing: Any) -> None:
    with contextlib.suppress(Exception):  # a cluster that is already gone has nothing to close
        thing.close()


def _results(
    distributed: Any,
    client: Any,
    tasks: Sequence[tuple[Piece, ...]],
    encoding_names: tuple[str, ...],
    errors: str,
    retries: int,
) -> Iterator[list[PieceResult]]:
    """Submit every task (largest first: Dask runs them in that order), then yield each result
    once, as it finishes."""
    run = uuid.uuid4().hex[:12]
    waiting: dict[str, tuple[Piece, ...]] = {}
    finished = distributed.as_completed(loop=client.loop)
    for number, task in enumerate(tasks):
        key = f"embedcli-count-{run}-{number}"  # unique per task: no two tasks share a result
        future = client.submit(
            count_task, _absolute(task), encoding_names, errors, key=key, retries=retries
        )
        waiting[key] = task
        finished.add(future)
    for future in finished:
        task = waiting.pop(future.key, None)
        if task is None:
            continue  # already yielded: a task's result counts once
        yield _outcome(future, task)
        future.release()  # the cluster may drop the result now


def _absolute(task: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """Local paths made absolute: a worker's working folder is not this one."""
    pieces = []
    for piece in task:
        if "://" not in piece.location:
            piece = replace(piece, location=os.path.abspath(piece.location))
        pieces.append(piece)
    return tuple(pieces)


def _outcome(future: Any, task: tuple[Piece, ...]) -> list[PieceResult]:
    """A finished task's results; one whose data was lost with its worker is waited for (Dask
    computes it again); one that failed after its retries is every piece skipped, with why."""
    try:
        return future.result()
    except Exception as exc:  # count_task's own error, KilledWorker, or a cancelled task
        why = f"failed on the Dask cluster: {_reason(exc)}"
    return [PieceResult(piece.file, None, why) for piece in task]


def _reason(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return "every worker that counted it died (KilledWorker)"
    if name in ("CancelledError", "FutureCancelledError"):
        return "the task was cancelled (the scheduler or the connection to it went away)"
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{name}: {text}" if text else name
