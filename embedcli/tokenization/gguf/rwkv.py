"""llama.cpp's RWKV "world" tokenizer (``tokenizer.ggml.model`` "rwkv"), ported from
``llm_tokenizer_rwkv`` and ``llama_unescape_rwkv_token`` in ``src/llama-vocab.cpp``.

RWKV's tokens are byte strings. The converter (``_set_vocab_rwkv_world``) writes each as the
inside of its Python ``repr``: ``b'\\xe4\\xbd\\xa0'`` is written ``\\xe4\\xbd\\xa0``, a newline
``\\n``, a backslash ``\\\\``; a token ``<s>`` (CONTROL, id 0) comes first and ``[PAD<n>]`` tokens
(UNUSED) last. llama.cpp unescapes every token's text (``\\t``, ``\\n``, ``\\r``, ``\\xHH`` with
lower-case hex, a backslash before any other character is dropped) into its bytes and puts all of
them, whatever their type, in one trie; where two tokens spell the same bytes the later id wins.

Each text fragment (what the special-token partition leaves, :mod:`.native`) is cut greedily:
from the left, the longest token whose bytes the text's UTF-8 has there. llama.cpp writes its
unknown id (none, by default) for a byte that starts no token, and loops forever where the
bytes there start tokens but are none; a vocabulary without every single byte as a token is
refused here. A token's piece is its unescaped bytes, whatever its type, and ``add_special``
adds nothing: :attr:`prefix` and :attr:`suffix` are empty, whatever ``add_bos_token`` says.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from embedcli.tokenization.gguf.matching import PrefixMatcher, detokenize, strip_attributes
from embedcli.tokenization.gguf.native import NORMAL, NativeTokenizer, Vocab

_ESCAPES = {ord("t"): 0x09, ord("n"): 0x0A, ord("r"): 0x0D}


def unescape(text: str) -> bytes:
    """llama_unescape_rwkv_token: a token's text as the bytes it stands for, its arithmetic on
    a hex digit kept for any character (``0``-``9`` and ``a``-``f`` are what the converter
    writes; ``A`` reads as 17, and bytes wrap)."""
    out = bytearray()
    escaping = False
    hex_left = hex_value = 0
    for c in text.encode("utf-8"):
        if hex_left:
            signed = c - 256 if c >= 0x80 else c  # C's char
            digit = signed - ord("a") + 10 if signed >= ord("a") else signed - ord("0")
            hex_value = ((hex_value << 4) + digit) & 0xFF
            hex_left -= 1
            if hex_left == 0:
                out.append(hex_value)
                hex_value = 0
        elif escaping:
            if c == ord("x"):
                hex_left = 2
            else:
                out.append(_ESCAPES.get(c, c))
            escaping = False
        elif c == ord("\\"):
            escaping = True
        else:
            out.append(c)
    return bytes(out)


class RwkvGGUF(NativeTokenizer):
    """An "rwkv" GGUF vocabulary: greedy longest match over bytes."""

    family = "rwkv"

    def __init__(self, vocab: Vocab, *, name: str, path: Path) -> None:
        super().__init__(vocab, name=name, path=path)
        self._bytes = [unescape(t) for t in self.tokens]
        table = {data: i for i, data in enumerate(self._bytes)}  # the later id wins
        missing = next((b for b in range(256) if bytes([b]) not in table), None)
        if missing is not None:
            raise vocab.meta.fail(
                f"the RWKV vocabulary has no token for the byte 0x{missing:02X} (nor, maybe, "
                "others), which llama.cpp needs to cut every text (it writes an unknown id, or "
                "loops forever, where a byte is no token)"
            )
        self._table = table
        self._matcher = PrefixMatcher(table)
        self.prefix = self.suffix = ()
        self.lstrip, self.rstrip = strip_attributes(vocab, self._matched)

    def _encode_fragment(self, text: str, after_special: bool) -> list[int]:
        data = text.encode("utf-8")
        out: list[int] = []
        at = 0
        while at < len(data):
            found = self._matcher.longest(data, at)
            assert found is not None  # every byte is a token (checked on load)
            at = found[0]
            out.append(found[1])
        return out

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The token's unescaped bytes, whatever its type (llama.cpp's RWKV piece)."""
        super().decode_single_token_bytes(token)  # KeyError for no such id
        return self._bytes[token]

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token whose bytes these are (KeyError when there is none)."""
        if isinstance(text_or_bytes, str):
            found = self.ids.get(text_or_bytes)
            if found is not None and self.types[found] != NORMAL:
                return found
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._table[bytes(text_or_bytes)]

    def library_decode(self, tokens: Sequence[int]) -> str:
        """llama.cpp's detokenize: the pieces as they are (its RWKV pieces strip no space,
        and an "rwkv" vocabulary cleans none)."""
        pieces = [self.decode_single_token_bytes(t) for t in tokens]
        return detokenize(pieces, remove_space=False, clean_spaces=False)
