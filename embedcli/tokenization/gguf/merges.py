"""The merges of a SentencePiece-style GGUF vocabulary (``tokenizer.ggml.model`` "llama"), as
BPE ranks that give llama.cpp's ids (:mod:`embedcli.tokenization.gguf.tokenizer` says how).

llama.cpp merges the adjacent pair whose join is the token of the highest score; here that is
every split of every token into two tokens, ranked by the joined token's score (ties: the lower
token id, then the lower left id). A real vocabulary makes about two such merges per token, and
their text is about twice the tokens' text (SentencePiece-style BPE vocabularies of 32,000 and
96,000 tokens, trained on Python's sources, make 1.6 and 1.8 per token, and 1.7 times the
text). Nested tokens
("a", "aa", "aaa", ...) make far more: n of them, n²/2 merges spelling n³/6 characters, from a
file of n²/2. Past ``RATIO`` times either, the vocabulary is refused rather than held in memory
out of proportion to the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

RATIO = 16  # merges per token, and merged characters per character of the tokens, at most


def score_merges(
    tokens: Sequence[str],
    ids: dict[str, int],
    scores: Sequence[float],
    fail: Callable[[str], Exception],
) -> list[list[str]]:
    """Every split of every token into two tokens, as [left, right], in llama.cpp's order."""
    lengths = sorted({len(token) for token in tokens})
    known = set(lengths)
    total = sum(len(token) for token in tokens)
    most_merges, most_text = RATIO * len(tokens), RATIO * total
    mergeable, text = [], 0
    for t, token in enumerate(tokens):
        size = len(token)
        for cut in lengths:  # a cut can only fall where both sides have a token's length
            if cut >= size:
                break
            if size - cut not in known:
                continue
            left, right = ids.get(token[:cut]), ids.get(token[cut:])
            if left is not None and right is not None:
                mergeable.append((-scores[t], t, left, right))
                text += size
        if len(mergeable) > most_merges or text > most_text:
            raise fail(_too_many(len(tokens), total, t))
    _check_scores(mergeable, scores, fail)
    mergeable.sort()
    return [[tokens[a], tokens[b]] for _, _, a, b in mergeable]


def _too_many(count: int, total: int, at: int) -> str:
    return (
        f"its {count:,} tokens nest so deeply that their splits into two tokens, the merges "
        f"that give llama.cpp's ids, pass {RATIO} per token or {RATIO} times the tokens' "
        f"{total:,} characters (by token {at:,}); a real SentencePiece vocabulary makes about "
        "2 of each, so embedcli refuses this one rather than hold merges out of proportion to "
        "the file"
    )


def _check_scores(
    mergeable: list[tuple[float, int, int, int]],
    scores: Sequence[float],
    fail: Callable[[str], Exception],
) -> None:
    """Refuse scores that are mostly one value: llama.cpp then merges left to right, which
    ranks cannot say."""
    joined = Counter(scores[t] for t in {m[1] for m in mergeable})
    if joined and joined.most_common(1)[0][1] * 2 > sum(joined.values()) > 2:
        score = joined.most_common(1)[0][0]
        raise fail(
            f"most of its tokens have the one score {score:g} (as convert_hf_to_gguf.py "
            "writes for a model with only a tokenizer.json), so llama.cpp merges pieces "
            "left to right, which embedcli does not reproduce; pass the model's "
            "tokenizer.json with -e"
        )
