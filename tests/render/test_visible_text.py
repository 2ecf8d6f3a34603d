"""Text from the input is shown visibly, never as what it would do to a terminal: control
characters and line breakers in pieces, tensor names, error lines and the ``Wrote`` line are
escaped or drawn as their control pictures, so a row stays one row and a message one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import make_runner

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


SMALL = ("-d", "4", "--device", "cpu")


BREAKERS = ["\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1b", "\u202e"]


@pytest.mark.parametrize("char", BREAKERS)
def test_a_piece_never_breaks_its_row(char: str) -> None:
    """Python and rich break lines at 0x1c-0x1e, 0x85 and U+2028/2029: a table row holding such
    a piece was drawn on two lines. Every row of the table is one line of the box."""
    result = runner.invoke(app, ["tokenize", f"a{char}b"])
    assert result.exit_code == 0, result.output
    body = [line for line in result.stdout.split("\n") if line.startswith("│")]
    assert len(body) == len(get_encoding("gpt2").encode(f"a{char}b"))
    assert all(line.endswith("│") for line in body)
    assert char not in result.stdout


def test_id_217_is_shown_as_its_control_picture() -> None:
    result = runner.invoke(app, ["tokenize", "--ids", "217"])
    assert result.exit_code == 0, result.output
    assert "│ ␝ " in result.stdout and "\x1d" not in result.stdout


def test_tensor_names_are_shown_visibly(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    path = tmp_path / "odd.safetensors"
    save_file({"wte\u2028x\x1d.weight": torch.zeros(10, 4)}, str(path))
    result = runner.invoke(app, ["weights", str(path)])
    assert result.exit_code == 0, result.output
    assert "wte<U+2028>x␝.weight" in result.stdout
    assert "\u2028" not in result.stdout and "\x1d" not in result.stdout


def test_error_lines_escape_every_line_breaker(tmp_path: Path) -> None:
    result = runner.invoke(app, ["tokenize", "-f", str(tmp_path / "no\u2028such\x85file")])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "no\\u2028such\\x85file" in result.stderr


def test_the_wrote_line_shows_a_file_name_visibly(tmp_path: Path) -> None:
    out = tmp_path / "a\x1db\u2028c.npy"
    result = runner.invoke(app, ["embed", "hi", *SMALL, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "a␝b<U+2028>c.npy" in result.stdout and "\x1d" not in result.stdout
    assert out.exists()
