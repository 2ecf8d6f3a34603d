"""Helpers the tests share: the repository's paths, a CLI runner that keeps stdout and stderr
apart, subprocesses run as a user's shell would, and the checks of an error line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"


def make_runner() -> CliRunner:
    """A runner that keeps stdout and stderr apart (older Click needs mix_stderr=False)."""
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


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


def expect_error(result, message: str, code: int = 1) -> None:
    """One ``Error:`` line on stderr with ``message`` in it, nothing on stdout, no traceback,
    and exit ``code`` (1 for bad input or data, 2 for bad usage)."""
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    assert message in errors[0], result.stderr
    assert "Traceback" not in result.output


def unsure_unicode(text: str) -> bool:
    """Whether regex and Python's unicodedata class a character of ``text`` differently: text
    that tokenize --explain refuses (it cuts chunks with regex's tables, tiktoken with its own)."""
    import unicodedata

    import regex

    return any(not regex.match(rf"\p{{gc={unicodedata.category(c)}}}", c) for c in text)
