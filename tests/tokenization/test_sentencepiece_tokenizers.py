"""SentencePiece-style tokenizer.json files, built with the tokenizers library the way
transformers writes Llama 2's, newer Llama conversions' and Gemma's (and a Unigram model): their
pieces, the bytes their tokens spell, byte fallback, and why they are not cut-safe."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.modeltokenizers import EXAMPLES
from support.modeltokenizers import module_env as module_env  # a fixture: pytest finds it here
from support.tinytokenizers import SP_MERGES, SP_PIECES, sentencepiece_json

from embedcli.tokenization import hfjson, hfspec
from embedcli.tokenization.tokens import chunks

# ---------------------------------------------------------------- SentencePiece-style


def _sentencepiece_bytes(text: str, style: str) -> bytes:
    """What the tokens of ``text`` spell: SentencePiece's prefix space, then the text. Llama 2's
    normalizer always prepends it; Metaspace ("first") only when the text does not start with
    a space; Gemma never."""
    data = text.encode("utf-8")
    prepends = style == "llama2" or (style == "metaspace" and not text.startswith(" "))
    return b" " + data if prepends and text else data


@pytest.fixture(scope="module")
def sentencepiece(module_env: None, tmp_path_factory) -> dict[str, hfjson.HFTokenizer]:
    out = tmp_path_factory.mktemp("sentencepiece")
    found = {
        style: hfjson.load_tokenizer_json(sentencepiece_json(out / style, style), style)
        for style in ("metaspace", "llama2", "gemma")
    }
    unigram = sentencepiece_json(out / "unigram", "metaspace", model="Unigram")
    found["unigram"] = hfjson.load_tokenizer_json(unigram, "unigram")
    return found


SP_STYLES = {"metaspace": "metaspace", "llama2": "llama2", "gemma": "gemma", "unigram": "metaspace"}


@pytest.mark.parametrize("which", SP_STYLES)
def test_sentencepiece_pieces(sentencepiece, which: str) -> None:
    enc = sentencepiece[which]
    assert enc.family == hfspec.SENTENCEPIECE
    assert (enc.prefix, enc.suffix, enc.cut_safe) == ((1,), (), False)
    assert (enc.n_vocab, enc.eot_token) == (259 + len(SP_PIECES) + len(SP_MERGES), 2)  # </s>
    assert enc.special_tokens_set == {"<unk>", "<s>", "</s>"}
    from tokenizers import Tokenizer

    pieces = Tokenizer.from_file(str(enc.path))
    hello = pieces.token_to_id("▁hello")
    assert enc.decode_single_token_bytes(hello) == b" hello"
    assert enc.encode_single_token(" hello") == hello
    assert enc.decode_single_token_bytes(pieces.token_to_id("▁")) == b" "
    assert enc.decode_single_token_bytes(3 + 0xE2) == b"\xe2"  # <0xE2>
    assert enc.encode_single_token(b"\xe2") == 3 + 0xE2
    assert enc.decode_single_token_bytes(1) == b"<s>"
    assert enc.encode("<s>hello", allowed_special="all")[0] == 1
    if which != "unigram":  # a Unigram lattice may still pick "<s>", a piece of its vocabulary
        assert 1 not in enc.encode_ordinary("<s>hello")


@pytest.mark.parametrize("which", SP_STYLES)
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.text(alphabet="helowrd é ñ€漢🙂\t\n<s>", max_size=20))
@example(text="hello world")
@example(text=" hello")
def test_sentencepiece_tokens_spell_the_text(sentencepiece, which: str, text: str) -> None:
    enc = sentencepiece[which]
    ids = enc.encode_ordinary(text)
    assert enc.decode_bytes(ids) == _sentencepiece_bytes(text, SP_STYLES[which])


def test_sentencepiece_byte_fallback_ids(sentencepiece) -> None:
    enc = sentencepiece["llama2"]
    hello = enc.encode_single_token(" hello")
    assert enc.encode_ordinary("hello €") == [hello, enc.encode_single_token(" "), 229, 133, 175]
    assert [enc.decode_single_token_bytes(i) for i in (229, 133, 175)] == [
        b"\xe2",
        b"\x82",
        b"\xac",
    ]


def test_sentencepiece_is_not_cut_safe(sentencepiece) -> None:
    """Why cut_safe is False: each piece gets SentencePiece's prefix space again."""
    enc = sentencepiece["llama2"]
    parts = chunks("hello world", 1)
    assert parts == ["hello", " world"]
    assert [t for p in parts for t in enc.encode_ordinary(p)] != enc.encode_ordinary("hello world")
