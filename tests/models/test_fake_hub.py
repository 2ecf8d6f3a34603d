"""FakeHub speaks the hub's protocol as huggingface_hub and transformers use it: downloads,
snapshots laid out as place_in_hf_cache lays them, tree and info endpoints, byte ranges, the
intercept hook, the hub's own errors and gated repos, HF_ENDPOINT in a subprocess; and only
loopback is reachable."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
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

huggingface_hub = pytest.importorskip("huggingface_hub")
hub_errors = pytest.importorskip("huggingface_hub.errors")
transformers = pytest.importorskip("transformers")


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
