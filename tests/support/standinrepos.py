"""The repos the stand-in hub's own tests are built on, once a module, in one working folder: a
sharded GPT-2 with its tokenizer, a sharded Llama and a Gemma; ``shard_keys`` reads the keys each
safetensors file of a folder holds; ``loopback_only`` (autouse) lets a test reach a FakeHub on
127.0.0.1, and nothing else.

The fixtures are imported by name into the test modules, with those they depend on
(``from support.standinrepos import work as work``), so that pytest finds them there."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors import safe_open

from support import hub as hf

SHARD = "20KB"


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub  # the test modules skip where it is missing

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
