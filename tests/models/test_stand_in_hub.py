"""The hub fixtures do what they claim: a real tokenizer, checkpoints, cache and protocol."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from support import hub as hf

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
SHARD = "20KB"


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # The conftest refuses every connection; these tests talk to a FakeHub on 127.0.0.1.
    hf.allow_loopback(monkeypatch)
    hf.offline_env(monkeypatch)
    # Whatever the developer's shell exports, these tests talk to their FakeHub.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hubfixtures")


@pytest.fixture(scope="module")
def gpt2_sharded(work: Path) -> Path:
    return hf.make_gpt2_folder(work / "gpt2-sharded", max_shard_size=SHARD)


@pytest.fixture(scope="module")
def gpt2_untied(work: Path) -> Path:
    return hf.make_gpt2_folder(work / "gpt2-untied", tied=False, vocab_size=1000, tokenizer=False)


@pytest.fixture(scope="module")
def llama_sharded(work: Path, gpt2_sharded: Path) -> Path:
    return hf.make_llama_folder(
        work / "llama-sharded", max_shard_size=SHARD, tokenizer_json=gpt2_sharded / "tokenizer.json"
    )


@pytest.fixture(scope="module")
def gemma(work: Path) -> Path:
    return hf.make_gemma_folder(work / "gemma", vocab_size=1000, hidden_size=16)


def shard_keys(folder: Path) -> dict[str, list[str]]:
    """Each safetensors file in folder with the keys it holds (read from the files themselves)."""
    found = {}
    for path in sorted(folder.glob("*.safetensors")):
        with safe_open(path, "pt") as f:
            found[path.name] = list(f.keys())
    return found


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


# ------------------------------------------------------------------------------ FakeHub


@pytest.fixture(scope="module")
def nested(work: Path) -> Path:
    folder = work / "nested"
    (folder / "sub" / "deeper").mkdir(parents=True)
    (folder / "README.md").write_text("# nested\n")
    (folder / "sub" / "notes.txt").write_text("notes\n")
    (folder / "sub" / "deeper" / "weights.bin").write_bytes(bytes(range(256)) * 4)
    (folder / ".cache").mkdir()  # a local_dir's metadata: not part of the repo
    (folder / ".cache" / "skip.txt").write_text("skip")
    return folder


@pytest.fixture(scope="module")
def hub(gpt2_sharded: Path, llama_sharded: Path, gemma: Path, nested: Path):
    repos = {
        "org/gpt2-tiny": gpt2_sharded,
        "org/llama-tiny": llama_sharded,
        "gated/gemma": gemma,
        "org/nested": nested,
    }
    with hf.FakeHub(repos, gated={"gated/gemma": "hf_secret"}) as fake:
        yield fake


@pytest.fixture
def fresh(hub: hf.FakeHub) -> hf.FakeHub:
    hub.reset_counts()
    return hub


def test_hf_hub_download_through_fake_hub(
    tmp_path: Path, fresh: hf.FakeHub, gpt2_sharded: Path
) -> None:
    cache = tmp_path / "cache"
    shard = "model-00001-of-00003.safetensors"
    path = huggingface_hub.hf_hub_download(
        "org/gpt2-tiny", shard, cache_dir=cache, endpoint=fresh.endpoint
    )
    data = (gpt2_sharded / shard).read_bytes()
    assert Path(path).read_bytes() == data
    assert fresh.bytes_for(shard) == len(data) == fresh.served_bytes
    assert [(r.method, r.range) for r in fresh.requests] == [("HEAD", None), ("GET", None)]
    assert fresh.requests[0].path == f"/org/gpt2-tiny/resolve/main/{shard}"
    # The blob is named by its sha256 etag and refs/main holds the commit: place_in_hf_cache's way.
    assert Path(path).resolve().name == hf.hub_file(gpt2_sharded, shard).sha256
    storage = cache / "models--org--gpt2-tiny"
    assert (storage / "refs" / "main").read_text() == fresh.commits["org/gpt2-tiny"]

    # Cached: a second call only asks for the metadata.
    huggingface_hub.hf_hub_download(
        "org/gpt2-tiny", shard, cache_dir=cache, endpoint=fresh.endpoint
    )
    assert fresh.bytes_for(shard) == len(data)
    assert fresh.requests[-1].method == "HEAD"


@pytest.mark.parametrize("repo_id", ["org/gpt2-tiny", "org/nested"])
def test_snapshot_download_writes_what_place_in_hf_cache_writes(
    tmp_path: Path, fresh: hf.FakeHub, repo_id: str
) -> None:
    folder = fresh.repos[repo_id]
    downloaded = Path(
        huggingface_hub.snapshot_download(
            repo_id, cache_dir=tmp_path / "real", endpoint=fresh.endpoint
        )
    )
    placed = hf.place_in_hf_cache(folder, tmp_path / "placed", repo_id, tree=True)
    assert downloaded.relative_to(tmp_path / "real") == placed.relative_to(tmp_path / "placed")
    files = hf.repo_files(folder)
    assert (
        sorted(
            p.relative_to(downloaded).as_posix() for p in downloaded.rglob("*") if not p.is_dir()
        )
        == files
    )
    for name in files:
        assert os.readlink(downloaded / name) == os.readlink(placed / name), name
        assert (downloaded / name).read_bytes() == (folder / name).read_bytes()
    real = tmp_path / "real" / hf.repo_cache_folder(Path(), repo_id)
    fake = tmp_path / "placed" / hf.repo_cache_folder(Path(), repo_id)
    assert sorted(os.listdir(real / "blobs")) == sorted(os.listdir(fake / "blobs"))
    assert (real / "refs" / "main").read_text() == (fake / "refs" / "main").read_text()
    tag = "CACHEDIR.TAG"
    assert (tmp_path / "real" / tag).read_text() == (tmp_path / "placed" / tag).read_text()
    commit = fresh.commits[repo_id]
    tree = f"trees/{commit}.json"
    assert json.loads((real / tree).read_text()) == json.loads((fake / tree).read_text())
    assert (real / tree).read_text() == (fake / tree).read_text()
    assert fresh.served_bytes > sum((folder / name).stat().st_size for name in files)
    api = [r.path for r in fresh.requests if r.path.startswith("/api/")]
    assert api == [f"/api/models/{repo_id}/revision/main", f"/api/models/{repo_id}/tree/{commit}"]


def test_tree_and_info_endpoints(fresh: hf.FakeHub, nested: Path) -> None:
    api = huggingface_hub.HfApi(endpoint=fresh.endpoint)
    top = {(type(e).__name__, e.path) for e in api.list_repo_tree("org/nested")}
    assert top == {("RepoFile", "README.md"), ("RepoFolder", "sub")}
    inside = {e.path for e in api.list_repo_tree("org/nested", "sub", recursive=True)}
    assert inside == {"sub/notes.txt", "sub/deeper", "sub/deeper/weights.bin"}
    (weights,) = [
        e for e in api.list_repo_tree("org/nested", recursive=True) if getattr(e, "lfs", None)
    ]
    info = hf.hub_file(nested, "sub/deeper/weights.bin")
    assert (weights.path, weights.size, weights.lfs.sha256) == (info.path, 1024, info.sha256)
    assert weights.blob_id == hf.git_blob_sha1(info.pointer)
    model = api.model_info("org/nested", files_metadata=True)
    assert model.sha == fresh.commits["org/nested"] == hf.default_commit("org/nested")
    assert [s.rfilename for s in model.siblings] == hf.repo_files(nested)
    assert {s.rfilename: s.size for s in model.siblings}["README.md"] == 9


def test_range_reads(fresh: hf.FakeHub, gpt2_sharded: Path) -> None:
    from huggingface_hub.utils import get_session

    shard = "model-00002-of-00003.safetensors"
    data = (gpt2_sharded / shard).read_bytes()
    url = fresh.url("org/gpt2-tiny", shard)
    session = get_session()
    cases = {
        "bytes=8-15": (8, 15),
        "bytes=100-": (100, len(data) - 1),
        "bytes=-10": (len(data) - 10, len(data) - 1),
        "bytes=0-99999999": (0, len(data) - 1),
    }
    for header, (start, end) in cases.items():
        response = session.get(url, headers={"Range": header})
        assert response.status_code == 206, header
        assert response.headers["Content-Range"] == f"bytes {start}-{end}/{len(data)}"
        assert response.content == data[start : end + 1]
    assert session.get(url, headers={"Range": f"bytes={len(data)}-"}).status_code == 416
    whole = session.get(url)
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["Accept-Ranges"] == "bytes"
    expected = 8 + (len(data) - 100) + 10 + len(data) + len(data)
    assert fresh.bytes_for(shard) == expected
    assert [r.range for r in fresh.requests] == [*cases, f"bytes={len(data)}-", None]


def test_intercept_answers_drops_and_passes(fresh: hf.FakeHub, gpt2_sharded: Path) -> None:
    from huggingface_hub.utils import get_session

    shard = "model-00002-of-00003.safetensors"
    seen: list[hf.Asked] = []

    def intercept(asked: hf.Asked) -> object:
        seen.append(asked)
        if asked.headers.get("Range") == "bytes=0-3":
            return hf.Answer(503, {"Retry-After": "2"}, b"busy")
        if asked.headers.get("Range") == "bytes=4-7":
            return hf.DROP
        return None

    fresh.intercept = intercept
    session = get_session()
    url = fresh.url("org/gpt2-tiny", shard)
    busy = session.get(url, headers={"Range": "bytes=0-3"})
    assert (busy.status_code, busy.headers["Retry-After"], busy.content) == (503, "2", b"busy")
    with pytest.raises(Exception, match="disconnected"):
        session.get(url, headers={"Range": "bytes=4-7"})
    data = (gpt2_sharded / shard).read_bytes()
    assert session.get(url, headers={"Range": "bytes=8-15"}).content == data[8:16]
    assert [(a.repo_id, a.filename, a.revision) for a in seen] == [
        ("org/gpt2-tiny", shard, "main")
    ] * 3
    assert [r.nbytes for r in fresh.requests] == [4, 0, 8]  # booked like FakeHub's own answers
    assert fresh.bytes_for(shard) == 12
    fresh.intercept = None


def test_a_big_sparse_file_is_served_without_hashing_it(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    path = folder / "model.safetensors"
    with path.open("wb") as handle:
        handle.truncate(hf.HASHED_SIZE_LIMIT + 1)  # a hole: nothing to read
        handle.seek(hf.HASHED_SIZE_LIMIT - 3)
        handle.write(b"abcd")
    info = hf.hub_file(folder, "model.safetensors")
    assert info.lfs and info.size == hf.HASHED_SIZE_LIMIT + 1 and len(info.sha256) == 64
    with hf.FakeHub({"org/big": folder}) as hub:
        from huggingface_hub.utils import get_session

        end = hf.HASHED_SIZE_LIMIT
        response = get_session().get(
            hub.url("org/big", "model.safetensors"), headers={"Range": f"bytes={end - 3}-{end}"}
        )
        assert response.status_code == 206 and response.content == b"abcd"


def test_parse_safetensors_file_metadata(fresh: hf.FakeHub, llama_sharded: Path) -> None:
    api = huggingface_hub.HfApi(endpoint=fresh.endpoint)
    for shard, keys in shard_keys(llama_sharded).items():
        fresh.reset_counts()
        metadata = api.parse_safetensors_file_metadata("org/llama-tiny", shard)
        with safe_open(llama_sharded / shard, "pt") as f:
            shapes = {key: list(f.get_slice(key).get_shape()) for key in keys}
        assert {k: v.shape for k, v in metadata.tensors.items()} == shapes
        assert all(r.range == "bytes=0-100000" for r in fresh.requests)
        size = (llama_sharded / shard).stat().st_size
        assert fresh.bytes_for(shard) == min(size, 100001)


def test_errors_are_the_hubs(tmp_path: Path, fresh: hf.FakeHub) -> None:
    def download(repo_id: str, filename: str, **kwargs: object) -> str:
        return huggingface_hub.hf_hub_download(
            repo_id, filename, cache_dir=tmp_path, endpoint=fresh.endpoint, **kwargs
        )

    with pytest.raises(hub_errors.EntryNotFoundError):
        download("org/gpt2-tiny", "no-such-file.json")
    # The hub's 404 carries the commit, and huggingface_hub remembers the file is missing.
    commit = fresh.commits["org/gpt2-tiny"]
    no_exist = tmp_path / "models--org--gpt2-tiny" / ".no_exist" / commit
    assert (no_exist / "no-such-file.json").exists()
    with pytest.raises(hub_errors.RepositoryNotFoundError):
        download("org/unknown", "config.json")
    with pytest.raises(hub_errors.RevisionNotFoundError):
        download("org/gpt2-tiny", "config.json", revision="v9")
    with pytest.raises(hub_errors.RepositoryNotFoundError):
        huggingface_hub.HfApi(endpoint=fresh.endpoint).model_info("org/unknown")
    assert fresh.bytes_for("config.json") == 0


def test_gated_repo_needs_the_token(tmp_path: Path, fresh: hf.FakeHub, gemma: Path) -> None:
    def download(token: str | bool) -> str:
        return huggingface_hub.hf_hub_download(
            "gated/gemma", "config.json", cache_dir=tmp_path, endpoint=fresh.endpoint, token=token
        )

    with pytest.raises(hub_errors.GatedRepoError) as missing:
        download(False)
    assert missing.value.response.status_code == 401
    with pytest.raises(hub_errors.HfHubHTTPError) as wrong:
        download("hf_wrong")
    assert wrong.value.response.status_code == 401
    assert not isinstance(wrong.value, hub_errors.GatedRepoError)
    assert fresh.bytes_for("config.json") == 0
    assert Path(download("hf_secret")).read_bytes() == (gemma / "config.json").read_bytes()
    assert fresh.bytes_for("config.json") == (gemma / "config.json").stat().st_size


def test_point_hub_at_serves_transformers_and_honours_hf_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: hf.FakeHub, llama_sharded: Path
) -> None:
    cache = tmp_path / "cache"
    hf.point_hub_at(monkeypatch, fresh.endpoint, cache_dir=cache)
    # No endpoint= and no cache_dir=: both come from the patched huggingface_hub constants.
    model = transformers.AutoModelForCausalLM.from_pretrained("org/llama-tiny")
    expected = hf.expected_tables(llama_sharded)
    assert torch.equal(model.get_input_embeddings().weight, expected["token"])
    assert torch.equal(model.get_output_embeddings().weight, expected["head"])
    for shard in shard_keys(llama_sharded):
        assert fresh.bytes_for(shard) == (llama_sharded / shard).stat().st_size
    assert (cache / "models--org--llama-tiny" / "snapshots").is_dir()

    with pytest.raises(hub_errors.GatedRepoError):
        huggingface_hub.hf_hub_download("gated/gemma", "config.json")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    assert Path(huggingface_hub.hf_hub_download("gated/gemma", "config.json")).is_file()


def test_fake_hub_sends_no_xet_headers(fresh: hf.FakeHub) -> None:
    from huggingface_hub.utils import get_session

    shard = "model-00001-of-00003.safetensors"
    gpt2 = fresh.repos["org/gpt2-tiny"]
    response = get_session().head(fresh.url("org/gpt2-tiny", shard))
    assert response.status_code == 200
    assert not [name for name in response.headers if "xet" in name.lower()]
    assert "Link" not in response.headers
    sha256 = hf.hub_file(gpt2, shard).sha256
    assert response.headers["ETag"] == response.headers["X-Linked-Etag"] == f'"{sha256}"'
    assert response.headers["X-Linked-Size"] == response.headers["Content-Length"]
    assert response.headers["X-Repo-Commit"] == fresh.commits["org/gpt2-tiny"]
    assert fresh.served_bytes == 0
    plain = get_session().head(fresh.url("org/gpt2-tiny", "config.json"))
    assert plain.headers["ETag"] == f'"{hf.git_blob_sha1((gpt2 / "config.json").read_bytes())}"'
    assert "X-Linked-Etag" not in plain.headers


def test_hf_endpoint_in_a_subprocess(tmp_path: Path, fresh: hf.FakeHub) -> None:
    env = dict(os.environ)
    hf.offline_env(env, endpoint=fresh.endpoint, cache_dir=tmp_path / "cache", home=tmp_path)
    script = (
        "from huggingface_hub import hf_hub_download as get\n"
        "print(open(get('org/nested', 'sub/notes.txt')).read(), end='')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "notes\n"
    assert fresh.bytes_for("sub/notes.txt") == 6
    snapshot = (
        tmp_path / "cache" / "models--org--nested" / "snapshots" / fresh.commits["org/nested"]
    )
    assert (snapshot / "sub" / "notes.txt").is_symlink()


def test_only_loopback_is_reachable() -> None:
    with pytest.raises(OSError, match="network"):
        socket.create_connection(("huggingface.co", 443), timeout=1)
    with pytest.raises(OSError, match="network"):
        socket.getaddrinfo("huggingface.co", 443)
    with pytest.raises(OSError, match="network"):
        socket.socket().connect(("10.0.0.1", 80))
    env: dict[str, str] = {"HF_TOKEN": "leaked"}
    hf.offline_env(env)
    assert env["HF_ENDPOINT"] == hf.REFUSED_ENDPOINT and "HF_TOKEN" not in env
    assert env["HF_HUB_DISABLE_TELEMETRY"] == "1"
