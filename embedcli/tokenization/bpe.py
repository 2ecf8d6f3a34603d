"""The ``.tiktoken`` file format: one ``base64(token) rank`` pair a line.

OpenAI's published encodings and the tiktoken-format tokenizers of real models (Llama 3 and 4's
``tokenizer.model``, Qwen's ``qwen.tiktoken``) are all written this way.
"""

from __future__ import annotations

import base64


def parse_tiktoken_bpe(data: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file: one ``base64(token) rank`` pair a line."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def dump_tiktoken_bpe(ranks: dict[bytes, int]) -> bytes:
    """Serialise ranks exactly as OpenAI's published ``.tiktoken`` files are written."""
    ordered = sorted(ranks.items(), key=lambda item: item[1])
    return b"".join(base64.b64encode(tok) + b" %d\n" % rank for tok, rank in ordered)
