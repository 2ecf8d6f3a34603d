"""llama.cpp's Unigram tokenizer (``tokenizer.ggml.model`` "t5": T5's, XLM-RoBERTa's), ported
from ``llm_tokenizer_ugm`` and ``llm_tokenizer_ugm_session`` in ``src/llama-vocab.cpp``.

Each text fragment (what the special-token partition leaves, :mod:`.native`) is normalized,
then cut by Viterbi, both over the fragment's UTF-8 bytes as llama.cpp does:

1. **normalize**: from each place, the longest path of a user-defined token's bytes that the
   text follows is kept as it is (the path, not a whole token: ``<ex`` of ``<extra_id_0>``
   too); else the longest prefix the precompiled charsmap holds becomes its replacement
   (:mod:`.charsmap`: NFKC for T5, and what its trainer added); else one character is kept
   (a byte that starts none becomes U+FFFD). In the result every space becomes ``▁``
   (``escape_whitespaces``, always on for Unigram); ``tokenizer.ggml.add_space_prefix`` puts
   one before the first run of non-spaces (off unless the file says: llama.cpp's default for
   "t5" is false); ``tokenizer.ggml.remove_extra_whitespaces`` drops every space and puts one
   ``▁`` before each run of non-spaces instead, the first included. llama.cpp reads no
   ``treat_whitespace_as_suffix`` from a file, so it is always off.
2. **Viterbi**: at each character (by its first byte's length), every token whose bytes start
   there (NORMAL, USER_DEFINED and UNUSED tokens, as the file types them) scores its score
   (0 for a user-defined one) on top of the best path to there, in double precision; a place
   no one-character token covers may also be the unknown token, scored the lowest NORMAL
   score less 10 (in float32, as llama.cpp computes it). A strictly better score replaces
   the best at a place, so the first path found keeps a tie. Runs of unknown tokens on the
   best path are one unknown token.

A token's piece is llama.cpp's ``token_to_piece``: a NORMAL token's text with ``▁`` as a space,
a CONTROL, UNKNOWN or USER_DEFINED token's text, a BYTE token's byte, and nothing for the
others (UNUSED: the ``[PAD<n>]`` tokens the converter pads a vocabulary with).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from embedcli.tokenization.gguf.charsmap import Charsmap, charsmap_bytes
from embedcli.tokenization.gguf.matching import (
    SHOWN,
    PrefixMatcher,
    detokenize,
    strip_attributes,
)
from embedcli.tokenization.gguf.native import (
    NORMAL,
    UNUSED,
    USER_DEFINED,
    NativeTokenizer,
    Vocab,
)

ESCAPED_SPACE = "\u2581".encode()
REPLACEMENT = "\ufffd".encode()
FLT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
_UTF8_LENGTH = (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)  # unicode_len_utf8, by top 4 bits


class UnigramVocab(Vocab, Protocol):
    """The checked metadata, with the types as the file gives them (``tokenizer._Vocab``)."""

    file_types: list[int]  # before llama.cpp makes tokens CONTROL or USER_DEFINED by text


def _float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


class UnigramGGUF(NativeTokenizer):
    """A "t5" GGUF vocabulary: SentencePiece's Unigram, cut by Viterbi after the charsmap."""

    family = "unigram"

    def __init__(self, vocab: UnigramVocab, *, name: str, path: Path) -> None:
        super().__init__(vocab, name=name, path=path)
        meta = vocab.meta
        unknown = vocab.special["unk"]
        if unknown is None:
            raise meta.fail(
                "the Unigram vocabulary has no unknown token id (tokenizer.ggml."
                "unknown_token_id, default 2), which llama.cpp writes for text no token covers"
            )
        self.unknown = unknown
        self.add_space_prefix = bool(meta.get("add_space_prefix", bool, False))
        self.remove_extra_whitespaces = bool(meta.get("remove_extra_whitespaces", bool, False))
        values = meta.get("precompiled_charsmap", (list, bytes))
        self.charsmap = Charsmap(charsmap_bytes(values, meta.label), meta.label) if values else None
        file_types = vocab.file_types  # llama.cpp builds its tries before it retypes by text
        scores = array("f", vocab.scores).tolist()  # llama.cpp's float32 (of int scores too)
        normal = [scores[i] for i, kind in enumerate(file_types) if kind == NORMAL]
        # min over float32 scores, less a float32 penalty of 10, rounded to float32
        self.unknown_score = _float32(min(normal, default=FLT_MAX) - 10.0)
        matched = (NORMAL, USER_DEFINED, UNUSED)
        table = {
            text.encode("utf-8"): i
            for i, (text, kind) in enumerate(zip(self.tokens, file_types, strict=True))
            if kind in matched
        }
        self._matcher = PrefixMatcher(table)
        user = [
            self.tokens[i].encode("utf-8") for i, k in enumerate(file_types) if k == USER_DEFINED
        ]
        self._user_paths = PrefixMatcher({p: 0 for t in user for p in _prefixes(t)})
        user_now = {i for i, k in enumerate(self.types) if k == USER_DEFINED}
        self._score = [
            0.0 if kind == USER_DEFINED or i in user_now else scores[i]
            for i, kind in enumerate(file_types)
        ]
        self.lstrip, self.rstrip = strip_attributes(vocab, self._matched)

    # --- encoding

    def _encode_fragment(self, text: str, after_special: bool) -> list[int]:
        return self.viterbi(self.normalize(text.encode("utf-8")))

    def normalize(self, data: bytes) -> bytes:
        """llm_tokenizer_ugm_session::normalize of one fragment's bytes."""
        merge = self.remove_extra_whitespaces
        prepend = self.add_space_prefix
        out = bytearray()
        prepended = in_word = False
        at = 0
        while at < len(data):
            piece, used = self._normalize_prefix(data, at)
            for byte in piece:
                if byte != 0x20:
                    if not in_word:
                        in_word = True
                        if (prepend and not prepended) or merge:
                            out += ESCAPED_SPACE
                            prepended = True
                    out.append(byte)
                else:
                    in_word = False
                    if not merge:
                        out += ESCAPED_SPACE
            at += used
        return bytes(out)

    def _normalize_prefix(self, data: bytes, at: int) -> tuple[bytes, int]:
        path = self._user_paths.longest(data, at)
        if path is not None:
            return data[at : path[0]], path[0] - at
        if self.charsmap is not None:
            found = self.charsmap.longest(data, at)
            if found is not None:
                return found[1], found[0]
        size = _character_size(data, at)
        if size == 0:
            return REPLACEMENT, 1
        return data[at : at + size], size

    def viterbi(self, data: bytes) -> list[int]:
        """llm_tokenizer_ugm_session::tokenize's Viterbi over normalized bytes."""
        n = len(data)
        if n == 0:
            return []
        unknown, unknown_score, score = self.unknown, self.unknown_score, self._score
        best = [-sys.float_info.max] * (n + 1)
        best[0] = 0.0
        came = [0] * (n + 1)  # where the best token ending here starts
        token = [unknown] * (n + 1)
        at = 0
        while at < n:
            size = min(_UTF8_LENGTH[data[at] >> 4], n - at)
            here = best[at]
            whole = False
            for end, found in self._matcher.matches(data, at):
                whole = whole or end - at == size
                challenger = here + score[found]
                if challenger > best[end]:
                    best[end], came[end], token[end] = challenger, at, found
            if not whole:
                challenger = here + unknown_score
                end = at + size
                if challenger > best[end]:
                    best[end], came[end], token[end] = challenger, at, unknown
            at += size
        out: list[int] = []
        at, after_unknown = n, False
        while True:
            is_unknown = token[at] == unknown
            if not (after_unknown and is_unknown):
                out.append(token[at])
            if came[at] == 0:
                break
            after_unknown = is_unknown
            at = came[at]
        out.reverse()
        return out

    # --- pieces

    def decode_single_token_bytes(self, token: int) -> bytes:
        data = super().decode_single_token_bytes(token)
        return data if self.types[token] in SHOWN else b""

    def library_decode(self, tokens: Sequence[int]) -> str:
        pieces = [self.decode_single_token_bytes(t) for t in tokens]
        return detokenize(pieces, remove_space=self.add_space_prefix, clean_spaces=False)


def _prefixes(data: bytes) -> list[bytes]:
    return [data[:end] for end in range(1, len(data) + 1)]


def _character_size(data: bytes, at: int) -> int:
    """The bytes of the character at ``at`` as llama.cpp's unicode_cpt_from_utf8 reads them
    (a lead byte and its continuation bytes, nothing more checked); 0 where it throws."""
    lead = data[at]
    if lead < 0x80:
        return 1
    size = (
        2 if lead & 0xE0 == 0xC0 else 3 if lead & 0xF0 == 0xE0 else 4 if lead & 0xF8 == 0xF0 else 0
    )
    if size == 0 or at + size > len(data):
        return 0
    if any(b & 0xC0 != 0x80 for b in data[at + 1 : at + size]):
        return 0
    return size
