"""Fixtures of the hub tests: the repos the FakeHub serves (built once a module), the FakeHub
itself with HF_ENDPOINT pointing at it and retries that do not sleep."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hub import (
    FakeHub,
    gpt2_tokenizer_json,
    make_gpt2_folder,
    make_llama_folder,
    point_hub_at,
)
from support.hub.sparse import BIG, make_405b_shaped


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hardening")
    tokenizer = gpt2_tokenizer_json(root / "tok")
    return {
        "llama": make_llama_folder(root / "llama", max_shard_size="20KB", tokenizer_json=tokenizer),
        "llama-v2": make_llama_folder(
            root / "llama-v2", max_shard_size="20KB", tokenizer_json=tokenizer, seed=7
        ),
        "notok": make_llama_folder(root / "notok", vocab_size=512),
        "gpt2": make_gpt2_folder(root / "gpt2"),
        "big": make_405b_shaped(root / "big"),
    }


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays the retry policy asked for, none of them slept."""
    from embedcli.models.hub import http as hubhttp

    delays: list[float] = []
    monkeypatch.setattr(hubhttp, "POLICY", hubhttp.RetryPolicy(sleep=delays.append))
    return delays


@pytest.fixture
def hub(folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slept):
    """A FakeHub serving the repos; HF_ENDPOINT points at it; retries do not sleep."""
    repos = {
        "org/llama": folders["llama"],
        "org/notok": folders["notok"],
        "org/gpt2": folders["gpt2"],
        BIG: folders["big"],
    }
    with FakeHub(repos) as fake:
        point_hub_at(monkeypatch, fake.endpoint, cache_dir=tmp_path / "hub")
        yield fake
        fake.intercept = None
