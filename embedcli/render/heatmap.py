"""Matrices as terminal pictures: a character ramp in plain text, coloured blocks otherwise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text

from embedcli.render.common import heading, items_line

if TYPE_CHECKING:
    from embedcli.pipeline.positionmaps import Heatmap

RAMP = " .:-=+*#%@"  # low to high, for terminals without colour
MASK = "·"  # a masked cell (ALiBi's keys after the query) in plain text; blank in colour
HEATMAP_MAX_ROWS = 64  # more rows are sampled evenly
LABEL_WIDTH = 14  # longer row labels end in "…"


def _colour(t: float) -> str:
    """``t`` from 0 to 1 as blue (low), white (middle), red (high): an rgb() colour."""
    s = 2 * max(0.0, min(1.0, t)) - 1
    if s < 0:
        r, g, b = (255 + s * 255 * 0.8, 255 + s * 255 * 0.6, 255)
    else:
        r, g, b = (255, 255 - s * 255 * 0.8, 255 - s * 255 * 0.8)
    return f"rgb({int(r)},{int(g)},{int(b)})"


def _ramp(t: float) -> str:
    return RAMP[min(len(RAMP) - 1, int(max(0.0, t) * len(RAMP)))]


def sample(n: int, k: int) -> list[int]:
    """``k`` of the indices 0..n-1, evenly spaced, first and last included (all when k >= n)."""
    if k >= n:
        return list(range(n))
    if k <= 1:
        return [0][:k]
    return [round(i * (n - 1) / (k - 1)) for i in range(k)]


def scale(heatmap: Heatmap) -> tuple[float, float, str]:
    """(low, high, what they are): the report's own bounds where it has them (rope's angles,
    ALiBi's biases); a similarity map runs over its off-diagonal values, so that bands stand out
    and the diagonal (1) sits at the top; anything else is symmetric around 0."""
    if heatmap.bounds is not None:
        return heatmap.bounds[0], heatmap.bounds[1], heatmap.scale_note or ""
    if heatmap.kind == "similarity":
        import numpy as np

        matrix = np.asarray(heatmap.matrix, dtype=float)
        off = matrix[~np.eye(*matrix.shape, dtype=bool)] if matrix.size else matrix
        off = off[np.isfinite(off)]
        if off.size and off.max() > off.min():
            return float(off.min()), float(off.max()), "off-diagonal range; the diagonal is 1"
    return -heatmap.limit, heatmap.limit, ""


def _labels(heatmap: Heatmap, rows: Sequence[int]) -> tuple[list[str], int]:
    labels = heatmap.row_labels or [str(i) for i in range(len(heatmap.matrix))]
    numbered = heatmap.row_labels is None
    width = min(LABEL_WIDTH, max((cell_len(labels[i]) for i in rows), default=1))
    out = []
    for i in rows:
        label = labels[i]
        if cell_len(label) > width:
            label = label[: width - 1] + "…"
        pad = " " * (width - cell_len(label))
        out.append(pad + label if numbered else label + pad)
    return out, width


def _pick(heatmap: Heatmap, width: int, label_width: int) -> tuple[list[int], list[int], int]:
    """(rows, columns, cell width): what fits, sampled evenly; a square similarity map keeps the
    same positions on both axes, so that its diagonal stays straight."""
    n_rows = len(heatmap.matrix)
    n_columns = len(heatmap.matrix[0]) if len(heatmap.matrix) else 0
    available = max(8, width - label_width - 1)
    # a similarity map and ALiBi's biases keep their diagonal straight
    square = heatmap.kind in ("similarity", "bias") and n_rows == n_columns
    if square:
        rows = sample(n_rows, min(HEATMAP_MAX_ROWS, available))
        cell = max(1, min(3, available // max(len(rows), 1)))
        return rows, rows, cell
    rows = sample(n_rows, HEATMAP_MAX_ROWS)
    cell = max(1, min(3, available // max(n_columns, 1)))
    fit = available // cell
    if heatmap.column_axis == "dimension" and n_columns % 2 == 0 and fit < n_columns:
        # Dimensions come in (sin, cos) pairs: sample whole pairs, or the stride invents stripes.
        pairs = sample(n_columns // 2, fit // 2)
        return rows, [c for p in pairs for c in (2 * p, 2 * p + 1)], cell
    return rows, sample(n_columns, fit), cell


def _grid(
    heatmap: Heatmap,
    rows: list[int],
    columns: list[int],
    cell: int,
    plain: bool,
    labels: list[str],
    bounds: tuple[float, float, str],
) -> Text:
    matrix = heatmap.matrix
    half = not plain and heatmap.row_labels is None  # two numbered rows a line, in colour
    step = 2 if half else 1
    lines = Text()
    for k in range(0, len(rows), step):
        if k:
            lines.append("\n")
        line = Text(labels[k] + " ", style="dim")
        upper = [on_scale(matrix[rows[k]][j], bounds, heatmap.masked) for j in columns]
        lower = None
        if half and k + 1 < len(rows):
            lower = [on_scale(matrix[rows[k + 1]][j], bounds, heatmap.masked) for j in columns]
        cells_line(line, upper, lower, cell, plain=plain, half=half)
        line.rstrip()
        lines.append_text(line)
    return lines


def on_scale(value: float, bounds: tuple[float, float, str], masked: str | None) -> float | None:
    """Where ``value`` sits on the scale, 0 to 1; None for a masked cell (NaN where the report
    masks cells). Any other NaN or infinity is drawn as the lowest value."""
    low, high, _ = bounds
    t = (value - low) / (high - low or 1.0)
    if math.isfinite(t):
        return t
    return None if masked and not math.isfinite(value) else 0.0


def cells_line(
    line: Text,
    upper: Sequence[float | None],
    lower: Sequence[float | None] | None,
    cell: int,
    *,
    plain: bool,
    half: bool,
) -> None:
    """Append one line of cells to ``line``: ``upper`` as ramp characters (plain), as full
    blocks, or over ``lower`` as half blocks (two rows a line); None is a masked cell."""
    for j, t in enumerate(upper):
        if plain:
            line.append((MASK if t is None else _ramp(t)) * cell)
        elif half:
            below = None if lower is None else lower[j]
            if t is None and below is None:
                line.append(" " * cell)
            elif t is None:
                line.append("▄" * cell, style=_colour(below))
            else:
                under = "default" if below is None else _colour(below)
                line.append("▀" * cell, style=f"{_colour(t)} on {under}")
        else:
            line.append(
                " " * cell if t is None else "█" * cell, style="" if t is None else _colour(t)
            )


def legend(plain: bool, bounds: tuple[float, float, str], width: int = 100) -> Text:
    """The scale: its low end, the ramp (or colours), its high end, and what it is; a shorter
    ramp where the whole would not fit ``width`` (it must not wrap inside)."""
    low, high, what = bounds
    legend = Text(f"scale: {low:+.2f} ")
    steps = 20 if len(f"scale: {low:+.2f}  {high:+.2f}") + 21 <= width else 10
    for i in range(steps + 1):
        t = i / steps
        legend.append(_ramp(t) if plain else "█", style="" if plain else _colour(t))
    legend.append(f" {high:+.2f}")
    if what:
        legend.append(f" ({what})")
    return legend


def heatmap_view(heatmap: Heatmap, *, width: int = 100, plain: bool = True) -> RenderableType:
    """Rows top to bottom, columns left to right, both sampled evenly (never averaged: an
    average invents stripes) to fit ``width``; a character ramp in plain text, coloured blocks
    otherwise; then the scale."""
    n_rows = len(heatmap.matrix)
    n_columns = len(heatmap.matrix[0]) if len(heatmap.matrix) else 0
    labels, label_width = _labels(heatmap, sample(n_rows, HEATMAP_MAX_ROWS))
    rows, columns, cell = _pick(heatmap, width, label_width)
    labels, _ = _labels(heatmap, rows)
    same = heatmap.row_axis == heatmap.column_axis
    axes = [
        f"rows: {heatmap.row_axis}",
        f"columns: the same {heatmap.column_axis}s" if same else f"columns: {heatmap.column_axis}",
    ]
    if len(rows) < n_rows:
        axes.append(f"{len(rows):,} of {n_rows:,} rows shown, evenly sampled")
    if len(columns) < n_columns:
        axes.append(f"{len(columns):,} of {n_columns:,} columns shown, evenly sampled")
    if not plain and heatmap.row_labels is None and len(rows) > 1:
        axes.append("two rows a line (upper and lower half)")
    bounds = scale(heatmap)  # a pass over the whole matrix: once, for the cells and the legend
    parts: list[RenderableType] = [heading(heatmap.title)]
    if heatmap.details:
        parts.append(items_line(heatmap.details, width))
    parts += [
        items_line(axes, width),
        _grid(heatmap, rows, columns, cell, plain, labels, bounds),
        legend(plain, bounds, width),
    ]
    if heatmap.masked:
        parts.append(masked_line(heatmap.masked, plain))
    parts.extend(Text(line) for line in heatmap.notes)
    return Group(*parts)


def masked_line(masked: str, plain: bool) -> Text:
    """What a masked cell looks like, and what it is."""
    return Text(f"{MASK} = {masked}" if plain else f"blank = {masked}")
