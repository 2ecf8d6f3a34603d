"""The ``.tiktoken`` file format: one ``base64(token) rank`` pair a line.

OpenAI's published encodings and the tiktoken-format tokenizers of real models (Llama 3 and 4's
``tokenizer.model``, Qwen's ``qwen.tiktoken``) are all written this way.
"""

from __future__ import annotations

import binascii
import hashlib


class BadLine(ValueError):
    """A line of a ``.tiktoken`` file that is not ``base64(token) rank``; ``number`` from 1."""

    def __init__(self, number: int, problem: str) -> None:
        super().__init__(f"line {number} {problem}")
        self.number = number


def parse_tiktoken_bpe(data: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file: one ``base64(token) rank`` pair a line, the token in strict
    base64 (the alphabet only, padded), which Python's lenient decoding would not check: it
    drops characters outside the alphabet, so ``!!!!`` would be an empty token. A bad line is a
    :class:`BadLine` naming it."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2 or not fields[1].isdigit():
            raise BadLine(number, "is not `<base64 token> <rank>`")
        try:
            token = binascii.a2b_base64(fields[0], strict_mode=True)
        except binascii.Error as exc:
            raise BadLine(number, f"holds a token that is not strict base64 ({exc})") from None
        ranks[token] = int(fields[1])
    return ranks


def dump_tiktoken_bpe(ranks: dict[bytes, int]) -> bytes:
    """Serialise ranks exactly as OpenAI's published ``.tiktoken`` files are written."""
    ordered = ranks.items()
    ranked = list(ranks.values())
    if ranked != sorted(ranked):  # parsed files are in order already (sorted in C: 2 ms)
        ordered = sorted(ordered, key=lambda item: item[1])
    encode = binascii.b2a_base64
    return b"".join([encode(tok, newline=False) + b" %d\n" % rank for tok, rank in ordered])


def ranks_sha256(ranks: dict[bytes, int]) -> str:
    """The SHA-256 of the ``.tiktoken`` file these ranks are: the published file's hash when
    they are that file's ranks, and no other ranks'. 90 ms for o200k_base's 200,000."""
    return hashlib.sha256(dump_tiktoken_bpe(ranks)).hexdigest()
