"""Running a case, in process or through the console script, in a fresh folder, under a time and
memory guard, and what the run left (its outcome, and the folder before and after)."""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedcli.cli import app
from support.contract.bounds import CASE_SECONDS, GUARD_BYTES, SCRIPT_GUARD_BYTES
from support.contract.cases import Case
from support.contract.inputs import make_fixtures, make_hub_cache

# ---------------------------------------------------------------- what a run left


@dataclass
class Outcome:
    """What one case did: its exit, its output, and what changed in its folder."""

    exit_code: int | None  # None: it did not finish in time
    stdout: bytes = b""
    stderr: bytes = b""
    exception: BaseException | None = None  # in process: what escaped the command
    seconds: float = 0.0
    peak_rss: int | None = None  # bytes: a subprocess's peak RSS, or the growth in process
    guard: int = GUARD_BYTES  # the address-space limit the case ran under
    new_files: list[str] = field(default_factory=list)
    changed_files: list[str] = field(default_factory=list)  # modified or removed
    temp_files: list[str] = field(default_factory=list)
    stdout_seen: bool = True  # False where stdout was closed, full or cut by head


def snapshot(folder: Path) -> dict[str, str]:
    """{relative path: content hash, 'dir' or 'link -> target'} of everything in ``folder``."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            key = str(path.relative_to(folder))
            if path.is_symlink():
                found[key] = f"link -> {os.readlink(path)}"
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = hashlib.sha1(path.read_bytes()).hexdigest()
    return found


def _holds_output(folder: str, outputs: set[str]) -> bool:
    """True if ``folder`` is on the way to a requested output (made to hold it)."""
    return any(out.startswith(folder + os.sep) for out in outputs)


def _compare(case: Case, before: dict[str, str], after: dict[str, str], outcome: Outcome) -> None:
    outputs = case.outputs()
    inputs = case.inputs()
    for key in sorted(after):
        if Path(key).name.startswith(".") and key.endswith(".tmp"):
            outcome.temp_files.append(key)
        elif key not in before and key not in outputs and not _holds_output(key, outputs):
            outcome.new_files.append(key)
    for key, digest in sorted(before.items()):
        if after.get(key) != digest and (key in inputs or key not in outputs):
            outcome.changed_files.append(key)


# ---------------------------------------------------------------- running a case


class CaseTimeout(BaseException):
    """Raised by the alarm inside a case that runs too long (not an Exception, so no handler
    in the command mistakes it for its own error)."""


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum: int, frame: object) -> None:
        raise CaseTimeout

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _status(field: str) -> int | None:
    """A size from /proc/self/status (VmSize, VmRSS), in bytes; None where there is none."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _rss() -> int | None:
    return _status("VmRSS")


def _high_water() -> int:
    """This process's peak RSS so far, in bytes (Linux counts KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextmanager
def _memory_guard(extra: int) -> Iterator[None]:
    """Limit this process's address space to what it has now plus ``extra``, meanwhile: a case
    that tries to allocate more fails instead of eating the machine."""
    now = _status("VmSize")
    if now is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = now + extra if hard == resource.RLIM_INFINITY else min(now + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextmanager
def _working_folder(folder: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def new_runner() -> Any:
    """A CliRunner that keeps stdout and stderr apart (older Click needs mix_stderr=False)."""
    from typer.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def refuse_network() -> None:
    """No case may reach the network (pytest's conftest does the same for the test suite)."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("the contract fuzzer must not touch the network")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.getaddrinfo = refuse  # type: ignore[assignment]
    socket.create_connection = refuse  # type: ignore[assignment]


class Workspace:
    """Where cases run: pristine input files, a fresh folder a case, private caches."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fixtures = make_fixtures(root / "fixtures")
        self.scratch = root / "cases"
        self.scratch.mkdir(exist_ok=True)
        self.env = {
            "COLUMNS": "100",
            "NO_COLOR": "1",
            "TIKTOKEN_CACHE_DIR": str(root / "tiktoken-cache"),
            "EMBEDCLI_CACHE_DIR": str(root / "embedcli-cache"),
            # hf:org/tiny is cached; --download goes to a port nothing listens on (never out)
            "HF_HUB_CACHE": str(make_hub_cache(self.fixtures, root / "hub")),
            "HF_HOME": str(root / "hf-home"),
            "HF_ENDPOINT": "http://127.0.0.1:9",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            # ollama:tiny (tiny.gguf with a template, params and a license) and ollama:hostile
            # (a template of control characters and markup, params that are not JSON, a
            # license whose blob is gone)
            "OLLAMA_MODELS": str(self.fixtures / "ollama"),
        }
        self.runner = new_runner()
        self._pristine: dict[str, str] | None = None

    def pristine(self, folder: Path) -> dict[str, str]:
        """What every fresh copy of the inputs holds, read from the first one: each copy is
        made the same way, so its snapshot before the case is this one (read once, not once a
        case; the snapshot after the case is still read in full)."""
        if self._pristine is None:
            self._pristine = snapshot(folder)
        return self._pristine

    @contextmanager
    def folder(self) -> Iterator[Path]:
        """A fresh copy of the input files, removed afterwards."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(dir=self.scratch))
        try:
            shutil.copytree(self.fixtures, folder, dirs_exist_ok=True)
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def run_in_process(self, case: Case) -> Outcome:
        """Run ``case`` through CliRunner in this process (its stdout is a pipe, never cut)."""
        assert case.shell == "pipe", "only a subprocess can have a closed or full stdout"
        with self.folder() as folder:
            stdin = (folder / case.stdin).read_bytes() if case.stdin else None
            before = self.pristine(folder)
            rss, high_water = _rss(), _high_water()
            start = time.perf_counter()
            try:
                with _working_folder(folder), _memory_guard(GUARD_BYTES), _alarm(CASE_SECONDS):
                    result = self.runner.invoke(
                        app, [case.command, *case.args], input=stdin, env=self.env
                    )
            except CaseTimeout:
                outcome = Outcome(exit_code=None, seconds=time.perf_counter() - start)
            else:
                escaped = result.exception
                outcome = Outcome(
                    exit_code=result.exit_code,
                    stdout=result.stdout_bytes,
                    stderr=result.stderr_bytes or b"",
                    exception=None if isinstance(escaped, SystemExit) else escaped,
                    seconds=time.perf_counter() - start,
                )
            if rss is not None and _high_water() > high_water:  # a new peak, made by this case
                outcome.peak_rss = _high_water() - rss
            _compare(case, before, snapshot(folder), outcome)
        return outcome

    def script_env(self) -> dict[str, str]:
        env = {**os.environ, **self.env}
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        return env

    def run_script(self, case: Case) -> Outcome:
        """Run ``case`` as the user would: the console script, under bash, real pipes."""
        with self.folder() as folder:
            before = self.pristine(folder)
            line = f"ulimit -v {SCRIPT_GUARD_BYTES // 1024}; {case.line()}"
            start = time.perf_counter()
            process = subprocess.Popen(
                ["bash", "-c", line],
                cwd=folder,
                env=self.script_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            streams: dict[str, bytes] = {}
            readers = [
                threading.Thread(target=lambda n=n, s=s: streams.__setitem__(n, s.read()))
                for n, s in (("out", process.stdout), ("err", process.stderr))
            ]
            for reader in readers:
                reader.start()
            status, usage = _wait(process, CASE_SECONDS)
            for reader in readers:
                reader.join()
            process.stdout.close()
            process.stderr.close()
            outcome = Outcome(
                exit_code=None if status is None else os.waitstatus_to_exitcode(status),
                stdout=streams.get("out", b""),
                stderr=streams.get("err", b""),
                seconds=time.perf_counter() - start,
                peak_rss=usage.ru_maxrss * 1024,  # KiB on Linux
                guard=SCRIPT_GUARD_BYTES,
                stdout_seen=case.shell == "pipe",
            )
            _compare(case, before, snapshot(folder), outcome)
        return outcome


def _wait(process: subprocess.Popen, seconds: float) -> tuple[int | None, Any]:
    """(wait status or None on a timeout, resource usage of the process and its children)."""
    deadline = time.monotonic() + seconds
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            _, _, usage = os.wait4(process.pid, 0)
            process.returncode = -9
            return None, usage
        time.sleep(0.01)
