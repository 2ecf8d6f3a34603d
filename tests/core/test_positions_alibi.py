"""`embedcli positions --positional alibi`: ALiBi's slopes and biases, from the flags, a preset
or a model folder, checked against the paper's sequence and transformers' BLOOM and MPT code;
the learned presets, and the families that have no picture."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from support.helpers import expect_error
from support.positionruns import peak_bytes, positions_json, run
from test_positions_rope import fails, run_json, runner

from embedcli.cli import app

# ---------------------------------------------------------------- ALiBi, from the flags


def paper_slopes(n: int) -> list[float]:
    """Press et al.: 2^(-8k/n) for a power of two n; else the power of two p below n, then
    every other slope of the sequence for 2p."""
    p = 2 ** int(math.log2(n))
    return [2 ** (-8 * k / p) for k in range(1, p + 1)] + [
        2 ** (-8 * k / (2 * p)) for k in range(1, 2 * p + 1, 2)
    ][: n - p]


@pytest.mark.parametrize("heads", [1, 2, 8, 12, 16, 40, 112])
def test_alibi_slopes_are_the_papers_and_blooms(heads: int) -> None:
    import transformers.models.bloom.modeling_bloom as bloom

    data = run_json("--positional", "alibi", "--heads", str(heads), "--context-length", "6")
    slopes = [row["slope"] for row in data["slopes"]]
    np.testing.assert_allclose(slopes, paper_slopes(heads), rtol=1e-12)
    np.testing.assert_allclose(slopes, bloom._get_alibi_slopes(heads, "cpu").double(), rtol=1e-6)
    for row in data["slopes"]:
        assert 2 ** row["log2"] == pytest.approx(row["slope"], rel=1e-12)
        assert row["distance_to_minus_one"] * row["slope"] == pytest.approx(1.0)
    assert [row["head"] for row in data["slopes"]] == list(range(heads))
    assert data["heads"] == heads and data["shape"] == [heads, 6, 6]


def test_alibi_bias_is_the_formula_masked_above_the_diagonal() -> None:
    data = run_json("--positional", "alibi", "--context-length", "10")
    assert data["shape"] == [8, 10, 10] and data["head"] is None
    for h, row in enumerate(data["slopes"]):
        for i in range(10):
            for j in range(10):
                got = data["bias"][h][i][j]
                assert got is None if j > i else got == pytest.approx(-row["slope"] * (i - j))
    one = run_json("--positional", "alibi", "--context-length", "10", "--head", "3")
    assert one["head"] == 3 and one["shape"] == [1, 10, 10]
    assert one["bias"][0] == data["bias"][3]


def test_blooms_alibi_differs_by_a_constant_per_query_that_softmax_cancels() -> None:
    """BLOOM adds slope·j; ALiBi's -slope·(i - j) is that minus slope·i: the same attention."""
    import transformers.models.bloom.modeling_bloom as bloom

    heads, length = 12, 9
    bias = run_json("--positional", "alibi", "--heads", str(heads), "--context-length",
                    str(length))["bias"]  # fmt: skip
    ours = torch.tensor(np.array(bias, dtype=float))  # null (masked) -> nan
    theirs = bloom.build_alibi_tensor(torch.ones(1, length), heads, torch.float64)  # (H, 1, T)
    causal = torch.isnan(ours)
    difference = (ours - theirs).masked_fill(causal, 0.0)  # (H, T, T)
    for h in range(heads):
        for i in range(length):
            assert torch.allclose(difference[h, i, : i + 1], difference[h, i, 0])
    scores = torch.randn(heads, length, length, generator=torch.Generator().manual_seed(3))
    attend = [(scores + b.expand(heads, length, length)).masked_fill(causal, -math.inf)
              for b in (ours.nan_to_num(0.0), theirs)]  # fmt: skip
    torch.testing.assert_close(attend[0].softmax(-1), attend[1].softmax(-1))


def test_alibi_views_fit_and_say_what_they_draw() -> None:
    for width in (40, 60, 80, 120):
        out = runner.invoke(app, ["positions", "--preset", "bloom-176b"],
                            env={"COLUMNS": str(width)})  # fmt: skip
        assert out.exit_code == 0, out.output
        assert all(len(line) <= width for line in out.stdout.splitlines()), width
        text = " ".join(out.stdout.split())
        assert "16 of 112 heads shown, evenly sampled" in text
        assert "Press et al.'s slopes for 112 heads, not a power of two" in text
        assert "BLOOM's code (build_alibi_tensor) adds +slope·j instead" in text
        assert "· = masked" in text and "one scale for all heads" in text
    cells = [c.strip() for line in out.stdout.splitlines() if line.startswith("│")
             for c in line.strip("│").split("│")]  # fmt: skip
    heads = [int(c) for c in cells[0::4] if c]
    assert sorted(heads) == list(range(112))  # every head's slope, in groups of columns


def test_alibi_in_colour_draws_half_blocks_and_leaves_masked_cells_blank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLORTERM", "truecolor")
    out = runner.invoke(app, ["positions", "--positional", "alibi", "--heads", "2",
                              "--context-length", "4"]).stdout  # fmt: skip
    grid = [line for line in out.splitlines() if "▀" in line]
    assert grid and "\x1b[" in out and any("▄" in line for line in grid)
    assert not any("·" in line for line in grid) and "blank = masked" in out


# ---------------------------------------------------------------- presets


def test_an_alibi_preset_draws_its_heads() -> None:
    import transformers.models.bloom.modeling_bloom as bloom

    data = run_json("--preset", "bloom-176b", "--context-length", "5")
    assert data["heads"] == 112 and data["shape"] == [112, 5, 5]
    np.testing.assert_allclose([r["slope"] for r in data["slopes"]],
                               bloom._get_alibi_slopes(112, "cpu").double(), rtol=1e-6)  # fmt: skip
    one = run_json("--preset", "bloom-176b", "--head", "111", "--context-length", "5")
    assert one["bias"][0] == data["bias"][111]
    fails("--preset", "bloom-176b", "--head", "112", code=2, message="112 heads, numbered 0 to 111")
    fails("--preset", "bloom-176b", "--heads", "8", "--head", "8", code=2,
          message="--head 8 is out of range: 8 heads, numbered 0 to 7")  # fmt: skip
    four = run_json("--preset", "bloom-176b", "--heads", "4", "--context-length", "5")
    assert four["source"] == "custom: preset bloom-176b (BLOOM) with 4 heads"
    assert four["bias"] == run_json("--positional", "alibi", "--heads", "4", "--context-length",
                                    "5")["bias"]  # fmt: skip


def test_a_learned_preset_is_a_seeded_table_at_its_width() -> None:
    data = run_json("--preset", "gpt2")
    assert data["positional"] == "learned" and data["shape"] == [64, 768]
    torch.manual_seed(123)
    expected = torch.nn.Embedding(64, 768).weight.detach().double().numpy()
    np.testing.assert_allclose(data["matrix"], expected, atol=1e-7)
    assert run_json("--preset", "bert-base", "--seed", "7")["shape"] == [64, 768]
    assert run_json("--preset", "book-ch2")["shape"] == [4, 256]  # its context is 4
    longer = run_json("--preset", "gpt2", "--context-length", "2000")
    assert longer["source"].endswith("for custom: preset gpt2 with context 2,000")
    narrow = run_json("--preset", "gpt2", "-d", "64")
    assert narrow["source"].endswith("custom: preset gpt2 with d 64") and narrow["shape"] == [
        64,
        64,
    ]
    fixed = run_json("--preset", "gpt2", "--positional", "sinusoidal", "--context-length", "8")
    assert fixed["source"].endswith("custom: preset gpt2 with positional sinusoidal")
    assert fixed["shape"] == [8, 768]  # at the preset's width


def test_t5s_buckets_are_refused_and_presets_exclude_weights(tmp_path: Path) -> None:
    fails("--preset", "t5-base", code=1,
          message="uses relative position buckets: a learned bias per head for each of 32 "
          "distance buckets")  # fmt: skip
    fails(
        "--preset",
        "gpt2",
        "--weights",
        str(tmp_path),
        code=2,
        message="pass --preset or --weights, not both",
    )


def test_list_presets_is_inspect_shapes_list() -> None:
    shapes = pytest.importorskip("embedcli.cli.shapes")
    if not hasattr(shapes, "list_presets"):
        pytest.skip("embedcli.cli.shapes.list_presets is not there yet")
    from embedcli.models.presets import preset_names

    result = runner.invoke(app, ["positions", "--list-presets", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    listed = data["presets"] if isinstance(data, dict) else data
    assert [p["name"] for p in listed] == list(preset_names())
    table = runner.invoke(app, ["positions", "--list-presets"]).stdout
    assert "llama-3.1-8b" in table and "bloom-176b" in table


# ---------------------------------------------------------------- model folders (--weights)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny models of five families (ALiBi twice, T5's buckets, none, learned), saved by
    transformers itself (tests/support/familymodels.py)."""
    from support.familymodels import CASES, build

    root = tmp_path_factory.mktemp("alibi-families")
    names = ("mpt", "falcon-alibi", "t5", "mamba", "gpt2")
    cases = {case.name: case for case in CASES}
    return {name: build(cases[name], root / name) for name in names}


@pytest.mark.parametrize("name", ["mpt", "falcon-alibi"])
def test_weights_draw_the_models_own_alibi(name: str, folders: dict[str, Path]) -> None:
    import transformers.models.bloom.modeling_bloom as bloom
    import transformers.models.mpt.modeling_mpt as mpt
    from support.familymodels import config_of

    config = config_of(folders[name])
    heads = config.get("n_heads", config.get("num_attention_heads"))
    data = run_json("--weights", str(folders[name]), "--context-length", "7")
    assert data["heads"] == heads
    slopes = torch.tensor([row["slope"] for row in data["slopes"]])
    if name == "mpt":  # MPT's variant: (H, 1, T) of slope · (j - (T - 1))
        theirs = mpt.build_mpt_alibi_tensor(heads, 7)
        torch.testing.assert_close(slopes.float(), -theirs[:, 0, 0] / 6)
        assert "MPT's slopes" in data["slope_rule"]
        assert heads != 2 ** int(math.log2(heads))  # odd k first: MPT's own ordering...
        np.testing.assert_allclose(slopes, paper_slopes(heads))  # ...the paper's at bias_max 8
    else:
        torch.testing.assert_close(slopes.float(), bloom._get_alibi_slopes(heads, "cpu"))
    bias = np.array(data["bias"], dtype=float)  # null -> nan
    i, j = np.meshgrid(np.arange(7), np.arange(7), indexing="ij")
    expected = np.where(j <= i, -slopes.numpy()[:, None, None] * (i - j), np.nan)
    np.testing.assert_allclose(bias, expected, rtol=1e-12)


@pytest.mark.parametrize(
    ("name", "message"),
    [("t5", "uses relative position buckets"), ("mamba", "has no positional encoding")],
)
def test_weights_refuse_what_has_no_picture(name: str, message: str, folders) -> None:
    fails("--weights", str(folders[name]), code=1, message=message)


def test_weights_on_a_learned_model_keep_its_trained_table(folders: dict[str, Path]) -> None:
    from safetensors.torch import load_file

    data = run_json("--weights", str(folders["gpt2"]))
    table = load_file(str(folders["gpt2"] / "model.safetensors"))["transformer.wpe.weight"]
    np.testing.assert_allclose(data["matrix"], table.double().numpy(), atol=1e-7)
    fails("--weights", str(folders["gpt2"]), "--positional", "rope", code=2,
          message="has learned positions: drop --positional")  # fmt: skip


# ---------------------------------------------------------------- the views, read back


@pytest.mark.parametrize("width", [40, 80, 120])
@pytest.mark.parametrize(
    "args",
    [
        ["--heads", "1", "--context-length", "1"],
        ["--heads", "12", "--context-length", "4"],  # titles wider than the blocks
        ["--heads", "40", "--context-length", "24"],  # 16 of 40 heads
        ["--context-length", "64"],
        ["--heads", "8", "--head", "7", "--context-length", "30"],
        ["--heads", "3", "--head", "0", "--context-length", "100"],  # rows sampled
    ],
)
def test_every_drawn_cell_is_the_bias_it_stands_for(width: int, args: list[str]) -> None:
    """The golden files' independent checker (tests/support/golden_oracle.py), on other sizes."""
    from support.golden_oracle import check

    result = runner.invoke(app, ["positions", "--positional", "alibi", *args],
                           env={"COLUMNS": str(width)})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert all(len(line) <= width for line in result.stdout.splitlines())
    check("positions_alibi_head.txt" if "--head" in args else "positions_alibi.txt", result.stdout)


def test_alibi_builds_only_the_cells_it_draws() -> None:
    assert (
        peak_bytes(
            "positions", "--positional", "alibi", "--heads", "1024", "--context-length", "1000"
        )
        < 64 * 2**20
    )  # fmt: skip  (was 16 GB)


def test_alibi_picture_cost_follows_what_it_shows() -> None:
    """A hostile trial's: 2**40 positions ended in a MemoryError traceback, and 10**7 took
    3.6 s and 194 MB, for a picture of 16 sampled positions (each axis built whole)."""
    for length in ("10000000", "1099511627776"):
        args = ("positions", "--positional", "alibi", "--heads", "7", "--context-length", length)
        assert peak_bytes(*args) < 16 * 2**20
    from embedcli.pipeline.positionmaps import AlibiBias

    huge = AlibiBias((0.5,), 2**40)
    assert huge[0, 2**40 - 1, [0, -1]].tolist()[0] == -0.5 * (2**40 - 1)
    assert math.isnan(huge[0, 0, [-1]][0]) and huge[0, 5, slice(0, 3)].tolist() == [-2.5, -2, -1.5]
    with pytest.raises(IndexError):
        huge[0, 0, [2**40]]


def test_alibi_cells_are_the_formula() -> None:
    from embedcli.core.positions import alibi_bias, alibi_slopes
    from embedcli.pipeline.positionmaps import AlibiBias

    slopes = alibi_slopes(12)
    full = alibi_bias(slopes, 9).numpy()
    lazy = AlibiBias(tuple(slopes), 9)
    assert lazy.shape == full.shape
    np.testing.assert_array_equal(np.asarray(lazy), full)
    np.testing.assert_array_equal(lazy[3], full[3])
    np.testing.assert_array_equal(lazy[2, 5, [0, 3, 8]], full[2, 5, [0, 3, 8]])


def test_alibi_json_of_too_many_values_is_refused() -> None:
    result = run("positions", "--positional", "alibi", "--heads", "1024", "--context-length",
                 "1000", "--json")  # fmt: skip
    expect_error(result, "--json writes every bias value: 1,024 heads × 1,000² positions", 1)
    assert positions_json("--positional", "alibi", "--heads", "1024", "--head", "3",
                          "--context-length", "100")["shape"] == [1, 100, 100]  # fmt: skip


def test_mpts_slope_rule_is_even_k_first() -> None:
    from embedcli.core.positions import alibi_slopes
    from embedcli.pipeline.positionmaps import slope_rule
    from embedcli.pipeline.positionsource import Encoding

    rule = slope_rule(Encoding("alibi", "x", heads=12, slope_rule="mpt"))
    assert "even k first" in rule and "odd k first" not in rule
    slopes = alibi_slopes(12, "mpt")
    assert slopes[0] == 1 / 2 ** (2 * 8 / 16)  # k = 2: the first even k
