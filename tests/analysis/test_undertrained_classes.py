"""Each token's class for ``undertrained``: a round trip ``encode(decode(id))`` read the same way
whether or not the tokenizer puts a dummy prefix (▁) before a text, on tokenizers built here."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.tinytokenizers import SP_PIECES, byte_level_json, sentencepiece_json

from embedcli.analysis.vocabclasses import CLASSES, token_classes, vocabulary_pieces
from embedcli.tokenization.encodings import get_encoding


def _classes(path: Path) -> tuple[list[str], list[bytes | None]]:
    enc = get_encoding(str(path))
    pieces = vocabulary_pieces(enc, enc.n_vocab)
    return [CLASSES[code] for code in token_classes(enc, pieces, [0])], pieces


@pytest.mark.parametrize("style", ["llama2", "metaspace", "gemma"])
def test_a_dummy_prefix_does_not_make_every_token_unreachable(tmp_path: Path, style: str) -> None:
    classes, pieces = _classes(sentencepiece_json(tmp_path, style))
    # every piece of the vocabulary is text that encodes back to itself
    for piece in [*SP_PIECES, "▁hello", "▁world", "ll"]:
        token = pieces.index(piece.replace("▁", " ").encode(), 259)  # past the byte tokens
        assert classes[token] == "ordinary", piece
    # the byte-fallback tokens of characters with a piece of their own: no text reaches them,
    # and those of other ASCII characters are how text reaches those characters
    for char in " helowrd":
        assert classes[3 + ord(char)] == "unreachable", char
    assert classes[3 + ord("A")] == "ordinary"
    assert classes.count("not text") == 128  # <0x80>..<0xFF>
    assert classes.count("special") == 2  # <s> and </s> (<unk>, id 0, is the reference here)
    assert classes.count("unchecked") == 0


def test_byte_level_tokens_of_no_text_are_not_text(tmp_path: Path) -> None:
    enc = get_encoding(str(byte_level_json(tmp_path)))
    pieces = vocabulary_pieces(enc, enc.n_vocab)
    found = [CLASSES[c] for c in token_classes(enc, pieces, [])]
    assert found[ord("h")] == "ordinary"
    assert found[0x80] == "not text" and found[0xE2] == "not text"
    assert found[enc.n_vocab - 1] == "special"  # <|endoftext|>
