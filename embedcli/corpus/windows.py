"""Sliding windows over a token stream: the LLM-from-scratch data loader, and streaming embedding.

Texts of any size are read in blocks and tokenized block by block, cut only where the tokenizer
cuts anyway (see tokens.split_points), so the ids are exactly those of one pass and memory does
not grow with the file. No torch at import.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from embedcli.errors import InputTextError, UsageError
from embedcli.tokenization.encodings import cut_safe, encode, plural
from embedcli.tokenization.specialtext import Specials
from embedcli.tokenization.tokens import last_cut

if TYPE_CHECKING:
    import tiktoken

READ_BYTES = 1 << 18  # 256 KiB read and tokenized at a time: small blocks keep the id lists small
# Text is cut only before a space that follows a non-space (tokens.split_points); a run longer
# than this with no such place would have to be held whole, so it is refused instead.
MAX_UNCUT_CHARS = 8 << 20


# ---------------------------------------------------------------- the data loader


@dataclass(frozen=True)
class WindowPlan:
    """How a token sequence is cut into (input, target) windows and batches."""

    num_tokens: int
    seq_len: int
    stride: int
    batch_size: int
    keep_last: bool

    @property
    def starts(self) -> range:
        """``range(0, len(ids) - seq_len, stride)``: every window with a full target."""
        return range(0, self.num_tokens - self.seq_len, self.stride)

    @property
    def num_windows(self) -> int:
        """The dataset's length as torch's DataLoader counts it: every window with a target."""
        return len(self.starts)

    @property
    def num_batches(self) -> int:
        """``len(DataLoader)``: full batches, plus a short last one only with keep_last (else
        ``drop_last=True`` leaves it out)."""
        full, rest = divmod(self.num_windows, self.batch_size)
        return full + (1 if rest and self.keep_last else 0)

    @property
    def dropped_windows(self) -> int:
        """Windows that ``drop_last`` leaves out: the short last batch, unless keep_last."""
        return 0 if self.keep_last else self.num_windows % self.batch_size

    @property
    def batched_windows(self) -> int:
        """Windows that enter a batch."""
        return self.num_windows - self.dropped_windows

    @property
    def dropped_tokens(self) -> int:
        """Tokens at the end that no batched window reads as input or target."""
        if self.batched_windows == 0:
            return self.num_tokens
        last = self.starts[self.batched_windows - 1]
        return self.num_tokens - (last + self.seq_len + 1)


def plan_windows(
    num_tokens: int, seq_len: int, stride: int | None, batch_size: int, keep_last: bool
) -> WindowPlan:
    """Check the sizes and describe the windows; too little text is an error."""
    for name, value in (
        ("--seq-len", seq_len),
        ("--stride", stride),
        ("--batch-size", batch_size),
    ):
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1, got {value}")
    plan = WindowPlan(num_tokens, seq_len, stride or seq_len, batch_size, keep_last)
    if num_tokens == 0:
        raise InputTextError("the text is empty: there is nothing to cut into windows")
    if len(plan.starts) == 0:
        raise InputTextError(
            f"the text has {plural(num_tokens, 'token')}, too few for one window: an input of "
            f"{plural(seq_len, 'token')} and its target need {seq_len + 1}; lower --seq-len"
        )
    if plan.batched_windows == 0:
        raise InputTextError(
            f"the text gives {plural(len(plan.starts), 'window')}, fewer than one batch of "
            f"{batch_size}; pass --keep-last or lower --batch-size"
        )
    return plan


def window_pairs(ids: list[int], plan: WindowPlan) -> Iterator[tuple[int, list[int], list[int]]]:
    """(start, input_ids, target_ids) for every window of the plan, in order."""
    for start in plan.starts[: plan.batched_windows]:
        end = start + plan.seq_len
        yield start, ids[start:end], ids[start + 1 : end + 1]


def window_records(ids: list[int], plan: WindowPlan) -> Iterator[dict[str, Any]]:
    """``windows --jsonl``: ``{"index", "start", "input_ids", "target_ids"}`` per window."""
    for index, (start, inputs, targets) in enumerate(window_pairs(ids, plan)):
        yield {"index": index, "start": start, "input_ids": inputs, "target_ids": targets}


def batches(ids: list[int], plan: WindowPlan, limit: int | None = None) -> list[dict[str, list]]:
    """The first ``limit`` batches as ``{"inputs": [[...]], "targets": [[...]]}``."""
    out: list[dict[str, list]] = []
    current: dict[str, list] = {"inputs": [], "targets": []}
    for _, inputs, targets in window_pairs(ids, plan):
        current["inputs"].append(inputs)
        current["targets"].append(targets)
        if len(current["inputs"]) == plan.batch_size:
            out.append(current)
            current = {"inputs": [], "targets": []}
            if limit is not None and len(out) >= limit:
                return out
    if current["inputs"]:
        out.append(current)
    return out if limit is None else out[:limit]


# ---------------------------------------------------------------- streaming


def token_blocks(
    stream: BinaryIO,
    enc: tiktoken.Encoding,
    *,
    allow_special: bool | Specials,
    source: str,
    read_bytes: int = READ_BYTES,
    on_bytes: Callable[[int], None] | None = None,
    prefix: Sequence[int] = (),
) -> Iterator[list[int]]:
    """Token ids of a UTF-8 byte stream, block by block, exactly as one pass would give them
    (after ``prefix``: the special tokens a model's tokenizer adds before a text)."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    pending, offset = "", 0
    if prefix:
        yield list(prefix)
    cuttable = cut_safe(enc)
    while True:
        data = stream.read(read_bytes)
        # The decoder may hold the first bytes of a character from the last read: the bytes it
        # decodes now start that many bytes before this read's offset.
        held = len(decoder.getstate()[0])
        try:
            pending += decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            bad = exc.object[exc.start]
            position = offset - held + exc.start
            raise InputTextError(
                f"{source} is not valid UTF-8 (byte 0x{bad:02X} at offset {position})"
            ) from None
        offset += len(data)
        if on_bytes is not None:
            on_bytes(len(data))
        if not data:
            if pending:
                yield encode(enc, pending, allow_special=allow_special)
            return
        # Encode up to the last cut that cannot change the tokens; keep the rest for later.
        cut = last_cut(pending) if cuttable else -1
        if cut > 0:
            yield encode(enc, pending[:cut], allow_special=allow_special)
            pending = pending[cut:]
        elif len(pending) > MAX_UNCUT_CHARS and not cuttable:
            raise InputTextError(
                f"{source} is longer than {MAX_UNCUT_CHARS:,} characters, and {enc.name} must "
                "see a text whole (its tokens can change wherever the text is cut); stream a "
                "shorter text, or use a tiktoken encoding or a byte-level BPE tokenizer"
            )
        elif len(pending) > MAX_UNCUT_CHARS:
            raise InputTextError(
                f"{source} has a run of more than {MAX_UNCUT_CHARS:,} characters with no space "
                f"(near byte {offset:,}): streaming cuts the text only before a space, so that "
                "the tokens are exactly those of one pass; add spaces or line breaks with spaces"
            )


@dataclass
class StreamWindows:
    """Full windows of ``length`` tokens every ``stride`` tokens, from blocks of ids."""

    length: int
    stride: int
    tokens: int = 0
    _buffer: list[int] = field(default_factory=list)
    _buffer_start: int = 0  # absolute index of _buffer[0]
    _next: int = 0  # absolute start of the next window

    def feed(self, ids: Iterable[int]) -> Iterator[list[int]]:
        """Add ids; yield every window they complete."""
        block = list(ids)
        self.tokens += len(block)
        self._buffer.extend(block)
        end = self._buffer_start + len(self._buffer)
        while self._next + self.length <= end:
            begin = self._next - self._buffer_start
            yield self._buffer[begin : begin + self.length]
            self._next += self.stride
        keep_from = min(self._next - self._buffer_start, len(self._buffer))
        del self._buffer[:keep_from]
        self._buffer_start += keep_from


def stream_windows(blocks: Iterable[list[int]], length: int, stride: int) -> Iterator[list[int]]:
    """Every full window of ``length`` tokens, starting every ``stride`` tokens."""
    windows = StreamWindows(length, stride)
    for block in blocks:
        yield from windows.feed(block)
