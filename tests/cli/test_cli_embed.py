"""`embedcli embed` through the real CLI: the main job, every flag that shapes it, and the JSON
contract, each value against torch's own nn.Embedding seeded the same way. Its inputs and output
files are test_cli_embed_files.py's, its refusals test_cli_embed_errors.py's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from support.embedruns import SMALL, embed, embed_json
from support.helpers import expect_error
from torch import nn


def recipe(vocab: int, d: int, context: int, seed: int) -> tuple[nn.Embedding, nn.Embedding]:
    torch.manual_seed(seed)
    return nn.Embedding(vocab, d), nn.Embedding(context, d)


# ---------------------------------------------------------------- the main job


def test_table_output_shows_every_step() -> None:
    result = embed("Hello, world!", *SMALL)
    assert result.exit_code == 0, result.output
    out = result.stdout
    for text in (
        "· gpt2 ·",
        "15496",
        "␣world",
        "token_embeddings",
        "position_embeddings",
        "input_embeddings",
        "(1,4,8)",
        "(4,8) → (1,4,8)",
        "1 (padded)",
        "result: (1,4,8)",
        "Tokens and vectors, first 4 of 8 dimensions",
        "= input",
    ):
        assert text in out, text


def test_table_golden(golden) -> None:
    result = embed("Hello, world!", "Hi", *SMALL, "--show", "3")
    assert result.exit_code == 0, result.output
    golden("embed_hello_batch.txt", result.stdout)


def test_json_contract_and_values() -> None:
    data = embed_json("Hello, world!", *SMALL)
    assert data["config"] == {
        "vocab_size": 50257,
        "d_model": 8,
        "context_length": 16,
        "positional": "learned",
        "seed": 123,
        "dtype": "float32",
        "device": "cpu",
        "requested_device": "cpu",
        "encoding": "gpt2",
        "pad_id": 50256,
        "weights": None,
    }
    assert data["input_ids"] == [[15496, 11, 995, 0]]
    assert data["attention_mask"] == [[1, 1, 1, 1]]
    assert [[t["piece"] for t in seq] for seq in data["tokens"]] == [["Hello", ",", " world", "!"]]
    assert data["tokens"][0][2]["bytes"] == b" world".hex()
    assert [s["name"] for s in data["steps"]] == [
        "input_ids",
        "token_embeddings",
        "position_ids",
        "position_embeddings",
        "input_embeddings",
    ]
    assert [s["shape"] for s in data["steps"]] == [[1, 4], [1, 4, 8], [4], [4, 8], [1, 4, 8]]
    assert {s["device"] for s in data["steps"]} == {"cpu"}
    assert data["broadcast"]["aligned"] == [[1, 4, 8], [1, 4, 8]]
    assert data["broadcast"]["result"] == [1, 4, 8]
    assert data["verify"] is None

    token, position = recipe(50257, 8, 16, 123)
    ids = torch.tensor(data["input_ids"])
    tok = token(ids)
    pos = position(torch.arange(4))
    assert torch.equal(torch.tensor(data["token_embeddings"]), tok)
    assert torch.equal(torch.tensor(data["position_embeddings"]), pos)
    assert torch.equal(torch.tensor(data["input_embeddings"]), tok + pos)


def test_default_config_is_gpt2_small() -> None:
    data = embed_json("hi", "--device", "cpu")
    cfg = data["config"]
    assert (cfg["vocab_size"], cfg["d_model"], cfg["context_length"]) == (50257, 768, 1024)
    assert (cfg["seed"], cfg["positional"], cfg["dtype"]) == (123, "learned", "float32")
    assert np.array(data["input_embeddings"]).shape == (1, 1, 768)


def torch_says_auto() -> str:
    """What --device auto must pick, from what torch reports (CUDA, then MPS, then the CPU)."""
    if torch.cuda.is_available():
        return "cuda:0"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def test_auto_device_is_reported_resolved() -> None:
    cfg = embed_json("hi", "-d", "4")["config"]
    assert cfg["requested_device"] == "auto"
    assert cfg["device"] == torch_says_auto()


def test_batch_is_right_padded_with_end_of_text() -> None:
    data = embed_json("Hello, world!", "Hi", *SMALL)
    assert data["input_ids"] == [[15496, 11, 995, 0], [17250, 50256, 50256, 50256]]
    assert data["attention_mask"] == [[1, 1, 1, 1], [1, 0, 0, 0]]
    assert [t["pad"] for t in data["tokens"][1]] == [False, True, True, True]
    assert np.array(data["input_embeddings"]).shape == (2, 4, 8)
    assert data["broadcast"]["axes"][0] == {
        "axis": -3,
        "sizes": [2, 1],
        "result": 2,
        "rule": "stretch",
    }
    # The same position vector is added to every sequence of the batch.
    emb = np.array(data["input_embeddings"]) - np.array(data["token_embeddings"])
    np.testing.assert_allclose(emb[0], emb[1], atol=1e-6)


def test_pad_id() -> None:
    data = embed_json("Hello, world!", "Hi", *SMALL, "--pad-id", "0")
    assert data["input_ids"][1] == [17250, 0, 0, 0]
    assert data["config"]["pad_id"] == 0
    expect_error(
        embed("Hello, world!", "Hi", *SMALL, "--pad-id", "60000"),
        "--pad-id 60000 is outside the vocabulary of 50257",
    )


def test_ids_instead_of_text() -> None:
    data = embed_json("--ids", "2,3,5,1", "--ids", "7 8", *SMALL)
    assert data["input_ids"] == [[2, 3, 5, 1], [7, 8, 50256, 50256]]
    assert data["tokens"][0][0]["piece"] == "#"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1,x", "'1,x': 'x' is not a token id"),
        (",", "'--ids': ',': an item between separators is empty"),
    ],
)
def test_bad_ids_are_usage_errors(value: str, message: str) -> None:
    expect_error(embed("--ids", value, *SMALL), message, code=2)


def test_text_and_ids_together_is_a_usage_error() -> None:
    expect_error(embed("hi", "--ids", "1", *SMALL), "pass only one of TEXT and --ids", code=2)
    expect_error(embed("hi", "-f", "x.txt", *SMALL), "pass only one of TEXT and --file", code=2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--ids", "1,50257"],
            "token id 50257 (sequence 0, position 1) is out of range for a vocabulary of 50257",
        ),
        (
            ["hi", "--vocab-size", "100"],
            "token id 5303 (sequence 0, position 0) is out of range for a vocabulary of 100",
        ),
    ],
)
def test_id_range_errors(args: list[str], message: str) -> None:
    expect_error(embed(*args, *SMALL), message)


def test_a_negative_id_is_named_before_anything_runs() -> None:
    expect_error(embed("--ids", "-1,2", *SMALL), "'-1' is negative: token ids start at 0", code=2)


@pytest.mark.parametrize(
    ("args", "name", "n_vocab", "ids"),
    [
        (["-e", "o200k_base"], "o200k_base", 200019, [13225, 11, 2375, 0]),
        (["--encoding", "cl100k_base"], "cl100k_base", 100277, [9906, 11, 1917, 0]),
        (["-m", "gpt-4o"], "o200k_base", 200019, [13225, 11, 2375, 0]),
        (["--model", "gpt2"], "gpt2", 50257, [15496, 11, 995, 0]),
    ],
)
def test_encoding_and_model(args: list[str], name: str, n_vocab: int, ids: list[int]) -> None:
    data = embed_json("Hello, world!", *args, *SMALL)
    assert data["config"]["encoding"] == name
    assert data["config"]["vocab_size"] == n_vocab
    assert data["input_ids"] == [ids]


def test_vocab_size_d_model_context_length() -> None:
    data = embed_json(
        "--ids",
        "1,2,3",
        "--vocab-size",
        "10",
        "-d",
        "5",
        "--context-length",
        "3",
        "--device",
        "cpu",
    )
    token, position = recipe(10, 5, 3, 123)
    expected = token(torch.tensor([[1, 2, 3]])) + position(torch.arange(3))
    assert torch.equal(torch.tensor(data["input_embeddings"]), expected)


def test_positional_none() -> None:
    data = embed_json("Hello, world!", *SMALL, "--positional", "none")
    assert data["position_embeddings"] is None
    assert data["broadcast"] is None
    assert data["input_embeddings"] == data["token_embeddings"]
    assert [s["name"] for s in data["steps"]] == [
        "input_ids",
        "token_embeddings",
        "input_embeddings",
    ]
    table = embed("Hello, world!", *SMALL, "--positional", "none")
    assert "positional none: nothing is added" in table.stdout


def test_seed_reproducible_and_distinct() -> None:
    first = embed_json("hi", *SMALL, "--seed", "5")["input_embeddings"]
    again = embed_json("hi", *SMALL, "--seed", "5")["input_embeddings"]
    other = embed_json("hi", *SMALL, "--seed", "6")["input_embeddings"]
    assert first == again
    assert first != other


@pytest.mark.parametrize(
    ("flag", "dtype"),
    [("float16", torch.float16), ("bf16", torch.bfloat16), ("float32", torch.float32)],
)
def test_dtypes(flag: str, dtype: torch.dtype) -> None:
    data = embed_json("Hello, world!", *SMALL, "--dtype", flag)
    name = str(dtype).removeprefix("torch.")
    assert data["config"]["dtype"] == name
    assert {s["dtype"] for s in data["steps"] if "embeddings" in s["name"]} == {name}
    token, position = recipe(50257, 8, 16, 123)
    ids = torch.tensor(data["input_ids"])
    expected = token.weight.to(dtype)[ids] + position.weight.to(dtype)[:4]
    assert torch.equal(torch.tensor(data["input_embeddings"]), expected.float())


def test_sequence_too_long_and_truncate() -> None:
    expect_error(
        embed("Hello, world!", *SMALL[:2], "--context-length", "3", "--device", "cpu"),
        "sequence length (4) exceeds the context length (3); pass -t/--seq-len N with -o",
    )
    small = ("-d", "8", "--context-length", "3", "--device", "cpu")
    data = embed_json("Hello, world!", "Hi", *small, "--truncate-to-context")
    assert data["input_ids"] == [[15496, 11, 995], [17250, 50256, 50256]]
    assert data["truncated"] == [1, 0]
    table = embed("Hello, world!", *small, "--truncate-to-context")
    assert "dropped 1 token from the end of the sequence" in table.stdout


def test_truncate_n_cuts_to_n_tokens_and_never_becomes_a_text() -> None:
    """`embed "Hello" --truncate 12` once made "12" a second text: N is always the cut."""
    data = embed_json("Hello, world!", *SMALL, "--truncate", "2")
    assert data["input_ids"] == [[15496, 11]] and data["truncated"] == [2]
    data = embed_json("Hello", *SMALL, "--truncate", "12")
    assert data["input_ids"] == [[15496]]  # one text, nothing cut
    expect_error(embed("Hello", *SMALL, "--truncate"), "requires an argument", code=2)
    expect_error(embed("--truncate", "Hello", *SMALL), "is not a valid int", code=2)
    expect_error(
        embed("Hello", *SMALL, "--truncate", "99", "--context-length", "8"),
        "--truncate (99) exceeds the context length (8)",
    )
    expect_error(
        embed("Hello", *SMALL, "--truncate", "2", "--truncate-to-context"),
        "pass --truncate N or --truncate-to-context, not both",
        code=2,
    )


def test_batch_names_the_sequence_that_is_too_long() -> None:
    expect_error(
        embed("a", "Hello, world!", "-d", "4", "--context-length", "3", "--device", "cpu"),
        "sequence 1: length (4) exceeds the context length (3)",
    )


def test_special_tokens() -> None:
    expect_error(
        embed("a<|endoftext|>b", *SMALL),
        "the text contains the special token <|endoftext|>; pass --allow-special",
    )
    data = embed_json("a<|endoftext|>b", *SMALL, "--allow-special")
    assert data["input_ids"] == [[64, 50256, 65]]


@pytest.mark.parametrize("show", ["1", "3", "8", "20"])
def test_show_sets_preview_width(show: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = embed("hi", *SMALL, "--show", show).stdout
    shown = min(int(show), 8)
    assert (f"first {shown} of 8 dimensions" if shown < 8 else "all 8 dimensions") in out
    assert f"[{shown - 1}]" in out and f"[{shown}]" not in out


def test_show_beyond_the_terminal_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    out = embed("hi", *SMALL, "--show", "8").stdout
    assert "first 4 of 8 dimensions (8 asked: the terminal is too" in out
    assert all(len(line) <= 80 for line in out.splitlines())


def test_verify_on_cpu() -> None:
    data = embed_json("Hello, world!", *SMALL, "--verify", "--dtype", "bfloat16")
    assert data["verify"]["device"] == "cpu"
    assert data["verify"]["reference_device"] == "cpu"
    assert data["verify"]["max_abs_diff"] == 0.0
    assert data["verify"]["ok"] is True
    shown = " ".join(embed("hi", *SMALL, "--verify").stdout.split())
    assert "verify: the cpu result agrees with a separate CPU computation" in shown


def test_verify_failure_is_reported_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A device that returns wrong numbers (simulated) is caught, and no output file is written."""
    from embedcli.core import embedding

    real = embedding.InputEmbedding.trace

    def corrupt(self, ids, **kwargs):
        trace = real(self, ids, **kwargs)
        object.__setattr__(trace, "input_embeddings", trace.input_embeddings + 0.5)
        return trace

    monkeypatch.setattr(embedding.InputEmbedding, "trace", corrupt)
    target = tmp_path / "out.npy"
    result = embed("hi", *SMALL, "--verify", "-o", str(target))
    assert result.exit_code == 1
    assert "DISAGREES" in result.stdout
    assert "Error: cpu disagrees with the CPU by 0.5" in result.stderr
    assert not target.exists()


def test_long_texts_are_capped_in_tables_but_complete_in_json() -> None:
    from embedcli.render import MAX_POSITIONS

    text = " ".join(["word"] * (MAX_POSITIONS + 6))
    out = embed(text, *SMALL[:2], "--device", "cpu").stdout
    note = f"showing {MAX_POSITIONS} of {MAX_POSITIONS + 6} positions of each sequence"
    assert out.strip().splitlines()[-1].startswith(note)  # where the reader lands
    assert f"│ {MAX_POSITIONS - 1:>3} │" in out and f"│ {MAX_POSITIONS:>3} │" not in out
    out = embed(text, *SMALL[:2], "--device", "cpu", "--max-positions", "3").stdout
    assert f"showing 3 of {MAX_POSITIONS + 6} positions" in out
    assert "│   2 │" in out and "│   3 │" not in out
    data = embed_json(text, *SMALL[:2], "--device", "cpu")
    assert len(data["input_ids"][0]) == MAX_POSITIONS + 6
    assert np.array(data["input_embeddings"]).shape == (1, MAX_POSITIONS + 6, 8)


def test_tokens_of_a_split_character_carry_bytes_not_text() -> None:
    data = embed_json("😀", *SMALL)
    tokens = data["tokens"][0]
    assert len(tokens) > 1
    assert all(t["piece"] is None for t in tokens)
    assert bytes.fromhex("".join(t["bytes"] for t in tokens)).decode("utf-8") == "😀"
    table = embed("😀", *SMALL).stdout
    assert "<0xF0 0x9F" in table and "\ufffd" not in table
