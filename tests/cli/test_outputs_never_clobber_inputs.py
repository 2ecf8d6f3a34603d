"""An output never replaces an input: `-o` naming the text file being read, stdin's file, or the
checkpoint whose tables are read is refused before any work, and the input is left as it was."""

from __future__ import annotations

import subprocess
from pathlib import Path

import torch
from support.helpers import expect_error, make_runner, script_env

from embedcli.cli import app

runner = make_runner()


SMALL = ("-d", "4", "--device", "cpu")


def test_output_that_is_the_text_file_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "a.npy"
    text.write_text("hello world, some text", encoding="utf-8")
    before = text.read_bytes()
    expect_error(
        runner.invoke(app, ["embed", "-f", str(text), *SMALL, "-o", str(text)]),
        "is the same file as the input",
    )
    link = tmp_path / "link.npy"
    link.symlink_to(text)
    expect_error(
        runner.invoke(app, ["embed", "-f", str(text), "-t", "2", *SMALL, "-o", str(link)]),
        "is the same file as the input",
    )
    assert text.read_bytes() == before


def test_output_that_is_stdin_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "e.npy"
    text.write_text("hello world, some text", encoding="utf-8")
    with open(text, "rb") as stdin:
        done = subprocess.run(
            ["embedcli", "embed", *SMALL, "-o", str(text)],
            stdin=stdin,
            env=script_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1 and "same file as the input standard input" in done.stderr
    assert text.read_text(encoding="utf-8") == "hello world, some text"


def test_output_that_is_the_checkpoint_is_refused(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    ckpt = tmp_path / "mine.safetensors"
    save_file({"wte.weight": torch.randn(50257, 4), "wpe.weight": torch.randn(8, 4)}, str(ckpt))
    before = ckpt.read_bytes()
    expect_error(
        runner.invoke(app, ["embed", "hi", "--weights", str(ckpt), "-o", str(ckpt)]),
        "is the same file as the input",
    )
    assert ckpt.read_bytes() == before
