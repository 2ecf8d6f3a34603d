"""What each token of a vocabulary is, for the undertrained indicator: a known-unused
reference token, a row with no token, a special token, bytes that are not text, a text that
does not come back as the token (``encode(decode(id)) != [id]``), or an ordinary token.

The reference ("known unused") comes from the tokenizer's own names (reserved and unused
tokens), else from the single-byte tokens of bytes that never occur in UTF-8 text, else from
the user (``--reference-ids``); with none of these, the indicator is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedcli.errors import EncodingError, TokenIdError
from embedcli.tokenization.display import plural

if TYPE_CHECKING:
    import numpy as np

    from embedcli.tokenization.modeltok import Tokenizer

# Every token has one class: the first of these that holds, in this order.
CLASSES = (
    "reference",  # a known-unused token: the indicator's reference
    "no token",  # a row past the tokenizer's vocabulary, or an id it does not define
    "special",  # a special (control) token: never produced by plain text
    "not text",  # bytes that are not UTF-8 alone (a byte, part of a character)
    "unreachable",  # text that encodes to other ids: encode(decode(id)) != [id]
    "unchecked",  # text whose round trip cannot be told apart from its neighbour's
    "ordinary",  # text that encodes back to the token itself
)

# Names tokenizers give to tokens they reserve and never train: Gemma's <unused0>, BERT's
# [unused0], Llama 3's <|reserved_special_token_0|>, Qwen's <|extra_0|>, tekken's <SPECIAL_20>,
# Yi's <|unused_token_0|>, XGLM's <madeupword0>.
UNUSED_NAMES = re.compile(
    r"<unused\d+>|\[unused\d+\]|<\|reserved_special_token_\d+\|>|<\|extra_\d+\|>"
    r"|<SPECIAL_\d+>|<\|unused_token_?\d*\|>|<madeupword\d+>"
)
NEVER_IN_UTF8 = frozenset((0xC0, 0xC1, *range(0xF5, 0x100)))
_PROBE = "hello"
_PREFIXES = ("«", "»")  # put before a text whose tokenizer changes a text's start


@dataclass(frozen=True)
class Reference:
    """The known-unused tokens, and where they came from."""

    ids: list[int]
    source: str  # "names", "bytes never in UTF-8", "--reference-ids"
    described: str  # for people: what they are


def vocabulary_pieces(enc: Tokenizer, rows: int) -> list[bytes | None]:
    """Each of ``rows`` rows' token bytes; None for a row the tokenizer gives no token."""
    found: list[bytes | None] = []
    for token in range(min(rows, enc.n_vocab)):
        try:
            found.append(enc.decode_single_token_bytes(token))
        except (KeyError, ValueError, OverflowError):
            found.append(None)
    return found + [None] * (rows - len(found))


def reference_tokens(
    pieces: Sequence[bytes | None], given: Sequence[int] | None, rows: int
) -> Reference:
    """The reference (see :func:`_reference`); one that is every row leaves nothing to rank."""
    found = _reference(pieces, given, rows)
    if len(found.ids) >= rows:
        raise TokenIdError(
            f"every one of the table's {rows:,} rows is a reference token: nothing is left to "
            "rank against them"
        )
    return found


def _reference(pieces: Sequence[bytes | None], given: Sequence[int] | None, rows: int) -> Reference:
    """The reference: ``given`` (each a row of the table), else the tokenizer's unused
    names, else the bytes never in UTF-8; none found is an error that says what to pass."""
    if given:
        bad = [token for token in given if not 0 <= token < rows]
        if bad:
            raise TokenIdError(
                f"--reference-ids {bad[0]} is not a row of the table, whose rows are 0 to "
                f"{rows - 1}"
            )
        ids = sorted(set(given))
        again = len(given) - len(ids)
        described = f"{plural(len(ids), 'id')} given with --reference-ids" + (
            f", {plural(again, 'repeat')} left out" if again else ""
        )
        return Reference(ids, "--reference-ids", described)
    named = [
        token for token, data in enumerate(pieces)
        if data is not None and UNUSED_NAMES.fullmatch(data.decode("utf-8", "replace"))
    ]  # fmt: skip
    if named:
        first = pieces[named[0]].decode("utf-8", "replace")  # type: ignore[union-attr]
        return Reference(named, "names", f"{len(named):,} tokens named like {first}")
    stray = [
        token for token, data in enumerate(pieces)
        if data is not None and len(data) == 1 and data[0] in NEVER_IN_UTF8
    ]  # fmt: skip
    if stray:
        return Reference(
            stray, "bytes never in UTF-8",
            f"{len(stray):,} single-byte tokens of bytes no UTF-8 text holds (0xC0, 0xC1, "
            "0xF5-0xFF)",
        )  # fmt: skip
    raise EncodingError(
        "no known-unused tokens to compare with: the tokenizer names none (<unused0>, "
        "<|reserved_special_token_0|>, ...) and has no tokens of bytes UTF-8 never holds; "
        "pass --reference-ids with tokens the model never saw in training"
    )


def _changes_start(enc: Tokenizer) -> bool:
    """Whether encoding a text adds to its start (SentencePiece's dummy prefix ▁)."""
    ids = enc.encode_ordinary(_PROBE)
    return b"".join(enc.decode_single_token_bytes(t) for t in ids) != _PROBE.encode()


def _round_trip(enc: Tokenizer, prefixed: bool) -> Callable[[int, str], str]:
    """A check of one token: "ordinary", "unreachable" or "unchecked"."""
    if not prefixed:
        return lambda token, text: (
            "ordinary" if enc.encode_ordinary(text) == [token] else "unreachable"
        )
    bases = [(prefix, enc.encode_ordinary(prefix)) for prefix in _PREFIXES]

    def check(token: int, text: str) -> str:
        clean = False
        for prefix, base in bases:
            ids = enc.encode_ordinary(prefix + text)
            if ids[: len(base)] == base:
                clean = True
                if ids[len(base) :] == [token]:
                    return "ordinary"
        return "unreachable" if clean else "unchecked"

    return check


def token_classes(
    enc: Tokenizer,
    pieces: Sequence[bytes | None],
    reference: Sequence[int],
    on_tokens: Callable[[int, int], None] | None = None,
) -> np.ndarray:
    """Each row's class, as an index into CLASSES (int8)."""
    import numpy as np

    code = {name: index for index, name in enumerate(CLASSES)}
    found = np.full(len(pieces), code["no token"], dtype=np.int8)
    specials = {text.encode("utf-8") for text in enc.special_tokens_set}
    check = _round_trip(enc, _changes_start(enc))
    step = max(1, len(pieces) // 200)
    for token, data in enumerate(pieces):
        if data is not None:
            if data in specials:
                found[token] = code["special"]
            else:
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    found[token] = code["not text"]
                else:
                    found[token] = code[check(token, text)]
        if on_tokens is not None and (token % step == step - 1 or token == len(pieces) - 1):
            on_tokens(token + 1, len(pieces))
    found[np.asarray(list(reference), dtype=np.int64)] = code["reference"]
    return found
