"""Sliding windows: `embedcli windows` and its batches equal the book's loader (LLMs from
scratch's GPTDatasetV1 with DataLoader(shuffle=False)), its counts as torch counts them, its table
and its errors; and the windows of a stream (token blocks fed to StreamWindows) equal those of one
pass over the text, whatever the reads, with a bounded buffer."""

from __future__ import annotations

import io
import json
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import make_runner
from support.windowinputs import STORY

from embedcli.cli import app
from embedcli.corpus.windows import StreamWindows, stream_windows, token_blocks
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


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
