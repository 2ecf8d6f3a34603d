"""Special-token texts found in a text, leftmost first and, at one place, longest first (what
tiktoken's alternation of tokens sorted longest first finds): a trie of the tokens' texts
walked only from the characters a token can start with, so that thousands of tokens (Gemma's
6,000 control pieces) cost no more per character than a few.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

_END = ""  # a trie node's key for the id of the token that ends there (no character is "")


class SpecialMatcher:
    """The places of a fixed set of special-token texts (each with its id) in a text."""

    def __init__(self, tokens: Mapping[str, int]) -> None:
        self._trie: dict = {}
        for text, token_id in tokens.items():
            if not text:
                continue
            node = self._trie
            for char in text:
                node = node.setdefault(char, {})
            node[_END] = token_id
        starts = "".join(re.escape(c) for c in sorted({text[0] for text in tokens if text}))
        self._start = re.compile(f"[{starts}]") if starts else None

    def _longest_at(self, text: str, start: int) -> tuple[int, int] | None:
        node, at, found = self._trie, start, None
        while at < len(text):
            node = node.get(text[at])
            if node is None:
                break
            at += 1
            if _END in node:
                found = (at, node[_END])
        return found

    def matches(self, text: str) -> Iterator[tuple[int, int, int]]:
        """(start, end, id) of each token in ``text``, left to right, never overlapping."""
        if self._start is None:
            return
        at = 0
        while True:
            hit = self._start.search(text, at)
            if hit is None:
                return
            found = self._longest_at(text, hit.start())
            if found is None:
                at = hit.start() + 1
                continue
            end, token_id = found
            yield hit.start(), end, token_id
            at = end

    def first(self, text: str) -> str | None:
        """The text of the first token in ``text``, or None."""
        for start, end, _ in self.matches(text):
            return text[start:end]
        return None
