"""Token ids written as text: one reading for ``--ids``, ``tokenize --decode`` and
``--ids-file``, each saying what is wrong in its own words. No tiktoken, no torch."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from embedcli.errors import TokenIdError

_SEPARATOR = re.compile(r"\s*,\s*|\s+")  # one comma (with spaces around it), or spaces
_LOOSE_WORD = re.compile(r"[^\s,\[\]]+")  # a file's ids: anything between commas, spaces, brackets
MAX_ID_DIGITS = 4000  # past this, int() refuses (4,300 digits): the range check says the rest
MAX_FILE_ID_DIGITS = 12  # an --ids-file id longer than this is beyond any table


@dataclass(frozen=True)
class BadIds:
    """Why a text is not a list of token ids: ``kind`` is ``none`` (no ids at all), ``empty``
    (an empty item), ``negative``, ``not_id`` or ``too_long``; ``word`` is the item, ``offset``
    where it starts in the text."""

    kind: str
    word: str = ""
    offset: int = 0

    def problem(self) -> str:
        """What is wrong, as --ids and --decode say it."""
        word = self.word
        if self.kind == "none":
            return "there are no ids"
        if self.kind == "empty":
            return "an item between separators is empty (ids are separated by one comma or spaces)"
        if self.kind == "negative":
            return f"{word[:40]!r} is negative: token ids start at 0"
        if self.kind == "too_long":
            return f"{word[:40]!r}… is far beyond any token table"
        shown = word if len(word) <= 40 else word[:40] + "…"
        return f"{shown!r} is not a token id (ids are ASCII digits like 15496)"


def read_ids(text: str, *, loose: bool = False) -> list[int] | BadIds:
    """The one reading of token ids written as text (--ids, --decode, --ids-file): ASCII
    digits, not another script's digits, signs or underscores, which int() would accept. As a
    list (``loose=False``: --ids and --decode), they are separated by one comma and/or
    whitespace, optionally inside [ ], with no empty item (``1,,2``); in a file (``loose``),
    any run of commas, whitespace and brackets separates them, each id is kept once (in the
    order first given: memory stays per id), and a word longer than MAX_FILE_ID_DIGITS is too
    long. The ids, or what is wrong with the first bad word."""
    ids: dict[int, None] | list[int] = {} if loose else []
    for word, offset in _words(text, loose):
        if not word:
            return BadIds("empty")
        if not loose and word.startswith("-") and word[1:].isascii() and word[1:].isdigit():
            return BadIds("negative", word, offset)
        if not (word.isascii() and word.isdigit()):
            return BadIds("not_id", word, offset)
        if len(word) > (MAX_FILE_ID_DIGITS if loose else MAX_ID_DIGITS):
            return BadIds("too_long", word, offset)
        if isinstance(ids, dict):
            ids.setdefault(int(word), None)
        else:
            ids.append(int(word))
    return list(ids) if ids else BadIds("none")


def _words(text: str, loose: bool) -> Iterator[tuple[str, int]]:
    """Each word of ``text`` that should be an id, and where it starts (0 for a list)."""
    if loose:
        yield from ((found.group(), found.start()) for found in _LOOSE_WORD.finditer(text))
        return
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1].strip()
    if body:
        yield from ((word, 0) for word in _SEPARATOR.split(body))


def parse_ids(text: str) -> list[int]:
    """'15496 11, 995' -> [15496, 11, 995]; anything else is one error naming what is wrong."""
    found = read_ids(text)
    if isinstance(found, BadIds):
        if found.kind == "none":
            return []
        raise TokenIdError(found.problem())
    return found
