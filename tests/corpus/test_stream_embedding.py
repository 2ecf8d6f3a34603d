"""`embed -t`, streaming: windows streamed to a file equal to embedding them in memory (from a
file or stdin, seeded or with --weights), an interrupted stream leaving no file, its usage errors,
and its progress."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from support.helpers import expect_error, make_runner
from support.windowinputs import STORY, seeded

from embedcli.cli import app
from embedcli.io import outputs
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


@pytest.mark.parametrize(
    ("suffix", "dtype", "stride"),
    [(".npy", "float32", None), (".safetensors", "bfloat16", "3"), (".npy", "float16", "5")],
)
def test_streamed_file_equals_in_memory(tmp_path: Path, suffix: str, dtype: str, stride) -> None:
    text_file = tmp_path / "story.txt"
    text_file.write_text(STORY * 3, encoding="utf-8")
    out = tmp_path / f"out{suffix}"
    args = [
        "embed",
        "-f",
        str(text_file),
        "--seq-len",
        "8",
        "-d",
        "16",
        "--context-length",
        "32",
        "--allow-special",
        "--dtype",
        dtype,
        "-b",
        "4",
        "--output",
        str(out),
        "--json",
    ]
    if stride:
        args += ["--stride", stride]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)

    ids = get_encoding("gpt2").encode(STORY * 3, allowed_special="all")
    step = int(stride or 8)
    starts = range(0, len(ids) - 8 + 1, step)
    token, position = seeded(50257, 16, 32)
    target = getattr(torch, dtype)
    windows = torch.tensor([ids[s : s + 8] for s in starts])
    with torch.no_grad():
        expected = token.weight.to(target)[windows] + position.weight.to(target)[:8]
    written = (
        torch.from_numpy(np.load(out)) if suffix == ".npy" else load_file(out)["input_embeddings"]
    )
    assert written.dtype == target and written.shape == (len(starts), 8, 16)
    assert torch.equal(written, expected)
    assert summary["num_windows"] == len(starts) and summary["num_tokens"] == len(ids)
    assert summary["shape"] == [len(starts), 8, 16]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_stream_from_stdin_with_weights(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    token, position = torch.randn(50257, 4), torch.randn(16, 4)
    ckpt = tmp_path / "m.safetensors"
    save_file({"wte.weight": token, "wpe.weight": position}, str(ckpt))
    out = tmp_path / "o.npy"
    result = runner.invoke(
        app,
        ["embed", "--window", "4", "--weights", str(ckpt), "-o", str(out)],
        input="one two three four five six seven eight",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"wrote {out}: (2,4,4) float32, 2 windows from 8 tokens")
    # The old spelling still works for one release, and says so on stderr.
    assert result.stderr == "Warning: --window is deprecated and will be removed; use --seq-len\n"
    ids = torch.tensor(get_encoding("gpt2").encode("one two three four five six seven eight"))
    expected = token[ids[:8].view(2, 4)] + position[:4]
    assert torch.equal(torch.from_numpy(np.load(out)), expected)


@pytest.mark.parametrize("failure", [KeyboardInterrupt(), OSError(28, "No space left on device")])
def test_interrupted_stream_leaves_no_file(tmp_path: Path, monkeypatch, failure) -> None:
    text_file = tmp_path / "story.txt"
    text_file.write_text(STORY * 20, encoding="utf-8")
    out = tmp_path / "out.npy"
    calls = []
    real = outputs.ArrayStreamWriter.write

    def fail_later(self, block: bytes, rows: int) -> None:
        calls.append(rows)
        if len(calls) == 3:
            raise failure
        real(self, block, rows)

    monkeypatch.setattr(outputs.ArrayStreamWriter, "write", fail_later)
    result = runner.invoke(
        app,
        [
            "embed",
            "-f",
            str(text_file),
            "--seq-len",
            "8",
            "-d",
            "8",
            "-b",
            "2",
            "--allow-special",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == (130 if isinstance(failure, KeyboardInterrupt) else 1)
    assert len(calls) == 3
    assert list(tmp_path.iterdir()) == [text_file]  # no output, no temporary file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-t", "4"], "--seq-len streams to a file: pass -o out.npy"),
        (["-t", "4", "-o", "x.npy", "hi", "there"], "the windows of one text: pass one TEXT"),
        (
            ["-t", "4", "-o", "x.npy", "--ids", "1,2"],
            "--seq-len streams the windows of a text, not --ids",
        ),
        (["--lines", "hi"], "--lines reads the lines of -f FILE or standard input, not TEXT"),
        (["-t", "4", "-o", "x.pt"], "streaming (-t/--seq-len) writes .npy or .safetensors"),
        (["--stride", "2"], "--stride needs --seq-len"),
        (["--pool", "mean"], "--pool needs --lines"),
        (["--lines", "--pool", "max"], "'max' is not one of: none, mean, last"),
        (["--lines", "-t", "4", "-o", "x.npy"], "--lines and --seq-len cannot be combined"),
        (["-t", "4", "-o", "x.npy", "--truncate", "3"], "drop --truncate"),
        (["--lines", "--verify"], "--verify works on a batch of texts, not with --lines"),
        (["-t", "4", "-o", "x.npy", "--similarity"], "--similarity works on a batch of texts"),
        (["--lines", "--pad-id", "3"], "--pad-id works on a batch of texts"),
        (["--lines", "-o", "x.npy"], "--lines writes JSON Lines to standard output"),
    ],
)
def test_stream_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["embed", *args], input="some text here")
    assert result.exit_code in (1, 2), result.output
    assert message in result.stderr, result.stderr


def test_one_text_streams_as_its_file_would(tmp_path: Path) -> None:
    # -t T means T tokens a window in embed as in windows and inspect-shapes: a TEXT is
    # streamed as the same text in a file is (it was refused, naming --lines, never given).
    text = "The keeper counted ships in the harbour at night, one by one."
    (tmp_path / "t.txt").write_text(text, encoding="utf-8")
    base = ["embed", "-t", "4", "-d", "8", "--json"]
    given = runner.invoke(app, [*base, text, "-o", str(tmp_path / "a.npy")])
    read = runner.invoke(app, [*base, "-f", str(tmp_path / "t.txt"), "-o", str(tmp_path / "b.npy")])
    assert given.exit_code == 0 and read.exit_code == 0, given.output + read.output
    assert json.loads(given.stdout)["num_windows"] == json.loads(read.stdout)["num_windows"] > 1
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()


def test_stream_window_beyond_context(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "embed",
            "--seq-len",
            "64",
            "--context-length",
            "32",
            "-d",
            "4",
            "-o",
            str(tmp_path / "x.npy"),
        ],
        input=STORY,
    )
    assert result.exit_code == 1
    assert "--seq-len (64) exceeds the context length (32)" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_stream_non_utf8(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["embed", "-t", "2", "-d", "4", "-o", str(tmp_path / "x.npy")],
        input=b"ok ok \xff ok",
    )
    assert result.exit_code == 1
    assert "standard input is not valid UTF-8 (byte 0xFF at offset 6)" in result.stderr


def test_stream_reports_progress(tmp_path: Path) -> None:
    from embedcli.core.config import EmbedConfig
    from embedcli.pipeline.stream import stream_embed

    class Recorder:
        def __init__(self) -> None:
            self.bytes, self.updates = 0, []

        def advance(self, nbytes: int) -> None:
            self.bytes += nbytes

        def update(self, tokens: int, windows: int) -> None:
            self.updates.append((tokens, windows))

    data = (STORY * 2000).encode()  # over 256 KiB: several blocks, several updates
    recorder = Recorder()
    summary = stream_embed(
        EmbedConfig(d_model=4, context_length=16),
        get_encoding("gpt2"),
        io.BytesIO(data),
        tmp_path / "o.npy",
        source="test",
        window=8,
        stride=8,
        batch_size=4,
        device="cpu",
        allow_special=True,
        progress=recorder,
    )
    assert recorder.bytes == len(data)
    assert recorder.updates[-1] == (summary.num_tokens, summary.num_windows)
    tokens = [t for t, _ in recorder.updates]
    assert tokens == sorted(tokens) and len(recorder.updates) > 1


def test_progress_bar_counts() -> None:
    import io

    from rich.console import Console

    from embedcli.render.progress import StreamProgress

    console = Console(file=io.StringIO(), width=80, force_terminal=True)
    with StreamProgress(100, console) as progress:
        progress.advance(60)
        progress.update(tokens=1234, windows=5)
        assert progress.done == 60 and progress.fraction == 0.6
        assert progress.tokens == 1234 and progress.windows == 5
        line = progress.line(80).plain
    assert "60%" in line and "1,234 tokens" in line and len(line) <= 80


def test_a_text_that_is_not_utf8_is_refused_when_streamed_too(tmp_path: Path) -> None:
    # Its bytes arrive as lone surrogates; streamed, it met text.encode() and a traceback.
    out = tmp_path / "x.npy"
    result = runner.invoke(app, ["embed", "a b \udcff c", "-t", "2", "-o", str(out), "-q"])
    expect_error(result, "text argument 1 is not valid UTF-8", 1)
    assert not out.exists()
