"""The quick path of ``tokenize --count`` (embedcli/cli/quick.py): the same number as the full
command for every command line it takes, nothing at all printed for those it hands on, and no
typer loaded on the way (the whole point of it)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import make_runner

from embedcli.cli import app, quick

runner = make_runner()
WORDS = ["Hello world", "naïve café 😀", "a" * 300, "  lead", "<|endoftext|>", "x\ny", "٣"]


def _quick(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[bool, bytes]:
    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8"))
    took = quick.counted(argv)
    sys.stdout.flush()
    return took, out.getvalue()


def _full(argv: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, argv)
    return result.exit_code, result.stdout


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("The verdict was read aloud.\n  And then?\n", encoding="utf-8")
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    text=st.sampled_from(WORDS) | st.text(max_size=30),
    encoding=st.sampled_from([None, "gpt2", "r50k_base", "cl100k_base", "o200k_base"]),
    order=st.permutations(["count", "encoding", "text"]),
)
def test_same_number_as_the_full_command(text, encoding, order, monkeypatch) -> None:
    parts = {"count": ["--count"], "text": [text], "encoding": ["-e", encoding] if encoding else []}
    argv = ["tokenize", *(word for part in order for word in parts[part])]
    with monkeypatch.context() as patch:
        took, printed = _quick(argv, patch)
    code, shown = _full(argv)
    if took:
        assert code == 0 and printed.decode() == shown
    else:  # handed on: the full command runs it (and says what was wrong)
        assert printed == b""


def test_a_file_counts_as_the_full_command(notes: Path, monkeypatch) -> None:
    for argv in (
        ["tokenize", "--count", "-f", str(notes)],
        ["tokenize", "-e", "cl100k_base", "--file", str(notes), "--count"],
    ):
        took, printed = _quick(argv, monkeypatch)
        assert took and printed.decode() == _full(argv)[1]


@pytest.mark.parametrize(
    "argv",
    [
        ["tokenize", "hi"],  # not --count
        ["tokenize", "--count", "hi", "--json"],  # another flag
        ["tokenize", "--count", "-e", "gpt2", "-e", "o200k_base", "hi"],  # two encodings
        ["tokenize", "--count", "hi", "there"],  # TEXT in two words
        ["tokenize", "--count", "-f", "-"],  # stdin
        ["tokenize", "--count"],  # no text
        ["tokenize", "--count", "-e", "p50k_base", "hi"],  # not bundled
        ["tokenize", "--count", "-e", "model.gguf", "hi"],
        ["tokenize", "--count", "a<|endoftext|>"],  # refused: the full command says so
        ["tokenize", "--count", "-f", "/no/such/file"],
        ["tokenize", "--count", "-e"],
        ["count", "--count", "hi"],
        ["tokenize", "--count", "--", "hi"],
    ],
)
def test_what_it_hands_on_prints_nothing(argv: list[str], monkeypatch) -> None:
    assert _quick(argv, monkeypatch) == (False, b"")


def test_the_console_script_loads_no_typer(notes: Path) -> None:
    code = (
        "import sys\n"
        "sys.argv = ['embedcli', 'tokenize', '--count', '-e', 'cl100k_base', '-f', sys.argv[1]]\n"
        "import atexit\n"
        "atexit.register(lambda: print('typer' in sys.modules, 'click' in sys.modules))\n"
        "from embedcli.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(notes)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["10", "False", "False"]
