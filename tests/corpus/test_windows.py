"""Sliding windows, streaming embedding to a file, and line-by-line embedding."""

from __future__ import annotations

import io
import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file
from support.helpers import make_runner
from torch import nn

from embedcli.cli import app
from embedcli.corpus.windows import StreamWindows, stream_windows, token_blocks
from embedcli.io import outputs
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()

STORY = (
    "The keeper of the lighthouse counted ships the way other people count sheep. One, a "
    "trawler; two, a ferry; three, a yacht. <|endoftext|> By midnight the sea was empty, and "
    "the lamp kept turning for an audience of gulls. She wrote every ship in a ledger."
)


def book_loader(
    ids: list[int], max_length: int, stride: int, batch_size: int, drop_last: bool
) -> list[tuple[list[list[int]], list[list[int]]]]:
    """The LLM-from-scratch GPTDatasetV1 + DataLoader(shuffle=False), written out plainly."""
    inputs, targets = [], []
    for i in range(0, len(ids) - max_length, stride):
        inputs.append(ids[i : i + max_length])
        targets.append(ids[i + 1 : i + max_length + 1])
    out = []
    for b in range(0, len(inputs), batch_size):
        x, y = inputs[b : b + batch_size], targets[b : b + batch_size]
        if len(x) < batch_size and drop_last:
            break
        out.append((x, y))
    return out


def run_json(*args: str, input: str | bytes | None = None) -> dict:
    result = runner.invoke(app, [*args, "--json"], input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("max_length", "stride", "batch_size", "keep_last"),
    [
        (4, 4, 8, False),
        (4, 1, 8, False),
        (4, 1, 8, True),
        (8, 3, 2, False),
        (8, 3, 2, True),
        (16, 16, 1, False),
        (2, 5, 3, True),
    ],
)
def test_windows_equal_the_book_loader(max_length, stride, batch_size, keep_last) -> None:
    ids = get_encoding("gpt2").encode(STORY, allowed_special="all")
    expected = book_loader(ids, max_length, stride, batch_size, drop_last=not keep_last)
    args = [
        "windows",
        STORY,
        "--allow-special",
        "-t",
        str(max_length),
        "--stride",
        str(stride),
        "-b",
        str(batch_size),
        "--limit",
        "1000",
    ] + (["--keep-last"] if keep_last else [])
    data = run_json(*args)
    assert [(b["inputs"], b["targets"]) for b in data["batches"]] == expected
    assert data["num_tokens"] == len(ids)
    # As torch counts them: len(dataset) is every window with a target, len(loader) the batches.
    every = len(range(0, len(ids) - max_length, stride))
    batched = sum(len(x) for x, _ in expected)
    assert data["num_windows"] == every
    assert data["num_batches"] == len(expected)
    assert data["dropped_windows"] == every - batched
    last_start = (batched - 1) * stride
    assert data["dropped_tokens"] == len(ids) - (last_start + max_length + 1)

    jsonl = runner.invoke(app, [a for a in args if a not in ("--limit", "1000")] + ["--jsonl"])
    assert jsonl.exit_code == 0, jsonl.output
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [r["input_ids"] for r in rows] == [x for xs, _ in expected for x in xs]
    assert [r["target_ids"] for r in rows] == [y for _, ys in expected for y in ys]
    assert [r["index"] for r in rows] == list(range(len(rows)))
    assert [r["start"] for r in rows] == [i * stride for i in range(len(rows))]


def test_special_tokens_between_documents_need_allow_special() -> None:
    """As everywhere: <|endoftext|> in the text is an error unless --allow-special (the book's
    allowed_special={"<|endoftext|>"})."""
    data = run_json("windows", STORY, "-t", "40", "-b", "1", "--allow-special")
    assert 50256 in data["batches"][0]["inputs"][0]
    result = runner.invoke(app, ["windows", STORY, "-t", "40", "-b", "1"])
    assert result.exit_code == 1 and "pass --allow-special" in result.stderr


def test_book_chapter_2_first_batch() -> None:
    """The verdict's first window, as printed in the book (tokens 40 367 2885 1464)."""
    text = "I HAD always thought Jack Gisburn rather a cheap genius"
    data = run_json("windows", text, "--seq-len", "4", "--stride", "1", "-b", "1")
    assert data["batches"][0] == {
        "inputs": [[40, 367, 2885, 1464]],
        "targets": [[367, 2885, 1464, 1807]],
    }


def test_windows_table_shows_the_shift() -> None:
    result = runner.invoke(app, ["windows", STORY, "-t", "4", "-b", "2", "--allow-special"])
    assert result.exit_code == 0, result.output
    assert "inputs (x) and targets (y = x shifted by one)" in result.stdout
    assert "tokens at the end are in no batched window" in result.stdout
    plan = json.loads(
        runner.invoke(
            app, ["windows", STORY, "-t", "4", "-b", "4", "--json", "--allow-special"]
        ).stdout
    )
    shown = runner.invoke(app, ["windows", STORY, "-t", "4", "-b", "4", "--allow-special"]).stdout
    assert plan["dropped_windows"] > 0
    dropped = plan["dropped_windows"]
    assert f"drop_last leaves out the last {dropped} window" in " ".join(shown.split())
    assert "--keep-last keeps" in shown


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["a b c", "-t", "4"], "too few for one window", 1),
        (["a b c d e f", "-t", "2", "-b", "8"], "fewer than one batch of 8", 1),
        ([STORY, "--stride", "0"], "'--stride': 0 is not in the range x>=1", 2),
        ([STORY, "--seq-len", "0"], "'-t' / '--seq-len': 0 is not in the range x>=1", 2),
        ([STORY, "--max-length", "0"], "'--max-length': 0 is not in the range x>=1", 2),
        ([STORY, "--json", "--jsonl"], "--json and --jsonl cannot be combined", 2),
    ],
)
def test_windows_errors(args: list[str], message: str, code: int) -> None:
    result = runner.invoke(app, ["windows", *args])
    assert result.exit_code == code, result.output
    assert message in result.stderr


# ---------------------------------------------------------------- streaming


ADVERSARIAL = [
    "a",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "don't",
    "日本語",
    "😀",
    "é",
    ".",
    "12345",
    " word",
    "<|endoftext|>",
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(st.sampled_from(ADVERSARIAL), max_size=60), read_bytes=st.integers(1, 9))
def test_token_blocks_equal_one_pass(pieces: list[str], read_bytes: int) -> None:
    text = "".join(pieces)
    enc = get_encoding("cl100k_base")
    blocks = token_blocks(
        io.BytesIO(text.encode()), enc, allow_special=True, source="test", read_bytes=read_bytes
    )
    assert [t for block in blocks for t in block] == enc.encode(text, allowed_special="all")


@given(
    ids=st.lists(st.integers(0, 99), max_size=50),
    cuts=st.lists(st.integers(0, 50)),
    length=st.integers(1, 6),
    stride=st.integers(1, 6),
)
def test_stream_windows_equal_slicing(ids, cuts, length, stride) -> None:
    edges = sorted({0, len(ids), *(c for c in cuts if c < len(ids))})
    blocks = [ids[a:b] for a, b in pairwise(edges)]
    expected = [ids[i : i + length] for i in range(0, len(ids) - length + 1, stride)]
    assert list(stream_windows(blocks, length, stride)) == expected
    # Fed block by block, the buffer never holds more than a window, a stride and one block.
    windows, got = StreamWindows(length, stride), []
    for block in blocks:
        got += windows.feed(block)
        assert len(windows._buffer) <= length + stride + len(block)
        assert len(windows._buffer) < length  # what is left cannot make a window yet
    assert got == expected


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.binary(max_size=60),
    read=st.integers(1, 9),
    name=st.sampled_from(["gpt2", "o200k_base"]),
    length=st.integers(1, 5),
    stride=st.integers(1, 5),
)
def test_streaming_arbitrary_bytes_into_windows(
    data: bytes, read: int, name: str, length: int, stride: int
) -> None:
    """Reads of 1 to 9 bytes: the windows are those of one pass over the decoded text, or the
    error names the byte and offset that bytes.decode reports; the buffer stays bounded."""
    from embedcli.errors import InputTextError

    enc = get_encoding(name)
    blocks = token_blocks(io.BytesIO(data), enc, allow_special=True, source="s", read_bytes=read)
    windows, got = StreamWindows(length, stride), []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        with pytest.raises(
            InputTextError, match=f"byte 0x{data[exc.start]:02X} at offset {exc.start}\\)"
        ):
            for block in blocks:
                got += windows.feed(block)
        return
    for block in blocks:
        got += windows.feed(block)
        assert len(windows._buffer) <= length + stride + len(block)
    ids = enc.encode(text, allowed_special="all")
    assert got == [ids[i : i + length] for i in range(0, len(ids) - length + 1, stride)]


def seeded(vocab: int, d: int, context: int) -> tuple[nn.Embedding, nn.Embedding]:
    torch.manual_seed(123)
    return nn.Embedding(vocab, d), nn.Embedding(context, d)


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
        (["-t", "4", "-o", "x.npy", "hi"], "read -f FILE or standard input"),
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


# ---------------------------------------------------------------- --lines


LINES = "Hello, world!\nThe second line\n\n\tlast one without newline"


@pytest.mark.parametrize("pool", ["none", "mean", "last"])
def test_lines_in_order_with_pooling(pool: str) -> None:
    result = runner.invoke(
        app, ["embed", "--lines", "--pool", pool, "-d", "8", "--device", "cpu"], input=LINES
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    texts = LINES.split("\n")
    assert [r["line"] for r in records] == [1, 2, 3, 4]
    assert [r["text"] for r in records] == texts
    token, position = seeded(50257, 8, 1024)
    for record, text in zip(records, texts, strict=True):
        ids = get_encoding("gpt2").encode(text)
        assert record["input_ids"] == ids
        if not ids:
            assert record["input_embeddings"] == ([] if pool == "none" else None)
            continue
        with torch.no_grad():
            full = token(torch.tensor(ids)) + position(torch.arange(len(ids)))  # (T, d)
        expected = {"none": full, "mean": full.mean(dim=0), "last": full[-1]}[pool]
        assert torch.allclose(torch.tensor(record["input_embeddings"]), expected, atol=1e-6)


def test_lines_from_a_file_with_crlf(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    result = runner.invoke(app, ["embed", "--lines", "-f", str(path), "-d", "4", "--pool", "last"])
    assert [json.loads(x)["text"] for x in result.stdout.splitlines()] == ["one", "two"]


def test_lines_too_long_names_the_line() -> None:
    result = runner.invoke(
        app,
        ["embed", "--lines", "-d", "4", "--context-length", "3"],
        input="a b\none two three four\n",
    )
    assert result.exit_code == 1
    assert "line 2: length (4) exceeds the context length (3)" in result.stderr
    assert json.loads(result.stdout.splitlines()[0])["line"] == 1
    truncated = runner.invoke(
        app,
        ["embed", "--lines", "-d", "4", "--context-length", "3", "--truncate-to-context"],
        input="a b\none two three four\n",
    )
    assert len(json.loads(truncated.stdout.splitlines()[1])["input_ids"]) == 3
    cut = runner.invoke(
        app,
        ["embed", "--lines", "-d", "4", "--context-length", "3", "--truncate", "2"],
        input="a b\none two three four\n",
    )
    assert [len(json.loads(line)["input_ids"]) for line in cut.stdout.splitlines()] == [2, 2]


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


SMALL = ("-d", "4", "--device", "cpu")


def test_lines_name_the_line_of_an_id_out_of_range() -> None:
    result = runner.invoke(
        app, ["embed", "--lines", *SMALL, "--vocab-size", "10000"], input="hi\nhello\n"
    )
    assert result.exit_code == 1, result.output
    said = "Error: line 2: token id 31373 (position 0) is out of range for a vocabulary of 10000"
    assert result.stderr.startswith(said), result.stderr
    assert [json.loads(x)["line"] for x in result.stdout.splitlines()] == [1]  # streamed, whole


@pytest.mark.parametrize(("pool", "blank"), [("none", []), ("mean", None), ("last", None)])
def test_a_blank_line_keeps_its_record(pool: str, blank: object) -> None:
    result = runner.invoke(app, ["embed", "--lines", "--pool", pool, *SMALL], input="hi\n\nyo\n")
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert (records[1]["input_ids"], records[1]["input_embeddings"]) == ([], blank)
    assert records[0]["input_embeddings"] is not None
