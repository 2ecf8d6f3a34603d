"""Positional families (learned, sinusoidal, rope), `embedcli positions`, and similarity maps."""

from __future__ import annotations

import json
import math
import re
import struct
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from support.helpers import expect_error, make_runner
from support.positionruns import LLAMA, folder, peak_bytes, positions_json, run, text_of

from embedcli import EmbedConfig, build_embedding
from embedcli.cli import app
from embedcli.errors import ConfigError

runner = make_runner()


def pe(pos: int, dim: int, d: int) -> float:
    """The formula of "Attention Is All You Need", one value at a time."""
    i = dim // 2
    angle = pos / (10000 ** (2 * i / d))
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("d", [8, 64, 768])
def test_sinusoidal_values_match_the_formula(d: int) -> None:
    module = build_embedding(
        EmbedConfig(vocab_size=10, d_model=d, context_length=1024, positional="sinusoidal")
    )
    table = module.sinusoidal_table
    assert table.shape == (1024, d) and table.dtype == torch.float32
    for pos in (0, 1, 7, 100, 1023):
        for dim in (0, 1, 2, 3, d // 2, d - 2, d - 1):
            assert float(table[pos, dim]) == pytest.approx(pe(pos, dim, d), abs=1e-6)
    assert "sinusoidal_table" not in module.state_dict()  # fixed: no parameters
    assert sum(p.numel() for p in module.parameters()) == 10 * d


def test_sinusoidal_is_computed_in_float64_then_cast() -> None:
    from embedcli.core.sinusoids import sinusoidal_table

    exact = sinusoidal_table(50, 16)
    assert exact.dtype == torch.float64
    half = build_embedding(
        EmbedConfig(
            vocab_size=10, d_model=16, context_length=50, positional="sinusoidal", dtype="bfloat16"
        )
    )
    assert torch.equal(half.sinusoidal_table, exact.to(torch.bfloat16))


@pytest.mark.parametrize("family", ["sinusoidal", "rope"])
def test_odd_width_is_an_error(family: str) -> None:
    with pytest.raises(ConfigError, match="--d-model must be even, got 7"):
        EmbedConfig(d_model=7, positional=family)
    result = runner.invoke(app, ["embed", "hi", "-d", "7", "--positional", family])
    assert result.exit_code == 1 and "--d-model must be even, got 7" in result.stderr


def test_embed_sinusoidal_adds_the_formula() -> None:
    result = runner.invoke(
        app, ["embed", "Hello, world!", "-d", "8", "--positional", "sinusoidal", "--json"]
    )
    data = json.loads(result.stdout)
    expected = [[pe(p, i, 8) for i in range(8)] for p in range(4)]
    np.testing.assert_allclose(data["position_embeddings"], expected, atol=1e-6)
    np.testing.assert_allclose(
        np.array(data["input_embeddings"]) - np.array(data["token_embeddings"]),
        np.array(expected)[None],
        atol=1e-6,
    )
    assert data["config"]["positional"] == "sinusoidal"


def test_embed_rope_adds_nothing_and_shows_the_angles() -> None:
    result = runner.invoke(
        app, ["embed", "Hello, world!", "-d", "8", "--positional", "rope", "--json"]
    )
    data = json.loads(result.stdout)
    assert data["position_embeddings"] is None and data["broadcast"] is None
    assert data["input_embeddings"] == data["token_embeddings"]
    assert [s["name"] for s in data["steps"]] == [
        "input_ids",
        "token_embeddings",
        "position_ids",
        "rope_angles",
        "input_embeddings",
    ]
    for pos in range(4):
        for i in range(4):
            assert data["rope_angles"][pos][i] == pytest.approx(
                pos * 10000 ** (-2 * i / 8), rel=1e-6
            )
    table = runner.invoke(app, ["embed", "Hello", "-d", "8", "--positional", "rope"]).stdout
    assert "positional rope: nothing is added" in table and "RoPE angles" in table


@pytest.mark.parametrize(
    ("family", "position_params"),
    [("learned", 1024 * 64), ("sinusoidal", 0), ("rope", 0), ("none", 0)],
)
def test_inspect_shapes_counts_each_family(family: str, position_params: int) -> None:
    result = runner.invoke(app, ["inspect-shapes", "-d", "64", "--positional", family, "--json"])
    data = json.loads(result.stdout)
    assert data["config"]["positional"] == family
    assert data["parameters"]["position_embeddings"] == position_params
    assert data["parameters"]["total"] == 50257 * 64 + position_params
    names = [t["name"] for t in data["tensors"]]
    assert ("position_embeddings" in names) == (family in ("learned", "sinusoidal"))
    assert ("rope_angles" in names) == (family == "rope")
    if family in ("sinusoidal", "rope"):
        table = runner.invoke(app, ["inspect-shapes", "-d", "64", "--positional", family]).stdout
        assert f"{family} positions" in table


# ---------------------------------------------------------------- embedcli positions


def test_positions_golden(golden) -> None:
    result = runner.invoke(app, ["positions", "--context-length", "16", "-d", "64"])
    assert result.exit_code == 0, result.output
    golden("positions_sinusoidal.txt", result.stdout)


@pytest.mark.parametrize("width", [40, 60, 100])
@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--similarity"],
        ["--positional", "learned"],
        ["--positional", "rope"],  # 256 pairs of rotated dimensions: columns sampled
        ["--positional", "rope", "--similarity"],
    ],
)
def test_heatmap_fits_the_terminal_and_has_a_legend(width: int, args: list[str]) -> None:
    result = runner.invoke(
        app,
        ["positions", "-d", "512", "--context-length", "100", *args],
        env={"COLUMNS": str(width)},
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= width for line in lines)
    assert any(line.startswith("scale: ") for line in lines)
    # Columns are sampled, never averaged (averaging invents stripes), and the note says so.
    assert "averaged" not in result.stdout
    assert "columns shown, evenly sampled" in result.stdout or "--similarity" in args
    assert "evenly sampled" in result.stdout


def test_heatmap_in_colour_uses_half_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLORTERM", "truecolor")
    out = runner.invoke(app, ["positions", "--context-length", "8", "-d", "16"]).stdout
    assert "▀" in out and "\x1b[" in out
    assert out.count("\n") < 12  # two positions a line


def test_positions_json_is_the_matrix() -> None:
    data = json.loads(
        runner.invoke(app, ["positions", "--context-length", "5", "-d", "6", "--json"]).stdout
    )
    assert data["shape"] == [5, 6] and data["kind"] == "encoding"
    np.testing.assert_allclose(
        data["matrix"], [[pe(p, i, 6) for i in range(6)] for p in range(5)], atol=1e-12
    )
    sim = json.loads(
        runner.invoke(
            app, ["positions", "--context-length", "5", "-d", "6", "--similarity", "--json"]
        ).stdout
    )
    matrix = np.array(sim["matrix"])
    assert matrix.shape == (5, 5)
    np.testing.assert_allclose(np.diag(matrix), 1.0)
    np.testing.assert_allclose(matrix, matrix.T)


def test_learned_positions_are_the_seeded_table() -> None:
    data = json.loads(
        runner.invoke(
            app,
            ["positions", "--positional", "learned", "--context-length", "4", "-d", "8", "--json"],
        ).stdout
    )
    torch.manual_seed(123)
    torch.nn.Embedding(50257, 8)
    expected = torch.nn.Embedding(4, 8).weight.detach().double()
    np.testing.assert_allclose(data["matrix"], expected.numpy(), atol=1e-7)


def test_learned_positions_from_weights(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    table = torch.randn(6, 4)
    path = tmp_path / "m.safetensors"
    save_file({"wte.weight": torch.randn(10, 4), "wpe.weight": table}, str(path))
    data = json.loads(
        runner.invoke(
            app, ["positions", "--positional", "learned", "--weights", str(path), "--json"]
        ).stdout
    )
    np.testing.assert_allclose(data["matrix"], table.double().numpy(), atol=1e-7)
    # --weights alone means the checkpoint's learned table; its sizes come from the checkpoint.
    plain = json.loads(runner.invoke(app, ["positions", "--weights", str(path), "--json"]).stdout)
    assert plain["matrix"] == data["matrix"] and plain["positional"] == "learned"
    result = runner.invoke(app, ["positions", "--weights", str(path), "--positional", "sinusoidal"])
    assert result.exit_code == 2 and "drop --positional" in result.stderr
    result = runner.invoke(app, ["positions", "--weights", str(path), "-d", "8"])
    assert result.exit_code == 1 and "--d-model 8 conflicts with the checkpoint" in result.stderr


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_png_is_a_valid_image_of_the_expected_size(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the [plot] extra is in the test extra")
    path = tmp_path / "positions.png"
    result = runner.invoke(app, ["positions", "--similarity", "--png", str(path)])
    assert result.exit_code == 0, result.output
    assert png_size(path) == (800, 500)
    assert [p.name for p in tmp_path.iterdir()] == ["positions.png"]


def test_png_without_matplotlib_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    result = runner.invoke(app, ["positions", "--png", str(tmp_path / "x.png")])
    assert result.exit_code == 1
    assert "--png needs matplotlib, which is not installed: pip install 'embedcli[plot]'" in (
        result.stderr
    )
    assert list(tmp_path.iterdir()) == []


def test_png_needs_a_png_name(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result = runner.invoke(app, ["positions", "--png", str(tmp_path / "x.jpg")])
    assert result.exit_code == 2 and "name the file *.png" in result.stderr


# ---------------------------------------------------------------- embed --similarity


def test_embed_similarity() -> None:
    data = json.loads(
        runner.invoke(
            app, ["embed", "the cat the cat", "a dog", "-d", "16", "--similarity", "--json"]
        ).stdout
    )
    vectors = np.array(data["input_embeddings"])
    similarity = np.array(data["similarity"])
    assert similarity.shape == (2, 4, 4)
    for b in range(2):
        normed = vectors[b] / np.linalg.norm(vectors[b], axis=1, keepdims=True)
        np.testing.assert_allclose(similarity[b], normed @ normed.T, atol=1e-6)
    table = runner.invoke(app, ["embed", "the cat the cat", "-d", "16", "--similarity"]).stdout
    assert "cosine similarity between the input embeddings" in table
    assert "␣cat" in table and "scale: " in table


# ---------------------------------------------------------------- heatmap cells, by hand

RAMP = " .:-=+*#%@"  # the plain ramp, low to high, as the README's legend shows it


def evenly(n: int, k: int) -> list[int]:
    """k of n indices, first and last included, spaced as evenly as integers allow."""
    return list(range(n)) if k >= n else [round(i * (n - 1) / (k - 1)) for i in range(k)]


def drawn(text: str) -> tuple[list[int], list[str], int, int]:
    """(row labels, cell characters per row, columns shown, rows shown) read off the picture."""
    lines = text.splitlines()
    shown = {"rows": None, "columns": None}
    for what in shown:
        found = re.search(rf"([\d,]+) of ([\d,]+) {what} shown", " ".join(lines[:6]))
        shown[what] = None if found is None else int(found.group(1).replace(",", ""))
    grid = [line for line in lines if re.fullmatch(r"\s*\d+ [ .:=+*#%@-]*", line)]
    labels = [int(line.split()[0]) for line in grid]
    cells = [re.sub(r"^\s*\d+ ", "", line, count=1) for line in grid]
    return labels, cells, shown["columns"], shown["rows"]


@pytest.mark.parametrize("width", [40, 80, 120])
@pytest.mark.parametrize(
    ("n_rows", "n_columns", "axis"),
    [(10, 30, "column"), (150, 500, "column"), (90, 400, "dimension")],
)
def test_heatmap_cells_are_the_evenly_sampled_values(
    width: int, n_rows: int, n_columns: int, axis: str
) -> None:
    from embedcli.pipeline.positions import Heatmap
    from embedcli.render.common import to_text
    from embedcli.render.heatmap import heatmap_view

    rng = np.random.default_rng(n_rows + n_columns)
    matrix = rng.uniform(-3, 3, size=(n_rows, n_columns))
    heatmap = Heatmap("t", "encoding", "position", axis, matrix)
    text = to_text(heatmap_view(heatmap, width=width, plain=True), width=width)
    assert all(len(line) <= width for line in text.splitlines())
    labels, cells, k_columns, k_rows = drawn(text)
    # Rows: all of them when they fit (64 at most), else evenly sampled, first and last kept.
    assert labels == evenly(n_rows, min(n_rows, 64))
    assert (k_rows is None) == (n_rows <= 64)
    # Columns: evenly sampled to fit; sines and cosines in whole pairs for dimensions.
    k_columns = k_columns or n_columns
    if axis == "dimension" and k_columns < n_columns:
        columns = [c for p in evenly(n_columns // 2, k_columns // 2) for c in (2 * p, 2 * p + 1)]
    else:
        columns = evenly(n_columns, k_columns)
    cell = len(cells[0].rstrip()) // len(columns) or 1
    limit = np.abs(matrix).max()
    for row, drawn_cells in zip(labels, cells, strict=True):
        t = (matrix[row, columns] + limit) / (2 * limit)
        expected = "".join(RAMP[min(9, int(v * 10))] * cell for v in t)
        assert drawn_cells.rstrip() == expected.rstrip(), (row, width)


def test_learned_positions_skip_the_token_table_but_keep_its_numbers(monkeypatch) -> None:
    import embedcli.pipeline.positions as positions

    monkeypatch.setattr(positions, "SKIP_CHUNK", 4096)  # many chunks, and a ragged last one
    for d in (1, 7, 13, 100):
        torch.manual_seed(5)
        torch.nn.Embedding(50257, d)
        expected = torch.nn.Embedding(3, d).weight.detach().double()
        assert torch.equal(positions.seeded_positions(3, d, 5), expected)


def test_learned_positions_do_not_build_the_token_table() -> None:
    # the token table alone would be 50,257 × 2,000 float32: 402 MB
    assert peak_bytes("positions", "--positional", "learned", "-d", "2000",
                      "--context-length", "2") < 40 * 2**20  # fmt: skip


@pytest.mark.parametrize(
    ("config", "width", "message"),
    [
        ({**LLAMA, "hidden_size": 128}, 64, "gives hidden_size 128, but its weights have 64"),
        ({k: v for k, v in LLAMA.items() if k != "hidden_size"}, 16, "hidden_size 4,096"),
    ],
)
def test_weights_config_is_checked_against_its_tables(tmp_path, config, width, message) -> None:
    expect_error(run("positions", "--weights", folder(tmp_path, config, width)), message, 1)


def test_the_presets_list_says_what_each_command_does_with_flags() -> None:
    text = text_of("positions", "--list-presets")
    assert "override" not in text
    said = " ".join(text.split())
    assert "inspect-shapes and positions --preset NAME: flags such as -d change the preset" in said
    assert "is an error" not in said  # no longer true: one rule for both commands


def test_a_checkpoints_header_does_not_call_it_a_preset(tmp_path: Path) -> None:
    text = text_of("inspect-shapes", "--weights", folder(tmp_path, LLAMA))
    assert "preset checkpoint" not in text and "inspect-shapes · checkpoint " in text


def test_a_flag_changes_a_preset_and_is_refused_against_a_models_files(tmp_path) -> None:
    result = run("positions", "--preset", "llama-2-7b", "-d", "64")
    assert result.exit_code == 0 and "custom: preset llama-2-7b" in result.stdout
    expect_error(run("positions", "--weights", folder(tmp_path, LLAMA), "-d", "64"),
                 "conflicts", 1)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["positions", "--png", "x.txt"], "--png"),
        (["positions", "--weights", "nowhere"], "--weights"),
        (["inspect-shapes", "--weights", "nowhere"], "--weights"),
        (["inspect-shapes", "-d", "64"], "-d"),
    ],
)
def test_list_presets_refuses_other_flags(args: list[str], flag: str) -> None:
    result = run(*args, "--list-presets")
    expect_error(result, f"--list-presets lists the presets and uses no other option: drop {flag}",
                 2)  # fmt: skip


def test_an_empty_png_name_is_named_as_such() -> None:
    expect_error(
        run("positions", "--png", ""), "'--png': needs a file name; it got an empty one", 2
    )


def test_a_learned_checkpoint_draws_its_first_rows(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    config = {"model_type": "gpt2", "vocab_size": 16, "n_embd": 8, "n_head": 2, "n_layer": 1,
              "n_positions": 32}  # fmt: skip
    table = torch.randn(32, 8)
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file({"wte.weight": torch.zeros(16, 8), "wpe.weight": table},
              str(tmp_path / "model.safetensors"))  # fmt: skip
    data = positions_json("--weights", str(tmp_path), "--context-length", "4")
    np.testing.assert_allclose(data["matrix"], table[:4].double().numpy(), atol=1e-7)
    expect_error(run("positions", "--weights", str(tmp_path), "--context-length", "40"),
                 "more rows than", 1)  # fmt: skip


def test_counts_of_one_are_singular() -> None:
    assert "· 1 pair ·" in text_of("positions", "--positional", "rope", "-d", "2")
    assert "mean over the one pair" in text_of(
        "positions", "--positional", "rope", "-d", "2", "--similarity"
    )
    assert "costs 1 more parameter in" in text_of("inspect-shapes", "-d", "1")
    assert "The slope of the one head" in text_of("positions", "--positional", "alibi",
                                                  "--heads", "1")  # fmt: skip
