"""The findings of a hostile trial of `positions` and `inspect-shapes`, each a test that failed
on the release it was found in: tracebacks, memory out of proportion to the picture, numbers
drawn wrong or silently ignored, and messages that were not true."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch
from support.helpers import expect_error, make_runner

from embedcli.cli import app

runner = make_runner()
LLAMA = {"model_type": "llama", "vocab_size": 16, "hidden_size": 16, "num_attention_heads": 2,
         "num_hidden_layers": 2, "max_position_embeddings": 64}  # fmt: skip
GEMMA3 = {**LLAMA, "model_type": "gemma3_text", "head_dim": 8}
NEOX = {"model_type": "gpt_neox", "vocab_size": 16, "hidden_size": 32, "num_attention_heads": 2,
        "num_hidden_layers": 1, "max_position_embeddings": 64}  # fmt: skip
TOKEN_KEY = {"llama": "model.embed_tokens.weight", "gemma3_text": "model.embed_tokens.weight",
             "gpt_neox": "gpt_neox.embed_in.weight"}  # fmt: skip


def folder(tmp_path: Path, config: dict, width: int | None = None) -> str:
    """A model folder: config.json and a zero token table (``width`` columns)."""
    from safetensors.torch import save_file

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps(config))
    width = width or config.get("hidden_size", 16)
    tensors = {TOKEN_KEY[config["model_type"]]: torch.zeros(config["vocab_size"], width)}
    save_file(tensors, str(tmp_path / "model.safetensors"))
    return str(tmp_path)


def run(*args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=env)


def positions_json(*args: str) -> dict:
    result = run("positions", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def peak_bytes(*args: str) -> int:
    """The most memory Python and numpy held while the command ran (tracemalloc)."""
    tracemalloc.start()
    try:
        result = run(*args)
        assert result.exit_code == 0, result.output
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------- 1. tracebacks


@pytest.mark.parametrize(
    ("args", "steps"),
    [
        (["--preset", "bert-base"], {"token_type_embeddings", "embedding_layernorm"}),
        (["--preset", "bloom-176b", "-d", "64"], {"embedding_layernorm"}),
    ],
)
def test_a_presets_other_tensors_are_seeded_on_a_real_device(args: list[str], steps: set) -> None:
    result = run("inspect-shapes", *args, "--device", "cpu", "--json")
    assert result.exit_code == 0, result.output
    names = {t["name"] for t in json.loads(result.stdout)["tensors"]}
    assert steps <= names


def test_seeded_extras_are_torchs_initialisation_after_the_tables() -> None:
    from embedcli.core.config import EmbedConfig
    from embedcli.core.embedding import InputEmbedding

    config = EmbedConfig(vocab_size=10, d_model=4, context_length=3, token_types=True,
                         norm_eps=1e-5)  # fmt: skip
    module = InputEmbedding(config)
    torch.manual_seed(config.seed)
    token, position = torch.nn.Embedding(10, 4), torch.nn.Embedding(3, 4)
    types = torch.nn.Embedding(1, 4)
    assert torch.equal(module.token_embedding.weight, token.weight)
    assert torch.equal(module.position_embedding.weight, position.weight)
    assert torch.equal(module.token_type_embedding.weight, types.weight)
    assert torch.equal(module.norm_weight, torch.ones(4))
    assert torch.equal(module.norm_bias, torch.zeros(4))


def test_seeded_tables_that_would_take_most_of_the_memory_are_refused(monkeypatch) -> None:
    import embedcli.core.memory as memory

    monkeypatch.setattr(memory, "host_available_memory", lambda: 16 * 2**30)
    result = run("inspect-shapes", "--preset", "bloom-176b", "--device", "cpu")
    expect_error(result, "more than 75% of the 16.0 GiB available on this machine", 1)


# ---------------------------------------------------------------- 2. memory in proportion


def test_alibi_builds_only_the_cells_it_draws() -> None:
    assert (
        peak_bytes(
            "positions", "--positional", "alibi", "--heads", "1024", "--context-length", "1000"
        )
        < 64 * 2**20
    )  # fmt: skip  (was 16 GB)


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


# ---------------------------------------------------------------- 3. numbers drawn wrong


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


@pytest.mark.parametrize(
    ("config", "width", "message"),
    [
        ({**LLAMA, "hidden_size": 128}, 64, "gives hidden_size 128, but its weights have 64"),
        ({k: v for k, v in LLAMA.items() if k != "hidden_size"}, 16, "hidden_size 4,096"),
    ],
)
def test_weights_config_is_checked_against_its_tables(tmp_path, config, width, message) -> None:
    expect_error(run("positions", "--weights", folder(tmp_path, config, width)), message, 1)


@pytest.mark.parametrize(("preset", "pairs"), [("gpt2", 32), ("bloom-176b", 64), ("gpt3", 64)])
def test_rope_on_another_familys_preset_rotates_one_head(preset: str, pairs: int) -> None:
    result = run("inspect-shapes", "--preset", preset, "--positional", "rope", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    angles = next(t for t in data["tensors"] if t["name"] == "rope_angles")
    assert angles["shape"] == [4, pairs] and data["config"]["rope_dim"] == 2 * pairs
    expect_error(run("inspect-shapes", "--preset", "book-ch2", "--positional", "rope"),
                 "book-ch2 gives no attention head count", 2)  # fmt: skip


# ---------------------------------------------------------------- 4. messages that were not true


def text_of(*args: str) -> str:
    result = run(*args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split())


def test_a_partial_rotary_note_says_the_part_of_a_head() -> None:
    text = text_of("inspect-shapes", "--preset", "gpt-neox-20b")
    assert "over 24 of the 96 dimensions of each attention head: the part rotated" in text
    assert "over 128 dimensions: one attention head" in text_of(
        "inspect-shapes", "--preset", "llama-3.1-8b"
    )


def test_mpts_slope_rule_is_even_k_first() -> None:
    from embedcli.core.positions import alibi_slopes
    from embedcli.pipeline.positionmaps import slope_rule
    from embedcli.pipeline.positionsource import Encoding

    rule = slope_rule(Encoding("alibi", "x", heads=12, slope_rule="mpt"))
    assert "even k first" in rule and "odd k first" not in rule
    slopes = alibi_slopes(12, "mpt")
    assert slopes[0] == 1 / 2 ** (2 * 8 / 16)  # k = 2: the first even k


def test_the_presets_list_says_what_each_command_does_with_flags() -> None:
    text = text_of("positions", "--list-presets")
    assert "override" not in text
    assert "positions --preset NAME: a flag that disagrees with the preset is an error" in text


def test_a_theta_conflict_shows_the_digits_that_differ() -> None:
    result = run("positions", "--preset", "llama-3.1-8b", "--rope-theta", "500000.5")
    expect_error(result, "--rope-theta 500,000.5 conflicts with the rope theta of preset "
                 "llama-3.1-8b (Llama), 500,000; drop --rope-theta", 2)  # fmt: skip


def test_a_huge_rope_width_names_d(monkeypatch) -> None:
    import embedcli.core.memory as memory

    monkeypatch.setattr(memory, "host_available_memory", lambda: 2**20)
    result = run("positions", "--positional", "rope", "-d", "1000000")
    expect_error(result, "lower --context-length or -d", 1)


def test_a_checkpoints_header_does_not_call_it_a_preset(tmp_path: Path) -> None:
    text = text_of("inspect-shapes", "--weights", folder(tmp_path, LLAMA))
    assert "preset checkpoint" not in text and "inspect-shapes · checkpoint " in text


# ---------------------------------------------------------------- 5. minor


def test_a_flag_against_a_preset_is_usage_against_a_models_files_input(tmp_path) -> None:
    expect_error(run("positions", "--preset", "llama-2-7b", "-d", "64"), "conflicts", 2)
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
    expect_error(run("positions", "--png", ""), "--png needs the name of a file to write", 2)


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
