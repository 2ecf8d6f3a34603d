"""Named regressions for each class of failure an adversarial user found (the reliability
section of the README): data loss, memory, tracebacks, partial output, leftovers, noise."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import expect_error, make_runner, script_env

from embedcli.cli import app
from embedcli.corpus import textinput, windows
from embedcli.errors import InputTextError
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()
SMALL = ("-d", "4", "--device", "cpu")


# ---------------------------------------------------------------- data loss


def test_output_that_is_the_text_file_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "a.npy"
    text.write_text("hello world, some text", encoding="utf-8")
    before = text.read_bytes()
    expect_error(
        runner.invoke(app, ["embed", "-f", str(text), *SMALL, "-o", str(text)]),
        "is the same file as the input",
    )
    link = tmp_path / "link.npy"
    link.symlink_to(text)
    expect_error(
        runner.invoke(app, ["embed", "-f", str(text), "-t", "2", *SMALL, "-o", str(link)]),
        "is the same file as the input",
    )
    assert text.read_bytes() == before


def test_output_that_is_stdin_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "e.npy"
    text.write_text("hello world, some text", encoding="utf-8")
    with open(text, "rb") as stdin:
        done = subprocess.run(
            ["embedcli", "embed", *SMALL, "-o", str(text)],
            stdin=stdin,
            env=script_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1 and "same file as the input standard input" in done.stderr
    assert text.read_text(encoding="utf-8") == "hello world, some text"


def test_output_that_is_the_checkpoint_is_refused(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    ckpt = tmp_path / "mine.safetensors"
    save_file({"wte.weight": torch.randn(50257, 4), "wpe.weight": torch.randn(8, 4)}, str(ckpt))
    before = ckpt.read_bytes()
    expect_error(
        runner.invoke(app, ["embed", "hi", "--weights", str(ckpt), "-o", str(ckpt)]),
        "is the same file as the input",
    )
    assert ckpt.read_bytes() == before


def test_replacing_a_file_keeps_its_permission_bits(tmp_path: Path) -> None:
    out = tmp_path / "o.npy"
    out.write_bytes(b"old")
    out.chmod(0o600)
    result = runner.invoke(app, ["embed", "hi", *SMALL, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (out.stat().st_mode & 0o777) == 0o600 and np.load(out).shape == (1, 1, 4)


# ---------------------------------------------------------------- memory


def test_report_keeps_tensors_and_json_streams_them() -> None:
    """The tables show 64 positions; nothing converts the whole batch to Python lists."""
    from embedcli.core.config import Overrides
    from embedcli.pipeline.embed import run_embed
    from embedcli.pipeline.sources import embed_source

    config, _ = embed_source("gpt2", Overrides(d_model=4))
    report = run_embed(config, "gpt2", texts=["a b c"], device="cpu").report
    assert isinstance(report.input_embeddings, torch.Tensor)
    data = json.loads(runner.invoke(app, ["embed", "a b c", *SMALL, "--json"]).stdout)
    assert torch.equal(torch.tensor(data["input_embeddings"]), report.input_embeddings)


def test_json_writes_nan_and_infinity_as_null() -> None:
    from embedcli.io.jsonstream import json_chunks

    value = {"m": torch.tensor([[1.0, float("nan")], [float("inf"), -2.0]]), "x": float("nan")}
    assert json.loads("".join(json_chunks(value))) == {"m": [[1.0, None], [None, -2.0]], "x": None}


def test_endless_input_is_refused_before_memory_runs_out() -> None:
    class Endless(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            buffer[:] = b"a" * len(buffer)
            return len(buffer)

    with pytest.raises(InputTextError, match="larger than 5,000,000 bytes"):
        textinput.read_bounded(io.BufferedReader(Endless()), "/dev/zero", limit=5_000_000)


def test_tokenize_of_dev_zero_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textinput, "text_limit", lambda: 10_000_000)
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    expect_error(runner.invoke(app, ["tokenize", "-f", "/dev/zero", "--count"]), "larger than")


def test_stream_without_a_place_to_cut_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "MAX_UNCUT_CHARS", 1000)
    blocks = windows.token_blocks(
        io.BytesIO(b"x" * 5000), get_encoding("gpt2"), allow_special=False, source="t",
        read_bytes=256,
    )  # fmt: skip
    with pytest.raises(InputTextError, match="a run of more than 1,000 characters with no space"):
        list(blocks)


# ---------------------------------------------------------------- tracebacks


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["embed", "hi", "--vocab-size", str(10**30)], "is too large", 2),
        (["inspect-shapes", "-b", str(10**30)], "is too large", 2),
        (["positions", "-d", str(10**30)], "is too large", 2),
        (["stats", "-d", str(10**11)], "need", 1),
        (["neighbors", "hi", "-d", str(10**11)], "need", 1),
        (["positions", "--context-length", str(10**12)], "need", 1),
        (["embed", "--ids", str(2**63), *SMALL], "is out of range for a vocabulary", 1),
        (["broadcast", "1" + "0" * 5000, "3"], "sizes of at most 19 digits", 2),
        (
            ["inspect-shapes", "--d-model", str(2**31 - 1), "--vocab-size", str(2**31 - 1)],
            "table has more bytes than torch can count",
            1,
        ),
        (
            ["inspect-shapes", "-b", str(2**40), "-t", "1024", "-d", str(2**40)],
            "more bytes than torch can count",
            1,
        ),
    ],
)
def test_huge_numbers_are_one_error_line(args: list[str], message: str, code: int) -> None:
    expect_error(runner.invoke(app, args), message, code=code)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.binary(max_size=40),
    read=st.integers(1, 9),
    name=st.sampled_from(["gpt2", "o200k_base"]),
)
def test_streaming_arbitrary_bytes(data: bytes, read: int, name: str) -> None:
    """Ids equal one pass over the decoded text, or the error names the byte and offset that
    bytes.decode reports, whatever the reads' sizes."""
    enc = get_encoding(name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        expected = f"byte 0x{data[exc.start]:02X} at offset {exc.start}"
        with pytest.raises(InputTextError, match=expected):
            list(
                windows.token_blocks(
                    io.BytesIO(data), enc, allow_special=True, source="s", read_bytes=read
                )
            )
        return
    blocks = windows.token_blocks(
        io.BytesIO(data), enc, allow_special=True, source="s", read_bytes=read
    )
    assert [t for block in blocks for t in block] == enc.encode(text, allowed_special="all")


# ---------------------------------------------------------------- partial output, leftovers


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


# ---------------------------------------------------------------- noise


def test_library_warnings_do_not_precede_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from embedcli.pipeline import sources

    def noisy(*args, **kwargs):
        warnings.warn("a torch internal detail", UserWarning, stacklevel=1)
        raise InputTextError("the real reason")

    monkeypatch.setattr(sources, "embed_source", noisy)
    result = runner.invoke(app, ["embed", "hi", *SMALL])
    expect_error(result, "the real reason")
    assert result.stderr == "Error: the real reason\n"


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


@pytest.mark.parametrize(
    "args",
    [
        ["tokenize", "-f", "no\nsuch\rfile\x07"],
        ["project", "--ids-file", "no\nsuch", "-d", "4"],
    ],
)
def test_an_error_naming_a_strange_file_is_still_one_line(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("Error: ") and "no\\nsuch" in result.stderr
