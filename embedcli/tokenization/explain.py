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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from embedcli.errors import EncodingError, InputTextError
from embedcli.tokenization.common import byte_of_char
from embedcli.tokenization.encodings import encode
from embedcli.tokenization.hfjson import HFTokenizer
from embedcli.tokenization.kinds import tiktoken_behind
from embedcli.tokenization.specialtext import Specials
from embedcli.tokenization.tiktokenfile import ModelTiktoken

if TYPE_CHECKING:
    import tiktoken


P = TypeVar("P", bytes, str)  # a part: bytes (tiktoken) or byte-level symbols (tokenizer.json)
EXPLAIN_CHUNKS = 20  # chunks shown with their merges; the rest are counted
MAX_CHUNK_BYTES = 4096  # a chunk shown is replayed whole: longer ones are refused, not guessed
SHOWN_STEPS = 48  # merges kept with their parts, per chunk (the last one is always kept)
SHOWN_PARTS = 16_384  # ...while the parts they hold stay under this, per chunk


@dataclass(frozen=True)
class MergeStep:
    """One merge: the pair at ``at`` and ``at + 1`` became one part."""

    step: int  # the merge's number in its chunk, from 1
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
    steps: list[MergeStep]  # the first merges, and the last (total_steps has them all)
    ids: list[int]  # the chunk's tokens
    total_steps: int  # every merge the chunk took


@dataclass(frozen=True)
class Explained:
    """The chunks shown, and how many more the text has."""

    encoding: str
    pattern: str  # the split pattern, as the encoding defines it
    chunks: list[Chunk]
    total_chunks: int
    ids: list[int]  # every token of the text, from the chunks (equal to the encoder's)
    # the special tokens the model's tokenizer adds before and after the text (no merges made
    # them, so no chunk explains them; tokenize shows them, --no-add-special leaves them out)
    added_before: list[int] = field(default_factory=list)
    added_after: list[int] = field(default_factory=list)


def merge_steps(ranks: dict[bytes, int], piece: bytes) -> tuple[list[bytes], list[MergeStep], int]:
    """Byte-pair merging of one chunk, as tiktoken's byte_pair_merge does it: the adjacent pair
    of lowest rank first, the leftmost of equals; the final parts, the steps kept (the first
    ones and the last) and how many merges there were."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    return _merge(parts, lambda left, right: ranks.get(left + right), bytes.hex)


def _merge(
    parts: list[P], rank_of: Callable[[P, P], int | None], shown: Callable[[P], str]
) -> tuple[list[P], list[MergeStep], int]:
    """The merge loop every BPE shares: join the adjacent pair of lowest rank (``rank_of``:
    None where the pair is not a merge), the leftmost of equals, until none is left.

    A heap of candidate pairs keyed (rank, index of the left part's first byte) pops that pair, in
    O(n log n): a chunk of 4,096 bytes, not n^2 scans. Only the first merges keep their parts
    (``SHOWN_STEPS``, ``SHOWN_PARTS``) and the last one, so memory follows what is shown."""
    import heapq

    count = len(parts)
    if count < 2:
        return parts, [], 0
    after = [*range(1, count), -1]  # the next live part, by first byte (-1: none)
    before = list(range(-1, count - 1))
    version = [0] * count  # bumped when a part grows, so its stale pairs are skipped

    def pair(left: int) -> tuple[int, int, int, int, int] | None:
        right = after[left] if left >= 0 else -1
        rank = rank_of(parts[left], parts[right]) if right >= 0 else None
        return None if rank is None else (rank, left, right, version[left], version[right])

    heap = [entry for entry in map(pair, range(count - 1)) if entry is not None]
    heapq.heapify(heap)
    live, budget, total = count, SHOWN_PARTS, 0
    kept: list[MergeStep] = []
    last = (0, 0)  # (rank, left part) of the latest merge
    while heap:
        rank, left, right, v_left, v_right = heapq.heappop(heap)
        if after[left] != right or (version[left], version[right]) != (v_left, v_right):
            continue  # one side has merged since this pair was pushed
        total += 1
        keep = len(kept) < SHOWN_STEPS and budget >= live
        at = _index_of(before, left) if keep else 0
        parts[left] = parts[left] + parts[right]
        version[left] += 1
        after[left] = after[right]
        if after[left] >= 0:
            before[after[left]] = left
        after[right] = -2  # dead: no pair of it is taken again
        live -= 1
        if keep:
            now = [shown(p) for p in _live(parts, after)]
            kept.append(MergeStep(total, rank, at, shown(parts[left]), now))
            budget -= live
        last = (rank, left)
        for entry in (pair(before[left]), pair(left)):
            if entry is not None:
                heapq.heappush(heap, entry)
    final = _live(parts, after)
    if total and (not kept or kept[-1].step != total):
        rank, left = last
        at = _index_of(before, left)
        kept.append(MergeStep(total, rank, at, shown(parts[left]), [shown(p) for p in final]))
    return final, kept, total


def _live(parts: list[P], after: list[int]) -> list[P]:
    """The live parts in order (the first part never dies: a merge keeps its left side)."""
    out, at = [], 0
    while at >= 0:
        out.append(parts[at])
        at = after[at]
    return out


def _index_of(before: list[int], part: int) -> int:
    """A live part's index in the list of live parts."""
    index = 0
    while before[part] >= 0:
        part = before[part]
        index += 1
    return index


def _tiktoken_of(enc: Any) -> tuple[tiktoken.Encoding, bool]:
    """The tiktoken encoding behind ``enc`` (an encoding, or a model's tiktoken-format
    tokenizer), and whether the model normalises text to NFC first."""
    inner = tiktoken_behind(enc)
    if inner is None:
        raise EncodingError(
            f"--explain replays tiktoken-style byte-pair encodings; {enc.name} is not one"
        )
    return inner, isinstance(enc, ModelTiktoken) and enc._nfc


def explain(
    enc: Any, text: str, *, allow_special: bool | Specials = False, limit: int = EXPLAIN_CHUNKS
) -> Explained:
    """The first ``limit`` chunks of ``text`` with their merge steps, how many chunks there are,
    and every token of the text (the encoder's own, which the chunks shown must begin)."""
    import unicodedata

    import regex

    if isinstance(enc, HFTokenizer) and enc.family == "byte-level":
        return _explain_json_bpe(enc, text, allow_special, limit)
    inner, nfc = _tiktoken_of(enc)
    ids = encode(enc, text, allow_special=allow_special)  # the reference; refuses what encode does
    if nfc:
        text = unicodedata.normalize("NFC", text)
    _refuse_unsure_characters(text)
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
                chunks.append(_chunk(text[a:b], a, b, special, ranks, specials, len(chunks)))
    return _checked(Explained(inner.name, inner._pat_str, chunks, total, ids))


def _refuse_unsure_characters(text: str) -> None:
    """Refuse a character whose Unicode class the replay cannot be sure tiktoken shares.

    The replay cuts chunks with the ``regex`` module's Unicode tables; tiktoken's splitter
    (Rust) has its own, often of another Unicode version. A character that ``regex`` and
    Python's ``unicodedata`` put in different classes (one of them may not know it) may be
    cut otherwise by tiktoken (a letter added in Unicode 17 is a letter to ``regex`` 2025+,
    and nothing to tiktoken 0.14): the ids would still match, the chunks shown would not."""
    import unicodedata

    import regex

    for char in sorted({c for c in text if c > "\x7f"}):
        category = unicodedata.category(char)
        if not regex.match(rf"\p{{gc={category}}}", char):
            theirs = "does not know it" if regex.match(r"\p{gc=Cn}", char) else "knows it"
            ours = "does not" if category == "Cn" else f"classes it {category}"
            raise InputTextError(
                f"--explain cannot be sure how tiktoken's splitter classes U+{ord(char):04X}: "
                f"the regex module {getattr(regex, '__version__', '?')}, which cuts the chunks "
                f"here, {theirs}, and Python's Unicode {unicodedata.unidata_version} {ours}; "
                "tokenize without --explain gives its tokens (tiktoken's own)"
            )


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
    text: str,
    start: int,
    end: int,
    special: bool | Specials,
    ranks: dict[bytes, int],
    specials: dict,
    number: int,
) -> Chunk:
    """One chunk's starting parts, merge steps and tokens."""
    if special:
        return _special_chunk(text, start, end, specials)
    piece = text.encode("utf-8")
    _check_size(len(piece), number, start, end)
    parts, steps, total = merge_steps(ranks, piece)
    whole = piece in ranks  # tiktoken takes it as it is, whatever the merges would give
    ids = [ranks[piece]] if whole else [ranks[p] for p in parts]
    starting = [piece[i : i + 1].hex() for i in range(len(piece))]
    return Chunk(text, start, end, False, whole, starting, steps, ids, total)


def _check_size(size: int, number: int, start: int, end: int) -> None:
    """Refuse a chunk too long to show merge by merge (a run of letters, a base64 blob)."""
    if size > MAX_CHUNK_BYTES:
        raise InputTextError(
            f"--explain shows chunks of up to {MAX_CHUNK_BYTES:,} bytes; chunk {number} "
            f"(characters {start:,}-{end:,}) is {size:,} bytes: tokenize without --explain "
            "gives its tokens"
        )


def _special_chunk(text: str, start: int, end: int, specials: dict[str, int]) -> Chunk:
    """An allowed special token: one id, never merged."""
    return Chunk(text, start, end, True, True, [text.encode().hex()], [], [specials[text]], 0)


def _json_spec(enc: Any) -> tuple[dict[str, Any], dict[tuple[str, str], int]]:
    """The tokenizer.json as the library holds it, and its merges' ranks: read once per
    tokenizer (Llama 3's 280,147 merges take about half a second)."""
    import json

    cached = getattr(enc, "_explain_spec", None)
    if cached is not None:
        return cached
    spec = json.loads(enc._ordinary.to_str())
    model = spec["model"]
    if model.get("type") != "BPE":
        raise EncodingError(f"--explain replays byte-pair encodings; {enc.name} is not one")
    merges = model["merges"]
    ranks = {tuple(m.split(" ", 1) if isinstance(m, str) else m): i for i, m in enumerate(merges)}
    enc._explain_spec = (spec, ranks)
    return spec, ranks


def _explain_json_bpe(enc: Any, text: str, allow_special: bool | Specials, limit: int) -> Explained:
    """The same for a byte-level BPE tokenizer.json (GPT-2, Llama 3, Qwen 2 style): its
    normalizer and pre-tokenizer cut the chunks (through the tokenizers library itself), its
    merges list gives the ranks, and a chunk in the vocabulary is taken whole where the model
    says to ignore merges."""
    import json

    ids = encode(enc, text, allow_special=allow_special)
    spec, ranks = _json_spec(enc)
    model = spec["model"]
    specials = {t: enc._added_ids[t] for t in enc.special_tokens_set} if allow_special else {}
    chunks: list[Chunk] = []
    total = 0
    _refuse_unreplayable(enc, spec)
    for start, end, special in _spans(text, specials):
        if special:
            pieces = [(text[start:end], (start, end))]
        else:
            pieces = _json_pieces(enc, text, start, end)
        for piece, (a, b) in pieces:
            total += 1
            if len(chunks) >= limit:
                continue
            if special:
                chunks.append(_special_chunk(piece, a, b, specials))
                continue
            _check_size(len(piece), len(chunks), a, b)
            try:  # a symbol outside GPT-2's byte alphabet, or a merge outside the vocabulary
                chunks.append(_json_chunk(text, piece, a, b, model, ranks))
            except KeyError:
                problem = f"--explain could not replay {enc.name}'s encoder on this text"
                raise EncodingError(problem) from None
    pattern = json.dumps(spec.get("pre_tokenizer"))
    return _checked(Explained(enc.name, pattern, chunks, total, ids))


def _json_chunk(
    text: str, piece: str, a: int, b: int, model: dict[str, Any], ranks: dict[tuple, int]
) -> Chunk:
    """One pre-tokenized chunk of a byte-level tokenizer.json, merged by its merges' ranks
    (KeyError: a symbol outside GPT-2's byte alphabet, or a part outside the vocabulary)."""
    to_byte = byte_of_char()
    vocab: dict[str, int] = model["vocab"]
    shown = [bytes([to_byte[c]]).hex() for c in piece]
    symbols, steps, merges = _merge(
        list(piece),
        lambda left, right: ranks.get((left, right)),
        lambda symbol: bytes(to_byte[c] for c in symbol).hex(),
    )
    whole = bool(model.get("ignore_merges")) and piece in vocab
    chunk_ids = [vocab[piece]] if whole else [vocab[s] for s in symbols]
    return Chunk(text[a:b], a, b, False, whole, shown, steps, chunk_ids, merges)


def _refuse_unreplayable(enc: Any, spec: dict[str, Any]) -> None:
    """Refuse a byte-level tokenizer.json whose chunks the replay cannot cut as its encoder
    does: one whose pre-tokenizer is missing or never maps the text to byte-level symbols."""
    pre = spec.get("pre_tokenizer")
    parts = pre.get("pretokenizers") if isinstance(pre, dict) else None
    kinds = [p.get("type") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    if isinstance(pre, dict) and "ByteLevel" in [pre.get("type"), *kinds]:
        return
    what = "no pre-tokenizer" if pre is None else "a pre-tokenizer without a ByteLevel step"
    raise EncodingError(
        f"--explain replays byte-level BPE, whose pre-tokenizer cuts the text into chunks of "
        f"byte-level symbols; {enc.name} has {what}, so its chunks cannot be shown "
        "(tokenize without --explain gives its tokens)"
    )


def _json_pieces(enc: Any, text: str, start: int, end: int) -> list[tuple[str, tuple[int, int]]]:
    """The pre-tokenizer's chunks of ``text[start:end]`` with their places in the text; refused
    where the normalizer changes the text (the places would be those of another text)."""
    tokenizer = enc._ordinary
    part = text[start:end]
    if tokenizer.normalizer is not None and tokenizer.normalizer.normalize_str(part) != part:
        raise EncodingError(
            f"--explain shows where each chunk sits in the text, and {enc.name}'s normalizer "
            "changes this text before it is cut; tokenize without --explain gives its tokens"
        )
    found = tokenizer.pre_tokenizer.pre_tokenize_str(part)
    return [(p, (start + a, start + b)) for p, (a, b) in found]
