"""Real models end to end: model folders, the Hugging Face cache, and hub ids, offline first.

Every number is checked against an independent oracle: transformers itself, loading the same
folder and running its forward pass (the tensor the first transformer block reads is captured
with a hook), its rotary embedding, its tokenizer, and huggingface_hub's own cache rules.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.helpers import expect_error, make_runner
from support.hub import (
    expected_tables,
    gpt2_tokenizer_json,
    make_gemma_folder,
    make_gpt2_folder,
    make_llama_folder,
    make_pytorch_bin_folder,
    place_in_hf_cache,
    shard_of,
)

from embedcli.cli import app

runner = make_runner()
TEXT = "Hello, world! The rotary model reads this."


# ---------------------------------------------------------------- oracles


def _model(folder: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()


def first_block_input(folder: Path, ids: list[int]) -> torch.Tensor:
    """What transformers feeds its first transformer block for these ids: (T, d)."""
    model = _model(folder)
    layers = model.transformer.h if hasattr(model, "transformer") else model.model.layers
    captured: dict[str, torch.Tensor] = {}

    def hook(module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]
        captured["x"] = hidden.detach().clone()

    layers[0].register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model(torch.tensor([ids]))
    return captured["x"][0]


def hf_ids(folder: Path, text: str) -> list[int]:
    """The ids transformers' tokenizer gives for ``text`` (its default special tokens too)."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    return tokenizer(text)["input_ids"]


def embed_json(*args: str, env: dict[str, str] | None = None) -> dict:
    result = runner.invoke(app, ["embed", *args, "--device", "cpu", "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---------------------------------------------------------------- folders, built once


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    bos = root / "bos-tokenizer.json"
    _bos_tokenizer(gpt2_tokenizer_json(root / "gpt2-tok"), bos)
    return {
        "gpt2": make_gpt2_folder(root / "gpt2"),
        "gpt2-untied-sharded": make_gpt2_folder(
            root / "gpt2-untied", tied=False, max_shard_size="200KB", seed=1
        ),
        "llama": make_llama_folder(root / "llama", max_shard_size="20KB", tokenizer_json=bos),
        "llama-legacy": make_llama_folder(
            root / "llama-legacy", legacy_config=True, rope_theta=1000000.0, seed=2
        ),
        "gemma": make_gemma_folder(root / "gemma", hidden_size=16),
        "bin": make_pytorch_bin_folder(root / "bin"),
    }


def _bos_tokenizer(tokenizer_json: Path, out: Path) -> None:
    """GPT-2's tokenizer.json with a post-processor that adds <|endoftext|> before each text, as
    Llama's adds <|begin_of_text|>."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    tokenizer.post_processor = TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 50256)]
    )
    tokenizer.save(str(out))


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


# ---------------------------------------------------------------- the hub cache, offline


def test_hub_cache_location_matches_huggingface_hub(tmp_path: Path) -> None:
    cases = [
        {"HF_HOME": str(tmp_path / "home")},
        {"HF_HOME": str(tmp_path / "home"), "HF_HUB_CACHE": str(tmp_path / "hub")},
        {"XDG_CACHE_HOME": str(tmp_path / "xdg")},
        {"HUGGINGFACE_HUB_CACHE": str(tmp_path / "old")},
    ]
    script = (
        "import huggingface_hub.constants as c, embedcli.models.hub.cache as h\n"
        "print(c.HF_HUB_CACHE); print(h.hub_cache())"
    )
    for case in cases:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE", "XDG"))
        }
        env |= case
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True
        )
        theirs, ours = out.stdout.split()
        assert Path(theirs) == Path(ours), case


def test_hub_id_from_the_cache(folders: dict[str, Path], tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "hub"
    snapshot = place_in_hf_cache(folders["gpt2"], cache, "org/tiny-gpt2")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    from_folder = embed_json(TEXT, "--weights", str(folders["gpt2"]))
    from_hub = embed_json(TEXT, "--weights", "hf:org/tiny-gpt2")
    assert from_hub["input_embeddings"] == from_folder["input_embeddings"]
    assert from_hub["config"]["weights"] == "hf:org/tiny-gpt2"
    assert from_hub["config"]["model"]["commit"] == snapshot.name  # what was used, exactly
    by_commit = embed_json(TEXT, "--weights", f"hf:org/tiny-gpt2@{snapshot.name}")
    assert by_commit["input_ids"] == from_folder["input_ids"]
    ids = runner.invoke(app, ["tokenize", TEXT, "-e", "hf:org/tiny-gpt2", "--encode"])
    assert ids.stdout.split() == [str(i) for i in hf_ids(folders["gpt2"], TEXT)]


def test_hub_id_under_hf_home(folders: dict[str, Path], tmp_path: Path, monkeypatch) -> None:
    place_in_hf_cache(folders["llama"], tmp_path / "home" / "hub", "org/llama", revision="v1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    data = embed_json("--ids", "4,5", "--weights", "hf:org/llama@v1")
    expected = first_block_input(folders["llama"], [4, 5])
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-6)


@pytest.mark.parametrize(
    "argv",
    [
        ["embed", "hi", "--weights", "hf:org/absent"],
        ["weights", "hf:org/absent"],
        ["inspect-shapes", "--weights", "hf:org/absent"],
        ["tokenize", "hi", "-e", "hf:org/absent"],
    ],
)
def test_offline_miss_is_one_clear_error(argv: list[str], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    result = runner.invoke(app, argv)
    expect_error(result, "hf:org/absent")
    line = result.stderr.strip()
    for part in (str(tmp_path / "hub"), "--download", "hf download org/absent"):
        assert part in line


def test_offline_env_forbids_download() -> None:
    result = runner.invoke(app, ["weights", "hf:org/x", "--download"], env={"HF_HUB_OFFLINE": "1"})
    expect_error(result, "HF_HUB_OFFLINE=1 forbids it", code=2)


@pytest.mark.parametrize("spec", ["hf:", "hf:a/b/c", "hf:org/../x", "hf:org/x@"])
def test_bad_hub_ids_are_usage_errors(spec: str) -> None:
    expect_error(runner.invoke(app, ["weights", spec]), "hf:", code=2)


# ---------------------------------------------------------------- remote, by the byte


@pytest.fixture
def hub(folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A local stand-in for the hub serving the tiny models; HF_ENDPOINT points at it."""
    from support.hub import FakeHub, point_hub_at

    repos = {
        "org/llama": folders["llama"],
        "org/gpt2": folders["gpt2"],
        "org/gated": folders["gpt2"],
    }
    with FakeHub(repos, gated={"org/gated": "hf_secret_token"}) as fake:
        point_hub_at(monkeypatch, fake.endpoint, cache_dir=tmp_path / "hub")
        yield fake


def _shard_bytes(fake, folder: Path) -> dict[str, int]:
    return {p.name: fake.bytes_for(p.name) for p in folder.glob("*.safetensors")}


@pytest.mark.parametrize(
    "argv",
    [["weights", "hf:org/llama", "--json"], ["inspect-shapes", "--weights", "hf:org/llama"]],
)
def test_header_only_commands_fetch_only_headers(
    hub, folders: dict[str, Path], argv: list[str]
) -> None:
    from embedcli.models.hub.shards import HEADER_FIRST_READ

    result = runner.invoke(app, [*argv, "--download"])
    assert result.exit_code == 0, result.output
    for name, sent in _shard_bytes(hub, folders["llama"]).items():
        size = (folders["llama"] / name).stat().st_size
        assert 0 < sent <= HEADER_FIRST_READ < size, name  # a header, never the tensors
    shards = [r for r in hub.requests if r.path.endswith(".safetensors") and r.method == "GET"]
    assert shards and all(r.range for r in shards)
    if argv[0] == "weights":
        data = json.loads(result.stdout)
        local = json.loads(runner.invoke(app, ["weights", str(folders["llama"]), "--json"]).stdout)
        assert data["tensors"] == local["tensors"]
        assert data["parameters"] == local["parameters"]
        assert data["head_tied"] == "not tied (config.json)"


def test_embed_download_fetches_only_its_rows_and_caches_them(
    hub, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from embedcli.models.hub.rows import ROW_BLOCK_BYTES

    folder = folders["llama"]
    data = embed_json("--ids", "1,2,3", "--weights", "hf:org/llama", "--download")
    expected = first_block_input(folder, [1, 2, 3])
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-6)
    table = expected_tables(folder)["token"].numel() * 4  # the (vocab, d) float32 table
    sent = _shard_bytes(hub, folder)
    holder = shard_of(folder, "model.embed_tokens.weight")
    assert sent[holder] <= 2 * (1 << 13) + ROW_BLOCK_BYTES < table  # a header and one row block
    assert sum(sent.values()) - sent[holder] <= len(sent) * (1 << 13)  # others: headers at most
    # Offline now: the same command works from the caches, and the server is not asked.
    monkeypatch.delenv("HF_HUB_OFFLINE")  # the hub fixture allowed the network
    hub.reset_counts()
    again = embed_json("--ids", "1,2,3", "--weights", "hf:org/llama")
    assert again["input_embeddings"] == data["input_embeddings"]
    assert hub.served_bytes == 0


def test_an_interrupted_fetch_resumes_and_never_publishes_half(
    hub, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from embedcli.models.hub import remote as remotemodule
    from embedcli.models.hub import shards
    from embedcli.models.hub import spec as hubmodule

    monkeypatch.setattr(shards, "FETCH_BLOCK", 4096)  # several range reads per table
    real = remotemodule.Remote.read_range
    calls = {"n": 0}

    def flaky(self, filename: str, start: int, end: int, **how: bool) -> bytes:
        if end - start == 4096 or start > 1 << 13:
            calls["n"] += 1
            if calls["n"] == 3:
                raise hubmodule.HubError("connection reset (simulated)")
        return real(self, filename, start, end, **how)

    monkeypatch.setattr(remotemodule.Remote, "read_range", flaky)
    whole = ["stats", "--weights", "hf:org/llama", "--download", "--json"]  # the whole table
    failed = runner.invoke(app, whole)
    expect_error(failed, "connection reset (simulated)")
    cached = list((Path(os.environ["EMBEDCLI_CACHE_DIR"]) / "tensors").rglob("*"))
    assert [p for p in cached if p.suffix == ".part"]  # what arrived is kept ...
    assert not [p for p in cached if p.suffix == ".bin"]  # ... and never published as complete
    partial = next(p for p in cached if p.suffix == ".part").stat().st_size
    hub.reset_counts()
    resumed = runner.invoke(app, whole)
    assert resumed.exit_code == 0, resumed.output
    holder = shard_of(folders["llama"], "model.embed_tokens.weight")
    table = expected_tables(folders["llama"])["token"].numel() * 4
    assert hub.bytes_for(holder) == table - partial  # only the rest was fetched
    data = embed_json("--ids", "1", "--weights", "hf:org/llama", "--download")  # from it
    expected = first_block_input(folders["llama"], [1])
    assert torch.allclose(torch.tensor(data["input_embeddings"][0]), expected, atol=1e-6)


def test_tokenizer_alone_from_the_hub(hub, folders: dict[str, Path]) -> None:
    result = runner.invoke(app, ["tokenize", TEXT, "-e", "hf:org/gpt2", "--download", "--encode"])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == [str(i) for i in hf_ids(folders["gpt2"], TEXT)]
    assert hub.bytes_for("model.safetensors") == 0  # the tokenizer, not the weights


def test_gated_repo_needs_hf_token_and_never_prints_it(
    hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = runner.invoke(app, ["weights", "hf:org/gated", "--download"])
    expect_error(refused, "gated")
    assert "HF_TOKEN" in refused.stderr
    monkeypatch.setenv("HF_TOKEN", "hf_wrong_token")
    wrong = runner.invoke(app, ["weights", "hf:org/gated", "--download"])
    assert wrong.exit_code == 1 and "hf_wrong_token" not in wrong.output
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token")
    allowed = runner.invoke(app, ["weights", "hf:org/gated", "--download", "--json"])
    assert allowed.exit_code == 0, allowed.output
    assert "hf_secret_token" not in allowed.output


def test_unknown_repo_over_the_network(hub) -> None:
    expect_error(runner.invoke(app, ["weights", "hf:org/nothing", "--download"]), "not found")


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


def test_hf_hub_offline_0_allows_the_network(hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    result = runner.invoke(app, ["weights", "hf:org/gpt2", "--json"])
    assert result.exit_code == 0, result.output
    assert hub.served_bytes > 0


def test_an_unreachable_hub_is_one_error_at_once(tmp_path: Path, monkeypatch) -> None:
    from support.hub import point_hub_at

    point_hub_at(monkeypatch, "http://127.0.0.1:9", cache_dir=tmp_path / "hub")  # nothing there
    result = runner.invoke(app, ["weights", "hf:org/x", "--download"])
    expect_error(result, "cannot reach http://127.0.0.1:9 for hf:org/x")
    assert "Retrying" not in result.stderr


def test_a_model_folder_without_its_tokenizer_needs_e(folders: dict[str, Path]) -> None:
    # GPT-2's ids would fit a larger table and silently pick the wrong rows.
    result = runner.invoke(app, ["embed", "Hello", "--weights", str(folders["gemma"])])
    expect_error(result, "holds a gemma but no tokenizer files")
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


# ---------------------------------------------------------------- hostile sources


def _copy(folder: Path, tmp_path: Path, name: str = "model") -> Path:
    return shutil.copytree(folder, tmp_path / name)


@pytest.mark.parametrize(
    ("target", "content"),
    [
        ("config.json", "[" * 100000 + "]" * 100000),  # nesting past Python's recursion limit
        ("config.json", '{"n_embd": ' + "9" * 5000 + "}"),  # an integer past the digit limit
        (
            "config.json",
            '{"model_type": "llama", "hidden_size": 16, "rope_theta": 1' + "0" * 400 + "}",
        ),
        ("config.json", '{"model_type": "llama", "hidden_size": 16, "rope_theta": 0}'),
        ("config.json", '{"model_type": "gpt2", "n_embd": 3}'),  # disagrees with the tables
        ("tokenizer.json", "[" * 100000 + "]" * 100000),
    ],
)
def test_hostile_model_files_are_one_error_line(
    folders: dict[str, Path], tmp_path: Path, target: str, content: str
) -> None:
    folder = _copy(folders["gpt2"], tmp_path)
    (folder / target).write_text(content)
    result = runner.invoke(app, ["embed", "Hello", "--weights", str(folder)])
    expect_error(result, "")


def test_hostile_safetensors_headers(tmp_path: Path) -> None:
    import struct

    deep = '{"w": ' + "[" * 100000 + "]" * 100000 + "}"
    for body in (deep, '{"w": {"dtype": "F32", "shape": [' + "9" * 5000 + "]}}"):
        raw = body.encode()
        path = tmp_path / "x.safetensors"
        path.write_bytes(struct.pack("<Q", len(raw)) + raw)
        expect_error(runner.invoke(app, ["weights", str(path)]), "as safetensors")


def test_a_huge_config_is_refused_without_reading_it(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _copy(folders["gpt2"], tmp_path)
    with open(folder / "config.json", "r+b") as handle:
        handle.truncate(1 << 30)  # sparse: a gigabyte on paper
    expect_error(runner.invoke(app, ["weights", str(folder)]), "not a model config")


def test_hostile_index_names_and_refs(
    folders: dict[str, Path], tmp_path: Path, monkeypatch
) -> None:
    folder = _copy(folders["llama"], tmp_path)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.embed_tokens.weight"] = "a\u0000b.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    expect_error(runner.invoke(app, ["weights", str(folder)]), "no usable weight_map")
    cache = tmp_path / "hub"
    place_in_hf_cache(folders["gpt2"], cache, "org/refs")
    ref = cache / "models--org--refs" / "refs" / "main"
    ref.unlink()
    ref.symlink_to("/dev/zero")  # read whole, it would never end
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    expect_error(runner.invoke(app, ["weights", "hf:org/refs"]), "not in the Hugging Face cache")


@pytest.mark.parametrize("spec", ["hf:org/x-", "hf:org/x.", "hf:org/x--y", "hf:org/" + "x" * 97])
def test_hub_ids_the_hub_would_refuse_are_usage_errors(spec: str) -> None:
    expect_error(runner.invoke(app, ["weights", spec, "--download"]), "is not a hub model", code=2)


def test_a_token_with_a_line_ending_is_refused_and_never_printed(
    hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token\r\n")
    result = runner.invoke(app, ["weights", "hf:org/gated", "--download"])
    expect_error(result, "HF_TOKEN holds whitespace or control characters")
    assert "hf_secret_token" not in result.output


def test_without_a_config_the_cache_is_keyed_by_the_commit(
    hub, folders: dict[str, Path], tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(folders["gpt2"] / "model.safetensors", bare)
    hub.repos["org/bare"] = bare
    hub.commits["org/bare"] = "1" * 40
    result = runner.invoke(app, ["weights", "hf:org/bare", "--download", "--json"])
    assert result.exit_code == 0, result.output
    stored = Path(os.environ["EMBEDCLI_CACHE_DIR"]) / "tensors" / "org--bare"
    assert [p.name for p in stored.iterdir()] == ["1" * 40]  # never "main": branches move


def test_a_damaged_cached_header(hub, folders: dict[str, Path], monkeypatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE")  # the hub fixture allows the network: not here
    assert runner.invoke(app, ["weights", "hf:org/llama", "--download"]).exit_code == 0
    cached = Path(os.environ["EMBEDCLI_CACHE_DIR"]) / "tensors"
    header = next(cached.rglob("header.json"))
    header.write_text("garbage")
    offline = runner.invoke(app, ["weights", "hf:org/llama"])
    expect_error(offline, f"delete {header}")
    again = runner.invoke(app, ["weights", "hf:org/llama", "--download"])
    assert again.exit_code == 0, again.output  # fetched anew, and the cache healed
    assert json.loads(header.read_text())


def test_a_server_that_ignores_ranges(
    folders: dict[str, Path], tmp_path: Path, monkeypatch
) -> None:
    import http.server
    import threading

    from support.hub import point_hub_at

    from embedcli.models.hub.remote import Remote
    from embedcli.models.hub.spec import HubSpec

    data = (folders["gpt2"] / "model.safetensors").read_bytes()

    class Whole(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:  # a 200 and the whole file, whatever the Range says
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Whole)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        point_hub_at(monkeypatch, f"http://127.0.0.1:{server.server_address[1]}")
        remote = Remote(HubSpec("org/whole"))
        assert remote.read_range("model.safetensors", 1000, 5000) == data[1000:5000]
        assert remote.read_range("model.safetensors", 0, 8) == data[:8]
    finally:
        server.shutdown()


def test_a_fetch_after_the_lock_uses_what_another_process_finished(tmp_path: Path) -> None:
    from embedcli.models.hub.shards import TensorStore

    store = TensorStore("org/x", "2" * 40, "model.safetensors")
    path = store._path("w")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\0" * 16)  # published by another embedcli while this one waited

    def never(start: int, end: int) -> bytes:
        raise AssertionError("the finished tensor was fetched again")

    assert store.fetch("w", 16, never) == path


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


@pytest.mark.parametrize("kind", ["fifo", "huge", "folder", "not-json", "a-list"])
def test_an_unreadable_tokenizer_config_is_refused_not_skipped(tmp_path: Path, kind: str) -> None:
    """tokenizer_config.json names the pad and end tokens: one that cannot be read was skipped
    (a FIFO) while config.json's twin was refused; both are refused now, the same way."""
    from support.hub import gpt2_tokenizer_json

    gpt2_tokenizer_json(tmp_path)
    config = tmp_path / "tokenizer_config.json"
    config.unlink()
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "huge":
        with config.open("wb") as handle:
            handle.truncate(200 << 20)  # sparse: 200 MB that take no disk
    elif kind == "folder":
        config.mkdir()
    else:
        config.write_text("{nope" if kind == "not-json" else "[1, 2]")
    result = runner.invoke(app, ["tokenize", "hi", "-e", str(tmp_path)])
    expect_error(result, str(config))
    assert ("not valid JSON" if kind == "not-json" else "") in result.stderr
