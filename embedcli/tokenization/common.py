"""What the model-tokenizer formats share: the split patterns proven cut-safe, byte-level BPE's
byte <-> character table, and reading a tokenizer file in bounded memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from embedcli.errors import EncodingError, os_reason

# Split patterns proven cut-safe (tests/tokenization/test_cut_safety.py checks each): in every
# alternative a space can only open a match, so no match holds a non-whitespace character
# followed by a space.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
LLAMA4_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
CUT_SAFE_PATTERNS = frozenset({GPT2_PATTERN, LLAMA3_PATTERN, QWEN_PATTERN, LLAMA4_PATTERN})


MAX_TOKENIZER_BYTES = 1 << 30  # the largest published tokenizer.json is tens of MB


def read_bytes(path: Path, limit: int = MAX_TOKENIZER_BYTES) -> bytes:
    try:
        if path.stat().st_size > limit or not path.is_file():
            raise EncodingError(
                f"{path} is not a tokenizer file (not a regular file of at most "
                f"{limit // 2**20:,} MiB)"
            )
        with path.open("rb") as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        raise EncodingError(
            f"cannot read {path}: {os_reason(exc)}; check the path and its permissions"
        ) from None


@cache
def char_of_byte() -> tuple[str, ...]:
    """GPT-2's bytes_to_unicode: the printable character each byte is written as in a vocab."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in printable}
    for shifted, b in enumerate(b for b in range(256) if b not in chars):
        chars[b] = chr(256 + shifted)
    return tuple(chars[b] for b in range(256))


@cache
def byte_of_char() -> dict[str, int]:
    return {c: b for b, c in enumerate(char_of_byte())}


def without_surrogates(text: str) -> str:
    """``text`` with U+FFFD for each lone surrogate, which spells no UTF-8 (tiktoken replaces
    them so, and every other tokenizer embedcli runs is given the replaced text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def walked_spans(pieces: Iterable[str], text: str) -> list[tuple[int, int]]:
    """Each token's [start, end) in ``text``, found by walking its piece (its bytes as text)
    through the text: a piece with a leading dummy space may match without it, and one that
    does not match (a byte of a character, text the model changed) gets an empty span."""
    spans: list[tuple[int, int]] = []
    at = 0
    for piece in pieces:
        if text.startswith(piece, at):
            spans.append((at, at + len(piece)))
            at += len(piece)
        elif piece.startswith(" ") and text.startswith(piece[1:], at):
            spans.append((at, at + len(piece) - 1))
            at += len(piece) - 1
        else:
            spans.append((at, at))
    return spans


def read_config_object(path: Path) -> dict[str, Any] | None:
    """A tokenizer's JSON config file beside it (tokenizer_config.json...) as an object, or
    None where there is none. Present, it must be read: one that cannot be (a FIFO, a folder,
    over 64 MiB, broken JSON, not an object) is refused, never skipped for a guess."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        found = json.loads(read_bytes(path, 64 << 20))
    except (ValueError, RecursionError) as exc:
        raise EncodingError(f"{path} is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(found, dict):
        raise EncodingError(f"{path} is not a JSON object; a tokenizer config is one")
    return found


class DecodedByToken:
    """``decode_bytes`` and ``decode`` of a tokenizer whose ``decode_single_token_bytes``
    says each token's bytes (the GGUF, SentencePiece and tokenizer.json tokenizers)."""

    def decode_single_token_bytes(self, token: int) -> bytes:
        raise NotImplementedError

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of a sequence of ids, token by token."""
        return b"".join(self.decode_single_token_bytes(t) for t in tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of a sequence of ids, token by token (no prefix space is stripped)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)
