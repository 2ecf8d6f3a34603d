"""Shared fixtures: a pinned terminal, an empty tiktoken cache, and no network, ever."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


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


def make_runner() -> CliRunner:
    """A runner that keeps stdout and stderr apart (older Click needs mix_stderr=False)."""
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare text with tests/golden/NAME, or rewrite it under --update-golden."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if request.config.getoption("--update-golden"):
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
        assert text == path.read_text(encoding="utf-8"), f"output differs from {path}"
        from golden_oracle import check as numbers_hold

        numbers_hold(name, text)  # the numbers, against computations of the test's own

    return check


def script_env(tmp_path: Path) -> dict[str, str]:
    """Environment for subprocesses: the venv's bin first, an empty tiktoken cache, no colour."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "tiktoken-cache")
    env["EMBEDCLI_CACHE_DIR"] = str(tmp_path / "embedcli-cache")
    env["COLUMNS"] = "100"
    env["NO_COLOR"] = "1"
    return env


def run_script(args: list[str], tmp_path: Path, **kwargs: object) -> subprocess.CompletedProcess:
    """Run a command the way a user's shell would, capturing text output."""
    kwargs.setdefault("text", True)
    return subprocess.run(
        args, env=script_env(tmp_path), capture_output=True, timeout=300, **kwargs
    )


def assert_python_ok(code: str) -> None:
    """Run ``code`` in a fresh interpreter (so sys.modules starts empty) and require success."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def assert_cli_leaves_unimported(args: list[str], modules: tuple[str, ...] = ("torch",)) -> None:
    """Run the CLI with ``args`` in a fresh interpreter; it must succeed without importing
    any of ``modules``."""
    assert_python_ok(
        "import sys\n"
        "from embedcli.cli import app\n"
        "try:\n"
        f"    app({args!r}, prog_name='embedcli')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        f"imported = [m for m in {modules!r} if m in sys.modules]\n"
        "assert not imported, f'imported: {imported}'\n"
    )
