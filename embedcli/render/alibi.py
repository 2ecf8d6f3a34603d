"""ALiBi's biases as pictures: every head as a small multiple on one shared scale (heads
sampled evenly where there are too many to show), or one head large; and every head's slope
as a table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from embedcli.pipeline.positionmaps import power_of_two
from embedcli.render.common import add_row, first_fitting, heading, items_line, new_table
from embedcli.render.heatmap import (
    cells_line,
    heatmap_view,
    legend,
    masked_line,
    on_scale,
    sample,
)

if TYPE_CHECKING:
    from embedcli.pipeline.positionmaps import AlibiReport, SlopeRow

BLOCK = 16  # positions a small multiple shows on each axis (sampled evenly)
GAP = 2  # spaces between two small multiples
MAX_HEADS = 16  # small multiples drawn at most (BLOOM has 112 heads): sampled evenly
SLOPE_COLUMNS = ("head", "slope", "as 2^x", "-1 at")


def alibi_view(report: AlibiReport, *, width: int = 100, plain: bool = True) -> RenderableType:
    """One head large (``--head``), or every head small on one scale; then the slopes of all
    heads, and what the bias is."""
    if report.heatmap is not None:
        parts: list[RenderableType] = [heatmap_view(report.heatmap, width=width, plain=plain)]
    else:
        parts = _small_multiples(report, width, plain)
    parts.append(_slopes(report.slopes, width))
    parts.extend(Text(line) for line in report.notes)
    return Group(*parts)


def _small_multiples(report: AlibiReport, width: int, plain: bool) -> list[RenderableType]:
    heads, length = report.bias.shape[0], report.bias.shape[1]
    k = max(1, min(BLOCK, length, width))
    positions = sample(length, k)
    shown = sample(heads, MAX_HEADS)
    block = max(k, len(f"head {shown[-1]}"))  # a title wider than the cells widens the block
    per_line = max(1, (width + GAP) // (block + GAP))
    axes = ["each head: rows query position i", "columns key position j"]
    if k < length:
        axes.append(f"{k} of {length:,} positions shown, evenly sampled")
    if len(shown) < heads:
        axes.append(f"{len(shown)} of {heads} heads shown, evenly sampled")
    axes.append("one scale for all heads")
    if not plain and k > 1:
        axes.append("two rows a line (upper and lower half)")
    low, high = report.bounds
    grid = Text()
    for start in range(0, len(shown), per_line):
        if start:
            grid.append("\n\n")
        group = shown[start : start + per_line]
        titles = (" " * GAP).join(f"head {h}".ljust(block) for h in group)
        grid.append(titles.rstrip(), style="bold")
        for line in _block_lines(report, group, positions, (low, high), plain, block):
            grid.append("\n")
            grid.append_text(line)
    bounds = (low, high, "bias; one scale for all heads")
    return [
        heading(report.title),
        items_line(axes, width),
        grid,
        legend(plain, bounds, width),
        masked_line(report.masked, plain),
    ]


def _block_lines(
    report: AlibiReport,
    heads: list[int],
    positions: list[int],
    bounds: tuple[float, float],
    plain: bool,
    block: int,
) -> list[Text]:
    """The lines of a row of small multiples: one query position a line (two in colour)."""
    scale = (*bounds, "")

    def scaled(head: int, i: int) -> list[float | None]:
        return [on_scale(v, scale, report.masked) for v in report.bias[head, i, positions]]

    step = 1 if plain else 2
    lines = []
    for r in range(0, len(positions), step):
        line = Text()
        for n, head in enumerate(heads):
            if n:
                line.append(" " * GAP)
            upper = scaled(head, positions[r])
            lower = None
            if not plain and r + 1 < len(positions):
                lower = scaled(head, positions[r + 1])
            cells_line(line, upper, lower, 1, plain=plain, half=not plain)
            line.append(" " * (block - len(positions)))
        line.rstrip()
        lines.append(line)
    return lines


def _slopes(slopes: list[SlopeRow], width: int) -> RenderableType:
    """Every head's slope, in side-by-side groups of columns where there are many heads."""
    if len(slopes) <= BLOCK:
        return _slopes_table(slopes, 1)
    layouts = [lambda g=g: _slopes_table(slopes, g) for g in (4, 3, 2, 1)]
    return first_fitting(width, *layouts)


def _slopes_table(slopes: list[SlopeRow], groups: int) -> RenderableType:

    rows = -(-len(slopes) // groups)
    table = new_table(*(SLOPE_COLUMNS * groups), right=SLOPE_COLUMNS)
    for r in range(rows):
        cells: list[str] = []
        for g in range(groups):
            index = g * rows + r
            if index < len(slopes):
                s = slopes[index]
                cells += [str(s.head), f"{s.slope:.4g}", power_of_two(s.log2),
                          f"{s.distance_to_minus_one:,.4g}"]  # fmt: skip
            else:
                cells += [""] * len(SLOPE_COLUMNS)
        add_row(table, *cells)
    what = "The slope of the one head" if len(slopes) == 1 else f"Slopes of the {len(slopes)} heads"
    return Group(
        heading(f"{what} (-1 at: the distance i - j at which the bias reaches -1, 1/slope)"),
        table,
    )
