"""Which kind of tokenizer an encoding is: a tiktoken encoding, a model's own tokenizer
(``HFTokenizer`` for tokenizer.json and GGUF files, ``NativeTokenizer`` for the GGUF files
llama.cpp's own code tokenizes, ``ModelTiktoken`` for tiktoken-format files and, as its
subclass ``TekkenTokenizer``, Mistral's tekken.json, ``SentencePieceModel`` for SentencePiece
tokenizer.model files), or neither (``IdsOnly``). Told by class, never by which attributes it
happens to have."""

from __future__ import annotations

from typing import TYPE_CHECKING

from embedcli.tokenization.gguf.native import NativeTokenizer
from embedcli.tokenization.hfjson import HFTokenizer
from embedcli.tokenization.spmodel import SentencePieceModel
from embedcli.tokenization.tiktokenfile import ModelTiktoken

if TYPE_CHECKING:
    import tiktoken

# a model's own tokenizer (ModelTokenizer)
MODEL_TOKENIZERS = (HFTokenizer, ModelTiktoken, NativeTokenizer, SentencePieceModel)
# tokenizers that say where their tokens sit in a text and what their own decoder gives
# (``offsets_of``, ``library_decode``), for a text they change before they encode it
SELF_PLACING = (HFTokenizer, NativeTokenizer, SentencePieceModel)
SelfPlacing = HFTokenizer | NativeTokenizer | SentencePieceModel


def tiktoken_behind(enc: object) -> tiktoken.Encoding | None:
    """The tiktoken encoding that does ``enc``'s work: ``enc`` itself, or a model's
    tiktoken-format tokenizer's (a tekken.json's too); None for any other (tokenizer.json,
    GGUF, SentencePiece, ids only)."""
    if isinstance(enc, ModelTiktoken):
        return enc.encoding
    import tiktoken  # lazy: loaded already wherever enc is one of its encodings

    return enc if isinstance(enc, tiktoken.Encoding) else None
