"""Helper threads for encoding a large text in chunks, each with its own copy of the encoding.

Since tiktoken 0.13 (fancy-regex 0.17) all clones of an encoding's compiled pattern share one
program and its scratch pools, and a pool serves only the first thread that used it without a
lock. Any other thread pays about a quarter more CPU time, and two threads encoding with one
encoding at once fight over the pools' cache lines: up to twice the CPU time of one pass
(issue 24, measured). So a helper is a long-lived daemon thread that builds its own copy of an
encoding the first time it meets it (0.1 s for cl100k_base) and keeps it, staying the first user
of the copy's pools; the calling thread works with the encoding itself. Daemon threads do not
hold up the command line's quick exit.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from embedcli.tokenization.encodings import thread_copy

if TYPE_CHECKING:
    import tiktoken

Job = Callable[["tiktoken.Encoding"], None]


class _Helper(threading.Thread):
    """Runs jobs, each given this thread's own copy of an encoding."""

    def __init__(self) -> None:
        super().__init__(name="embedcli-encoder", daemon=True)
        self.jobs: queue.SimpleQueue[tuple[tiktoken.Encoding, Job, Future]] = queue.SimpleQueue()
        self.copies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def run(self) -> None:
        while True:
            enc, job, done = self.jobs.get()
            try:
                own = self.copies.get(enc)
                if own is None:
                    own = self.copies[enc] = thread_copy(enc)
                job(own)
            except BaseException as exc:  # the caller re-raises it
                done.set_exception(exc)
            else:
                done.set_result(None)
            del enc, job, done  # no reference to a finished job's text stays behind


_helpers: list[_Helper] = []
_lock = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child has none of its parent's threads
    os.register_at_fork(after_in_child=_helpers.clear)


def run_on_helpers(enc: tiktoken.Encoding, job: Job, count: int) -> list[Future]:
    """Start ``job(copy of enc)`` on ``count`` helper threads; wait on the futures."""
    with _lock:
        while len(_helpers) < count:
            helper = _Helper()
            helper.start()
            _helpers.append(helper)
        chosen = _helpers[:count]
    futures: list[Future] = []
    for helper in chosen:
        futures.append(Future())
        helper.jobs.put((enc, job, futures[-1]))
    return futures
