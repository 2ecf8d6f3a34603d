"""What ``embedcli embed`` is asked to do, as one frozen object that checks itself when made:
option combinations that mean nothing are refused before any table is built or text read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from embedcli.core.config import Overrides
from embedcli.errors import UsageError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.tokenization.specialtext import Specials


@dataclass(frozen=True)
class EmbedRequest:
    """The flags of ``embedcli embed``, read; made only when they make sense together. Three
    jobs read it: a batch (the default), ``lines`` (one record a line) and streaming
    (``seq_len``: every window of a file into ``output``)."""

    texts: tuple[str, ...] = ()  # TEXT...; none (or '-'): standard input
    file: Path | None = None  # -f
    ids: tuple[tuple[int, ...], ...] = ()  # --ids, one sequence each
    encoding: str | None = None
    model: str | None = None
    allow_special: bool | Specials = False  # --allow-special / --special-as-text (specialtext.py)
    add_special: bool = True  # not --no-add-special
    truncate: int | None = None  # --truncate N: cut to N tokens
    truncate_to_context: bool = False
    pad_id: int | None = None
    overrides: Overrides = field(default_factory=Overrides)  # the table flags
    weights: str | None = None
    access: HubAccess = OFFLINE  # --download, --download-all
    token_key: str | None = None
    position_key: str | None = None
    device: str = "auto"
    verify: bool = False
    show: int = 4  # dimensions of each vector previewed
    max_positions: int = 64  # positions of each sequence in the tables
    similarity: bool = False
    output: Path | None = None  # -o
    seq_len: int | None = None  # streaming: tokens a window
    stride: int | None = None  # streaming: tokens between window starts (default: seq_len)
    batch_size: int | None = None  # streaming: windows embedded at a time
    lines: bool = False
    pool: str = "none"  # with lines: none, mean or last
    quiet: bool = False
    as_json: bool = False

    def __post_init__(self) -> None:
        self._check_modes()
        if self.lines or self.streaming:
            self._batch_only(
                ("--verify", self.verify), ("--similarity", self.similarity),
                ("--pad-id", self.pad_id),
            )  # fmt: skip

    @property
    def streaming(self) -> bool:
        """Whether every window of the text is streamed to ``output`` (``--seq-len``)."""
        return self.seq_len is not None

    def _check_modes(self) -> None:
        """Refuse option combinations that mean nothing, before any work."""
        texts, ids, file, output = list(self.texts), self.ids, self.file, self.output
        lines, streaming, truncate, to_context = (
            self.lines, self.streaming, self.truncate, self.truncate_to_context
        )  # fmt: skip
        text_given = bool(texts) and texts != ["-"]
        given = [f for f, on in (("TEXT", text_given), ("--ids", ids), ("--file", file)) if on]
        refusals = (
            (len(given) > 1, f"pass only one of {' and '.join(given)}"),
            (lines and streaming, "--lines and --seq-len cannot be combined; pick one"),
            (
                lines and (ids or text_given),
                "--lines reads the lines of -f FILE or standard input, not TEXT or --ids",
            ),
            (streaming and ids, "--seq-len streams the windows of a text, not --ids"),
            (
                streaming and len(texts) > 1,
                "--seq-len streams the windows of one text: pass one TEXT, or -f FILE",
            ),
            (lines and output is not None, "--lines writes JSON Lines to standard output; drop -o"),
            (streaming and output is None, "--seq-len streams to a file: pass -o out.npy"),
            (self.stride is not None and not streaming, "--stride needs --seq-len"),
            (self.batch_size is not None and not streaming, "--batch-size needs --seq-len"),
            (self.pool != "none" and not lines, "--pool needs --lines"),
            (
                truncate is not None and to_context,
                "pass --truncate N or --truncate-to-context, not both",
            ),
            (
                streaming and (truncate is not None or to_context),
                "--seq-len cuts the text into windows: drop "
                + ("--truncate" if truncate is not None else "--truncate-to-context"),
            ),
            (truncate == 0, "--truncate 0 leaves nothing to embed; pass N of 1 or more"),
        )
        for refused, message in refusals:
            if refused:
                raise UsageError(message)

    def _batch_only(self, *given: tuple[str, object]) -> None:
        """Options of the batch view that a streaming mode would silently ignore are refused."""
        used = [flag for flag, value in given if value]
        if used:
            mode = "--lines" if self.lines else "--seq-len"
            verb = "works" if len(used) == 1 else "work"
            raise UsageError(f"{' and '.join(used)} {verb} on a batch of texts, not with {mode}")
