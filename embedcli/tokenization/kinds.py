"""Which kind of tokenizer an encoding is: a tiktoken encoding, a model's own tokenizer
(``HFTokenizer`` for tokenizer.json and GGUF files, ``ModelTiktoken`` for tiktoken-format
files), or neither (``IdsOnly``). Told by class, never by which attributes it happens to have."""

from __future__ import annotations

from typing import TYPE_CHECKING

from embedcli.tokenization.gguf.native import NativeTokenizer
from embedcli.tokenization.hfjson import HFTokenizer
from embedcli.tokenization.tiktokenfile import ModelTiktoken

if TYPE_CHECKING:
    import tiktoken

# a model's own tokenizer (ModelTokenizer)
MODEL_TOKENIZERS = (HFTokenizer, ModelTiktoken, NativeTokenizer)


def tiktoken_behind(enc: object) -> tiktoken.Encoding | None:
    """The tiktoken encoding that does ``enc``'s work: ``enc`` itself, or a model's
    tiktoken-format tokenizer's; None for any other (tokenizer.json, GGUF, ids only)."""
    if isinstance(enc, ModelTiktoken):
        return enc.encoding
    import tiktoken  # lazy: loaded already wherever enc is one of its encodings

    return enc if isinstance(enc, tiktoken.Encoding) else None
