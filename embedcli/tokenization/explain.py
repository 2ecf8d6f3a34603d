"""Why a text split where it did: the pre-tokenizer's chunks, then byte-pair merging step by step.

A BPE encoder first cuts the text with its split pattern (a regex: words with their leading
space, runs of digits, punctuation, whitespace), then, inside each chunk alone, starts from
single bytes and merges, again and again, the adjacent pair whose joined bytes have the lowest
rank in the vocabulary, until no adjacent pair is in it. A chunk that is a token as a whole is
taken as it is (tiktoken looks it up before merging). This module replays that in Python from
the encoding's own pattern and ranks, for the chunks shown only, and keeps every step; the tests
hold its tokens to the real encoder's for any text. No torch here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from embedcli.errors import EncodingError

if TYPE_CHECKING:
    import tiktoken


P = TypeVar("P", bytes, str)  # a part: bytes (tiktoken) or byte-level symbols (tokenizer.json)
EXPLAIN_CHUNKS = 20  # chunks shown with their merges; the rest are counted


@dataclass(frozen=True)
class MergeStep:
    """One merge: the pair at ``at`` and ``at + 1`` became one part."""

    rank: int  # the joined bytes' rank: the lowest of every adjacent pair's at this step
    at: int  # the left part's index before the merge
    merged: str  # the joined part's bytes, as hex (a part may hold part of a character)
    parts: list[str]  # every part after the merge, as hex bytes


@dataclass(frozen=True)
class Chunk:
    """One piece of the text as the split pattern cut it, and how it became tokens."""

    text: str
    start: int  # character offsets of the chunk in the text
    end: int
    special: bool  # a special token (with --allow-special): one id, never merged
    whole: bool  # the chunk is a token as it is: looked up, not merged
    parts: list[str]  # the starting parts as hex bytes: one byte each
    steps: list[MergeStep]
    ids: list[int]  # the chunk's tokens


@dataclass(frozen=True)
class Explained:
    """The chunks shown, and how many more the text has."""

    encoding: str
    pattern: str  # the split pattern, as the encoding defines it
    chunks: list[Chunk]
    total_chunks: int
    ids: list[int]  # every token of the text, from the chunks (equal to the encoder's)


def merge_steps(ranks: dict[bytes, int], piece: bytes) -> tuple[list[bytes], list[MergeStep]]:
    """Byte-pair merging of one chunk, as tiktoken's byte_pair_merge does it: the adjacent pair
    of lowest rank first, the leftmost of equals; the final parts, and every step."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    return _merge(parts, lambda left, right: ranks.get(left + right), bytes.hex)


def _merge(
    parts: list[P], rank_of: Callable[[P, P], int | None], shown: Callable[[P], str]
) -> tuple[list[P], list[MergeStep]]:
    """The merge loop every BPE shares: join the adjacent pair of lowest rank (``rank_of``:
    None where the pair is not a merge), the leftmost of equals, until none is left."""
    steps: list[MergeStep] = []
    while len(parts) > 1:
        best: tuple[int, int] | None = None  # (rank, index)
        for i in range(len(parts) - 1):
            rank = rank_of(parts[i], parts[i + 1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, i)
        if best is None:
            break
        rank, i = best
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
        steps.append(MergeStep(rank, i, shown(parts[i]), [shown(p) for p in parts]))
    return parts, steps


def _tiktoken_of(enc: Any) -> tuple[tiktoken.Encoding, bool]:
    """The tiktoken encoding behind ``enc`` (an encoding, or a model's tiktoken-format
    tokenizer), and whether the model normalises text to NFC first."""
    inner = getattr(enc, "encoding", enc)
    if not hasattr(inner, "_mergeable_ranks") or not hasattr(inner, "_pat_str"):
        raise EncodingError(
            f"--explain replays tiktoken-style byte-pair encodings; {enc.name} is not one"
        )
    return inner, bool(getattr(enc, "_nfc", False))


def explain(
    enc: Any, text: str, *, allow_special: bool = False, limit: int = EXPLAIN_CHUNKS
) -> Explained:
    """The first ``limit`` chunks of ``text`` with their merge steps, how many chunks there are,
    and every token of the text (the encoder's own, which the chunks shown must begin)."""
    import unicodedata

    import regex

    from embedcli.tokenization.encodings import encode

    if getattr(enc, "family", None) == "byte-level" and hasattr(enc, "_ordinary"):
        return _explain_json_bpe(enc, text, allow_special, limit)
    inner, nfc = _tiktoken_of(enc)
    ids = encode(enc, text, allow_special=allow_special)  # the reference; refuses what encode does
    if nfc:
        text = unicodedata.normalize("NFC", text)
    ranks = inner._mergeable_ranks
    specials = inner._special_tokens if allow_special else {}
    pattern = regex.compile(inner._pat_str)
    chunks: list[Chunk] = []
    total = 0
    for start, end, special in _spans(text, specials):
        found = (
            iter([(start, end)])
            if special
            # the slice, not pos/endpos: tiktoken matches each stretch between specials alone
            else ((start + m.start(), start + m.end()) for m in pattern.finditer(text[start:end]))
        )
        for a, b in found:  # counted one by one: only the chunks shown are kept
            total += 1
            if len(chunks) < limit:
                chunks.append(_chunk(text[a:b], a, b, special, ranks, specials))
    return _checked(Explained(inner.name, inner._pat_str, chunks, total, ids))


def _checked(explained: Explained) -> Explained:
    """``explained``, once the ids of its chunks are shown to begin the encoder's own."""
    replayed = [i for chunk in explained.chunks for i in chunk.ids]
    if explained.ids[: len(replayed)] != replayed:
        name = explained.encoding
        raise EncodingError(f"--explain could not replay {name}'s encoder on this text")
    return explained


def _spans(text: str, specials: dict[str, int]) -> list[tuple[int, int, bool]]:
    """The text cut at the special tokens it holds (leftmost, longest first), as tiktoken does
    when they are allowed: (start, end, is_special) spans."""
    if not specials:
        return [(0, len(text), False)] if text else []
    import re

    by_length = sorted(specials, key=len, reverse=True)
    finder = re.compile("|".join(map(re.escape, by_length)))
    spans, at = [], 0
    for m in finder.finditer(text):
        if m.start() > at:
            spans.append((at, m.start(), False))
        spans.append((m.start(), m.end(), True))
        at = m.end()
    if at < len(text):
        spans.append((at, len(text), False))
    return spans


def _chunk(
    text: str, start: int, end: int, special: bool, ranks: dict[bytes, int], specials: dict
) -> Chunk:
    """One chunk's starting parts, merge steps and tokens."""
    if special:
        return _special_chunk(text, start, end, specials)
    piece = text.encode("utf-8")
    parts, steps = merge_steps(ranks, piece)
    whole = piece in ranks  # tiktoken takes it as it is, whatever the merges would give
    ids = [ranks[piece]] if whole else [ranks[p] for p in parts]
    starting = [piece[i : i + 1].hex() for i in range(len(piece))]
    return Chunk(text, start, end, False, whole, starting, steps, ids)


def _special_chunk(text: str, start: int, end: int, specials: dict[str, int]) -> Chunk:
    """An allowed special token: one id, never merged."""
    return Chunk(text, start, end, True, True, [text.encode().hex()], [], [specials[text]])


def _explain_json_bpe(enc: Any, text: str, allow_special: bool, limit: int) -> Explained:
    """The same for a byte-level BPE tokenizer.json (GPT-2, Llama 3, Qwen 2 style): its
    normalizer and pre-tokenizer cut the chunks (through the tokenizers library itself), its
    merges list gives the ranks, and a chunk in the vocabulary is taken whole where the model
    says to ignore merges."""
    import json

    from embedcli.tokenization.common import byte_of_char
    from embedcli.tokenization.encodings import encode

    ids = encode(enc, text, allow_special=allow_special)
    tokenizer = enc._ordinary
    spec = json.loads(tokenizer.to_str())  # the tokenizer.json, as the library holds it
    model = spec["model"]
    if model.get("type") != "BPE":
        raise EncodingError(f"--explain replays byte-pair encodings; {enc.name} is not one")
    vocab: dict[str, int] = model["vocab"]
    merges = model["merges"]
    ranks = {tuple(m.split(" ", 1) if isinstance(m, str) else m): i for i, m in enumerate(merges)}
    to_byte = byte_of_char()
    specials = {t: enc._added_ids[t] for t in enc.special_tokens_set} if allow_special else {}
    chunks: list[Chunk] = []
    total = 0
    for start, end, special in _spans(text, specials):
        if special:
            pieces = [(text[start:end], (start, end))]
        else:
            part = text[start:end]
            if tokenizer.normalizer is not None:
                part = tokenizer.normalizer.normalize_str(part)
            found = tokenizer.pre_tokenizer.pre_tokenize_str(part)
            pieces = [(p, (start + a, start + b)) for p, (a, b) in found]
        for piece, (a, b) in pieces:
            total += 1
            if len(chunks) >= limit:
                continue
            if special:
                chunks.append(_special_chunk(piece, a, b, specials))
                continue
            shown = [bytes([to_byte[c]]).hex() for c in piece]
            symbols, steps = _merge(
                list(piece),
                lambda left, right: ranks.get((left, right)),
                lambda symbol: bytes(to_byte[c] for c in symbol).hex(),
            )
            whole = bool(model.get("ignore_merges")) and piece in vocab
            chunk_ids = [vocab[piece]] if whole else [vocab[s] for s in symbols]
            chunks.append(Chunk(text[a:b], a, b, False, whole, shown, steps, chunk_ids))
    pattern = json.dumps(spec.get("pre_tokenizer"))
    return _checked(Explained(enc.name, pattern, chunks, total, ids))
