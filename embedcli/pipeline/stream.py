"""Embedding at scale: every window of a text of any size into a file, or one record per line.

Memory stays at the tables plus a few batches: the text is read and tokenized block by block,
windows are embedded a batch at a time, and rows are appended to the output file as they come.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from embedcli.core.broadcast import format_shape
from embedcli.core.config import EmbedConfig
from embedcli.core.windowpad import check_padded
from embedcli.corpus import textinput
from embedcli.corpus.windows import StreamWindows, token_blocks
from embedcli.errors import InputTextError, TokenIdError
from embedcli.io.outputs import ArrayStreamWriter
from embedcli.pipeline.embed import id_hint, prepare_module
from embedcli.tokenization.display import visible_name
from embedcli.tokenization.encodings import added_specials, encode, plural, with_specials
from embedcli.tokenization.specialtext import Specials

if TYPE_CHECKING:
    import tiktoken
    import torch

    from embedcli.models.tables import LoadedTables

POOLS = ("none", "mean", "last")


class Progress(Protocol):
    """Where streaming reports how far it got (a progress bar, or nothing)."""

    def advance(self, nbytes: int) -> None: ...  # bytes of input read

    def update(self, tokens: int, windows: int) -> None: ...


class NoProgress:
    """Reports nowhere."""

    def advance(self, nbytes: int) -> None:
        """Ignore."""

    def update(self, tokens: int, windows: int) -> None:
        """Ignore."""


@dataclass(frozen=True)
class StreamSummary:
    """What a streaming run wrote."""

    output: str
    num_tokens: int
    num_windows: int
    seq_len: int
    stride: int
    d_model: int
    dtype: str
    device: str
    seconds: float

    @property
    def tokens_per_second(self) -> float:
        """Input tokens read per second of the whole run."""
        return self.num_tokens / self.seconds if self.seconds else 0.0

    def json(self) -> dict[str, Any]:
        """The fields, the output's shape, and the rate."""
        from dataclasses import asdict

        shape = [self.num_windows, self.seq_len, self.d_model]
        return {**asdict(self), "shape": shape, "tokens_per_second": self.tokens_per_second}

    def line(self) -> str:
        """One line for people: what was written, from how much, how fast."""

        shape = format_shape((self.num_windows, self.seq_len, self.d_model))
        return (
            f"wrote {visible_name(str(self.output))}: {shape} {self.dtype}, "
            f"{plural(self.num_windows, 'window')} "
            f"from {plural(self.num_tokens, 'token')} in {self.seconds:.2f} s "
            f"({self.tokens_per_second:,.0f} tokens/s on {self.device})"
        )


def _extras(tables: LoadedTables | None) -> dict[str, torch.Tensor] | None:
    """A model family's other tensors (norm, token types, projection), or None."""
    return None if tables is None else tables.extras


def _pair(tables: LoadedTables | None) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    return None if tables is None else (tables.token, tables.position)


def _raw_bytes(batch: torch.Tensor) -> bytes:
    import torch

    batch = batch.detach().cpu().contiguous()
    if batch.dtype == torch.bfloat16:  # NumPy has no bfloat16: write its 16 bits as they are
        batch = batch.view(torch.uint16)
    return batch.numpy().tobytes()


def stream_embed(
    config: EmbedConfig,
    enc: tiktoken.Encoding,
    stream: BinaryIO,
    output: Path,
    *,
    source: str,
    window: int,
    stride: int,
    batch_size: int,
    device: str = "auto",
    tables: LoadedTables | None = None,
    allow_special: bool | Specials = False,
    progress: Progress | None = None,
    add_special: bool = True,
) -> StreamSummary:
    """Embed every full window of ``window`` tokens (every ``stride`` tokens) into ``output``."""
    config.check_length(window, "--seq-len", "lower -t/--seq-len or raise --context-length")
    check_padded(window, config, "--seq-len")  # LED: the window's pads take positions too
    import torch  # only now: a window that cannot fit fails before torch's 1-2 s import

    from embedcli.core.embedding import check_token_ids  # lazy: core.embedding loads torch

    progress = progress or NoProgress()
    started = time.perf_counter()
    module, target = prepare_module(
        config, device, _pair(tables), batch_size, window, extras=_extras(tables)
    )
    windows = StreamWindows(window, stride)
    hint = id_hint(config, tables)

    def flush(batch: list[list[int]]) -> None:
        ids = torch.tensor(batch, dtype=torch.long)  # (b, L), checked as they were read
        writer.write(_raw_bytes(module(ids, checked=True)), len(batch))  # (b, L, d)

    def checked(block: list[int]) -> list[int]:
        # Each id is range-checked once, as it is read (not again per batch or in the module).
        check_token_ids(torch.tensor(block, dtype=torch.long), config, hint, length=False)
        return block

    before, _ = added_specials(enc, add_special)  # a stream is one text: its start only
    blocks = map(
        checked,
        token_blocks(
            stream,
            enc,
            allow_special=allow_special,
            source=source,
            on_bytes=progress.advance,
            prefix=before,
        ),
    )
    with (
        ArrayStreamWriter(output, (window, config.d_model), config.dtype) as writer,
        torch.inference_mode(),
    ):
        batch: list[list[int]] = []
        for block in blocks:
            for row in windows.feed(block):
                batch.append(row)
                if len(batch) == batch_size:
                    flush(batch)
                    batch = []
            progress.update(windows.tokens, writer.rows + len(batch))
        if batch:
            flush(batch)
        if writer.rows == 0:
            raise InputTextError(
                f"the text has {plural(windows.tokens, 'token')}, too few for one window of "
                f"{window}; lower --seq-len"
            )
    return StreamSummary(
        str(output),
        windows.tokens,
        writer.rows,
        window,
        stride,
        config.d_model,
        config.dtype,
        str(target),
        time.perf_counter() - started,
    )


def embed_lines(
    config: EmbedConfig,
    enc: tiktoken.Encoding,
    stream: BinaryIO,
    *,
    source: str,
    pool: str = "none",
    device: str = "auto",
    tables: LoadedTables | None = None,
    allow_special: bool | Specials = False,
    truncate: int | None = None,
    truncate_to_context: bool = False,
    add_special: bool = True,
) -> Iterator[dict[str, Any]]:
    """One record per input line: ``{"line", "text", "input_ids", "input_embeddings"}``."""
    import torch

    from embedcli.core.embedding import check_token_ids  # lazy: core.embedding loads torch

    limit = config.cut_length(truncate, truncate_to_context)
    module, _ = prepare_module(
        config, device, _pair(tables), 1, config.context_length, extras=_extras(tables)
    )
    hint = id_hint(config, tables)
    longest = textinput.text_limit()
    for number, raw in enumerate(iter(lambda: stream.readline(longest + 1), b""), start=1):
        if len(raw) > longest:
            raise InputTextError(
                f"line {number} of {source} is longer than {longest:,} bytes, more than this "
                "machine's free memory can hold"
            )
        text = textinput.decode_utf8(raw, f"line {number} of {source}")
        text = text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")
        try:
            ids = with_specials(enc, encode(enc, text, allow_special=allow_special), add_special)
            ids = ids[:limit]
        except InputTextError as exc:
            raise InputTextError(f"line {number}: {exc}") from None
        config.check_length(len(ids), f"line {number}: length")
        vectors: Any = [] if pool == "none" else None
        if ids:
            try:
                checked = check_token_ids([ids], config, hint)  # (1, T)
            except TokenIdError as exc:  # "sequence 0" would be every line's: name the line
                raise TokenIdError(f"line {number}: {exc}".replace("sequence 0, ", "")) from None
            with torch.inference_mode():
                out = module(checked, checked=True)[0]  # (T, d)
            out = out.float()
            if pool == "mean":
                out = out.mean(dim=0)  # (d,)
            elif pool == "last":
                out = out[-1]  # (d,)
            vectors = out.cpu().tolist()
        yield {"line": number, "text": text, "input_ids": ids, "input_embeddings": vectors}
