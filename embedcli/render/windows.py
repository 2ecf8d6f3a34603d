"""``embedcli windows``: the data loader's batches, input over target, and its totals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.render.common import add_row, first_fitting, heading, items_line, plural
from embedcli.tokenization.encodings import token_piece

if TYPE_CHECKING:
    import tiktoken

    from embedcli.corpus.windows import WindowPlan

WINDOW_COLUMNS = 8  # positions drawn per window at most; longer windows end in "…"
PIECE_WIDTH = 16  # longer pieces end in "…"


def _batch_table(
    enc: tiktoken.Encoding, plan: WindowPlan, batch: dict[str, list], columns: int
) -> Table:

    table = Table()
    table.add_column(Text("row"), justify="right", no_wrap=True)
    table.add_column(Text(""), no_wrap=True)
    for position in range(columns):
        table.add_column(
            Text(f"t{position}"), no_wrap=True, max_width=PIECE_WIDTH, overflow="ellipsis"
        )
    more = plan.seq_len > columns
    if more:
        table.add_column(Text("…"), no_wrap=True)
    for row, (inputs, targets) in enumerate(zip(batch["inputs"], batch["targets"], strict=True)):
        for label, ids in (("x", inputs), ("y", targets)):
            cells = [Text(f"{token_piece(enc, i).display}\n{i}") for i in ids[:columns]]
            add_row(
                table,
                row if label == "x" else "",
                label,
                *cells,
                *(["…"] if more else []),
                end_section=label == "y",
            )
    return table


def _batch_block(
    enc: tiktoken.Encoding, plan: WindowPlan, number: int, batch: dict[str, list], columns: int
) -> Group:
    title = f"Batch {number}: inputs (x) and targets (y = x shifted by one)"
    if plan.seq_len > columns:
        title += f", first {columns} of {plan.seq_len} positions"
    return Group(heading(title), _batch_table(enc, plan, batch, columns))


def _summary(enc: tiktoken.Encoding, plan: WindowPlan, shown: int, width: int) -> list[Text]:
    lines = [
        items_line(
            [
                enc.name,
                plural(plan.num_tokens, "token"),
                f"seq-len {plan.seq_len:,}",
                f"stride {plan.stride:,}",
                f"batch size {plan.batch_size:,}",
            ],
            width,
        ),
        Text(
            f"{plural(plan.num_windows, 'window')} with a full target, in "
            f"{plural(plan.num_batches, 'batch', 'batches')}"
        ),
    ]
    rest = plan.num_windows % plan.batch_size
    if plan.dropped_windows:
        them = "it" if plan.dropped_windows == 1 else "them"
        lines.append(
            Text(
                f"drop_last leaves out the last {plural(plan.dropped_windows, 'window')}; "
                f"--keep-last keeps {them}"
            )
        )
    elif rest:
        lines.append(Text(f"the last batch is short: {plural(rest, 'window')} (--keep-last)"))
    if plan.dropped_tokens:
        verb = "is" if plan.dropped_tokens == 1 else "are"
        lines.append(
            Text(f"{plural(plan.dropped_tokens, 'token')} at the end {verb} in no batched window")
        )
    if shown < plan.num_batches:
        lines.append(
            Text(
                f"showing {shown:,} of {plural(plan.num_batches, 'batch', 'batches')}: --jsonl "
                "lists every window",
                style="italic",
            )
        )
    return lines


def windows_view(
    enc: tiktoken.Encoding,
    plan: WindowPlan,
    shown: Sequence[dict[str, list]],
    *,
    width: int = 100,
    plain: bool = True,
) -> RenderableType:
    """Each shown batch: every window's input (x) over its target (y), one column a position,
    so the shift by one token reads diagonally; then the totals."""
    most = min(plan.seq_len, WINDOW_COLUMNS)

    def layout(columns: int) -> Group:
        return Group(
            *(_batch_block(enc, plan, number, batch, columns) for number, batch in enumerate(shown))
        )

    parts: list[RenderableType] = []
    if shown:
        parts.append(first_fitting(width, *(lambda n=n: layout(n) for n in range(most, 0, -1))))
    parts += _summary(enc, plan, len(shown), width)
    return Group(*parts)
