"""What the WordPiece, Unigram and RWKV ports share: llama.cpp's trie walk (``naive_trie``), the
strip attributes llama.cpp gives special tokens by the model's name, and its ``detokenize``.

:class:`PrefixMatcher` finds every token whose text (or bytes) a text has at a place, shortest
first, as walking llama.cpp's trie down the text does. It keeps the tokens as one sorted list
and walks it by bisection, each step narrowing the range to the tokens that start with what has
been read so far: a trie of 250,000 tokens' bytes would be a million Python dicts.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import Generic, TypeVar

from embedcli.tokenization.gguf.native import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    USER_DEFINED,
    Vocab,
)

Key = TypeVar("Key", str, bytes)
# the types llama.cpp's token_to_piece spells (WPM, SPM, UGM); UNUSED and undefined: nothing
SHOWN = (NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE)


class PrefixMatcher(Generic[Key]):
    """The tokens of a table (text or bytes -> id) that a text begins with at a place."""

    def __init__(self, table: Mapping[Key, int]) -> None:
        self.table = table
        self.keys = sorted(table)

    def matches(self, text: Key, start: int) -> list[tuple[int, int]]:
        """(end, id) of each token that ``text[start:]`` begins with, shortest first."""
        keys, table = self.keys, self.table
        found: list[tuple[int, int]] = []
        low, high, end = 0, len(keys), start
        while end < len(text):
            end += 1
            piece = text[start:end]
            low = bisect_left(keys, piece, low, high)
            if low == high or not keys[low].startswith(piece):
                break  # no token goes on this way: the trie has no such child
            if len(keys[low]) == end - start:
                found.append((end, table[piece]))
        return found

    def longest(self, text: Key, start: int) -> tuple[int, int] | None:
        """(end, id) of the longest token that ``text[start:]`` begins with, or None."""
        found = self.matches(text, start)
        return found[-1] if found else None


def strip_attributes(vocab: Vocab, matched: tuple[int, ...]) -> tuple[frozenset, frozenset]:
    """The ids of special tokens that take the whitespace before them (lstrip) and after them
    (rstrip), as the last block of llama.cpp's ``llama_vocab::impl::load`` sets them by the
    file's names: ``<mask>`` lstrips for jina-v2's pre-tokenizers and the nomic-bert-moe and
    jina-bert-v3 architectures; every special token but ``<unk>``, ``<s>`` and
    ``<|endoftext|>`` rstrips for a model named Phi-3 (where llama.cpp refuses a vocabulary
    without them); ``[MASK]`` lstrips for one named modern-bert."""
    metadata = vocab.meta.metadata
    name = _text(metadata.get("general.name")).encode("utf-8").lower()  # C's tolower: ASCII
    pre = _text(metadata.get("tokenizer.ggml.pre"))
    arch = _text(metadata.get("general.architecture"))
    none: frozenset[int] = frozenset()
    if any(p in pre for p in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or any(
        a in arch for a in ("nomic-bert-moe", "jina-bert-v3")
    ):
        mask = vocab.ids.get("<mask>")
        return (frozenset({mask}) if mask is not None else none), none
    if b"phi-3" in name or b"phi3" in name:
        kept = ("<unk>", "<s>", "<|endoftext|>")
        missing = [t for t in ("</s>", *kept) if t not in vocab.ids]
        if missing:
            raise vocab.meta.fail(
                f"it is named {_text(metadata.get('general.name'))!r}, so llama.cpp strips "
                f"spaces beside Phi-3's special tokens and needs {missing[0]!r}, which the "
                "vocabulary lacks (llama.cpp refuses the file)"
            )
        return none, frozenset({*matched, vocab.ids["</s>"]} - {vocab.ids[t] for t in kept})
    if b"modern-bert" in name:
        mask = vocab.ids.get("[MASK]")
        return (frozenset({mask}) if mask is not None else none), none
    return none, none


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def detokenize(pieces: list[bytes], *, remove_space: bool, clean_spaces: bool) -> str:
    """llama.cpp's ``detokenize`` of tokens' pieces (special text kept): the first piece's
    leading space dropped where ``remove_space`` (the vocabulary's add_space_prefix), then,
    where ``clean_spaces`` (WordPiece's), transformers' clean_up_tokenization_spaces as
    llama.cpp writes it, in place over the bytes."""
    if remove_space and pieces and pieces[0].startswith(b" "):
        pieces = [pieces[0][1:], *pieces[1:]]
    text = bytearray(b"".join(pieces))
    if clean_spaces:
        text = _clean_spaces(text)
    return bytes(text).decode("utf-8", errors="replace")


def _clean_spaces(text: bytearray) -> bytearray:
    """The three passes of llama.cpp's clean_spaces, index for index (a pass writes behind
    where it reads, and the second blanks the byte it skips)."""
    total = len(text)
    kept = 1 if total else 0  # " ?", " !", " .", " ,": the space goes
    for i in range(1, total):
        x = text[i]
        if text[i - 1] == 0x20 and x in b"?!.,":
            kept -= 1
        text[kept] = x
        kept += 1
    total, kept, i = kept, 1 if kept else 0, 1  # " ' ": both spaces go
    while i < total:
        x = text[i]
        if x == 0x27 and i + 1 < total and text[i - 1] == 0x20 and text[i + 1] == 0x20:
            kept -= 1
            i += 1
            text[i] = 0
        text[kept] = x
        kept += 1
        i += 1
    total, kept = kept, 1 if kept else 0  # " 's", " 'm", " 're", " 've": the space goes
    for i in range(1, total):
        x = text[i]
        if text[i - 1] == 0x20 and x == 0x27 and i + 1 < total:
            after = text[i + 1]
            if after in b"sm":
                kept -= 1
            elif after not in b"td" and i + 2 < total and text[i + 2] == 0x65:
                kept -= after in b"rv"  # "re", "ve" ("ll" and the rest keep it)
        text[kept] = x
        kept += 1
    return text[:kept]
