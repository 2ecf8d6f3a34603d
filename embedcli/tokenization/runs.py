"""Text tiktoken cannot split: a run of about a million whitespace characters.

tiktoken's patterns (``\\s+(?!\\S)``) run on fancy-regex, which gives up after a million
backtracking steps; a whitespace run that long makes tiktoken panic (a Rust message on stderr,
then ``pyo3_runtime.PanicException``) or raise ``ValueError: Regex error``. Measured with
tiktoken 0.14 on gpt2, r50k_base, cl100k_base and o200k_base, the shortest failing run is
1,000,194 spaces before a letter; runs of 2.1 million letters, digits, marks, punctuation or
emoji all split. So embedcli refuses, before any engine sees it, text with a run of
``MAX_WHITESPACE_RUN`` or more whitespace characters, under every tiktoken-format encoding
(fastokens could count it, but then no reference would check that count).

Runs are of Unicode ``White_Space``, the characters fancy-regex's ``\\s`` matches (Python's
``\\s`` adds U+001C-U+001F, which tiktoken splits as other characters).
"""

from __future__ import annotations

import re
from typing import Any

from embedcli.errors import InputTextError
from embedcli.tokenization.kinds import tiktoken_behind

MAX_WHITESPACE_RUN = 900_000
_STRIDE = 4096  # a run of MAX_WHITESPACE_RUN covers this many sampled characters in a row


def refuse_long_runs(enc: Any, text: str) -> None:
    """Raise InputTextError if ``text`` holds a whitespace run tiktoken cannot split
    (only for tiktoken-format encodings; Hugging Face tokenizers split such runs)."""
    if len(text) < MAX_WHITESPACE_RUN or not _tiktoken_backed(enc):
        return
    found = longest_run(text)
    if found is not None:
        start, end = found
        raise InputTextError(
            f"a run of {end - start:,} whitespace characters: "
            "tiktoken's regex gives up on runs of about a million, so embedcli tokenizes no "
            f"text with a run of {MAX_WHITESPACE_RUN:,} or more"
        )


def longest_run(text: str) -> tuple[int, int] | None:
    """The span of the first whitespace run of at least MAX_WHITESPACE_RUN characters, or
    None. Such a run covers MAX_WHITESPACE_RUN // _STRIDE characters in a row of
    ``text[::_STRIDE]``, so only those stretches of the text are searched (the sampled
    characters around a stretch are not whitespace, so no run crosses its ends): time
    linear in ``len(text) / _STRIDE`` for text without long runs, in ``len(text)`` at worst."""
    if len(text) < MAX_WHITESPACE_RUN:
        return None
    least = MAX_WHITESPACE_RUN // _STRIDE
    for sampled in _SPACE.finditer(text[::_STRIDE]):
        if sampled.end() - sampled.start() < least:
            continue
        low = max(0, (sampled.start() - 1) * _STRIDE + 1)
        high = min(len(text), sampled.end() * _STRIDE)
        for run in _SPACE.finditer(text, low, high):  # one run, or several between samples
            if run.end() - run.start() >= MAX_WHITESPACE_RUN:
                return run.span()
    return None


# Unicode White_Space, what fancy-regex's \s matches (Python's \s adds U+001C-U+001F)
_SPACE = re.compile(r"[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")


def _tiktoken_backed(enc: Any) -> bool:

    return tiktoken_behind(enc) is not None
