"""The tokenize job: text -> tokens with their pieces and bytes, counts, decoding, truncation.

Large texts are encoded in chunks on several threads (tiktoken releases the GIL while it
encodes). Chunks are cut only where every bundled encoding's pre-tokenizer would cut anyway, so
the ids are exactly those of one pass. No torch here: tokenizing never needs it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, TypeVar

from embedcli.errors import TokenIdError
from embedcli.tokenization.counts import count_ids
from embedcli.tokenization.encodings import (
    Token,
    added_specials,
    cut_safe,
    encode,
    token_bytes_display,
    token_piece,
    visible,
    with_specials,
)
from embedcli.tokenization.engines import builder
from embedcli.tokenization.spans import cut_text, decoded_text, token_offsets
from embedcli.tokenization.specialtext import Specials
from embedcli.tokenization.threads import run_on_helpers

if TYPE_CHECKING:
    import tiktoken

# Below this many characters one pass is faster than starting threads.
PARALLEL_MIN_CHARS = 1 << 20
CHUNK_CHARS = 1 << 18


def split_points(text: str, chunk_chars: int) -> list[int]:
    """Offsets roughly ``chunk_chars`` apart where a text can be cut without changing its tokens.

    A cut goes just before a space (U+0020) that follows a non-whitespace character. In the
    pre-tokenizer regexes of gpt2, r50k, p50k, cl100k and o200k no match ever holds a
    non-whitespace character followed by a space (a space only ever opens a match), so such an
    offset is always a boundary between two matches; and as the piece before it ends in a
    non-whitespace character, no lookahead or end-of-text rule at the cut can differ.
    """
    points = []
    start = chunk_chars
    while start < len(text):
        cut = text.find(" ", start)
        while cut > 0 and text[cut - 1].isspace():
            cut = text.find(" ", cut + 1)
        if cut <= 0:
            break
        points.append(cut)
        start = cut + chunk_chars
    return points


def last_cut(text: str) -> int:
    """The last offset where :func:`split_points`' rule allows a cut, or -1 when there is none."""
    cut = text.rfind(" ")
    while cut > 0 and text[cut - 1].isspace():
        cut = text.rfind(" ", 0, cut)
    return cut if cut > 0 else -1


def chunks(text: str, chunk_chars: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut at :func:`split_points`; joined back, the pieces are the text."""
    edges = [0, *split_points(text, chunk_chars), len(text)]
    return [text[a:b] for a, b in pairwise(edges) if b > a]


@dataclass(frozen=True)
class Parallel:
    """How a large text is spread over threads."""

    workers: int | None = None  # threads; None: one per CPU this process may use
    chunk_chars: int = CHUNK_CHARS  # characters per chunk, roughly
    min_chars: int = PARALLEL_MIN_CHARS  # shorter texts are encoded in one pass
    # told (characters done, characters in all) as chunks are done, from any thread
    on_chars: Callable[[int, int], None] | None = None


def _cpus() -> int:
    """The CPUs this process may run on (taskset and containers narrow it), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


T = TypeVar("T")


def _per_chunk(
    enc: tiktoken.Encoding,
    text: str,
    allow_special: bool | Specials,
    parallel: Parallel,
    each: Callable[[tiktoken.Encoding, str], T],
    first: Callable[[], object] | None = None,
) -> list[T]:
    """``each(encoding, chunk)`` for the chunks of ``text`` in order; one pass for a short text.

    This thread works with ``enc``, each helper thread with its own copy (threads sharing one
    tiktoken encoding contend inside it: see threads.py). Every thread takes the next chunk
    left, so a helper still building its copy holds nothing up. ``first``: a job this thread
    runs before it takes a chunk (building a faster engine, while the helpers count)."""
    workers = min(parallel.workers or _cpus(), 1 + len(text) // parallel.chunk_chars)
    parts = [text]
    if len(text) >= parallel.min_chars and workers > 1 and cut_safe(enc):
        parts = chunks(text, parallel.chunk_chars)
    told = parallel.on_chars
    if len(parts) == 1:
        if first is not None:
            first()
        result = [each(enc, text)]
        if told is not None:
            told(len(text), len(text))
        return result
    out: list = [None] * len(parts)
    failed: dict[int, Exception] = {}
    lock, left = threading.Lock(), iter(range(len(parts)))
    done = [0]  # characters of the chunks done

    def drain(own: tiktoken.Encoding) -> None:
        while not failed:
            with lock:
                index = next(left, None)
            if index is None:
                return
            try:
                out[index] = each(own, parts[index])
            except Exception as exc:  # raised below: the first in the text
                failed[index] = exc
            if told is not None:
                with lock:
                    done[0] += len(parts[index])
                    told(done[0], len(text))

    helpers = run_on_helpers(enc, drain, workers - 1)
    try:
        if first is not None:
            first()
        drain(enc)
    finally:  # on Ctrl-C too, the helpers stop after the chunk they are on
        with lock:
            left = iter(())
    for helper in helpers:
        helper.result()
    if failed:  # chunks are taken in order, so every chunk before the first failure was encoded
        raise failed[min(failed)]
    return out


def encode_text(
    enc: tiktoken.Encoding,
    text: str,
    *,
    allow_special: bool | Specials = False,
    parallel: Parallel = Parallel(),
) -> list[int]:
    """The token ids of ``text``, exactly as one pass gives them; large texts use all cores."""

    def ids(own: tiktoken.Encoding, part: str) -> list[int]:
        # Special tokens hold no spaces, so each lies whole inside one chunk and is checked there.
        return encode(own, part, allow_special=allow_special)

    return [t for part in _per_chunk(enc, text, allow_special, parallel, ids) for t in part]


def count_tokens(
    enc: tiktoken.Encoding,
    text: str,
    *,
    allow_special: bool | Specials = False,
    parallel: Parallel = Parallel(),
) -> int:
    """The number of tokens in ``text``, without keeping the ids; large texts use all cores."""

    def count(own: tiktoken.Encoding, part: str) -> int:
        return count_ids(own, part, allow_special=allow_special)

    threads = min(parallel.workers or _cpus(), 1 + len(text) // parallel.chunk_chars)
    first = None if allow_special else builder(enc, len(text), threads)
    return sum(_per_chunk(enc, text, allow_special, parallel, count, first=first))


# ---------------------------------------------------------------- reports


@dataclass(frozen=True)
class Segment:
    """A run of tokens drawn as one coloured piece: a token, or the tokens of a split character."""

    text: str  # with whitespace made visible
    first: int  # index of its first token
    last: int  # index of its last token


@dataclass
class TokenizeReport:
    """What ``embedcli tokenize`` shows for one encoding."""

    encoding: str
    n_vocab: int
    count: int
    characters: int
    tokens: list[Token] | None = None  # the first ``limit`` tokens, when asked for
    segments: list[Segment] | None = None
    offsets: list[list[int] | None] | None = None  # with --offsets: [start, end) per token


def segments_of(pieces: Sequence[bytes]) -> list[Segment]:
    """Group token bytes into segments that each decode to whole characters."""
    out: list[Segment] = []
    buffer, first = b"", 0
    for index, data in enumerate(pieces):
        buffer += data
        try:
            text = buffer.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a character is split across tokens: keep going until it is whole
        out.append(Segment(visible(text, keep_newlines=True), first, index))
        buffer, first = b"", index + 1
    if buffer:  # only a cut-off list of tokens can end inside a character
        out.append(Segment(token_bytes_display(buffer), first, len(pieces) - 1))
    return out


def tokenize_report(
    enc: tiktoken.Encoding,
    text: str,
    ids: Sequence[int] | None = None,
    *,
    count: int | None = None,
    limit: int | None = None,
    added: tuple[int, int] = (0, 0),
) -> TokenizeReport:
    """Report for one encoding: from its ids (pieces for the first ``limit`` tokens when
    given, the first and last ``added`` marked as added by the tokenizer), or from a
    ``count`` alone."""
    if ids is None:
        return TokenizeReport(enc.name, enc.n_vocab, count or 0, len(text))
    report = TokenizeReport(enc.name, enc.n_vocab, len(ids), len(text))
    shown = ids if limit is None else ids[:limit]
    marked = {*range(added[0]), *range(len(ids) - added[1], len(ids))}
    report.tokens = [
        token_piece(enc, token, index=i, added=(i in marked) or None)
        for i, token in enumerate(shown)
    ]
    report.segments = segments_of([t.data or b"" for t in report.tokens])
    return report


def decode_ids(enc: tiktoken.Encoding, ids: Sequence[int]) -> bytes:
    """The bytes behind ``ids``; an id the encoding does not have is named."""
    out = bytearray()
    for token in ids:
        piece = token_piece(enc, token)
        if piece.data is None:
            where = (
                "no token has that id, though ids on both sides of it do"
                if 0 <= token < enc.n_vocab
                else f"its ids run from 0 to {enc.n_vocab - 1}"
            )
            raise TokenIdError(f"token id {token} is not in {enc.name} ({where})")
        out += piece.data
    return bytes(out)


def whole_characters(enc: tiktoken.Encoding, kept: Sequence[int]) -> tuple[int, str]:
    """How many of the tokens ``kept`` from the start of a text hold only whole characters, and
    their text: a cut that would end inside a character is moved back to the token before it."""
    data = decode_ids(enc, kept)
    # The bytes are a prefix of valid UTF-8, so only a character cut at the end can be invalid.
    text = data.decode("utf-8", errors="ignore")
    whole, end = len(kept), len(data)
    size = len(text.encode("utf-8"))
    while end > size:  # drop the tokens that hold any byte of the cut character
        whole -= 1
        end -= len(enc.decode_single_token_bytes(kept[whole]))
    return whole, decode_ids(enc, kept[:whole]).decode("utf-8")


# ---------------------------------------------------------------- what tokenize prints

TOKEN_TABLE_LIMIT = 500  # tokens listed by the table view; --encode and --json have them all


@dataclass(frozen=True)
class Encoded:
    """``tokenize --encode``: the ids of a text."""

    encoding: str
    n_vocab: int
    count: int
    ids: list[int]


@dataclass(frozen=True)
class Decoded:
    """``tokenize --decode``: the text of some ids; ``partial`` when they start or end inside a
    character (its bytes then show as U+FFFD)."""

    encoding: str
    n_vocab: int
    count: int
    ids: list[int]
    text: str
    partial: bool


@dataclass(frozen=True)
class Cut:
    """``tokenize --truncate N``: the text of its first ``count`` tokens, never half a
    character. ``partial``: the N-th token ended inside a character, so the cut was moved back
    to the last token before that character (``count`` < ``limit``)."""

    encoding: str
    n_vocab: int
    count: int
    text: str
    limit: int
    partial: bool


@dataclass(frozen=True)
class Tokenized:
    """A text (or a list of ids) under one encoding; ``ids`` is None when only counted."""

    enc: tiktoken.Encoding
    text: str | None  # None when the input was ids
    ids: list[int] | None
    count: int
    added: tuple[int, int] = (0, 0)  # special tokens the tokenizer added before and after

    def encoded(self) -> Encoded:
        """The ids."""
        return Encoded(self.enc.name, self.enc.n_vocab, self.count, list(self.ids or ()))

    def decoded(self) -> Decoded:
        """The text behind the ids (a tokenizer.json's own decoder's, where it is sure)."""
        data = decode_ids(self.enc, self.ids or ())
        text = data.decode("utf-8", errors="replace")
        ids = list(self.ids or ())
        partial = text.encode("utf-8") != data
        text = decoded_text(self.enc, ids, text)
        return Decoded(self.enc.name, self.enc.n_vocab, len(ids), ids, text, partial)

    def cut(self, limit: int) -> Cut:
        """The text of the first ``limit`` tokens, or of fewer where the limit falls inside a
        character (the special tokens a model's tokenizer added count as tokens but are not
        text: the result is a prefix of the input)."""
        ids = self.ids or []
        kept = ids[:limit]
        before, after = self.added
        body = kept[before : max(before, len(ids) - after)]
        whole, text = whole_characters(self.enc, body)
        text = cut_text(self.enc, body[:whole], text, self.text)
        count = len(kept) if whole == len(body) else min(before, len(kept)) + whole
        return Cut(self.enc.name, self.enc.n_vocab, count, text, limit, count < len(kept))

    def report(self, limit: int | None = None, *, offsets: bool = False) -> TokenizeReport:
        """The table view's report (pieces of the first ``limit`` tokens; with ``offsets``,
        where each sits in the text)."""
        if self.ids is None:
            return tokenize_report(self.enc, self.text or "", count=self.count)
        text = self.text if self.text is not None else self.decoded().text
        report = tokenize_report(self.enc, text, self.ids, limit=limit, added=self.added)
        if offsets:
            report.offsets = token_offsets(self.enc, report.tokens or [], text)
        return report


def tokenize_text(
    enc: tiktoken.Encoding,
    text: str,
    allow_special: bool | Specials = False,
    *,
    count_only: bool = False,
    add_special: bool = True,
    parallel: Parallel = Parallel(),
) -> Tokenized:
    """Encode ``text`` (or only count its tokens, keeping no ids), with the special tokens a
    model's tokenizer adds by default unless ``add_special`` is False."""
    before, after = added_specials(enc, add_special)
    added = (len(before), len(after))
    if count_only:
        count = count_tokens(enc, text, allow_special=allow_special, parallel=parallel)
        return Tokenized(enc, text, None, count + sum(added), added)
    ids = encode_text(enc, text, allow_special=allow_special, parallel=parallel)
    ids = with_specials(enc, ids, add_special)
    return Tokenized(enc, text, ids, len(ids), added)


def tokenize_ids(enc: tiktoken.Encoding, ids: Sequence[int]) -> Tokenized:
    """Ids given as input; each must be in the encoding."""
    ids = list(ids)
    decode_ids(enc, ids)  # names the first id the encoding lacks
    return Tokenized(enc, None, ids, len(ids))
