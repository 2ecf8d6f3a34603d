"""`embedcli project`'s terminal plot: each marker in the cell its coordinates fall in, labels
beside their markers, rows as wide as the axis whatever the pieces, the range of PC1 on a narrow
terminal, and the points without a label counted."""

from __future__ import annotations

import numpy as np
import pytest
from rich.cells import cell_len

from embedcli.analysis.projection import ProjectedPoint, Projection
from embedcli.render.common import to_text
from embedcli.render.project import project_view
from embedcli.tokenization.encodings import get_encoding, token_piece, visible

# ---------------------------------------------------------------- the terminal plot


def synthetic(points: list[tuple[str, float, float, str]], cloud: list[tuple[float, float]]):
    enc = get_encoding("gpt2")
    made = [
        ProjectedPoint(token_piece(enc, enc.encode_single_token(piece.encode())), origin, x, y)
        for piece, x, y, origin in points
    ]
    everything = np.array(cloud + [(p.x, p.y) for p in made], dtype=float)
    return Projection(
        source="test", seeded=False, encoding="gpt2", table_shape=(len(everything), 4),
        method="m", explained_variance=(2.0, 1.0), explained_variance_ratio=(0.5, 0.25),
        total_variance=4.0, noise_edge=1.0, structure="structured", points=made, cloud=everything,
    )  # fmt: skip


def plot_rows(text: str) -> tuple[list[str], int]:
    """(the plot's rows without their margin, padded to the axis's width; that width): the
    lines between "PC2 ↑" and the "└───" axis."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("PC2 ↑")) + 1
    end = next(i for i, line in enumerate(lines) if "└" in line)
    margin = lines[end].index("└") + 1
    columns = lines[end].count("─")
    return [line[margin:].ljust(columns) for line in lines[start:end]], columns


@pytest.mark.parametrize("width", [40, 80, 120])
def test_markers_sit_in_the_cells_their_coordinates_fall_in(width: int) -> None:
    # The corners of the range and the middle: cells computed here from the coordinates.
    report = synthetic(
        [("a", 0.0, 0.0, "text"), ("b", 10.0, 10.0, "text"), ("c", 5.0, 5.0, "top"),
         ("d", 10.0, 0.0, "ids-file")],
        [(0.0, 0.0), (10.0, 10.0)],
    )  # fmt: skip
    text = to_text(project_view(report, width=width, plain=True), width=width)
    assert all(cell_len(line) <= width for line in text.splitlines()), text
    rows, columns = plot_rows(text)
    height = len(rows)

    def cell(x: float, y: float) -> tuple[int, int]:
        column = min(columns - 1, int(x / 10 * columns))
        row = min(height - 1, int(y / 10 * height))
        return height - 1 - row, column

    for piece, x, y, mark in (("a", 0, 0, "•"), ("b", 10, 10, "•"), ("c", 5, 5, "◦"),
                              ("d", 10, 0, "◦")):  # fmt: skip
        row, column = cell(x, y)
        line = rows[row]
        assert line[column] == mark, (piece, row, column, text)
        if column + 1 < columns:  # a label sits right of its marker
            assert line[column + 1] == piece, (piece, text)
    # b and d sit in the last column: no room for their labels, and the legend says so.
    prose = " ".join(text.split())
    assert "the text's b: no room for a label" in prose
    assert "1 other point without a label" in prose


def test_every_plot_row_is_as_wide_as_the_axis_whatever_the_pieces() -> None:
    # Pieces with a tab, a newline, a control byte, a CJK character (two cells), a combining
    # mark alone and after a letter, line and paragraph separators, a tag character: each
    # label must take the cells it says and stay on its row, or the plot shears.
    from embedcli.tokenization.encodings import Token

    pieces = ["\t", "\n", "\x00", "日本", "\u0301", "e\u0301", "a\u2028b", "\u2029",
              "\U000e0001", " the"]  # fmt: skip
    points = [
        ProjectedPoint(Token(i, p, p.encode().hex(), visible(p)), "text", i, i % 3)
        for i, p in enumerate(pieces)
    ]
    report = synthetic([], [(0.0, 0.0), (12.0, 2.0)])
    report.points = points
    for width in (40, 80, 120):
        text = to_text(project_view(report, width=width, plain=True), width=width)
        lines = text.splitlines()
        axis = next(line for line in lines if "└" in line)
        plot = lines[lines.index("PC2 ↑") + 1 : lines.index(axis)]
        margin = axis.index("└")
        assert all(line[margin] in "┤│" for line in plot), text  # no row broken in two
        assert all(cell_len(line) <= cell_len(axis) for line in plot), text
        assert "\u2028" not in text and "\u2029" not in text
        shown = "\n".join(plot)
        for label in ("␀", "⇥", "a<U+2028>b", "<U+2029>", "\\U000e0001", "◌\u0301"):
            assert label in shown or label in text, (label, text)
        assert "e\u0301" in shown and "e◌" not in shown  # a mark after its letter joins it


def test_a_narrow_terminal_says_the_range_of_pc1_on_a_line_of_its_own() -> None:
    report = synthetic([("a", -3.5e30, 1.0, "text")], [(-3.5e30, 0.0), (2.5e30, 1e-30)])
    for width in (20, 24, 30):
        text = to_text(project_view(report, width=width, plain=True), width=width)
        assert all(cell_len(line) <= width for line in text.splitlines()), text
        # both ends of PC1 under the axis where they fit on one line, else said in words
        under = [line for line in text.splitlines() if line.count("e+30") == 2]
        assert under or "PC1 from -3.5e+30 to 2.44e+30" in " ".join(text.split()), text


def test_points_sharing_a_cell_or_without_room_are_counted() -> None:
    report = synthetic(
        [("a", 1.0, 1.0, "text"), ("b", 1.0, 1.0, "text"), ("c", 9.0, 9.0, "top")],
        [(0.0, 0.0), (10.0, 10.0)],
    )
    text = to_text(project_view(report, width=80, plain=True), width=80)
    prose = " ".join(text.split())
    assert "the text's b: no room for a label (--json has every point)" in prose
    assert (
        "• the text's tokens, each once (2)" in prose
        and "◦ --first-ids, not in the text (1)" in prose
    )
    assert "other point" not in prose
    # A --first-ids point in the cell right of a text token's marker: the text's label goes first.
    _, columns = plot_rows(text)
    beside = 1.0 + 10 / columns * 1.5
    report = synthetic(
        [("a", 1.0, 1.0, "text"), ("c", beside, 1.0, "top")], [(0.0, 0.0), (10.0, 10.0)]
    )
    text = to_text(project_view(report, width=80, plain=True), width=80)
    prose = " ".join(text.split())
    assert "•a" in text and "1 other point without a label" in prose
    assert not [row for row in plot_rows(text)[0] if "◦" in row]  # under the label: not drawn
