"""The stand-in hub's files do what they claim: GPT-2's tokenizer.json gives tiktoken's ids, the
tiny model folders hold the tables transformers reads (sharded, tied or not, safetensors or
pytorch_model.bin, Llama's and Gemma's configs), and place_in_hf_cache lays a cache out where
huggingface_hub finds it."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from support import hub as hf
from support.standinrepos import gemma as gemma  # fixtures: pytest finds them here
from support.standinrepos import gpt2_sharded as gpt2_sharded
from support.standinrepos import llama_sharded as llama_sharded
from support.standinrepos import loopback_only as loopback_only
from support.standinrepos import shard_keys
from support.standinrepos import work as work

from embedcli.tokenization.encodings import get_encoding

huggingface_hub = pytest.importorskip("huggingface_hub")
hub_errors = pytest.importorskip("huggingface_hub.errors")
transformers = pytest.importorskip("transformers")


TEXTS = [
    "Hello world",
    " héllo  wörld\n\n  tabs\t! 12345 67",
    "日本語のテキスト 🤖 emoji",
    "It's 2024, isn't it?  Yes—it's.",
    "def f(x):\n    return x ** 2\n",
]


@pytest.fixture(scope="module")
def gpt2_untied(work: Path) -> Path:
    return hf.make_gpt2_folder(work / "gpt2-untied", tied=False, vocab_size=1000, tokenizer=False)


def read_tensor(folder: Path, key: str) -> torch.Tensor:
    with safe_open(folder / hf.shard_of(folder, key), "pt") as f:
        return f.get_tensor(key)


# ------------------------------------------------------------------------------ tokenizer


def test_tokenizer_json_gives_tiktoken_ids(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    path = hf.gpt2_tokenizer_json(tmp_path / "a")
    assert path == tmp_path / "a" / "tokenizer.json"
    assert (tmp_path / "a" / "tokenizer_config.json").is_file()
    tokenizer = Tokenizer.from_file(str(path))
    encoding = get_encoding("gpt2")
    for text in TEXTS:
        assert tokenizer.encode(text).ids == encoding.encode_ordinary(text), text
    assert tokenizer.get_vocab_size(with_added_tokens=True) == 50257
    assert tokenizer.encode("a<|endoftext|>b").ids == [64, 50256, 65]

    built = hf.tokenizer._built_gpt2_tokenizer()
    again = hf.gpt2_tokenizer_json(tmp_path / "b")  # built once per process: a copy now
    assert hf.tokenizer._built_gpt2_tokenizer() == built
    assert again.read_bytes() == path.read_bytes() == (built / "tokenizer.json").read_bytes()


def test_transformers_reads_the_tokenizer_folder(gpt2_sharded: Path) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(gpt2_sharded, local_files_only=True)
    encoding = get_encoding("gpt2")
    for text in TEXTS:
        assert tokenizer.encode(text) == encoding.encode_ordinary(text)


# ------------------------------------------------------------------------------ model folders


def test_gpt2_sharded_folder(gpt2_sharded: Path) -> None:
    names = sorted(p.name for p in gpt2_sharded.iterdir())
    shards = [n for n in names if n.endswith(".safetensors")]
    assert len(shards) >= 3
    assert shards == [f"model-{i:05d}-of-{len(shards):05d}.safetensors" for i in range(1, 4)]
    assert {"config.json", "model.safetensors.index.json", "tokenizer.json"} <= set(names)
    assert "model.safetensors" not in names

    weight_map = json.loads((gpt2_sharded / "model.safetensors.index.json").read_text())[
        "weight_map"
    ]
    stored = shard_keys(gpt2_sharded)
    # The index and the files agree, key for key.
    assert weight_map == {key: shard for shard, keys in stored.items() for key in keys}
    assert set(weight_map.values()) == set(shards)
    assert weight_map["transformer.wte.weight"] == "model-00001-of-00003.safetensors"
    assert weight_map["transformer.wpe.weight"] == "model-00002-of-00003.safetensors"
    assert "lm_head.weight" not in weight_map  # tied: transformers does not store it

    tables = hf.expected_tables(gpt2_sharded)
    assert tables["token"].shape == (50257, 16)
    assert tables["position"] is not None and tables["position"].shape == (64, 16)
    assert tables["scale"] is None
    assert torch.equal(tables["token"], read_tensor(gpt2_sharded, "transformer.wte.weight"))
    assert torch.equal(tables["position"], read_tensor(gpt2_sharded, "transformer.wpe.weight"))
    assert torch.equal(tables["head"], tables["token"])


def test_gpt2_is_deterministic_and_untied_is_real(work: Path, gpt2_untied: Path) -> None:
    again = hf.make_gpt2_folder(
        work / "gpt2-untied-again", tied=False, vocab_size=1000, tokenizer=False
    )
    assert (again / "model.safetensors").read_bytes() == (
        gpt2_untied / "model.safetensors"
    ).read_bytes()
    config = json.loads((gpt2_untied / "config.json").read_text())
    assert config["tie_word_embeddings"] is False
    assert "lm_head.weight" in shard_keys(gpt2_untied)["model.safetensors"]
    tables = hf.expected_tables(gpt2_untied)
    assert tables["token"].shape == tables["head"].shape == (1000, 16)
    assert not torch.equal(tables["head"], tables["token"])
    assert torch.equal(tables["head"], read_tensor(gpt2_untied, "lm_head.weight"))
    assert not (gpt2_untied / "tokenizer.json").exists()


def test_gpt2_bare_keys_like_openai_community_gpt2(tmp_path: Path) -> None:
    folder = hf.make_gpt2_folder(tmp_path, bare_keys=True, vocab_size=1000, tokenizer=False)
    keys = shard_keys(folder)["model.safetensors"]
    assert "wte.weight" in keys and "wpe.weight" in keys
    assert not any(k.startswith("transformer.") or k.startswith("lm_head") for k in keys)
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["GPT2LMHeadModel"]
    tables = hf.expected_tables(folder)
    assert torch.equal(tables["token"], read_tensor(folder, "wte.weight"))
    assert torch.equal(tables["head"], tables["token"])


def test_pytorch_bin_is_the_same_gpt2(work: Path) -> None:
    binary = hf.make_pytorch_bin_folder(work / "gpt2-bin", vocab_size=1000, tokenizer=False)
    safe = hf.make_gpt2_folder(work / "gpt2-safe", vocab_size=1000, tokenizer=False)
    assert sorted(p.name for p in binary.iterdir()) == ["config.json", "pytorch_model.bin"]
    state = torch.load(binary / "pytorch_model.bin", weights_only=True)
    assert "lm_head.weight" not in state
    with safe_open(safe / "model.safetensors", "pt") as f:
        assert sorted(state) == sorted(f.keys())
        for key in state:
            assert torch.equal(state[key], f.get_tensor(key)), key
    tables = hf.expected_tables(binary)
    assert torch.equal(tables["token"], state["transformer.wte.weight"])
    assert torch.equal(tables["position"], state["transformer.wpe.weight"])
    assert hf.shard_of(binary, "transformer.wte.weight") == "pytorch_model.bin"


def test_llama_sharded_folder(llama_sharded: Path) -> None:
    config = json.loads((llama_sharded / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["vocab_size"] == 50257  # from the tokenizer it was given
    assert config["hidden_size"] == 16 and config["max_position_embeddings"] == 128
    assert config["rope_parameters"] == {"rope_theta": 500000.0, "rope_type": "default"}
    assert config["tie_word_embeddings"] is False

    stored = shard_keys(llama_sharded)
    assert len(stored) == 3
    assert hf.shard_of(llama_sharded, "model.embed_tokens.weight") == (
        "model-00001-of-00003.safetensors"
    )
    assert hf.shard_of(llama_sharded, "lm_head.weight") == "model-00002-of-00003.safetensors"
    tables = hf.expected_tables(llama_sharded)
    assert tables["position"] is None and tables["scale"] is None
    assert torch.equal(tables["token"], read_tensor(llama_sharded, "model.embed_tokens.weight"))
    assert torch.equal(tables["head"], read_tensor(llama_sharded, "lm_head.weight"))
    assert not torch.equal(tables["head"], tables["token"])


def test_llama_legacy_config_and_dtype(tmp_path: Path) -> None:
    folder = hf.make_llama_folder(tmp_path, legacy_config=True, tied=True, dtype="bfloat16")
    config = json.loads((folder / "config.json").read_text())
    assert config["rope_theta"] == 500000.0 and "rope_parameters" not in config
    assert config["torch_dtype"] == "bfloat16" and "dtype" not in config
    assert config["vocab_size"] == 512
    assert transformers.AutoConfig.from_pretrained(folder).rope_parameters["rope_theta"] == 500000.0
    assert shard_keys(folder)["model.safetensors"].count("lm_head.weight") == 0
    tables = hf.expected_tables(folder)
    assert tables["token"].dtype == torch.bfloat16
    assert torch.equal(tables["head"], tables["token"])


def test_gemma_folder(gemma: Path) -> None:
    config = json.loads((gemma / "config.json").read_text())
    assert config["architectures"] == ["GemmaForCausalLM"] and config["model_type"] == "gemma"
    assert config["hidden_size"] == 16 and config["head_dim"] == 8
    assert config["rope_parameters"]["rope_theta"] == 10000.0
    assert config["tie_word_embeddings"] is True and config["pad_token_id"] == 0
    keys = shard_keys(gemma)["model.safetensors"]
    assert "model.embed_tokens.weight" in keys and "lm_head.weight" not in keys
    tables = hf.expected_tables(gemma)
    assert tables["position"] is None
    assert tables["scale"] is not None and float(tables["scale"]) == math.sqrt(16)
    assert torch.equal(tables["token"], read_tensor(gemma, "model.embed_tokens.weight"))
    assert torch.equal(tables["head"], tables["token"])
    assert not tables["token"][0].any()  # the padding row


def test_gemma_sharded(tmp_path: Path) -> None:
    folder = hf.make_gemma_folder(tmp_path, vocab_size=2000, max_shard_size="40KB")
    assert len(shard_keys(folder)) >= 2
    assert hf.shard_of(folder, "model.embed_tokens.weight").startswith("model-00001-of-")


# ------------------------------------------------------------------------------ HF cache


def test_cache_layout_is_found_by_huggingface_hub(tmp_path: Path, gpt2_sharded: Path) -> None:
    cache = tmp_path / "cache"
    snapshot = hf.place_in_hf_cache(gpt2_sharded, cache, "org/gpt2-tiny")
    commit = hf.default_commit("org/gpt2-tiny")
    storage = cache / "models--org--gpt2-tiny"
    assert snapshot == storage / "snapshots" / commit
    assert (storage / "refs" / "main").read_text() == commit
    assert (cache / "CACHEDIR.TAG").read_text() == hf.CACHEDIR_TAG

    config_link = snapshot / "config.json"
    assert config_link.is_symlink() and not os.path.isabs(os.readlink(config_link))
    config_blob = hf.hub_file(gpt2_sharded, "config.json").git_sha1
    assert os.readlink(config_link) == f"../../blobs/{config_blob}"
    shard = "model-00001-of-00003.safetensors"
    assert (snapshot / shard).resolve().name == hf.hub_file(gpt2_sharded, shard).sha256

    found = huggingface_hub.snapshot_download(
        "org/gpt2-tiny", revision="main", cache_dir=cache, local_files_only=True
    )
    assert Path(found) == snapshot
    cached = huggingface_hub.try_to_load_from_cache("org/gpt2-tiny", "config.json", cache_dir=cache)
    assert cached == str(snapshot / "config.json")
    assert Path(cached).read_bytes() == (gpt2_sharded / "config.json").read_bytes()
    by_commit = huggingface_hub.hf_hub_download(
        "org/gpt2-tiny", shard, revision=commit, cache_dir=cache, local_files_only=True
    )
    assert Path(by_commit).read_bytes() == (gpt2_sharded / shard).read_bytes()
    model = transformers.AutoModelForCausalLM.from_pretrained(
        "org/gpt2-tiny", cache_dir=cache, local_files_only=True
    )
    assert torch.equal(model.get_input_embeddings().weight, hf.expected_tables(snapshot)["token"])


def test_partial_cache(tmp_path: Path, gpt2_sharded: Path) -> None:
    cache = tmp_path / "cache"
    hf.place_in_hf_cache(
        gpt2_sharded, cache, "org/partial", revision="v1", files=["config.json"], tree=True
    )
    find = huggingface_hub.try_to_load_from_cache
    assert find("org/partial", "config.json", cache_dir=cache, revision="v1") is not None
    assert find("org/partial", "tokenizer.json", cache_dir=cache, revision="v1") is None
    with pytest.raises(hub_errors.LocalEntryNotFoundError):
        huggingface_hub.hf_hub_download(
            "org/partial", "tokenizer.json", revision="v1", cache_dir=cache, local_files_only=True
        )
    # The tree listing says what the full snapshot holds: huggingface_hub sees it is incomplete.
    with pytest.raises(hub_errors.IncompleteSnapshotError):
        huggingface_hub.snapshot_download(
            "org/partial", revision="v1", cache_dir=cache, local_files_only=True
        )
