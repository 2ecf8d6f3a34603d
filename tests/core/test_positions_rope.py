"""`embedcli positions --positional rope`: rope's angles and similarity, from the flags, a preset
or a model folder, checked against the formula and transformers' own rotary embedding; the
flags' errors; the PNGs of rope and ALiBi (tests/core/test_positions_alibi.py has ALiBi's
numbers)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from support.helpers import expect_error, make_runner
from support.positionruns import LLAMA, folder, positions_json, run, text_of
from test_positions import png_size

from embedcli.cli import app

runner = make_runner()
LLAMA31 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
           "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}  # fmt: skip


def run_json(*args: str) -> dict:
    result = runner.invoke(app, ["positions", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fails(*args: str, code: int, message: str) -> None:
    """One Error line on stderr, nothing on stdout, and ``code``."""
    result = runner.invoke(app, ["positions", *args])
    assert result.exit_code == code, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr, result.stderr


def wrapped(angle: float) -> float:
    """An angle in (-π, π], by atan2: an independent wrap."""
    return math.atan2(math.sin(angle), math.cos(angle)) or 0.0


# ---------------------------------------------------------------- rope, from the flags


@pytest.mark.parametrize(("theta", "dim"), [(10000.0, 8), (500000.0, 128), (1e6, 64)])
def test_rope_angles_are_the_formula_wrapped(theta: float, dim: int) -> None:
    data = run_json("--positional", "rope", "--rope-theta", str(theta), "-d", str(dim),
                    "--context-length", "40")  # fmt: skip
    assert data["positional"] == "rope" and data["kind"] == "angle"
    assert data["shape"] == [40, dim // 2] and data["pairs"] == dim // 2
    assert data["theta"] == theta and data["rope_dim"] == dim and data["scaling"] is None
    assert data["wrapped"] == "(-pi, pi]"
    frequencies = [theta ** (-2 * i / dim) for i in range(dim // 2)]
    np.testing.assert_allclose(data["inverse_frequencies"], frequencies, rtol=1e-6)
    matrix = np.array(data["matrix"])
    assert matrix.max() <= math.pi and matrix.min() > -math.pi
    for pos in (0, 1, 7, 39):
        for i in range(0, dim // 2, max(1, dim // 16)):
            want = wrapped(pos * frequencies[i])
            got = matrix[pos, i]
            assert abs(got - want) < 1e-5 or abs(abs(got - want) - 2 * math.pi) < 1e-5


def test_rope_llama3_scaling_is_transformers() -> None:
    """Our frequencies are transformers' llama3 ones to the bit, and the angles' cosines and
    sines are those of LlamaRotaryEmbedding's forward."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=4096, num_attention_heads=32, rope_parameters=LLAMA31,
                         max_position_embeddings=131072)  # fmt: skip
    rotary = LlamaRotaryEmbedding(config)
    ours = run_json("--positional", "rope", "--rope-theta", "500000", "--rope-scaling",
                    "llama3:8", "-d", "128")  # fmt: skip
    assert ours["inverse_frequencies"] == rotary.inv_freq.double().tolist()
    assert ours["scaling"] == {**{k: v for k, v in LLAMA31.items() if k != "rope_theta"},
                               "original_max_position_embeddings": 8192.0}  # fmt: skip
    cos, sin = rotary(torch.zeros(1, 64, 128), torch.arange(64)[None])  # (1, T, r)
    angles = np.array(ours["matrix"])  # (64, 64)
    np.testing.assert_allclose(np.cos(angles), cos[0, :, :64].double().numpy(), atol=1e-6)
    np.testing.assert_allclose(np.sin(angles), sin[0, :, :64].double().numpy(), atol=1e-6)
    # the spec's long form says the same; and the slowest pairs turn 8 times slower
    long = run_json("--positional", "rope", "--rope-theta", "500000", "--rope-scaling",
                    "llama3:8:1:4:8192", "-d", "128")  # fmt: skip
    assert long["matrix"] == ours["matrix"]
    plain = run_json("--positional", "rope", "--rope-theta", "500000", "-d", "128")
    assert ours["inverse_frequencies"][-1] == pytest.approx(
        plain["inverse_frequencies"][-1] / 8, rel=1e-6
    )
    assert ours["inverse_frequencies"][0] == plain["inverse_frequencies"][0]  # fast: unscaled


def test_rope_linear_scaling_is_transformers() -> None:
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = LlamaConfig(hidden_size=512, num_attention_heads=8,
                         rope_parameters={"rope_type": "linear", "rope_theta": 10000.0,
                                          "factor": 4.0})  # fmt: skip
    inverse, _ = ROPE_INIT_FUNCTIONS["linear"](config, "cpu")
    ours = run_json("--positional", "rope", "--rope-scaling", "linear:4", "-d", "64")
    assert ours["inverse_frequencies"] == inverse.double().tolist()


def test_rope_similarity_is_the_cosine_of_rotated_copies() -> None:
    """S[m, n] = mean_i cos((m - n) f_i): the cosine between transformers' rotations, at m and n,
    of one vector whose pairs have equal magnitudes; a Toeplitz matrix."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    data = run_json("--positional", "rope", "-d", "32", "--context-length", "48",
                    "--similarity")  # fmt: skip
    assert data["kind"] == "similarity" and data["shape"] == [48, 48]
    matrix, profile = np.array(data["matrix"]), np.array(data["profile"])
    frequencies = np.array([10000 ** (-2 * i / 32) for i in range(16)])
    for m, n in ((0, 0), (0, 1), (5, 2), (47, 0), (20, 33)):
        assert matrix[m, n] == pytest.approx(np.cos((m - n) * frequencies).mean(), abs=1e-7)
    for k in range(1, 48):  # constant along every diagonal
        np.testing.assert_allclose(np.diagonal(matrix, k), profile[k], atol=1e-12)
    rotary = LlamaRotaryEmbedding(LlamaConfig(hidden_size=64, num_attention_heads=2))
    phase = torch.rand(16, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 6
    x = torch.cat([phase.cos(), phase.sin()]).float()  # pair i is (x_i, x_{i+16}): magnitude 1
    q = x.expand(1, 1, 48, 32).contiguous()
    cos, sin = rotary(q, torch.arange(48)[None])
    rotated, _ = apply_rotary_pos_emb(q, q, cos, sin)  # (1, 1, T, r)
    unit = torch.nn.functional.normalize(rotated[0, 0].double(), dim=-1)
    np.testing.assert_allclose(matrix, (unit @ unit.T).numpy(), atol=1e-5)


def test_rope_views_say_what_they_draw() -> None:
    out = runner.invoke(app, ["positions", "--positional", "rope", "--rope-scaling", "llama3:8"])
    assert out.exit_code == 0, out.output
    text = " ".join(out.stdout.split())
    assert "wrapped to (-π, π]" in text and "columns: pair i of the 128 rotated dimensions" in text
    assert "scaling llama3 (factor 8, low 1, high 4, original 8,192)" in text
    assert "nothing is added to the input embeddings" in text and "(0 parameters)" in text
    out = runner.invoke(app, ["positions", "--positional", "rope", "--similarity"])
    text = " ".join(out.stdout.split())
    assert "Toeplitz" in text and "S by distance: 0→+1.000, 1→+" in text


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ntk:4", "embedcli computes linear, llama3, dynamic, yarn, longrope, proportional"),
        ("yarn:4", "write yarn:FACTOR:ORIGINAL[:NAME=VALUE...]"),
        ("linear", "write linear:FACTOR"),
        ("linear:", "write linear:FACTOR"),
        ("linear:x", "'x' is not a number"),
        ("linear:0.5", "the factor must be at least 1"),
        ("linear:nan", "must be a positive finite number"),
        ("llama3:8:1:4", "write llama3:FACTOR[:LOW:HIGH:ORIGINAL]"),
        ("llama3:8:4:1:8192", "llama3 needs 0 < LOW <= HIGH, got 4 and 1"),
        ("llama3:8:1:4:81.5", "ORIGINAL is a context length"),
        ("linear:2:3", "write linear:FACTOR"),
    ],
)
def test_bad_scaling_specs_are_one_error_line(spec: str, message: str) -> None:
    fails("--positional", "rope", "--rope-scaling", spec, code=2, message=message)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--positional", "rope", "--rope-theta", "1"], 2, "must be a finite number above 1"),
        (["--positional", "rope", "--rope-theta", "inf"], 2, "must be a finite number above 1"),
        (["--positional", "rope", "-d", "7"], 1, "--d-model must be even, got 7"),
        (["--rope-theta", "500000"], 2, "--rope-theta is for rope pictures; this picture is "
         "sinusoidal (pass --positional rope)"),
        (["--positional", "learned", "--rope-scaling", "linear:2"], 2, "--rope-scaling is for"),
        (["--positional", "rope", "--heads", "4"], 2, "--heads is for alibi pictures"),
        (["--positional", "alibi", "-d", "8"], 2, "-d sets the columns of learned"),
        (["--positional", "alibi", "--similarity"], 2, "--similarity compares the vectors"),
        (["--positional", "alibi", "--head", "8"], 2, "--head 8 is out of range: 8 heads, "
         "numbered 0 to 7"),
        (["--positional", "alibi", "--heads", "1", "--head", "1"], 2, "1 head, numbered 0 to 0"),
        (["--positional", "alibi", "--heads", "0"], 2, "--heads"),
        (["--positional", "alibi", "--heads", "5000"], 2, "--heads"),
        (["--positional", "alibi", "--head", "-1"], 2, "--head"),
        (["--positional", "alibi", "--context-length", "99999999", "--head", "0"], 1,
         "lower --context-length"),
        (["--position-key", "wpe", "--preset", "gpt2"], 2, "pass --weights"),
        (["--preset", "gtp2"], 2, "'gtp2' is not a preset; did you mean 'gpt2'? the presets: "
         "embedcli inspect-shapes --list-presets"),
    ],
)  # fmt: skip
def test_flag_errors_are_one_line(args: list[str], code: int, message: str) -> None:
    fails(*args, code=code, message=message)


# ---------------------------------------------------------------- a preset's and a model's rope


def test_a_rope_preset_draws_its_own_rope() -> None:
    preset = run_json("--preset", "llama-3.1-8b")
    flags = run_json("--positional", "rope", "--rope-theta", "500000", "--rope-scaling",
                     "llama3:8", "-d", "128")  # fmt: skip
    assert preset["matrix"] == flags["matrix"] and preset["shape"] == [64, 64]  # 64 rows
    assert preset["source"] == "preset llama-3.1-8b (Llama)"
    same = run_json("--preset", "llama-3.1-8b", "-d", "128", "--rope-theta", "500000",
                    "--positional", "rope", "--context-length", "8")  # fmt: skip
    assert same["shape"] == [8, 64]
    # A preset is where a picture starts (as in inspect-shapes): a flag beside it that says
    # otherwise makes a custom one, named as such, drawn as the flags alone would draw it.
    narrow = run_json("--preset", "llama-3.1-8b", "-d", "64")
    assert narrow["source"] == "custom: preset llama-3.1-8b (Llama) with 64 rotated dimensions"
    alone = run_json("--positional", "rope", "--rope-theta", "500000", "--rope-scaling",
                     "llama3:8", "-d", "64")  # fmt: skip
    assert narrow["matrix"] == alone["matrix"] and narrow["shape"] == [64, 32]
    linear = run_json("--preset", "llama-3.1-8b", "--rope-scaling", "linear:8")
    assert linear["source"].endswith("with rope scaling rope_type linear, factor 8")
    flags = ("--positional", "rope", "--rope-theta", "500000", "--rope-scaling", "linear:8")
    assert linear["matrix"] == run_json(*flags, "-d", "128")["matrix"]
    alibi = run_json("--preset", "llama-2-7b", "--positional", "alibi", "--context-length", "4")
    assert alibi["source"] == "custom: preset llama-2-7b (Llama) with positional alibi"
    assert alibi["heads"] == 32  # Llama 2's, not the flags' default of 8
    flags = ("--positional", "alibi", "--heads", "32", "--context-length", "4")
    assert alibi["bias"] == run_json(*flags)["bias"]
    fails("--preset", "llama-2-7b", "--heads", "8", "--head", "8", "--positional", "alibi",
          code=2, message="--head 8 is out of range: 8 heads, numbered 0 to 7")  # fmt: skip
    fails("--preset", "gpt2", "--positional", "rope", code=2,
          message="preset gpt2 names no attention heads, so rope's rotated dimensions")  # fmt: skip
    assert run_json("--preset", "gpt2", "--positional", "rope", "-d", "64")["shape"] == [64, 32]
    fails("--preset", "llama-2-7b", "--heads", "8", code=2, message="--heads is for alibi")


@pytest.fixture(scope="module")
def llama31(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama 3.1 (llama3 rope scaling), saved by transformers
    (tests/support/familymodels.py)."""
    from support.familymodels import CASES, build

    case = next(case for case in CASES if case.name == "llama-3.1-scaling")
    return build(case, tmp_path_factory.mktemp("rope-model") / case.name)


def test_weights_draw_the_models_own_rope(llama31: Path) -> None:
    from support.familymodels import config_of, rotary_inverse_frequencies
    from transformers import AutoModelForCausalLM

    data = run_json("--weights", str(llama31), "--context-length", "48")
    model = AutoModelForCausalLM.from_pretrained(llama31).eval()
    (inverse,) = rotary_inverse_frequencies(model).values()
    assert data["inverse_frequencies"] == inverse.double().tolist()
    assert data["scaling"]["rope_type"] == "llama3" and data["theta"] == 500000.0
    cos, _ = model.model.rotary_emb(torch.zeros(1, 48, 1), torch.arange(48)[None])
    pairs = data["pairs"]
    np.testing.assert_allclose(np.cos(data["matrix"]), cos[0, :, :pairs].double(), atol=1e-6)
    head_dim = config_of(llama31)["hidden_size"] // config_of(llama31)["num_attention_heads"]
    assert data["rope_dim"] == head_dim
    fails("--weights", str(llama31), "-d", str(head_dim + 2), code=1, message="conflicts with")
    fails("--weights", str(llama31), "--positional", "learned", code=2, message="drop --positional")


def test_weights_with_a_scaling_embedcli_does_not_compute_are_refused(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    yarn = {"rope_type": "ntk-by-parts", "rope_theta": 10000.0, "factor": 4.0,
            "original_max_position_embeddings": 16}  # fmt: skip
    config = {"model_type": "llama", "vocab_size": 16, "hidden_size": 8, "num_attention_heads": 2,
              "max_position_embeddings": 64, "rope_parameters": yarn}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    save_file(
        {"model.embed_tokens.weight": torch.zeros(16, 8)}, str(tmp_path / "model.safetensors")
    )
    fails("--weights", str(tmp_path), code=1,
          message="rope_type 'ntk-by-parts' is not one embedcli computes")  # fmt: skip


# ---------------------------------------------------------------- pictures


@pytest.mark.parametrize(
    ("args", "size"),
    [
        (["--positional", "rope"], (800, 500)),
        (["--positional", "rope", "--similarity"], (800, 500)),
        (["--positional", "alibi"], (900, 600)),
        (["--preset", "bloom-176b"], (900, 600)),
        (["--positional", "alibi", "--head", "0"], (800, 500)),
    ],
)
def test_pngs_of_rope_and_alibi(args: list[str], size: tuple[int, int], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = tmp_path / "p.png"
    result = runner.invoke(app, ["positions", *args, "--png", str(path)])
    assert result.exit_code == 0, result.output
    assert png_size(path) == size and f"wrote {path}" in result.stdout


def test_masked_cells_are_marked_only_where_the_report_masks_them() -> None:
    from embedcli.pipeline.positions import Heatmap
    from embedcli.render.common import to_text
    from embedcli.render.heatmap import heatmap_view

    matrix = np.array([[0.0, np.nan], [-1.0, 0.0]])
    masked = Heatmap("t", "bias", "query", "key", matrix, bounds=(-1.0, 0.0), masked="after")
    text = to_text(heatmap_view(masked, width=40), width=40).splitlines()
    assert text[2] == "0 @@@···" and text[3] == "1    @@@" and "· = after" in text
    plain = Heatmap("t", "encoding", "position", "column", matrix)
    text = to_text(heatmap_view(plain, width=40), width=40).splitlines()
    assert text[2] == "0 +++" and text[3] == "1    +++"  # NaN: the lowest value, unmasked


@pytest.mark.parametrize("width", [40, 80, 120])
@pytest.mark.parametrize(
    "args",
    [
        ["-d", "8", "--context-length", "5"],
        ["-d", "256", "--rope-theta", "500000", "--rope-scaling", "llama3:8:1:4:32"],  # sampled
        ["-d", "64", "--rope-scaling", "linear:4", "--context-length", "100"],
        ["-d", "32", "--similarity", "--context-length", "70"],
        ["-d", "128", "--similarity", "--rope-scaling", "llama3:8:1:4:64"],
    ],
)
def test_every_drawn_cell_is_the_angle_it_stands_for(width: int, args: list[str]) -> None:
    """The golden files' independent checker (tests/support/golden_oracle.py), on other sizes."""
    from support.golden_oracle import check

    result = runner.invoke(app, ["positions", "--positional", "rope", *args],
                           env={"COLUMNS": str(width)})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert all(len(line) <= width for line in result.stdout.splitlines())
    similarity = "--similarity" in args
    check("positions_rope_similarity.txt" if similarity else "positions_rope.txt", result.stdout)


GEMMA3 = {**LLAMA, "model_type": "gemma3_text", "head_dim": 8}


NEOX = {"model_type": "gpt_neox", "vocab_size": 16, "hidden_size": 32, "num_attention_heads": 2,
        "num_hidden_layers": 1, "max_position_embeddings": 64}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**LLAMA, "hidden_size": 30, "head_dim": 15}, "rotates 15 dimensions of each attention "
         "head, an odd number"),
        ({**NEOX, "rotary_pct": 0.33}, "rotates 5 dimensions of each attention head, an odd"),
        ({**NEOX, "rotary_pct": 0.01}, "leaves 0 rotated dimensions in each attention head"),
    ],
)  # fmt: skip
def test_an_odd_or_empty_rotated_width_is_refused(tmp_path: Path, config, message) -> None:
    expect_error(run("positions", "--weights", folder(tmp_path, config)), message, 1)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**LLAMA, "layer_types": ["full_attention"] * 2, "rope_parameters": {"full_attention": {
            "rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}},
         "Llama's code reads one set for every layer"),
        ({**GEMMA3, "rope_parameters": {"full_attention": {"rope_theta": -1.0},
                                        "sliding_attention": {"rope_theta": 1e4}}},
         "full_attention rope_theta must be a number above 1"),
        ({**GEMMA3, "layer_types": ["sliding_attention", "full_attention"],
          "rope_parameters": {"full_attention": {"rope_theta": 1e6}}},
         "layer type 'sliding_attention' has no rope_parameters"),
        ({**LLAMA, "rope_parameters": {"rope_type": "linear", "factor": 0.5}},
         "rope_scaling factor must be at least 1"),
        ({**LLAMA, "rope_parameters": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
          "high_freq_factor": 4, "original_max_position_embeddings": 8192.5}},
         "original_max_position_embeddings is a context length, a whole number"),
    ],
)  # fmt: skip
def test_rope_parameters_embedcli_cannot_be_sure_of_are_refused(tmp_path, config, message):
    expect_error(run("positions", "--weights", folder(tmp_path, config)), message, 1)


@pytest.mark.parametrize(("pattern", "first"), [(1, "full_attention"), (6, "sliding_attention")])
def test_gemma3s_sliding_window_pattern_picks_the_first_blocks_base(tmp_path, pattern, first):
    from transformers import Gemma3TextConfig

    config = {**GEMMA3, "rope_theta": 1e6, "rope_local_base_freq": 1e4,
              "sliding_window_pattern": pattern}  # fmt: skip
    theirs = Gemma3TextConfig(**{k: v for k, v in config.items() if k != "model_type"})
    assert theirs.layer_types[0] == first
    theta = theirs.rope_parameters[first]["rope_theta"]
    data = positions_json("--weights", folder(tmp_path, config))
    assert data["theta"] == theta == (1e6 if pattern == 1 else 1e4)


@pytest.mark.parametrize(("preset", "pairs"), [("gpt2", 32), ("bloom-176b", 64), ("gpt3", 64)])
def test_rope_on_another_familys_preset_rotates_one_head(preset: str, pairs: int) -> None:
    result = run("inspect-shapes", "--preset", preset, "--positional", "rope", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    angles = next(t for t in data["tensors"] if t["name"] == "rope_angles")
    assert angles["shape"] == [4, pairs] and data["config"]["rope_dim"] == 2 * pairs
    expect_error(run("inspect-shapes", "--preset", "book-ch2", "--positional", "rope"),
                 "book-ch2 gives no attention head count", 2)  # fmt: skip


def test_a_partial_rotary_note_says_the_part_of_a_head() -> None:
    text = text_of("inspect-shapes", "--preset", "gpt-neox-20b")
    assert "over 24 of the 96 dimensions of each attention head: the part rotated" in text
    assert "over 128 dimensions: one attention head" in text_of(
        "inspect-shapes", "--preset", "llama-3.1-8b"
    )


def test_a_theta_beside_a_preset_shows_the_digits_that_differ() -> None:
    data = run_json("--preset", "llama-3.1-8b", "--rope-theta", "500000.5")
    assert data["source"] == "custom: preset llama-3.1-8b (Llama) with rope theta 500,000.5"
    same = run_json("--preset", "llama-3.1-8b", "--rope-theta", "500000")
    assert same["source"] == "preset llama-3.1-8b (Llama)"  # what it says already: no change


def test_a_huge_rope_width_names_d(monkeypatch) -> None:
    import embedcli.core.memory as memory

    monkeypatch.setattr(memory, "host_available_memory", lambda: 2**20)
    result = run("positions", "--positional", "rope", "-d", "1000000")
    expect_error(result, "lower --context-length or -d", 1)
