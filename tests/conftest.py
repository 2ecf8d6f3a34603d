"""Shared fixtures: a pinned terminal, an empty tiktoken cache, and no network, ever."""

from __future__ import annotations

import os
import socket

import pytest
from support.helpers import GOLDEN

if os.environ.get("PYTEST_XDIST_WORKER"):
    # xdist runs one worker per core, and torch would give each worker one thread per core:
    # on 2 cores the contract fuzzer's project case took 95 s beside a second worker, 37 s
    # alone. One torch thread per worker (and in the processes it starts), unless set.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite tests/golden/ from the current output"
    )


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    # A fixed width makes rich's tables deterministic; an empty cache proves the bundled files
    # are what the encodings are built from.
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken-cache")))
    # A fresh ranks cache per test: no test depends on, or writes to, the user's real cache.
    monkeypatch.setenv("EMBEDCLI_CACHE_DIR", str(tmp_path_factory.mktemp("embedcli-cache")))
    # An empty Hugging Face home: no test reads the user's hub cache, token, or settings.
    monkeypatch.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf-home")))
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(variable, raising=False)
    # No Ollama store: no test reads the user's ~/.ollama models
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path_factory.getbasetemp() / "no-ollama"))

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("tests must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare text with tests/golden/NAME, or rewrite it under --update-golden."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if request.config.getoption("--update-golden"):
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
        assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"
        from support.golden_oracle import check as numbers_hold

        numbers_hold(name, text)  # the numbers, against computations of the test's own

    return check
