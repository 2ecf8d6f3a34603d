"""Real model folders end to end, offline: config.json read from every family, embed giving
exactly the vectors transformers feeds its first block (rope angles, BOS, input scaling, shards
never opened), weights and tying, and the model's own tokenizer wherever text is read.

Every number is checked against an independent oracle: transformers itself, loading the same
folder and running its forward pass (the tensor the first transformer block reads is captured
with a hook), its rotary embedding and its tokenizer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from support.helpers import expect_error, make_runner
from support.hub import expected_tables, shard_of
from support.modelfolders import TEXT, _copy, _model, embed_json, first_block_input, hf_ids
from support.modelfolders import folders as folders  # a fixture: pytest finds it here

from embedcli.cli import app

runner = make_runner()


# ---------------------------------------------------------------- config.json


def test_config_fields_from_every_family(folders: dict[str, Path]) -> None:
    from embedcli.models.config import folder_config

    gpt2 = folder_config(folders["gpt2"])
    assert (gpt2.positional, gpt2.d_model, gpt2.context_length) == ("learned", 16, 64)
    assert gpt2.tie_word_embeddings is True and gpt2.embed_scale == 1.0
    llama = folder_config(folders["llama"])
    model = _model(folders["llama"])
    assert llama.positional == "rope"
    assert llama.rope_theta == 500000.0
    assert llama.rope_dim == model.config.head_dim
    legacy = folder_config(folders["llama-legacy"])
    assert legacy.rope_theta == 1000000.0  # a top-level rope_theta, as published checkpoints
    gemma = folder_config(folders["gemma"])
    assert gemma.embed_scale == pytest.approx(float(expected_tables(folders["gemma"])["scale"]))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "llama", "hidden_size": -3}, "hidden_size must be a positive integer"),
        (
            {"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2, "rope_theta": "x"},
            "rope_theta must be a",
        ),
        ([1, 2], "is not a JSON object"),
        (
            {"model_type": "llama", "rope_scaling": {"rope_type": ["linear"], "factor": 2}},
            "rope_type",
        ),
        ({"model_type": "llama", "rope_scaling": {"type": {"x": 1}}}, "must be a name"),
        ({"hidden_size": 8}, "names no model_type, so embedcli cannot tell which family"),
        ({"model_type": "mystery"}, "model_type 'mystery', a family embedcli does not know"),
        # a hostile trial's (issue 39): a rope model was refused for a (2**63, 64) table it has
        # not, naming flags --weights refuses; the field and its bound are named
        (
            {"model_type": "llama", "vocab_size": 100, "hidden_size": 64,
             "num_attention_heads": 2, "max_position_embeddings": 2**63},
            r"config.json: max_position_embeddings is 9,223,372,036,854,775,808, past the 2\*\*40",
        ),
    ],
)
def test_bad_config_values_are_refused(config: object, message: str) -> None:
    from embedcli.errors import ConfigError
    from embedcli.models.config import parse_config

    with pytest.raises(ConfigError, match=message):
        parse_config(config, "config.json")


def test_multimodal_text_config_is_read() -> None:
    from embedcli.models.config import parse_config

    found = parse_config(
        {
            "model_type": "gemma3",
            "text_config": {"model_type": "gemma3_text", "hidden_size": 64, "rope_theta": 1e6},
        },
        "config.json",
    )
    # transformers 4's layout: rope_theta is the global layers' base; the first block is a
    # sliding one (Gemma 3's default pattern), whose base is rope_local_base_freq's default
    assert (found.d_model, found.positional, found.rope_theta) == (64, "rope", 1e4)
    assert found.rope_bases == {"full_attention": 1e6, "sliding_attention": 1e4}
    assert found.embed_scale == 8.0


# ---------------------------------------------------------------- embed: exactly transformers


def test_gpt2_folder_embeds_as_transformers_does(folders: dict[str, Path]) -> None:
    folder = folders["gpt2"]
    data = embed_json(TEXT, "--weights", str(folder))
    ids = data["input_ids"][0]
    assert ids == hf_ids(folder, TEXT)  # the folder's own tokenizer, not a flag
    expected = first_block_input(folder, ids)
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-6)
    assert data["config"]["positional"] == "learned"
    assert data["config"]["context_length"] == 64


def test_llama_folder_rope_theta_and_bos(folders: dict[str, Path]) -> None:
    folder = folders["llama"]
    data = embed_json(TEXT, "--weights", str(folder))
    ids = data["input_ids"][0]
    assert ids == hf_ids(folder, TEXT) and ids[0] == 50256  # added as transformers adds it
    assert data["tokens"][0][0]["added"] is True and "added" not in data["tokens"][0][1]
    expected = first_block_input(folder, ids)
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-6)
    assert data["config"]["rope_theta"] == 500000.0
    # rope angles equal transformers' rotary embedding (cos of the first half of a head)
    model = _model(folder)
    positions = torch.arange(len(ids)).unsqueeze(0)
    cos, sin = model.model.rotary_emb(torch.zeros(1, len(ids), 16), positions)
    half = model.config.head_dim // 2
    angles = torch.tensor(data["rope_angles"])
    assert angles.shape == (len(ids), half)
    assert torch.allclose(angles.cos(), cos[0, :, :half], atol=1e-6)
    assert torch.allclose(angles.sin(), sin[0, :, :half], atol=1e-6)


def test_no_add_special_leaves_the_bos_out(folders: dict[str, Path]) -> None:
    data = embed_json(TEXT, "--weights", str(folders["llama"]), "--no-add-special")
    assert data["input_ids"][0] == hf_ids(folders["llama"], TEXT)[1:]


def test_gemma_input_scaling_is_a_step(folders: dict[str, Path]) -> None:
    folder = folders["gemma"]
    data = embed_json("--ids", "5,6,7,300", "--weights", str(folder), "-e", "gpt2")
    expected = first_block_input(folder, [5, 6, 7, 300])
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-5)
    names = [step["name"] for step in data["steps"]]
    assert names.index("token_embeddings") < names.index("scaled_embeddings")
    assert data["config"]["embed_scale"] == pytest.approx(4.0)
    table = runner.invoke(app, ["embed", "--ids", "5,6", "--weights", str(folder), "-e", "gpt2"])
    assert "scaled_embeddings = token_embeddings × 4" in table.stdout
    # the vectors table shows the scaled rows too: token, then × 4 = input
    assert "× 4 = input" in table.stdout
    looked_up = torch.tensor(data["token_embeddings"][0])
    assert torch.allclose(torch.tensor(data["scaled_embeddings"][0]), looked_up * 4)


def test_pytorch_bin_folder(folders: dict[str, Path]) -> None:
    folder = folders["bin"]
    data = embed_json("--ids", "15496,11", "--weights", str(folder), "-e", "gpt2")
    expected = first_block_input(folder, [15496, 11])
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-6)


def test_only_the_shards_holding_the_tables_are_opened(folders: dict[str, Path]) -> None:
    from embedcli.models.sources import open_source
    from embedcli.models.tables import find_tables, read_tables

    folder = folders["llama"]
    source = open_source(folder)
    read_tables(source.checkpoint, find_tables(source.checkpoint))
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 2  # the model really is split
    # The token table's shard alone: the head's place is known from the index.
    assert set(source.checkpoint.opened) == {shard_of(folder, "model.embed_tokens.weight")}


def test_other_shards_are_never_read(folders: dict[str, Path], tmp_path: Path) -> None:
    # Every shard without a table is replaced by garbage: embed must not notice.
    folder = shutil.copytree(folders["llama"], tmp_path / "llama")
    keep = {shard_of(folder, "model.embed_tokens.weight"), shard_of(folder, "lm_head.weight")}
    for shard in folder.glob("model-*.safetensors"):
        if shard.name not in keep:
            shard.write_bytes(b"not a safetensors file")
    data = embed_json("--ids", "1,2,3", "--weights", str(folder))
    expected = first_block_input(folders["llama"], [1, 2, 3])
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-6)


# ---------------------------------------------------------------- weights and tying


@pytest.mark.parametrize(
    ("name", "tied"),
    [("gpt2", "tied (config.json)"), ("gpt2-untied-sharded", "not tied (config.json)")],
)
def test_weights_tying_and_parameters(folders: dict[str, Path], name: str, tied: str) -> None:
    folder = folders[name]
    result = runner.invoke(app, ["weights", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    model = _model(folder)
    assert data["head_tied"] == tied
    assert data["parameters"] == sum(p.numel() for p in model.parameters())  # tied: once
    assert data["model"]["model_type"] == "gpt2"
    names = {t["name"] for t in data["tensors"]}
    from safetensors import safe_open

    stored = set()
    for shard in folder.glob("*.safetensors"):
        with safe_open(str(shard), "pt") as handle:
            stored |= set(handle.keys())
    assert names == stored


def test_inspect_shapes_of_a_folder_reads_its_config(folders: dict[str, Path]) -> None:
    result = runner.invoke(app, ["inspect-shapes", "--weights", str(folders["llama"]), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config"]["positional"] == "rope"
    assert data["config"]["rope_theta"] == 500000.0
    assert data["config"]["context_length"] == 128


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["-d", "32"],
            "--d-model 32 conflicts with the model's config.json, which gives hidden_size 16",
        ),
        (["--context-length", "64"], "which gives max_position_embeddings 128"),
        (["--positional", "sinusoidal"], "--positional sinusoidal conflicts"),
    ],
)
def test_a_flag_against_the_config_is_an_error(
    folders: dict[str, Path], flags: list[str], message: str
) -> None:
    result = runner.invoke(
        app, ["embed", "--ids", "1,2", "--weights", str(folders["llama"]), *flags]
    )
    expect_error(result, message)


def test_tokenize_with_a_model_folder_as_encoding(folders: dict[str, Path]) -> None:
    result = runner.invoke(app, ["tokenize", TEXT, "-e", str(folders["llama"]), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [t["id"] for t in data["tokens"]] == hf_ids(folders["llama"], TEXT)
    table = runner.invoke(app, ["tokenize", "Hi", "-e", str(folders["llama"])])
    assert "(added)" in table.stdout and "--no-add-special" in table.stdout
    count = runner.invoke(app, ["tokenize", TEXT, "-e", str(folders["llama"]), "--count"])
    assert count.stdout.strip() == str(len(hf_ids(folders["llama"], TEXT)))


# ---------------------------------------------------------------- tokenizer files, as -e


def _llama3_file() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llama_models")
    return Path(next(iter(spec.submodule_search_locations))) / "llama3" / "tokenizer.model"


def test_tokenize_with_llama3s_tokenizer_file() -> None:
    # The ids of llama-models' own test (there with bos=True, eos=True; here the BOS is added
    # as transformers adds it, and no EOS).
    path = str(_llama3_file())
    result = runner.invoke(app, ["tokenize", "This is a test sentence.", "-e", path, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [t["id"] for t in data["tokens"]] == [128000, 2028, 374, 264, 1296, 11914, 13]
    assert data["tokens"][0]["added"] is True and data["tokens"][0]["piece"] == "<|begin_of_text|>"
    assert data["n_vocab"] == 128256
    plain = runner.invoke(app, ["tokenize", "This is", "-e", path, "--encode", "--no-add-special"])
    assert plain.stdout.split() == ["2028", "374"]
    special = runner.invoke(app, ["tokenize", "<|eot_id|>", "-e", path, "--encode"])
    expect_error(special, "the text contains the special token <|eot_id|>")
    allowed = runner.invoke(
        app, ["tokenize", "<|eot_id|>", "-e", path, "--encode", "--allow-special"]
    )
    assert allowed.stdout.split() == ["128000", "128009"]


def test_neighbors_and_windows_use_the_models_tokenizer(folders: dict[str, Path]) -> None:
    folder = folders["llama"]
    result = runner.invoke(
        app, ["neighbors", " world", "--weights", str(folder), "-k", "3", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["tokens"]
    ids = hf_ids(folder, " world")[1:]  # neighbors looks up the text's own tokens
    assert [row["id"] for row in rows] == ids
    table = expected_tables(folder)["token"].double()
    unit = table / table.norm(dim=1, keepdim=True)
    scores = unit @ unit[ids[0]]
    scores[ids[0]] = -2
    assert [n["id"] for n in rows[0]["neighbors"]] == scores.topk(3).indices.tolist()
    windows = runner.invoke(
        app, ["windows", TEXT, "-e", str(folder), "-t", "4", "-b", "1", "--json"]
    )
    assert windows.exit_code == 0, windows.output
    first = json.loads(windows.stdout)["batches"][0]["inputs"][0]
    assert first == hf_ids(folder, TEXT)[:4]  # the BOS opens the text, as transformers adds it


def test_stats_positions_and_verify_read_the_models_tables(folders: dict[str, Path]) -> None:
    gpt2 = folders["gpt2"]
    tables = expected_tables(gpt2)
    stats = runner.invoke(app, ["stats", "--weights", str(gpt2), "--json"])
    assert stats.exit_code == 0, stats.output
    found = {t["name"]: t for t in json.loads(stats.stdout)["tables"]}
    token = tables["token"].double()
    assert found["token_embeddings"]["mean"] == pytest.approx(float(token.mean()), abs=1e-12)
    assert found["token_embeddings"]["std"] == pytest.approx(float(token.std()), rel=1e-9)
    assert found["position_embeddings"]["shape"] == list(tables["position"].shape)
    positions = runner.invoke(app, ["positions", "--weights", str(gpt2), "--json"])
    assert positions.exit_code == 0, positions.output
    matrix = torch.tensor(json.loads(positions.stdout)["matrix"], dtype=torch.float64)
    assert torch.allclose(matrix, tables["position"].double())
    for folder in (gpt2, folders["llama"], folders["gemma"]):
        verified = embed_json("--ids", "3,4,5", "--weights", str(folder), "--verify", "-e", "gpt2")
        assert verified["verify"]["ok"] is True


def test_a_model_folder_without_its_tokenizer_needs_e(folders: dict[str, Path]) -> None:
    # GPT-2's ids would fit a larger table and silently pick the wrong rows.
    result = runner.invoke(app, ["embed", "Hello", "--weights", str(folders["gemma"])])
    expect_error(result, "holds a model (model_type gemma) but no tokenizer files")
    assert "pass -e" in result.stderr
    ok = embed_json("--ids", "5", "--weights", str(folders["gemma"]), "-e", "gpt2")
    assert ok["config"]["encoding"] == "gpt2"


def test_truncate_gives_a_prefix_of_the_text_after_an_added_bos(folders: dict[str, Path]) -> None:
    folder = str(folders["llama"])
    result = runner.invoke(
        app, ["tokenize", "Hello world foo bar", "-e", folder, "--truncate", "3"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "Hello world"  # BOS + 2 tokens: the BOS is not text


@pytest.mark.parametrize(
    "scaling",
    [
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 400,
        },
        {"rope_type": "linear", "factor": 4.0},
    ],
)
def test_rope_scaling_as_transformers_applies_it(
    folders: dict[str, Path], tmp_path: Path, scaling: dict
) -> None:
    folder = _copy(folders["llama"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["rope_parameters"] = {"rope_theta": 500000.0, **scaling}
    (folder / "config.json").write_text(json.dumps(config))
    ids = ",".join(map(str, range(120)))
    data = embed_json("--ids", ids, "--weights", str(folder))
    model = _model(folder)
    positions = torch.arange(120).unsqueeze(0)
    cos, _ = model.model.rotary_emb(torch.zeros(1, 120, 16), positions)
    angles = torch.tensor(data["rope_angles"])
    half = model.config.head_dim // 2
    assert torch.allclose(angles.cos(), cos[0, :, :half], atol=1e-5)
    plain = torch.tensor(
        embed_json("--ids", ids, "--weights", str(folders["llama"]))["rope_angles"]
    )
    assert not torch.allclose(angles, plain)  # the scaling changed them
    assert data["config"]["rope_scaling"]["rope_type"] == scaling["rope_type"]
