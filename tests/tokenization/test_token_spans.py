"""Where a model tokenizer's tokens sit in the text (--offsets), the text of its ids (--decode)
and the text of its first tokens (--truncate), through the CLI, against the tokenizers library
itself: for tokenizers that change the text before they encode it (SentencePiece's dummy prefix,
a byte-level prefix space, a normalizer), where their tokens' bytes are not the text's."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner
from support.modeltokenizers import module_env as module_env  # a fixture: pytest finds it here
from support.tinytokenizers import byte_level_json, edited, sentencepiece_json

from embedcli.cli import app
from embedcli.tokenization.bpe import dump_tiktoken_bpe

runner = make_runner()

TEXTS = ["hello world", " hello", "  hello", "héllo 😀 world", "hello  world ", "😀"]


def _prefix_space(spec: dict) -> None:
    spec["pre_tokenizer"]["add_prefix_space"] = True  # GPT-2's tokenizer as RoBERTa sets it


@pytest.fixture(scope="module")
def tokenizers(module_env: None, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("spans")
    found = {s: sentencepiece_json(out / s, s) for s in ("llama2", "metaspace", "gemma")}
    found["unigram"] = sentencepiece_json(out / "unigram", "llama2", model="Unigram")
    found["prefix space"] = edited(byte_level_json(out / "prefix"), _prefix_space)
    return found


def _tokenize(*args: str) -> dict:
    result = runner.invoke(app, ["tokenize", "--json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _library(path: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("which", ["llama2", "metaspace", "gemma", "unigram", "prefix space"])
def test_offsets_are_the_libraries_and_hold_the_tokens_text(tokenizers, which, text) -> None:
    """Each span shown is the library's own, lies inside the text, and holds the token's text
    (a dummy prefix space aside); none runs past the end (the dummy prefix was once counted,
    so every span was one character late)."""
    path = tokenizers[which]
    found = _tokenize("-e", str(path), "--offsets", "--no-add-special", "--", text)
    encoding = _library(path).encode(text, add_special_tokens=False)
    assert [t["id"] for t in found["tokens"]] == encoding.ids
    for token, span, theirs in zip(
        found["tokens"], found["offsets"], encoding.offsets, strict=True
    ):
        if span is None:
            continue
        assert tuple(span) == theirs, (token, span, theirs)
        assert 0 <= span[0] < span[1] <= len(text)
        assert token["piece"] in (text[span[0] : span[1]], " " + text[span[0] : span[1]])
    shown = [span for span in found["offsets"] if span is not None]
    assert all(a[1] <= b[0] for a, b in pairwise(shown))  # never overlap


def test_llama2_offsets_of_a_text(tokenizers) -> None:
    found = _tokenize("-e", str(tokenizers["llama2"]), "--offsets", "hello world")
    assert [t["piece"] for t in found["tokens"]] == ["<s>", " hello", " world"]
    assert found["offsets"] == [None, [0, 5], [5, 11]]
    found = _tokenize("-e", str(tokenizers["llama2"]), "--offsets", " hello")
    assert found["offsets"] == [None, None, [0, 6]]  # the dummy prefix is in no place of the text


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("which", ["llama2", "gemma", "unigram", "prefix space"])
def test_decode_is_the_libraries_own(tokenizers, which: str, text: str) -> None:
    """--encode | --decode gives what the library's decoder gives (the dummy prefix was once
    decoded as a space the text did not have)."""
    path = tokenizers[which]
    ids = _tokenize("-e", str(path), "--encode", "--", text)["ids"]
    found = _tokenize("-e", str(path), "--decode", "--ids", ",".join(map(str, ids)))
    assert found["text"] == _library(path).decode(ids, skip_special_tokens=False)
    plain = _tokenize("-e", str(path), "--encode", "--no-add-special", "--", text)["ids"]
    found = _tokenize("-e", str(path), "--decode", "--ids", ",".join(map(str, plain)))
    assert found["text"] == _library(path).decode(plain)
    if which != "prefix space":  # its decoder keeps the space it put before the text
        assert found["text"] == text


def test_decode_agrees_with_transformers(tokenizers) -> None:
    transformers = pytest.importorskip("transformers")
    path = tokenizers["llama2"]
    ids = _tokenize("-e", str(path), "--encode", "--no-add-special", "héllo 😀 world")["ids"]
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    found = _tokenize("-e", str(path), "--decode", "--ids", ",".join(map(str, ids)))
    assert found["text"] == fast.decode(ids, clean_up_tokenization_spaces=False)


@pytest.mark.parametrize("which", ["llama2", "metaspace", "gemma"])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 6])
def test_truncate_gives_how_the_text_begins(tokenizers, which: str, count: int) -> None:
    """The text of the first N tokens is a prefix of the text, as the library decodes them
    (--truncate 3 once gave " he" for "hello...")."""
    text = "hello wérld"
    found = _tokenize("-e", str(tokenizers[which]), "--truncate", str(count), "--", text)
    assert text.startswith(found["text"])
    ids = _tokenize("-e", str(tokenizers[which]), "--encode", "--", text)["ids"]
    kept = ids[: found["count"]]
    assert found["text"] == _library(tokenizers[which]).decode(kept, skip_special_tokens=True)


def test_what_cannot_be_sure_is_refused(tokenizers, tmp_path: Path) -> None:
    """A decoder that does not spell the tokens' bytes (none at all: the library joins the
    pieces with spaces), and a prefix space the decoder keeps, are refused, not guessed."""
    bare = edited(_copy(tokenizers["unigram"], tmp_path), _no_decoder)
    result = runner.invoke(app, ["tokenize", "-e", str(bare), "--ids", "1,5", "--decode"])
    expect_error(result, "own decoder gives")
    result = runner.invoke(
        app, ["tokenize", "-e", str(tokenizers["prefix space"]), "--truncate", "2", "hello"]
    )
    expect_error(result, "--truncate cannot cut this text with")


def _copy(path: Path, folder: Path) -> Path:
    (folder / "copy").mkdir()
    target = folder / "copy" / "tokenizer.json"
    target.write_bytes(path.read_bytes())
    return target


def _no_decoder(spec: dict) -> None:
    spec["decoder"] = None


def test_offsets_of_a_normalized_tiktoken_text_are_refused(tmp_path: Path) -> None:
    """Qwen's tokenizer NFC-normalizes the text: "e" and a combining accent become one token,
    "é", whose place in the text as written its bytes cannot say."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"t%d" % i: 256 + i for i in range(151_643 - 256)})
    path = tmp_path / "qwen.tiktoken"
    path.write_bytes(dump_tiktoken_bpe(ranks))
    result = runner.invoke(app, ["tokenize", "-e", str(path), "--offsets", "e\u0301 x"])
    expect_error(result, "--offsets cannot place")
    found = _tokenize("-e", str(path), "--offsets", "\u00e9 x")  # NFC already: counted
    assert found["offsets"] == [None, None, [1, 2], [2, 3]]  # "é" is two byte tokens here
