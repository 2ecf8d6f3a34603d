"""`embedcli project`: a token table's map as a labelled terminal scatter plot."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len, get_character_cell_size
from rich.console import Group, RenderableType
from rich.text import Text

from embedcli.analysis.projection import verdict
from embedcli.render.common import heading, items_line, note, plural

if TYPE_CHECKING:
    import numpy as np

    from embedcli.analysis.projection import ProjectedPoint, Projection

LABEL_WIDTH = 12  # cells; a longer piece ends in "…"
MAX_ROWS = 22  # rows of the plot
MIN_ROWS = 8
CLOUD = ".:"  # the table's rows per cell: some, many (the busiest third, by count)
MARKS = {"text": "•", "top": "◦", "ids-file": "◦"}
MISSING_NAMED = 5  # the text's tokens without a label named under the plot; the rest counted
STYLES = {"text": "bold red", "top": "blue", "ids-file": "green"}
CLOUD_SHARE = 0.005  # the cloud's range leaves out this share of rows at each end


@dataclass
class _Cell:
    char: str = " "  # "" for the second cell of a wide character
    style: str = ""
    taken: bool = False  # a marker or a label: nothing else may be drawn here


def project_view(report: Projection, *, width: int = 100, plain: bool = True) -> RenderableType:
    """The map: every row of the table as a density cloud, the chosen tokens on it as
    labelled markers, the axes with their ranges and shares of the variance, and whether the
    table is an isotropic cloud or has structure."""

    x_range, y_range = _ranges(report)
    ticks = (f"{y_range[1]:.3g}", f"{y_range[0]:.3g}")
    margin = max(cell_len(t) for t in ticks) + 1  # a row starts "<tick> ┤" or "  │"
    columns = max(8, width - margin - 1)
    rows = max(MIN_ROWS, min(MAX_ROWS, round(columns * 0.35)))
    grid = [[_Cell() for _ in range(columns)] for _ in range(rows)]
    _draw_cloud(grid, report.cloud, x_range, y_range, plain)
    missing = _draw_points(grid, report.points, x_range, y_range, plain)
    share = report.explained_variance_ratio
    counts = {o: sum(p.origin == o for p in report.points) for o in MARKS}
    # each point is drawn once, under the first way it was asked for
    also = {"top": ", not in the text" if counts["text"] else "",
            "ids-file": ", the others" if counts["text"] or counts["top"] else ""}  # fmt: skip
    legend = [
        f"{MARKS[o]} {what}{also.get(o, '')} ({counts[o]:,})"
        for o, what in (
            ("text", "the text's tokens, each once"),
            ("top", "--first-ids"),
            ("ids-file", "--ids-file"),
        )
        if counts[o]
    ]
    legend.append(f"{CLOUD} all {report.table_shape[0]:,} rows (density)")
    lost = [p for p in missing if p.origin == "text"]
    if lost:
        names = ", ".join(_label(p.token.display) for p in lost[:MISSING_NAMED])
        more = f" and {len(lost) - MISSING_NAMED:,} more" if len(lost) > MISSING_NAMED else ""
        legend.append(f"the text's {names}{more}: no room for a label")
    if len(missing) > len(lost):
        legend.append(f"{plural(len(missing) - len(lost), 'other point')} without a label")
    if missing:
        legend[-1] += " (--json has every point)"
    return Group(
        heading("the token table on its first two principal components"),
        items_line(
            [
                report.source,
                f"{report.table_shape[0]:,} × {report.table_shape[1]:,}",
                report.encoding,
                f"PC1 {share[0]:.2%} and PC2 {share[1]:.2%} of the variance",
            ],
            width,
        ),
        Text("PC2 ↑", style="bold"),
        *_plot_lines(grid, ticks, margin),
        Text(" " * margin + "└" + "─" * columns),
        _x_axis(x_range, margin, columns),
        note(verdict(report)),
        items_line(legend, width),
    )


def _ranges(report: Projection) -> tuple[tuple[float, float], tuple[float, float]]:
    """The x and y ranges: the bulk of the cloud (0.5% left out at each end, so that a few far
    rows do not squeeze the rest into a corner), widened to every chosen point."""
    import numpy as np

    low, high = np.quantile(report.cloud, [CLOUD_SHARE, 1 - CLOUD_SHARE], axis=0)  # (2,) each
    found = []
    for axis in (0, 1):
        values = [low[axis], high[axis], *(p.x if axis == 0 else p.y for p in report.points)]
        lo, hi = float(min(values)), float(max(values))
        if hi == lo:
            lo, hi = lo - 1, hi + 1
        found.append((lo, hi))
    return found[0], found[1]


def _place(value: float, span: tuple[float, float], cells: int) -> int:
    """The cell of ``value`` on an axis of ``cells`` cells (the span holds every point): the
    same arithmetic as the cloud's, so that a row and a token at one place share a cell."""
    import numpy as np

    return int(_cells(np.array([value]), span, cells)[0])


def _cells(values: np.ndarray, span: tuple[float, float], cells: int) -> np.ndarray:
    """The cells of ``values`` on an axis of ``cells`` cells, clipped to it."""
    import numpy as np

    lo, hi = span
    return np.clip(((values - lo) / (hi - lo) * cells).astype(np.int64), 0, cells - 1)


def _draw_cloud(
    grid: list[list[_Cell]],
    cloud: np.ndarray,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    plain: bool,
) -> None:
    """Every row of the table, counted per cell: '.' where there are some, ':' in the busiest
    third of the occupied cells."""
    import numpy as np

    rows, columns = len(grid), len(grid[0])
    x, y = cloud[:, 0], cloud[:, 1]
    inside = (x >= x_range[0]) & (x <= x_range[1]) & (y >= y_range[0]) & (y <= y_range[1])
    # the cells _place gives a marker, so that a row and a token at one place share a cell
    column = _cells(x[inside], x_range, columns)
    row = _cells(y[inside], y_range, rows)
    counts = np.bincount(row * columns + column, minlength=rows * columns)
    counts = counts.reshape(rows, columns).astype(float)  # (rows, columns), row 0 at the bottom
    occupied = counts[counts > 0]
    if not occupied.size:
        return
    busy = np.quantile(occupied, 2 / 3)
    for r in range(rows):
        for c in range(columns):
            n = counts[rows - 1 - r, c]
            if n:
                grid[r][c].char = CLOUD[1] if n > busy and busy < occupied.max() else CLOUD[0]
                grid[r][c].style = "" if plain else "dim"


def _draw_points(
    grid: list[list[_Cell]],
    points: list[ProjectedPoint],
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    plain: bool,
) -> list[ProjectedPoint]:
    """The text's tokens first, markers then labels, then the other points the same way, so
    that the tokens asked about are labelled first; a label sits right of its marker, where no
    marker or label is. The points left without a label: sharing a cell, under another's
    label, or with no room."""
    rows, columns = len(grid), len(grid[0])
    missing: list[ProjectedPoint] = []
    for group in ([p for p in points if p.origin == "text"],
                  [p for p in points if p.origin != "text"]):  # fmt: skip
        placed: list[tuple[ProjectedPoint, int, int]] = []
        for point in group:
            column = _place(point.x, x_range, columns)
            row = rows - 1 - _place(point.y, y_range, rows)
            cell = grid[row][column]
            if cell.taken:  # another point's marker or label is there already
                missing.append(point)
                continue
            cell.char, cell.style, cell.taken = MARKS[point.origin], STYLES[point.origin], True
            placed.append((point, row, column))
        for point, row, column in placed:
            if not _label_beside(grid[row], column, point, plain):
                missing.append(point)
    return missing


def _label_beside(line: list[_Cell], column: int, point: ProjectedPoint, plain: bool) -> bool:
    """The point's label right of its marker (never left: a label between two markers would
    read as either's), then a blank cell; False where there is no room."""
    label = _label(point.token.display)
    start, size = column + 1, cell_len(label)
    if start + size > len(line) or any(line[c].taken for c in range(start, start + size)):
        return False
    _write(line, start, label, "" if plain else STYLES[point.origin])
    end = start + size
    if end < len(line) and not line[end].taken:
        line[end].char, line[end].style = " ", ""
    return True


def _label(display: str) -> str:
    """A piece as one short label: control, format and line-separator characters as \\xNN,
    \\uNNNN or \\UNNNNNNNN, a combining mark with no character before it on a dotted
    circle, at most LABEL_WIDTH cells."""
    out: list[str] = []
    for char in display:
        code, kind = ord(char), unicodedata.category(char)
        if kind[0] == "C" or kind in ("Zl", "Zp"):
            out.append(
                f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
                else f"\\U{code:08x}"
            )  # fmt: skip
        elif get_character_cell_size(char) == 0 and not out:
            out.append("◌" + char)
        else:
            out.append(char)
    label = "".join(out)
    if cell_len(label) <= LABEL_WIDTH:
        return label
    while cell_len(label) > LABEL_WIDTH - 1:
        label = label[:-1]
    return label + "…"


def _write(line: list[_Cell], start: int, label: str, style: str) -> None:
    """``label`` into the cells from ``start``, a wide character taking two."""
    at = start
    for char in label:
        size = get_character_cell_size(char)
        if size == 0:  # a combining mark: it joins the character before it
            line[at - 1].char += char
            continue
        line[at].char, line[at].style, line[at].taken = char, style, True
        for extra in range(1, size):
            line[at + extra].char, line[at + extra].taken = "", True
        at += size


def _plot_lines(grid: list[list[_Cell]], ticks: tuple[str, str], margin: int) -> list[Text]:
    """The plot's rows, the top and bottom values of PC2 beside the first and last."""
    lines = []
    for r, cells in enumerate(grid):
        tick = ticks[0] if r == 0 else ticks[1] if r == len(grid) - 1 else ""
        text = Text((tick.rjust(margin - 1) + " ┤") if tick else " " * margin + "│")
        run, style = "", ""
        for cell in cells:  # runs of one style as one span: one escape code each, not a cell's
            if cell.style != style:
                text.append(run, style=style)
                run, style = "", cell.style
            run += cell.char
        text.append(run, style=style)
        lines.append(text)
    return lines


def _x_axis(x_range: tuple[float, float], margin: int, columns: int) -> Text:
    """The lowest and highest value of PC1 under the ends of the axis, its name between."""
    low, high = f"{x_range[0]:.3g}", f"{x_range[1]:.3g}"
    name = "PC1 →"
    inner = columns - cell_len(low) - cell_len(high)
    if inner < 1:  # the two values do not fit under the axis: said on a line of their own
        return Text(f"PC1 from {low} to {high}")
    middle = name.center(inner) if inner >= cell_len(name) + 2 else " " * inner
    return Text(" " * (margin + 1) + low + middle + high)
