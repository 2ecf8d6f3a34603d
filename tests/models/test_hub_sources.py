"""Hub ids (``hf:org/name``), offline first: found in the Hugging Face cache exactly where
huggingface_hub looks, one clear error on a miss, and over the network (a FakeHub on 127.0.0.1)
fetched by the byte: headers only for the header-only commands, only the rows embed needs,
resumed after an interruption and never published half; gated repos and tokens; a damaged
cache; a server that ignores ranges.
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
from support.hub import expected_tables, place_in_hf_cache, shard_of
from support.modelfolders import TEXT, embed_json, first_block_input, hf_ids
from support.modelfolders import folders as folders  # a fixture: pytest finds it here

from embedcli.cli import app

runner = make_runner()


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


MALFORMED_ENDPOINTS = [
    "http://[::1",
    "http://[::1]x",
    "ftp://mirror",
    "http://mirror:99999",
    "http://mirror\n",
]


@pytest.mark.parametrize("value", MALFORMED_ENDPOINTS)
@pytest.mark.parametrize(
    "argv",
    [
        ["embed", "hi", "--weights", "hf:org/x", "--download"],
        ["positions", "--weights", "hf:org/x", "--download"],
        ["tokenize", "hi", "-e", "hf:org/x", "--download"],
    ],
)
def test_a_malformed_hf_endpoint_is_one_error_naming_it(
    value: str, argv: list[str], tmp_path: Path, monkeypatch
) -> None:
    from support.hub import point_hub_at

    point_hub_at(monkeypatch, value, cache_dir=tmp_path / "hub")
    expect_error(runner.invoke(app, argv), f"HF_ENDPOINT={value!r} is not a hub address")


def test_a_malformed_hf_endpoint_is_refused_before_huggingface_hub_loads(tmp_path: Path) -> None:
    """huggingface_hub reads HF_ENDPOINT when it is imported, and raised a ValueError (a
    traceback) for ``http://[::1``: a fresh process shows the one Error line instead."""
    from support.hub import offline_env

    env = dict(os.environ)
    offline_env(env, endpoint="http://[::1", cache_dir=tmp_path / "hub", home=tmp_path)
    argv = [sys.executable, "-m", "embedcli", "tokenize", "hi", "-e", "hf:org/x", "--download"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.startswith("Error: HF_ENDPOINT='http://[::1' is not a hub address")
    assert len(done.stderr.splitlines()) == 1, done.stderr


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


@pytest.mark.parametrize("value", ["true", "YES", " on"])
def test_offline_env_is_quoted_as_set_with_the_way_out(value: str) -> None:
    result = runner.invoke(
        app, ["weights", "hf:org/x", "--download"], env={"HF_HUB_OFFLINE": value}
    )
    expect_error(result, f"HF_HUB_OFFLINE={value.strip()} forbids it", code=2)
    assert "unset HF_HUB_OFFLINE, or drop --download" in result.stderr


def test_an_offline_miss_under_hf_hub_offline_says_what_blocks_the_download(
    tmp_path: Path, monkeypatch
) -> None:
    """The miss does not send the user to --download alone, which HF_HUB_OFFLINE would refuse."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    result = runner.invoke(app, ["weights", "hf:org/absent"], env={"HF_HUB_OFFLINE": "1"})
    expect_error(result, "HF_HUB_OFFLINE=1 keeps embedcli offline; unset it and pass --download")
