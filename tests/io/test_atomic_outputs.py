"""Outputs are all or nothing: a file is staged and renamed into place (keeping the permission bits
of the file it replaces), and a signal, a full disk or an unwritable folder leaves no partial
file, no temporary file and no report of a write that did not happen; a signal that comes while
the renames run is delivered after them, and says what is in place."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from support.helpers import expect_error, make_runner, script_env

from embedcli.cli import app
from embedcli.io import outputs

runner = make_runner()


SMALL = ("-d", "4", "--device", "cpu")


def test_replacing_a_file_keeps_its_permission_bits(tmp_path: Path) -> None:
    out = tmp_path / "o.npy"
    out.write_bytes(b"old")
    out.chmod(0o600)
    result = runner.invoke(app, ["embed", "hi", *SMALL, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (out.stat().st_mode & 0o777) == 0o600 and np.load(out).shape == (1, 1, 4)


def test_unwritable_output_prints_no_report(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    out = folder / "o.npy"

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    import embedcli.io.outputs

    original = embedcli.io.outputs.atomic_write
    try:
        embedcli.io.outputs.atomic_write = refuse
        result = runner.invoke(app, ["embed", "hi", *SMALL, "-o", str(out), "--json"])
    finally:
        embedcli.io.outputs.atomic_write = original
    expect_error(result, "No space left on device")


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [(signal.SIGTERM, 143, "Terminated"), (signal.SIGHUP, 129, "Hung up")],
)
def test_sigterm_while_streaming_leaves_no_file(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    out = tmp_path / "o.npy"
    process = subprocess.Popen(
        ["embedcli", "embed", "-t", "4", *SMALL, "-q", "-o", str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=script_env(tmp_path),
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),  # not nohup's SIG_IGN
    )
    process.stdin.write(b"one two three four five six seven eight nine ten " * 2000)
    process.stdin.flush()
    for _ in range(100):  # until the temporary output exists: the stream is being written
        if any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
            break
        time.sleep(0.1)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert stderr.decode().startswith(f"{said}: no output file was written")
    assert [p.name for p in tmp_path.iterdir() if p.name != "tiktoken-cache"] in (
        [],
        ["embedcli-cache"],
    )


def test_a_full_disk_while_streaming_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills mid-stream, and closing the file (a flush) fails as well: the error is the
    write's, and no temporary file is left behind."""
    import embedcli.io.outputs as outputs

    real_fdopen = os.fdopen

    class FullDisk(io.BufferedWriter):
        written = 0

        def write(self, data) -> int:
            FullDisk.written += len(data)
            if FullDisk.written > 50_000:
                raise OSError(28, "No space left on device")
            return super().write(data)

        def close(self) -> None:
            super().close()
            raise OSError(28, "No space left on device (on close)")

    def fdopen(fd: int, mode: str = "r", *args, **kwargs):
        return FullDisk(real_fdopen(fd, mode, buffering=0))

    monkeypatch.setattr(outputs.os, "fdopen", fdopen)
    text = tmp_path / "t.txt"
    text.write_text("one two three four five six seven eight " * 3000, encoding="utf-8")
    result = runner.invoke(
        app, ["embed", "-f", str(text), "-t", "8", *SMALL, "-q", "-o", str(tmp_path / "o.npy")]
    )
    expect_error(result, "No space left on device")
    assert "on close" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.txt"]


def default_signals() -> None:
    """In the child: Ctrl-C and SIGHUP as a terminal's foreground job has them (a test run under
    nohup, or in a shell's background, ignores them, and a child would inherit that)."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def test_signal_after_the_output_is_in_place_says_so(tmp_path: Path) -> None:
    """A Ctrl-C that comes while a big --json is still being printed, after -o's file was renamed
    into place, says that file is whole: not "no output file was written"."""
    out = tmp_path / "o3.npy"
    out.write_text("OLD\n")
    text = " ".join(["hello world"] * 200)
    process = subprocess.Popen(
        ["embedcli", "embed", text, "-d", "768", "--device", "cpu", "-o", str(out), "--json"],
        stdout=subprocess.PIPE,  # never read until the end: the JSON fills the pipe and waits
        stderr=subprocess.PIPE,
        env=script_env(tmp_path),
        cwd=tmp_path,
        preexec_fn=default_signals,
    )
    for _ in range(600):  # until the new array is in place
        if out.read_bytes()[:6] == b"\x93NUMPY":
            break
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    said = stderr.decode()
    assert said.startswith(f"Interrupted: {out} had been written whole before the signal"), said
    assert "no output file was written or changed" not in said
    assert np.load(out).shape == (1, 400, 768)


def test_signal_during_the_renames_is_delivered_after_them(tmp_path: Path) -> None:
    """Staged files are renamed as one step: a signal in the middle waits, then is delivered
    (it used to be dropped), and the record says every file is in place."""
    outputs.WRITTEN.reset()
    got: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda s, _: got.append(s))
    started = signal.signal(signal.SIGINT, signal.default_int_handler)  # not SIG_IGN (nohup)
    try:
        stage = outputs.Staging()
        for name in ("a.bin", "b.bin"):
            stage.open(tmp_path / name).write(name.encode())
        real = os.replace

        def replace_then_signal(src: object, dst: object) -> None:
            real(src, dst)
            signal.raise_signal(signal.SIGINT)

        os.replace = replace_then_signal
        try:
            with pytest.raises(KeyboardInterrupt):
                stage.commit()
        finally:
            os.replace = real
    finally:
        signal.signal(signal.SIGUSR1, previous)
        signal.signal(signal.SIGINT, started)
    assert [p.name for p in outputs.WRITTEN.paths] == ["a.bin", "b.bin"]
    assert (tmp_path / "b.bin").read_bytes() == b"b.bin"


def test_cache_entries_are_not_called_outputs(tmp_path: Path) -> None:
    outputs.WRITTEN.reset()
    with outputs.atomic_write(tmp_path / "entry", record=False) as handle:
        handle.write(b"x")
    assert outputs.WRITTEN.paths == []


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Every temporary output file is /dev/full: the kernel's own ENOSPC on the first write."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    real = tempfile.mkstemp

    def on_full_disk(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, name = real(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(outputs.tempfile, "mkstemp", on_full_disk)
    return tmp_path


@pytest.mark.parametrize("suffix", [".npy", ".pt", ".safetensors"])
def test_full_disk_is_one_line_for_every_format(full_disk: Path, suffix: str) -> None:
    out = full_disk / f"x{suffix}"
    out.write_bytes(b"OLD")
    text = " ".join(["Hello world"] * 50)  # 400 KB: more than one buffer's worth
    result = runner.invoke(app, ["embed", text, "-d", "1024", "--device", "cpu", "-o", str(out)])
    expect_error(result, f"cannot write {out}: No space left on device")
    assert "requested and" not in result.stderr and "enforce fail" not in result.stderr
    assert out.read_bytes() == b"OLD"
    assert [p.name for p in full_disk.iterdir()] == [out.name]


def test_full_disk_while_streaming(full_disk: Path) -> None:
    out = full_disk / "s.npy"
    result = runner.invoke(
        app, ["embed", "-t", "4", *SMALL, "-q", "-o", str(out)], input="a b " * 50
    )
    expect_error(result, f"cannot write {out}: No space left on device")
    assert not out.exists()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 256 KiB file system (tmpfs), where a write runs out part way: NumPy's and torch's
    own wording of that ("N requested and M written", "enforce fail") is what users met."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.parametrize("suffix", [".npy", ".pt", ".safetensors"])
def test_a_disk_that_fills_part_way(small_disk: Path, suffix: str) -> None:
    out = small_disk / f"x{suffix}"
    out.write_bytes(b"OLD")
    text = " ".join(["Hello world"] * 50)  # 400 KB of float32
    result = runner.invoke(app, ["embed", text, "-d", "1024", "--device", "cpu", "-o", str(out)])
    expect_error(result, f"cannot write {out}: No space left on device")
    assert out.read_bytes() == b"OLD"
    assert [p.name for p in small_disk.iterdir()] == [out.name]
