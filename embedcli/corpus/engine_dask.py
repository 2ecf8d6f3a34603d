"""`embedcli count --engine dask`: the same tasks as the local engine, counted on a Dask cluster.

Only tasks (paths and byte offsets) and results (counts) travel: each worker opens its files
itself, so a path must name the same file there (a shared file system, or an fsspec URL). Each
task is one Dask task running :func:`embedcli.corpus.pieces.count_task`; Dask re-runs a task whose
worker died, and one that keeps failing comes back as skipped files with the reason, never lost.
dask and distributed are imported only when a count runs on them.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import socket
import threading
import uuid
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import CancelledError
from dataclasses import replace
from typing import Any

from embedcli.corpus.pieces import Piece, PieceResult, count_task
from embedcli.errors import EmbedCLIError, MissingExtraError, UsageError

CONNECT_TIMEOUT = 10  # seconds to reach a scheduler before saying that it cannot be reached
WATCH_SECONDS = 0.05  # how often the count looks for finished tasks and living workers
NO_WORKERS_SECONDS = 60.0  # a cluster with no workers this long, with tasks left: an error
SILENT = logging.CRITICAL + 1  # distributed's logs: stderr carries an Error line or progress only
LOGGERS = ("distributed", "tornado", "asyncio", "bokeh")  # and their children
HOST_PORT = ("tcp", "tls", "ws", "wss")  # schemes whose addresses are HOST:PORT
IN_FLIGHT = 4  # tasks in flight per worker
RECENT_MESSAGES = 16  # messages of each stream distributed keeps for debugging
# Signals held while a cluster starts or closes (SIGHUP where there is one).
_HELD = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_END = object()


def dask_results(
    tasks: Iterable[tuple[Piece, ...] | None],
    encoding_names: tuple[str, ...],
    errors: str,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    retries: int = 2,
    fast: Any = lambda processes: (),
) -> Iterator[list[PieceResult]]:
    """Results of each task as it finishes (each exactly once), on the Dask scheduler at
    ``scheduler``, else at $DASK_SCHEDULER_ADDRESS, else on a LocalCluster of ``workers``
    processes (one per core), closed at the end. ``workers`` sizes a LocalCluster only.

    A task that still fails after ``retries`` (or whose workers keep dying) comes back as its
    pieces with the reason; an unreachable or lost scheduler is an :class:`EmbedCLIError`.

    Tasks are taken as the job streams, a few per worker in flight; a None among them asks to
    hold (submit nothing more until a result is in), and with nothing in flight an empty batch
    is yielded instead, so that the caller can hand on what it holds."""
    source = iter(tasks)
    wanted = workers or os.cpu_count() or 1
    head = list(itertools.islice(source, wanted))  # as many workers as tasks, no more
    if not any(task is not None for task in head):
        return
    distributed = _distributed()
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    import dask

    # distributed keeps the last messages of every stream for debugging (1,000 by default): each
    # a task of up to TASK_FILES pieces, memory that grew with the corpus. A few will do.
    logs = {"distributed.admin.low-level-log-length": RECENT_MESSAGES}
    with _quiet_logs(), dask.config.set(logs), contextlib.ExitStack() as stack:
        client = _client(distributed, address, workers, len(head), stack)
        source = itertools.chain(head, source)
        chosen = fast(max(_worker_count(client), 1))
        names = tuple(encoding_names)
        yield from _results(distributed, client, source, names, errors, retries, chosen)


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        message = "--engine dask needs the dask extra: pip install 'embedcli[dask]'"
        raise MissingExtraError(message) from None
    return distributed


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """distributed, tornado and asyncio write nothing to stderr while a count runs (a task's
    failure reaches the report as a skipped file instead): their loggers are silenced, and their
    handlers too (most have one of their own, and do not propagate)."""
    known = list(logging.Logger.manager.loggerDict)
    names = {*LOGGERS, *(name for name in known if name.split(".")[0] in LOGGERS)}
    loggers = [logging.getLogger(name) for name in sorted(names)]
    handlers = {handler for logger in loggers for handler in logger.handlers}
    saved = [(thing, thing.level) for thing in [*loggers, *handlers]]
    for thing, _ in saved:
        thing.setLevel(SILENT)
    try:
        yield
    finally:
        for thing, level in saved:
            thing.setLevel(level)


def _client(
    distributed: Any, address: str | None, workers: int | None, tasks: int, stack: Any
) -> Any:
    """A client of the scheduler at ``address``, or of a LocalCluster started here (no more
    workers than tasks); both are closed when ``stack`` is (the client first)."""
    if address is not None:
        _reach(address)
    elif hasattr(signal, "pthread_sigmask"):
        from multiprocessing import resource_tracker

        # Started before SIGINT is held: starting it unblocks SIGINT in the thread that does.
        resource_tracker.ensure_running()
    with warnings.catch_warnings(), _deferred_interrupt():
        warnings.simplefilter("ignore")  # version-mismatch and port notices: not for stderr
        if address is None:
            cluster = _local_cluster(distributed, min(workers or os.cpu_count() or 1, tasks))
            stack.callback(_close, cluster)
            client = distributed.Client(cluster, set_as_default=False)
        else:
            try:
                client = distributed.Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
            except (OSError, TimeoutError) as exc:  # it answered a moment ago
                raise _unreachable(address, exc) from None
        stack.callback(_close, client)
    return client


def _reach(address: str) -> None:
    """Check a scheduler's address before a Client is made: a Client that fails on a malformed
    address, or is interrupted while it connects, is left half-open (and hangs for seconds when
    collected), and one whose peer accepts but never answers waits for ever. An address that
    cannot be parsed is a usage error; where nothing listens is said at once."""
    import asyncio

    from distributed.comm.addressing import get_address_host_port, parse_address
    from distributed.comm.registry import get_backend

    try:
        scheme = parse_address(address)[0]
        get_backend(scheme)
        host_port = get_address_host_port(address) if scheme in HOST_PORT else None
        if host_port is not None and not 0 < host_port[1] < 65536:  # the socket wraps 99999
            raise ValueError(f"port {host_port[1]} is not between 1 and 65535")
        if scheme == "inproc" and "/" not in address.removeprefix("inproc://"):
            raise ValueError("an inproc address names a process and a thread (inproc://IP/PID/N)")
    except ValueError as exc:
        raise UsageError(
            f"{address} is not a Dask scheduler address: {exc}; one looks like tcp://HOST:8786"
        ) from None
    try:
        if host_port is not None:  # refused here at once; distributed would retry for seconds
            socket.create_connection(host_port, timeout=CONNECT_TIMEOUT).close()
        if not _loop_running():  # (inside one, as in a notebook, the Client is trusted alone)
            asyncio.run(asyncio.wait_for(_identity(address), CONNECT_TIMEOUT))
    except ImportError as exc:  # a scheme whose package is missing here (ucx://)
        raise UsageError(f"cannot connect to {address}: {exc}") from None
    except Exception as exc:
        raise _unreachable(address, exc) from None


def _loop_running() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _identity(address: str) -> Any:
    """The scheduler's answer to "who are you?", as a Client's first exchange would be."""
    from distributed.core import rpc
    from distributed.security import Security

    connection_args = Security().get_connection_args("client")  # TLS settings, from the config
    async with rpc(address, connection_args=connection_args) as scheduler:
        return await scheduler.identity()


def _unreachable(address: str, exc: BaseException) -> EmbedCLIError:
    import asyncio

    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        why = f"no answer within {CONNECT_TIMEOUT} s"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror  # Connection refused, Name or service not known
    else:
        why = f"what answers is not a Dask scheduler ({_reason(exc)})"
    return EmbedCLIError(
        f"cannot reach the Dask scheduler at {address}: {why}; check that it runs there "
        "(--scheduler, or DASK_SCHEDULER_ADDRESS)"
    )


def _local_cluster(distributed: Any, workers: int) -> Any:
    try:
        return distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,  # the tokenizer holds the GIL: one process per core
            processes=True,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # its HTTP routes: not on 8787
            silence_logs=SILENT,
        )
    except (OSError, TimeoutError, RuntimeError) as exc:  # RuntimeError: a worker did not start
        raise EmbedCLIError(f"cannot start a local Dask cluster: {exc}") from None


@contextlib.contextmanager
def _deferred_interrupt() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP are held while a cluster or client starts or closes, and act
    once that is done (distributed cannot close a half-started cluster, whose processes would
    outlive the count, and whose scheduler would log to stderr as the interpreter exits).
    Threads and processes started meanwhile (the cluster's loop, its workers) keep SIGINT
    blocked: a terminal's Ctrl-C stops this process, which closes them, not each on its own.
    SIGTERM is held by this process's handler only (its workers must stay able to get one)."""
    main = threading.current_thread() is threading.main_thread()
    if not main:
        yield
        return
    held: list[tuple[int, Any]] = []
    previous = {}
    for signum in _HELD:
        handler = signal.getsignal(signum)
        if callable(handler):  # not SIG_IGN, SIG_DFL, or a handler set outside Python (None)
            previous[signum] = signal.signal(signum, lambda *args: held.append(args))
    blocks = signal.SIGINT in previous and hasattr(signal, "pthread_sigmask")  # POSIX
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocks else None
    try:
        yield
    finally:
        # The command's handlers first, then unblock: a Ctrl-C held by the mask reaches its
        # handler (KeyboardInterrupt, here), never the placeholder a moment too late.
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if held:
            previous[held[0][0]](*held[0])  # raises: KeyboardInterrupt, or the command's own


def _close(thing: Any) -> None:
    with contextlib.suppress(Exception), _deferred_interrupt():
        thing.close()  # a cluster already gone has nothing to close


def _results(
    distributed: Any,
    client: Any,
    tasks: Iterator[tuple[Piece, ...] | None],
    encoding_names: tuple[str, ...],
    errors: str,
    retries: int,
    chosen: tuple[bool, ...] = (),
) -> Iterator[list[PieceResult]]:
    """Submit tasks in the order given (largest first within each window: Dask runs them in
    that order), a few per worker in flight, and yield each result once, as it finishes."""
    run = uuid.uuid4().hex[:12]
    address = client.scheduler.address  # kept: a lost client forgets it
    waiting: dict[str, tuple[Piece, ...]] = {}
    finished = distributed.as_completed(loop=client.loop)
    numbers = itertools.count()
    exhausted = False
    limit = _in_flight(client)
    idle = 0.0
    while True:
        hold = False
        while not exhausted and not hold and len(waiting) < limit:
            task = next(tasks, _END)
            if task is _END:
                exhausted = True
            elif task is None:
                hold = True
            else:
                key = f"embedcli-count-{run}-{next(numbers)}"  # unique: no two share a result
                try:
                    future = client.submit(
                        count_task, _absolute(task), encoding_names, errors, chosen, key=key,
                        retries=retries,
                    )  # fmt: skip
                except Exception:  # ClosedClientError: the scheduler went away
                    raise _lost(address) from None
                waiting[key] = task
                finished.add(future)
        if not waiting:
            if exhausted:
                return
            yield []  # held with nothing in flight: the caller hands on what it has
            continue
        batch = finished.next_batch(block=False) if finished.has_ready() else []
        if not batch:
            # Nothing ready: wait a little, and watch that someone is still working on it.
            idle = _watch(client, address, len(waiting), idle)
            continue
        idle = 0.0
        for future in batch:
            task = waiting.pop(future.key, None)
            if task is None:
                continue  # already yielded: a task's result counts once
            yield _outcome(future, task, address)
            future.release()  # the cluster may drop the result now


def _worker_count(client: Any) -> int:
    """The cluster's workers now (0 when the scheduler is gone: the first task says so)."""
    try:
        return len(client.scheduler_info().get("workers") or {})
    except Exception:
        return 0


def _in_flight(client: Any) -> int:
    """Tasks in flight at once: a few per worker (the cluster's workers now; at least 32)."""
    return max(32, IN_FLIGHT * _worker_count(client))


def _watch(client: Any, address: str, left: int, idle: float) -> float:
    """Sleep one beat; return how long the cluster has had no workers (a cluster whose
    workers all died would otherwise be waited for forever)."""
    import time

    time.sleep(WATCH_SECONDS)
    try:
        workers = client.scheduler_info().get("workers") or {}
    except Exception:  # the scheduler is gone: the futures say so when asked
        return idle
    if workers:
        return 0.0
    idle += WATCH_SECONDS
    if idle >= NO_WORKERS_SECONDS:
        raise EmbedCLIError(
            f"the Dask cluster at {address} has had no workers for {NO_WORKERS_SECONDS:.0f} s "
            f"with {left:,} task{'s' * (left != 1)} left; start workers (dask worker {address}) "
            "and run it again"
        )
    return idle


def _absolute(task: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """Local paths made absolute: a worker's working folder is not this one."""
    pieces = []
    for piece in task:
        if "://" not in piece.location:
            piece = replace(piece, location=os.path.abspath(piece.location))
        pieces.append(piece)
    return tuple(pieces)


def _outcome(future: Any, task: tuple[Piece, ...], address: str) -> list[PieceResult]:
    """A finished task's results (one whose data was lost with its worker is waited for: Dask
    computes it again), or, for one that failed after its retries, every piece skipped with why."""
    try:
        return future.result()
    except CancelledError:  # the scheduler, or this client's connection to it, went away
        raise _lost(address) from None
    except Exception as exc:  # count_task's own error, or KilledWorker
        why = f"failed on the Dask cluster: {_reason(exc)}"
    return [PieceResult(piece.file, None, why) for piece in task]


def _lost(address: str) -> EmbedCLIError:
    return EmbedCLIError(
        f"lost the Dask scheduler at {address} in the middle of the count; run it again"
    )


def _reason(exc: BaseException) -> str:
    from distributed import KilledWorker

    name = type(exc).__name__
    if isinstance(exc, KilledWorker):  # Dask gave up after its allowed-failures
        return "every worker that counted it died (KilledWorker)"
    text = (str(exc).strip().splitlines() or [""])[0]
    return f"{name}: {text}" if text else name
