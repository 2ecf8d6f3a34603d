"""The process around a command: signals that end it cleanly, the garbage collector tuned for
short runs, and a fast exit that skips Python's teardown."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from typing import NoReturn


def prepare() -> None:
    """Before the command runs: SIGTERM and SIGHUP unwind as Ctrl-C does, and the collector
    runs less often."""
    signal.signal(signal.SIGTERM, _terminate)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:  # not under nohup, which ignores it
        signal.signal(signal.SIGHUP, _terminate)
    # Python's collector starts a pass every 700 new objects, and a full pass, over every object
    # there is, once enough survive: after torch's import that is three full passes in one embed
    # (150 ms measured, 0.1 s of it while drawing the tables) that find almost nothing to free.
    # A young generation of 50,000 objects lets a short command run without them; a long one
    # (count, streaming) is still collected, a few MB later.
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
    # Help is drawn as wide as COLUMNS says, each panel padded to it: COLUMNS=10000000 took 27 s
    # and 800 MB. typer's help reads its width from TERMINAL_WIDTH (when it is imported), so a
    # wider COLUMNS draws help at HELP_WIDEST; the commands' own output is sized by its content.
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > HELP_WIDEST and "TERMINAL_WIDTH" not in os.environ:
        os.environ["TERMINAL_WIDTH"] = str(HELP_WIDEST)
    # Under a stream encoding that is not UTF-8 (PYTHONIOENCODING=ascii, LC_ALL=C without
    # PYTHONUTF8), a character it cannot encode is written escaped, not a traceback: help text
    # holds non-ASCII examples. The commands' own output is UTF-8 bytes either way (output.py).
    if (getattr(sys.stdout, "encoding", None) or "utf-8").lower().replace("-", "") != "utf8":
        reconfigure = getattr(sys.stdout, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


YOUNG_OBJECTS = 50_000  # the collector's first threshold in the console script (Python's: 700)
HELP_WIDEST = 240  # the widest help is drawn, whatever COLUMNS says


class Terminated(BaseException):
    """SIGTERM (sent by timeout, systemd, Kubernetes) or SIGHUP (the terminal closed): unwinds
    like Ctrl-C, so that every temporary file is removed on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signum)


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's final flush finds no closed pipe to report."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def leave(code: object) -> NoReturn:
    """End the process with SystemExit's ``code``, without tearing the interpreter down.

    Python's teardown frees every module and object one by one before the process ends: 0.3 s
    after ``import torch`` alone, 0.5 s after ``embed`` and 50 ms after an o200k_base
    tokenizer (measured), all of it memory the operating system takes back whole anyway. So,
    once the command is done: run the exit handlers (torch's, logging's, temporary files'),
    flush what is written, and end. Where a thread other than the main one is still running,
    the ordinary exit waits for it as Python would."""
    import atexit
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # SystemExit("message"): Python prints it and exits 1
        _say(str(code))
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the descriptor closed (`>&-`): nothing to flush
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # `| head -1`: the reader had what it wanted
            pass
        except (OSError, ValueError) as exc:  # a full disk: the output is not whole
            if stream is sys.stdout:
                _say(f"Error: cannot write to standard output: {getattr(exc, 'strerror', exc)}")
                status = status or 1
    os._exit(status)


def _say(line: str) -> None:
    """A last line on stderr, where stderr can still take it."""
    if sys.stderr is None:
        return
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)
