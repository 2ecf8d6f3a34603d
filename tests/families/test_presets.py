"""Offline presets of real families (their published configs, in embedcli/families/): each one
read through its family's registry entry exactly as a model folder's config.json is; the header
names the configuration used; --list-presets groups them by family; --train works for every one.

The folder a preset stands for is built here for real: its config.json beside a safetensors
file whose header holds the tables at their full published shapes (the file is sparse: the
bytes are never read on the meta device), so `inspect-shapes --weights FOLDER` and
`inspect-shapes --preset NAME` are compared output for output.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from support.helpers import make_runner

from embedcli.cli import app
from embedcli.core.config import PRESETS
from embedcli.families.registry import family_of
from embedcli.models.presets import get_preset, preset_entry, preset_model, preset_names

REAL = [name for name in preset_names() if name not in PRESETS]
runner = make_runner()
DTYPE_CODES = {"float32": ("F32", 4), "float16": ("F16", 2), "bfloat16": ("BF16", 2)}


def run_cli(*args: str):
    return runner.invoke(app, list(args))


def shapes_json(*args: str) -> dict:
    result = run_cli("inspect-shapes", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def sparse_safetensors(path: Path, tensors: dict[str, tuple[int, ...]], dtype: str) -> None:
    """A safetensors file with ``tensors`` at these shapes; its data is a hole in the file."""
    code, size = DTYPE_CODES[dtype]
    header, offset = {}, 0
    for name, shape in tensors.items():
        count = 1
        for n in shape:
            count *= n
        header[name] = {
            "dtype": code,
            "shape": list(shape),
            "data_offsets": [offset, offset + count * size],
        }
        offset += count * size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(blob)) + blob)
        handle.truncate(8 + len(blob) + offset)


def model_folder(name: str, folder: Path) -> Path:
    """The folder of preset ``name``: its config.json and its input layer's tensors, named as
    the family's LM-head class saves them."""
    config = preset_entry(name).config
    model = preset_model(name)
    family = family_of(config["model_type"])
    prefix = {"gemma3": "model.language_model."}.get(config["model_type"])
    if prefix is None:
        prefix = f"{family.prefixes[0]}." if family.prefixes[0] else ""
    d = model.d_model
    tensors = {prefix + family.token[0]: (model.vocab_size, model.token_width or d)}
    if model.positional == "learned":
        from embedcli.models.tables import position_rows_before

        rows = model.context_length + position_rows_before(model)
        tensors[prefix + family.position] = (rows, d)
    if family.token_type:
        tensors[prefix + family.token_type] = (config.get("type_vocab_size", 2), d)
    if family.norm:
        tensors[f"{prefix}{family.norm}.weight"] = (d,)
        tensors[f"{prefix}{family.norm}.bias"] = (d,)
    if family.altup:  # Gemma 3n's AltUp projections, streams - 1 of them
        for i in range(model.streams - 1):
            tensors[prefix + family.altup.format(i=i)] = (d, d)
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    sparse_safetensors(folder / "model.safetensors", tensors, model.dtype or "float32")
    return folder


@pytest.mark.parametrize("name", REAL)
def test_a_preset_reads_as_its_model_folder_does(name: str, tmp_path: Path) -> None:
    """Shapes, steps (scaling, norms, offsets, token types) and the position family: the
    same as `--weights` on a folder of that model, field for field and tensor for tensor."""
    folder = model_folder(name, tmp_path / name)
    preset = shapes_json("--preset", name)
    weights = shapes_json("--weights", str(folder))
    skip = {"preset", "preset_source", "preset_changes", "model"}
    assert {k: v for k, v in preset["config"].items() if k not in skip} == {
        k: v for k, v in weights["config"].items() if k not in skip
    }
    assert preset["tensors"] == weights["tensors"]
    assert preset["broadcast"] == weights["broadcast"]
    assert preset["config"]["preset_source"] == preset_entry(name).hub_id
    assert preset["config"]["preset_changes"] == {}


@pytest.mark.parametrize("name", REAL)
def test_json_gives_the_counts_and_the_position_family(name: str) -> None:
    data = shapes_json("--preset", name)
    preset = get_preset(name)
    p = data["parameters"]
    assert p["model_parameters"] == preset.model_parameters > 0
    model = preset_model(name)
    width = model.token_width or model.d_model
    assert p["token_embeddings"] == model.vocab_size * width
    assert data["config"]["positional"] == model.positional
    assert p["share_of_model"] == pytest.approx(p["total"] / p["model_parameters"])


EXPECTED = {  # name: (positional, what the family does before block 0, as the JSON says it)
    "llama-3.1-8b": ("rope", {"rope_theta": 500000.0, "rope_dim": 128}),
    "gemma-2-9b": ("rope", {"embed_scale": 3584**0.5, "rope_dim": 256}),
    "gemma-3-27b": ("rope", {"embed_scale": 5376**0.5, "rope_dim": 128}),
    "gpt-neox-20b": ("rope", {"rope_dim": 24}),
    "opt-6.7b": ("learned", {"position_offset": 2, "context_length": 2048}),
    "bloom-176b": ("alibi", {"norm_eps": 1e-5, "context_length": None}),
    "bert-base": ("learned", {"token_types": True, "norm_eps": 1e-12, "context_length": 512}),
    "t5-base": ("relative", {"context_length": None, "d_model": 768}),
    "falcon-40b": ("rope", {"rope_dim": 64, "d_model": 8192}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_family_keeps_its_own_steps(name: str) -> None:
    """Written out by hand from each model's config.json and transformers' modeling code."""
    positional, fields = EXPECTED[name]
    config = shapes_json("--preset", name)["config"]
    assert config["positional"] == positional
    for key, value in fields.items():
        assert config[key] == (pytest.approx(value) if isinstance(value, float) else value), key


def test_llama3_scaling_comes_with_the_preset() -> None:
    config = shapes_json("--preset", "llama-3.1-70b")["config"]
    assert config["rope_scaling"] == {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192.0,
    }


def test_a_mixture_of_experts_says_what_one_token_runs_through() -> None:
    data = shapes_json("--preset", "mixtral-8x7b")
    p = data["parameters"]
    assert (p["experts"], p["experts_per_token"]) == (8, 2)
    assert p["active_parameters"] < p["model_parameters"]
    # every expert beyond the two a token uses: 6 x 32 layers x 3 matrices of 4096 x 14336
    assert p["model_parameters"] - p["active_parameters"] == 6 * 32 * 3 * 4096 * 14336
    text = run_cli("inspect-shapes", "--preset", "mixtral-8x7b").stdout
    assert f"{p['active_parameters']:,}" in text and "2 of the 8 experts" in text


@pytest.mark.parametrize(
    ("name", "layers", "experts", "width", "inner"),
    [("qwen3-30b-a3b", 48, 128, 2048, 768), ("qwen3-235b-a22b", 94, 128, 4096, 1536)],
)
def test_qwen3_moe_runs_8_of_its_experts(
    name: str, layers: int, experts: int, width: int, inner: int
) -> None:
    p = shapes_json("--preset", name)["parameters"]
    assert (p["experts"], p["experts_per_token"]) == (experts, 8)
    # every expert beyond the 8 a token uses: gate, up and down of width x moe_intermediate_size
    skipped = (experts - 8) * layers * 3 * width * inner
    assert p["model_parameters"] - p["active_parameters"] == skipped


def test_qwen3_moe_active_count_is_transformers() -> None:
    """The active count of Qwen3 30B-A3B: transformers' meta-device model, less the experts one
    token does not run."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from embedcli.families.registry import count_parameters

    config = dict(preset_entry("qwen3-30b-a3b").config)
    with torch.device("meta"):
        model = transformers.Qwen3MoeForCausalLM(transformers.AutoConfig.for_model(**config))
    experts = model.model.layers[0].mlp.experts
    per_expert = sum(p.numel() for p in experts.parameters()) // config["num_experts"]
    total = sum(p.numel() for p in model.parameters())
    counted = count_parameters(config)
    assert counted.total == total
    assert counted.active == total - 120 * per_expert * 48


@pytest.mark.parametrize(
    "edits",
    [
        {"mlp_only_layers": [0, 5], "decoder_sparse_step": 2},  # dense MLPs in 26 layers
        {"attention_bias": True, "tie_word_embeddings": True},
        {"head_dim": None},  # absent: the width over the heads
    ],
)
def test_qwen3_moe_variants_count_as_transformers(edits: dict) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from embedcli.families.registry import count_parameters

    config = {**preset_entry("qwen3-30b-a3b").config, **edits}
    config = {k: v for k, v in config.items() if not (k == "head_dim" and v is None)}
    with torch.device("meta"):
        model = transformers.Qwen3MoeForCausalLM(transformers.AutoConfig.for_model(**config))
    assert count_parameters(config).total == sum(p.numel() for p in model.parameters())


def test_a_dense_model_has_no_active_count() -> None:
    p = shapes_json("--preset", "llama-2-7b")["parameters"]
    assert p["active_parameters"] is None and p["experts"] is None


# ---------------------------------------------------------------- the header names what is used


def header(*args: str) -> str:
    result = run_cli("inspect-shapes", *args)
    assert result.exit_code == 0, result.output
    return result.stdout.split("\n\n")[0].replace("\n", " ")


def test_flags_on_the_default_preset_are_named_not_called_gpt2() -> None:
    line = header("-d", "4096", "--vocab-size", "32000")
    assert "preset gpt2" not in line
    assert "custom: gpt2 with" in line and "d 4,096" in line and "vocab 32,000" in line
    data = shapes_json("-d", "4096")
    assert data["config"]["preset_changes"] == {"d_model": 4096}
    assert data["parameters"]["model_parameters"] is None  # not GPT-2's count any more


def test_a_real_preset_names_its_source() -> None:
    line = header("--preset", "llama-3.1-8b")
    assert "preset llama-3.1-8b (Llama 3.1 8B, meta-llama/Llama-3.1-8B)" in line


def test_flags_on_a_real_preset_are_named() -> None:
    line = header("--preset", "mistral-7b", "--context-length", "8192")
    assert "custom: mistral-7b with context 8,192" in line


def test_only_the_dtype_changes_no_count() -> None:
    assert "preset gpt2 (GPT-2 small" in header("--dtype", "bfloat16")


# ---------------------------------------------------------------- --list-presets and --train


def test_list_presets_groups_by_family_with_sources() -> None:
    data = json.loads(run_cli("inspect-shapes", "--list-presets", "--json").stdout)["presets"]
    assert [p["name"] for p in data] == list(preset_names())
    families = [p["family"] for p in data]
    for family in set(families):  # each family's presets together
        first = families.index(family)
        assert families[first : first + families.count(family)] == [family] * families.count(family)
    for p in data:
        entry = preset_entry(p["name"])
        if entry is not None:
            assert p["source"] == entry.hub_id and p["published"] == entry.published
            assert p["family"] == family_of(entry.config["model_type"]).name
        assert p["model_parameters"] is None or p["model_parameters"] > 0
    mixtral = next(p for p in data if p["name"] == "mixtral-8x7b")
    assert mixtral["active_parameters"] < mixtral["model_parameters"]


@pytest.mark.parametrize("width", (80, 120))
def test_list_presets_fits_and_names_every_source(width: int) -> None:
    from embedcli.render.common import to_text
    from embedcli.render.presets import presets_table

    text = to_text(presets_table([get_preset(n) for n in preset_names()], width=width), width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    flat = " ".join(text.split())
    for name in REAL:
        assert (
            preset_entry(name).hub_id in flat.replace(" ", "") or preset_entry(name).hub_id in text
        )


@pytest.mark.parametrize("name", preset_names())
def test_train_works_for_every_preset(name: str) -> None:
    data = shapes_json("--preset", name, "--train")
    training = data["training"]
    assert training["model_parameters"] == get_preset(name).model_parameters
    if training["model_parameters"]:
        # AdamW in mixed precision: 16 bytes a parameter, plus a step count per tensor
        assert training["total_model"]["mixed"] == 16 * training["model_parameters"]


def test_a_table_for_a_model_with_no_context_limit_needs_its_rows() -> None:
    from support.helpers import expect_error

    result = run_cli("inspect-shapes", "--preset", "bloom-176b", "--positional", "learned")
    expect_error(result, "bloom-176b has no context limit", 2)
    data = shapes_json(
        "--preset", "bloom-176b", "--positional", "learned", "--context-length", "64"
    )
    assert data["parameters"]["position_embeddings"] == 64 * 14336
    assert data["config"]["preset_changes"] == {"context_length": 64, "positional": "learned"}


def test_a_width_narrower_than_one_rotated_head_is_refused() -> None:
    from support.helpers import expect_error

    result = run_cli("inspect-shapes", "--preset", "llama-3.1-8b", "-d", "64")
    expect_error(result, "llama-3.1-8b rotates 128 dimensions in each attention head", 2)
    assert shapes_json("--preset", "llama-3.1-8b", "-d", "256")["config"]["rope_dim"] == 128


def test_the_rope_scaling_is_named_in_the_text() -> None:
    """The addition note named the scaling from a model summary that inspect-shapes never
    has: "with the model's None rope scaling applied"."""
    text = " ".join(run_cli("inspect-shapes", "--preset", "llama-3.1-8b").stdout.split())
    assert "with the model's llama3 rope scaling applied to the frequencies" in text
    assert "None" not in text


@pytest.mark.parametrize(
    ("name", "model_class", "active"),
    [
        ("gpt-oss-20b", "GptOssForCausalLM", "3.6B"),  # the model cards' active figures
        ("gpt-oss-120b", "GptOssForCausalLM", "5.1B"),
        ("deepseek-v3", "DeepseekV3ForCausalLM", "37B"),
    ],
)
def test_expert_presets_count_as_transformers(name: str, model_class: str, active: str) -> None:
    """The total is transformers' meta-device model; the active count leaves out the routed
    experts a token does not run; less the token table (a lookup), it is the model card's figure."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from embedcli.families.registry import count_parameters

    config = dict(preset_entry(name).config)
    with torch.device("meta"):
        model = getattr(transformers, model_class)(transformers.AutoConfig.for_model(**config))
    layer = model.model.layers[-1].mlp
    experts = layer.experts
    count = config.get("num_local_experts", config.get("n_routed_experts"))
    per_expert = sum(p.numel() for p in experts.parameters()) // count
    moe_layers = config["num_hidden_layers"] - config.get("first_k_dense_replace", 0)
    counted = count_parameters(config)
    assert counted.total == sum(p.numel() for p in model.parameters())
    skipped = (count - config["num_experts_per_tok"]) * per_expert * moe_layers
    assert counted.active == counted.total - skipped
    # the makers count what a token computes with: the token table's lookup is left out
    computed = (counted.active - config["vocab_size"] * config["hidden_size"]) / 1e9
    digits = len(active[:-1].partition(".")[2])
    assert f"{computed:.{digits}f}B" == active


@pytest.mark.parametrize("name", ["llama-4-maverick", "deepseek-v3"])
def test_a_mixture_with_dense_layers_is_not_said_to_have_experts_in_every_layer(name: str) -> None:
    """Maverick's experts are in every second layer, DeepSeek-V3's past its first 3 dense ones:
    the sentence about experts claims no more than each layer that has them."""
    shown = make_runner().invoke(app, ["inspect-shapes", "--preset", name], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.stdout.split())
    assert "experts of each layer that has them" in flat and "of every layer" not in flat


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("gpt-oss-20b", "over 64 dimensions: one attention head"),  # head_dim 64, not d/64 = 45
        ("gemma-2-9b", "over 256 dimensions: one attention head"),  # not 3584/16 = 224
        ("deepseek-v3", "over 64 of the 192 dimensions of each attention head"),  # MLA: 128 + 64
        ("llama-3.1-8b", "over 128 dimensions: one attention head"),  # d / heads, as given
    ],
)
def test_the_rope_note_uses_the_configs_head_width(name: str, words: str) -> None:
    """A head is the config's head_dim where it gives one (it said "64 of the 45 dimensions of
    each attention head" for gpt-oss), and d / heads only where it does not."""
    shown = make_runner().invoke(app, ["inspect-shapes", "--preset", name], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert words in " ".join(shown.stdout.split())


def test_a_published_note_is_shown_with_the_list() -> None:
    listed = make_runner().invoke(app, ["inspect-shapes", "--list-presets", "--json"])
    notes = {p["name"]: p["published_note"] for p in json.loads(listed.stdout)["presets"]}
    assert notes["deepseek-v3"].startswith("the hub's 685B holds the multi-token-prediction")
    assert notes["gpt2"] is None
    table = make_runner().invoke(app, ["inspect-shapes", "--list-presets"], env={"COLUMNS": "300"})
    assert "deepseek-v3: the hub page says 685B: the hub's 685B holds" in table.stdout


def test_positions_names_another_layer_types_scaling() -> None:
    """Gemma 3 27B draws its sliding layers' unscaled angles; its global layers' linear
    scaling is said beside them, not left out (the header's 'no scaling' is layer 0's)."""
    shown = make_runner().invoke(
        app, ["positions", "--preset", "gemma-3-27b", "--context-length", "4"],
        env={"COLUMNS": "300"},
    )  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert "rope scaling by layer type: full_attention linear (the others none)" in shown.stdout
