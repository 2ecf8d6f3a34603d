"""`embed --lines`: one JSON record per line, in order, pooled (none, mean, last) as computed
here with torch; CRLF files; a line too long or with an id out of range named, the lines before it
kept; a blank line keeping its record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support.helpers import make_runner
from support.windowinputs import seeded

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


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
