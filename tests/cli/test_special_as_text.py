"""--special-as-text: text that spells a special token is encoded as ordinary text, with one
meaning in tokenize, embed, windows, project and count, and the same count from count and
tokenize --count under the same flags (on tiktoken's encodings and on a GGUF tokenizer that
adds a bos)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.ggufvocab import llama2_json, llama2_metadata, through_gguf_file
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()
TEXT = "a <|endoftext|> b <|endoftext|>"


def _run(*args: str):
    return runner.invoke(app, list(args))


def _json(*args: str) -> dict:
    result = _run(*args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_tokenize_encodes_special_text_as_text() -> None:
    ids = [t["id"] for t in _json("tokenize", TEXT, "--special-as-text", "--json")["tokens"]]
    assert ids == get_encoding("gpt2").encode_ordinary(TEXT)
    assert 50256 not in ids
    special = [t["id"] for t in _json("tokenize", TEXT, "--allow-special", "--json")["tokens"]]
    assert special.count(50256) == 2


def test_refusal_names_both_ways_out() -> None:
    result = _run("tokenize", TEXT)
    expect_error(result, "pass --allow-special to encode it as its special id (50256), or ")
    assert "--special-as-text to encode it as plain text" in result.stderr


@pytest.mark.parametrize("command", ["tokenize", "embed", "windows", "project"])
def test_the_two_flags_contradict(command: str) -> None:
    result = _run(command, TEXT, "--allow-special", "--special-as-text")
    expect_error(result, "--allow-special and --special-as-text contradict each other", code=2)


def test_embed_and_windows_read_the_same_ids() -> None:
    ordinary = get_encoding("gpt2").encode_ordinary(TEXT)
    embedded = _json("embed", TEXT, "--special-as-text", "-d", "4", "--json")
    assert embedded["input_ids"] == [ordinary]
    windows = _json("windows", TEXT, "--special-as-text", "-t", "2", "-b", "1", "--json")
    assert windows["batches"][0]["inputs"] == [ordinary[:2]]
    assert windows["num_tokens"] == len(ordinary)


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spm") / "llama2.gguf"
    through_gguf_file(llama2_metadata(llama2_json()), path)
    return path


@pytest.mark.parametrize("encoding", ["gpt2", "cl100k_base", "gguf"])
def test_count_equals_tokenize_count_under_the_same_flags(
    tmp_path: Path, gguf: Path, encoding: str
) -> None:
    name = str(gguf) if encoding == "gguf" else encoding
    special = "</s>" if encoding == "gguf" else "<|endoftext|>"
    file = tmp_path / "notes.txt"
    file.write_text(f"Hello {special} world.\n  two  spaces {special}\n", encoding="utf-8")
    flags = ("--special-as-text", "--no-add-special")
    counted = _json("count", str(file), "-e", name, *flags, "--json")
    by_count = counted["files"][0]["tokens"][name]
    result = _run("tokenize", "-f", str(file), "-e", name, "--count", *flags)
    assert result.exit_code == 0, result.stderr
    assert int(result.stdout) == by_count
    assert _json("count", str(file), "-e", name, "--json") == counted  # count's defaults
    added = _run("tokenize", "-f", str(file), "-e", name, "--count", "--special-as-text")
    bos = 1 if encoding == "gguf" else 0  # the tokenizer's own bos, which count leaves out
    assert int(added.stdout) == by_count + bos
    expect_error(_run("tokenize", "-f", str(file), "-e", name, "--count"), "--special-as-text")


def test_the_refusal_names_the_leftmost_special_token() -> None:
    """Not the first in sorted order: the one a reader finds first in the text."""
    for text, first in (("b <|fim_prefix|> a <|endoftext|>", "<|fim_prefix|>"),
                        ("<|endoftext|><|fim_prefix|>", "<|endoftext|>")):  # fmt: skip
        done = runner.invoke(app, ["tokenize", text, "-e", "cl100k_base"])
        expect_error(done, f"the text contains the special token {first};")
