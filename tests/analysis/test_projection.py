"""`embedcli project`: the map against numpy's SVD, the terminal plot's cells against the
coordinates, and the projector files read back as TensorBoard's projector reads them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from safetensors.torch import save_file
from support.helpers import expect_error, make_runner

from embedcli.analysis.projection import ProjectedPoint, Projection, principal_axes, project
from embedcli.cli import app
from embedcli.render.common import to_text
from embedcli.render.project import project_view
from embedcli.tokenization.encodings import get_encoding, token_piece, visible

runner = make_runner()
KEY = "transformer.wte.weight"


def numpy_pca(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(axes (d, 2), variances (2,), every row's coordinates (V, 2)) from numpy's exact SVD."""
    centred = table - table.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:2].T
    return axes, s[:2] ** 2 / (len(table) - 1), centred @ axes


def same_up_to_sign(ours: np.ndarray, theirs: np.ndarray, atol: float) -> None:
    """Columns equal, each up to its sign (an axis and its negation are the same axis)."""
    for k in range(ours.shape[1]):
        sign = 1.0 if ours[:, k] @ theirs[:, k] >= 0 else -1.0
        np.testing.assert_allclose(ours[:, k], sign * theirs[:, k], atol=atol, rtol=0)


def planted(rows: int, width: int, seed: int, strength: float = 6.0) -> torch.Tensor:
    """N(0, 1) noise plus two strong directions and an offset: a table with structure."""
    g = torch.Generator().manual_seed(seed)
    noise = torch.randn(rows, width, generator=g)
    directions = torch.linalg.qr(torch.randn(width, 2, generator=g)).Q.T  # (2, d), orthonormal
    weights = torch.randn(rows, 2, generator=g) * torch.tensor([strength, strength / 2])
    return noise + weights @ directions + 5.0


# ---------------------------------------------------------------- the map, against numpy


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(3, 60),
    width=st.integers(2, 12),
    seed=st.integers(0, 2**32 - 1),
    offset=st.floats(-100, 100),
)
def test_axes_and_variances_equal_numpy_svd_on_small_tables(
    rows: int, width: int, seed: int, offset: float
) -> None:
    # Well-separated spread per dimension, so that each axis is defined (no two near-equal
    # variances, where any rotation of the two would be as right); an offset, so that a
    # missing centring shows.
    g = torch.Generator().manual_seed(seed)
    spread = 3.0 ** -torch.arange(width, dtype=torch.float64)
    rotation = torch.linalg.qr(torch.randn(width, width, generator=g, dtype=torch.float64)).Q
    table = (torch.randn(rows, width, generator=g, dtype=torch.float64) * spread) @ rotation
    table = (table + offset).float()
    values = table.double().numpy()
    axes, variances, coordinates = numpy_pca(values)
    _, s, _ = np.linalg.svd(values - values.mean(axis=0), full_matrices=False)
    if len(s) > 2 and not (s[0] > 1.05 * s[1] > 1.05 * 1.05 * s[2]):
        return  # a draw whose top variances tie: no axis to compare
    scale = float(np.abs(coordinates).max()) + 1e-12
    same_up_to_sign(principal_axes(table)[0].numpy(), axes, atol=2e-3)
    report = project(get_encoding("gpt2"), table, [(0, "top", None)], "test", seeded=False)
    same_up_to_sign(report.cloud, coordinates, atol=2e-4 * scale)
    np.testing.assert_allclose(report.explained_variance, variances, rtol=2e-3)
    total = values.var(axis=0, ddof=1).sum()
    np.testing.assert_allclose(report.total_variance, total, rtol=1e-9)
    np.testing.assert_allclose(report.explained_variance_ratio, variances / total, rtol=2e-3)


def test_the_randomized_axes_equal_numpy_svd_on_a_large_structured_table() -> None:
    # 4,000 x 96: pca_lowrank finds 12 of 96 components, so the randomized path is what runs.
    table = planted(4000, 96, seed=7)
    axes, variances, coordinates = numpy_pca(table.double().numpy())
    ours = principal_axes(table)[0].numpy()
    same_up_to_sign(ours, axes, atol=1e-4)
    report = project(get_encoding("gpt2"), table, [(5, "top", None)], "test", seeded=False)
    np.testing.assert_allclose(report.explained_variance, variances, rtol=1e-5)
    same_up_to_sign(report.cloud, coordinates, atol=1e-3)
    assert report.structure == "structured"


def test_axes_are_signed_by_their_largest_loading_and_the_same_on_every_run() -> None:
    table = planted(500, 20, seed=3)
    (first, _), (second, _) = principal_axes(table), principal_axes(table)
    assert torch.equal(first, second)
    for k in range(2):
        assert first[first[:, k].abs().argmax(), k] > 0
    assert torch.equal(principal_axes(-table)[0].abs(), first.abs())


@pytest.mark.parametrize(
    ("rows", "width"), [(50257, 32), (2000, 300), (300, 2000), (40, 8), (2, 768), (3, 5000)]
)
def test_random_tables_are_isotropic_and_planted_structure_is_found(rows: int, width: int) -> None:
    g = torch.Generator().manual_seed(rows + width)
    noise = torch.randn(rows, width, generator=g)
    enc = get_encoding("gpt2")
    found = project(enc, noise, [(0, "top", None)], "noise", seeded=True)
    # Marchenko–Pastur: the top variance of independent values, (1 + sqrt(d/n))^2 per unit
    # of variance, n = V - 1 rows' worth after centring; from the table's own variance here.
    edge = noise.double().var(dim=0).mean().item() * (1 + (width / (rows - 1)) ** 0.5) ** 2
    assert found.noise_edge == pytest.approx(edge, rel=1e-9)
    assert 0.7 < found.noise_ratio < 1.2
    assert found.structure == "isotropic"
    if rows < 10:
        return  # too few rows to hold structure beyond chance: a 2-row table is one direction
    structured = project(enc, planted(rows, width, seed=1), [(0, "top", None)], "x", seeded=False)
    assert structured.structure == "structured" and structured.noise_ratio > 2


# ---------------------------------------------------------------- the command


@pytest.fixture
def structured_checkpoint(tmp_path: Path) -> tuple[Path, torch.Tensor]:
    table = planted(50257, 16, seed=11)
    path = tmp_path / "model.safetensors"
    save_file({KEY: table}, str(path))
    return path, table


def run_json(*args: str) -> dict:
    result = runner.invoke(app, ["project", *args, "--json", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_points_are_the_texts_tokens_then_top_then_the_ids_file(
    structured_checkpoint: tuple[Path, torch.Tensor], tmp_path: Path
) -> None:
    path, table = structured_checkpoint
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("[7, 40000]\n15496,\n 3\n")
    data = run_json(
        "Hello world Hello", "--weights", str(path), "--top", "4", "--ids-file", str(ids_file)
    )
    enc = get_encoding("gpt2")
    text_ids = enc.encode("Hello world Hello")  # 15496, 995, 23748
    expected = [*dict.fromkeys(text_ids), 0, 1, 2, 3, 7, 40000]
    assert [p["id"] for p in data["points"]] == expected
    origins = {p["id"]: p["origin"] for p in data["points"]}
    assert origins[15496] == "text" and origins[3] == "top" and origins[40000] == "ids-file"
    assert [p["index"] for p in data["points"] if p["origin"] == "text"] == [0, 1, 2]
    assert all("index" not in p for p in data["points"] if p["origin"] != "text")
    assert [p["piece"] for p in data["points"][:2]] == ["Hello", " world"]
    # Coordinates: the rows of the table on numpy's axes.
    _, variances, coordinates = numpy_pca(table.double().numpy())
    ours = np.array([[p["x"], p["y"]] for p in data["points"]])
    same_up_to_sign(ours, coordinates[expected], atol=1e-3)
    assert data["explained_variance"] == pytest.approx(list(variances), rel=1e-5)
    assert data["table_shape"] == [50257, 16]
    assert data["structure"] == "structured" and data["seeded"] is False
    assert data["noise_ratio"] == pytest.approx(data["explained_variance"][0] / data["noise_edge"])
    assert "cloud" not in data


def test_seeded_tables_are_said_to_be_an_isotropic_cloud() -> None:
    data = run_json("Hello world", "-d", "32")
    assert data["seeded"] is True and data["structure"] == "isotropic"
    assert data["table_shape"] == [50257, 32]
    result = runner.invoke(app, ["project", "Hello world", "-d", "32", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "isotropic cloud of nn.Embedding's N(0, 1)" in " ".join(result.stdout.split())


def test_a_trained_looking_table_is_said_to_have_structure(
    structured_checkpoint: tuple[Path, torch.Tensor],
) -> None:
    path, _ = structured_checkpoint
    result = runner.invoke(app, ["project", "king", "--weights", str(path), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    prose = " ".join(result.stdout.split())
    assert "PC1 and PC2 stand out, structure that random values lack" in prose
    assert "•king" in result.stdout


def test_a_slightly_stretched_table_is_weak_structure(tmp_path: Path) -> None:
    table = torch.randn(50257, 16, generator=torch.Generator().manual_seed(4))
    table[:, 3] *= 1.2  # PC1 about 1.35x the random edge: more than chance, not much more
    path = tmp_path / "mild.safetensors"
    save_file({KEY: table}, str(path))
    data = run_json("hi", "--weights", str(path))
    assert data["structure"] == "weak" and 1.2 < data["noise_ratio"] < 2
    result = runner.invoke(app, ["project", "hi", "--weights", str(path), "--device", "cpu"])
    assert "a little more than chance in a table this size: weak structure" in " ".join(
        result.stdout.split()
    )


def test_top_alone_reads_no_text_from_stdin() -> None:
    result = runner.invoke(
        app, ["project", "--top", "5", "-d", "8", "--json", "--device", "cpu"], input="Hello"
    )
    assert result.exit_code == 0, result.output
    assert [p["id"] for p in json.loads(result.stdout)["points"]] == [0, 1, 2, 3, 4]
    piped = runner.invoke(
        app, ["project", "-", "--top", "2", "-d", "8", "--json", "--device", "cpu"], input="Hi"
    )
    assert [p["origin"] for p in json.loads(piped.stdout)["points"]] == ["text", "top", "top"]


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["--top", "0"], "Invalid value for '--top'", 2),
        (["--top", "60000"], "--top 60,000 is more than the table's 50,257 rows", 1),
        (["hi", "-d", "1"], "at least 2 rows and 2 dimensions, not 50257 × 1", 1),
        (["hi", "--device", "meta"], "the meta device holds shapes but no values", 2),
        (["hi", "--device", "cuda:7"], "requested", 1),
        ([""], "the text has no tokens", 1),
        (["hi", "--png", "map.jpg"], "name the file *.png", 2),
    ],
)
def test_bad_command_lines_get_one_error_line(args: list[str], message: str, code: int) -> None:
    result = runner.invoke(app, ["project", *args, "-d", "8"] if "-d" not in args else
                           ["project", *args])  # fmt: skip
    expect_error(result, message, code)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"15496 abc\n", "line 1: 'abc' is not a token id"),
        (b"1\n2\n-3\n", "line 3: '-3' is not a token id"),
        (b"\n\n", "holds no token ids"),
        (b"\xff\n", "not valid UTF-8 (byte 0xFF at offset 0)"),
        (b"50257\n", "token id 50257 (from --ids-file) is out of range"),
    ],
)
def test_a_bad_ids_file_is_a_data_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "ids.txt"
    path.write_bytes(content)
    result = runner.invoke(app, ["project", "--ids-file", str(path), "-d", "8"])
    expect_error(result, message)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.index_fill_(0, torch.tensor([9]), float("nan")), "row of token 9 holds NaN"),
        (lambda t: t.fill_(0.5), "every row of the token table is the same"),
    ],
)
def test_a_damaged_table_is_refused(tmp_path: Path, change, message: str) -> None:
    table = change(torch.randn(50257, 8))
    path = tmp_path / "bad.safetensors"
    save_file({KEY: table}, str(path))
    result = runner.invoke(app, ["project", "hi", "--weights", str(path)])
    expect_error(result, message)


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
    assert "• the text's tokens, each once (2)" in prose and "◦ --top, not in the text (1)" in prose
    assert "other point" not in prose
    # A --top point in the cell right of a text token's marker: the text's label goes first.
    _, columns = plot_rows(text)
    beside = 1.0 + 10 / columns * 1.5
    report = synthetic(
        [("a", 1.0, 1.0, "text"), ("c", beside, 1.0, "top")], [(0.0, 0.0), (10.0, 10.0)]
    )
    text = to_text(project_view(report, width=80, plain=True), width=80)
    prose = " ".join(text.split())
    assert "•a" in text and "1 other point without a label" in prose
    assert not [row for row in plot_rows(text)[0] if "◦" in row]  # under the label: not drawn


# ---------------------------------------------------------------- TensorBoard's projector


def read_like_the_projector(folder: Path) -> tuple[np.ndarray, list[dict[str, str]]]:
    """tensors.tsv as TensorBoard's server reads it (floats split on tabs, blank lines
    skipped), metadata.tsv as its front end does (lines on \\n, blank-looking lines skipped,
    a first line with a tab is the header)."""
    rows = [
        [float(v) for v in line.split("\t")]
        for line in (folder / "tensors.tsv").read_text().split("\n")
        if line
    ]
    lines = [line for line in (folder / "metadata.tsv").read_text().split("\n") if line.strip()]
    header = lines[0].split("\t")
    assert len(header) > 1
    # strict: every row has as many columns as the header (a tab in a piece would add one)
    metadata = [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]
    return np.array(rows, dtype=np.float32), metadata


def unescape(piece: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m[1], m[1]), piece)


def test_the_projector_files_load_as_the_projector_reads_them(
    structured_checkpoint: tuple[Path, torch.Tensor], tmp_path: Path
) -> None:
    path, table = structured_checkpoint
    folder = tmp_path / "proj"
    text = "a\tb\nc \\ d  e"
    result = runner.invoke(
        app, ["project", text, "--weights", str(path), "--top", "3", "--export-projector",
              str(folder), "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert str(folder / "tensors.tsv") in result.stdout.splitlines()[-1]
    vectors, metadata = read_like_the_projector(folder)
    enc = get_encoding("gpt2")
    ids = [*dict.fromkeys(enc.encode(text)), 0, 1, 2]
    assert vectors.shape == (len(ids), 16)
    np.testing.assert_array_equal(vectors, table[ids].numpy())  # every float32 exactly
    assert [int(m["id"]) for m in metadata] == ids
    assert [unescape(m["piece"]) for m in metadata] == [enc.decode([i]) for i in ids]
    assert {m["origin"] for m in metadata} == {"text", "top"}
    config = (folder / "projector_config.pbtxt").read_text()
    assert re.findall(r'(\w+_path): "([^"]+)"', config) == [
        ("tensor_path", "tensors.tsv"), ("metadata_path", "metadata.tsv")]  # fmt: skip
    assert [int(n) for n in re.findall(r"tensor_shape: (\d+)", config)] == [len(ids), 16]


def test_export_replaces_its_own_files_and_keeps_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "notes.md").write_text("mine")
    (folder / "tensors.tsv").write_text("old")
    result = runner.invoke(app, ["project", "hi", "-d", "4", "--export-projector", str(folder)])
    assert result.exit_code == 0, result.output
    assert (folder / "notes.md").read_text() == "mine"
    assert read_like_the_projector(folder)[0].shape == (1, 4)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_export_refuses_a_file_a_missing_parent_and_its_own_input(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    expect_error(
        runner.invoke(app, ["project", "hi", "-d", "4", "--export-projector", str(afile)]),
        "is a file; give a folder",
    )
    expect_error(
        runner.invoke(
            app, ["project", "hi", "-d", "4", "--export-projector", str(tmp_path / "no" / "p")]
        ),
        "does not exist",
    )
    folder = tmp_path / "proj"
    folder.mkdir()
    ids = folder / "metadata.tsv"
    ids.write_text("1 2 3\n")
    result = runner.invoke(
        app, ["project", "--ids-file", str(ids), "-d", "4", "--export-projector", str(folder)]
    )
    expect_error(result, "is the same file as the input")
    assert ids.read_text() == "1 2 3\n"


def test_png_is_written_and_json_stays_alone_on_stdout(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "map.png"
    result = runner.invoke(
        app, ["project", "king queen", "-d", "8", "--top", "20", "--png", str(png), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["structure"] == "isotropic"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("device", "free", "expected"),
    [
        ("cpu", None, "float64"),  # unknown free memory: as precise as the device allows
        ("cpu", 10_000_000, "float64"),
        ("cpu", 2_000_000, "float32"),  # float64's two copies (3.2 MB) do not fit; float32's do
        ("mps", None, "float32"),  # MPS has no float64
        ("cuda", 10_000_000, "float64"),
    ],
)
def test_the_precision_is_float64_where_the_device_has_it_and_it_fits(
    monkeypatch: pytest.MonkeyPatch, device: str, free: int | None, expected: str
) -> None:
    from embedcli.analysis import projection
    from embedcli.core import memory

    monkeypatch.setattr(memory, "available_memory", lambda _: free)
    table = torch.randn(10_000, 20)  # float32: 0.8 MB; a float64 copy 1.6 MB
    assert projection._precision(10_000, 20, table, torch.device(device)) == getattr(
        torch, expected
    )


def test_a_table_whose_copies_fit_in_no_precision_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from embedcli.core import memory

    monkeypatch.setattr(memory, "available_memory", lambda _: 1_000_000)
    result = runner.invoke(app, ["project", "hi", "-d", "64", "--device", "cpu"])
    expect_error(result, "the principal axes of a 50,257 × 64 table")


def test_stdin_is_read_once_and_never_replaced(tmp_path: Path) -> None:
    result = runner.invoke(app, ["project", "-", "--ids-file", "-", "-d", "4"], input="1 2")
    expect_error(result, "--ids-file - reads standard input, so the text cannot", 2)
    ids = runner.invoke(app, ["project", "--ids-file", "-", "-d", "4", "--json"], input="1 2")
    assert [p["id"] for p in json.loads(ids.stdout)["points"]] == [1, 2]
    # Standard input redirected from the file the export would replace: refused, kept.
    (tmp_path / "metadata.tsv").write_text("mine\n")
    with open(tmp_path / "metadata.tsv", "rb") as stdin:
        done = subprocess.run(
            [Path(sys.executable).parent / "embedcli", "project", "--top", "3", "-d", "4",
             "--export-projector", "."],
            stdin=stdin, capture_output=True, text=True, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 1 and "is the same file as the input standard input" in done.stderr
    assert (tmp_path / "metadata.tsv").read_text() == "mine\n"


def test_ids_are_an_input_like_text() -> None:
    data = run_json("--ids", "15496,995", "-d", "8")
    assert [(p["id"], p["origin"], p["index"]) for p in data["points"]] == [
        (15496, "text", 0), (995, "text", 1)]  # fmt: skip
    expect_error(runner.invoke(app, ["project", "hi", "--ids", "1", "-d", "8"]),
                 "pass only one of TEXT, --file and --ids", 2)  # fmt: skip


def test_no_text_says_how_to_place_ids_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import embedcli.cli.inputs as inputs

    class Terminal:  # stdin on a terminal: nothing is piped in
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(inputs, "stdin", lambda: Terminal())
    result = runner.invoke(app, ["project", "-d", "8"])
    expect_error(result, "or place the table's ids alone with --top N or --ids-file PATH", 2)


def test_control_characters_are_escaped_in_the_metadata(tmp_path: Path) -> None:
    enc = get_encoding("gpt2")
    ids = [enc.encode_single_token(bytes([b])) for b in (0, 0x1B, 0x7F, ord("\\"), ord("\t"))]
    (tmp_path / "ids.txt").write_text(" ".join(map(str, ids)))
    folder = tmp_path / "proj"
    result = runner.invoke(app, ["project", "--ids-file", str(tmp_path / "ids.txt"), "-d", "4",
                                 "--export-projector", str(folder)])  # fmt: skip
    assert result.exit_code == 0, result.output
    raw = (folder / "metadata.tsv").read_bytes()
    assert not [b for b in raw if b < 0x20 and b not in b"\t\n"] and b"\x7f" not in raw
    _, metadata = read_like_the_projector(folder)
    assert [m["piece"] for m in metadata] == ["\\x00", "\\x1b", "\\x7f", "\\\\", "\\t"]


def test_outputs_are_checked_before_the_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import embedcli.analysis.projection as projection

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the map was computed before its output was refused")

    monkeypatch.setattr(projection, "project", never)
    (tmp_path / "dir.png").mkdir()
    (tmp_path / "proj").mkdir()
    refused = [
        (["--png", str(tmp_path / "no" / "map.png")], "does not exist"),
        (["--png", str(tmp_path / "dir.png")], "is a folder; give a file name"),
        (["--export-projector", str(tmp_path / "no" / "p")], "does not exist"),
    ]
    for args, message in refused:
        expect_error(runner.invoke(app, ["project", "hi", "-d", "4", *args]), message)
    good = ["--png", str(tmp_path / "proj" / "map.png"), "--export-projector", str(tmp_path)]
    result = runner.invoke(app, ["project", "hi", "-d", "4", *good])
    assert "was computed before" in str(result.exception)  # got as far as the work


@pytest.mark.parametrize("failure", ["file too large", "interrupted"])
def test_a_failed_export_replaces_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failure: str
) -> None:
    import resource
    import signal

    folder, png = tmp_path / "proj", tmp_path / "map.png"
    first = runner.invoke(app, ["project", "hi", "-d", "4", "--export-projector", str(folder)])
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    fresh = tmp_path / "fresh"
    if failure == "interrupted":  # Ctrl-C while tensors.tsv is written: after the PNG

        def interrupt(*args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(np, "savetxt", interrupt)
    for target in (folder, fresh):
        args = ["project", "--top", "3000", "-d", "64", "--png", str(png),
                "--export-projector", str(target)]  # fmt: skip
        if failure == "file too large":  # a real write failure, as a full disk gives one
            limits = resource.getrlimit(resource.RLIMIT_FSIZE)
            old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, limits[1]))
            try:
                result = runner.invoke(app, args)
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, limits)
                signal.signal(signal.SIGXFSZ, old_handler)
            expect_error(result, f"cannot write {target / 'tensors.tsv'}: File too large")
        else:
            result = runner.invoke(app, args)
            assert result.exit_code == 130
            assert "Interrupted: no output file was written or changed" in result.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # all three as they were
    assert not png.exists() and not fresh.exists()  # nor the PNG, nor a folder made for them
    assert not list(tmp_path.rglob(".*.tmp"))


@pytest.mark.parametrize("scale", [1e36, 1e-30, 1.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_extreme_magnitudes_give_the_same_map_and_leave_the_table_alone(
    scale: float, dtype: torch.dtype
) -> None:
    # float32's range squared overflows (1e36 squared is inf): the PCA scales the values it
    # works on, never the table it was given.
    if dtype == torch.float16 and scale != 1.0:
        return  # float16 cannot hold these magnitudes
    base = planted(3000, 40, seed=5)
    table = (base.double() * scale).to(dtype)
    kept = table.clone()
    report = project(get_encoding("gpt2"), table, [(7, "top", None)], "x", seeded=False)
    assert torch.equal(table, kept)
    _, variances, coordinates = numpy_pca(table.double().numpy())
    np.testing.assert_allclose(report.explained_variance, variances, rtol=1e-3)
    same_up_to_sign(report.cloud, coordinates, atol=1e-3 * float(np.abs(coordinates).max()))
    assert 0 < report.explained_variance_ratio[0] <= 1


def test_an_ids_file_is_read_as_distinct_ids_and_refuses_huge_numbers(tmp_path: Path) -> None:
    path = tmp_path / "ids.txt"
    path.write_text("7 " * 200_000 + "3\n7,3\n")
    data = run_json("--ids-file", str(path), "-d", "4")
    assert [p["id"] for p in data["points"]] == [7, 3]
    path.write_text("1\n2 " + "9" * 5000 + "\n")
    expect_error(
        runner.invoke(app, ["project", "--ids-file", str(path), "-d", "4"]),
        "line 2: '" + "9" * 40 + "…' is far beyond any token table",
    )


def test_a_signal_during_the_renames_waits_for_them(tmp_path: Path) -> None:
    import os
    import signal

    from embedcli.io.outputs import staged

    real = os.replace
    seen: list[str] = []

    def replace_then_interrupt(source, target) -> None:
        real(source, target)
        seen.append(Path(target).name)
        if len(seen) == 1:  # Ctrl-C between the first rename and the second
            os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler, whatever this process was started with (under nohup or in
    # the background of a shell, SIGINT is ignored and no KeyboardInterrupt could come)
    started = signal.signal(signal.SIGINT, signal.default_int_handler)
    before = signal.getsignal(signal.SIGINT)
    os.replace = replace_then_interrupt
    try:
        # delivered once both are in place, not dropped
        with pytest.raises(KeyboardInterrupt), staged() as stage:
            for name in ("a.txt", "b.txt"):
                stage.open(tmp_path / name).write(name.encode())
    finally:
        os.replace = real
    assert seen == ["a.txt", "b.txt"]  # the second rename still happened
    assert (tmp_path / "b.txt").read_bytes() == b"b.txt"
    assert signal.getsignal(signal.SIGINT) is before  # and the handler is back
    signal.signal(signal.SIGINT, started)


def test_an_empty_export_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--export-projector "$DIR"` with DIR unset: before, the three files landed in the
    current folder (the contract fuzzer's stray files)."""
    from support.helpers import expect_error

    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["project", "hi", "--export-projector", ""])
    expect_error(result, "name a folder (. for this one), not an empty string", 2)
    assert list(tmp_path.iterdir()) == []
