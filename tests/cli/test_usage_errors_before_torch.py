"""A command line that cannot work fails before torch is imported (a second's start-up saved on
every mistake), naming the flag to change: a text longer than --seq-len, a window beyond the
context, --png without matplotlib, a streamed .pt output."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner

from embedcli.cli import app

runner = make_runner()


def _fails_before_torch(args: list[str], code: int, said: str, block: str = "") -> None:
    """The command fails with ``said`` and never imports torch (1-2 s the user waited)."""
    from support.helpers import assert_python_ok

    assert_python_ok(
        "import sys\n"
        f"{block}"
        "from embedcli.cli import app\n"
        "try:\n"
        f"    app({args!r}, prog_name='embedcli')\n"
        "except SystemExit as exit:\n"
        f"    assert exit.code == {code}, exit.code\n"
        "else:\n"
        "    raise AssertionError('it succeeded')\n"
        "assert 'torch' not in sys.modules, 'torch was imported first'\n"
    )
    if not block:
        result = runner.invoke(app, args)
        expect_error(result, said, code)


def test_a_text_too_long_names_seq_len_first(tmp_path: Path) -> None:
    long = tmp_path / "long.txt"
    long.write_text("word " * 3000)
    args = ["embed", "-f", str(long), "-o", str(tmp_path / "o.npy")]
    _fails_before_torch(args, 1, "exceeds the context length (1024); pass -t/--seq-len N with -o")
    assert not (tmp_path / "o.npy").exists()


def test_a_window_beyond_the_context_fails_before_torch(tmp_path: Path) -> None:
    long = tmp_path / "long.txt"
    long.write_text("word " * 3000)
    args = ["embed", "-f", str(long), "-t", "2048", "-o", str(tmp_path / "o.npy")]
    _fails_before_torch(args, 1, "--seq-len (2048) exceeds the context length (1024)")


@pytest.mark.parametrize("command", [["positions"], ["project", "hi"]])
def test_png_without_matplotlib_fails_before_torch(tmp_path: Path, command: list[str]) -> None:
    args = [*command, "-d", "4", "--png", str(tmp_path / "x.png")]
    block = "sys.modules['matplotlib'] = None  # as if it were not installed\n"
    _fails_before_torch(args, 1, "--png needs matplotlib", block)
    assert not (tmp_path / "x.png").exists()


def test_streaming_pt_is_refused_before_torch_and_help_says_so(tmp_path: Path) -> None:
    args = ["embed", "-t", "4", "-d", "4", "-f", __file__, "-o", str(tmp_path / "x.pt")]
    _fails_before_torch(args, 2, "streaming (-t/--seq-len) writes .npy or .safetensors")
    shown = runner.invoke(app, ["embed", "--help"], terminal_width=200).stdout
    assert "(streamed, with -t/--seq-len: .npy or .safetensors)" in " ".join(
        shown.replace("│", " ").split()
    )
