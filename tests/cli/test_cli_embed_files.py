"""`embedcli embed`'s inputs and files: texts from arguments, -f and stdin (kept exactly, each
given once, UTF-8 or refused), and -o in every format, never leaving a half-written file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from support.embedruns import SMALL, embed, embed_json
from support.helpers import expect_error

from embedcli.io import outputs

# ---------------------------------------------------------------- input sources


def test_stdin_dash_and_no_argument() -> None:
    for args in (["-"], []):
        data = embed_json(*args, *SMALL, input="Hello, world!")
        assert data["input_ids"] == [[15496, 11, 995, 0]]


def test_stdin_keeps_the_text_exactly() -> None:
    data = embed_json("-", *SMALL, input="Hello\n")
    assert data["input_ids"] == [[15496, 198]]


def test_stdin_with_other_texts() -> None:
    data = embed_json("Hi", "-", *SMALL, input="Hello, world!")
    assert data["input_ids"][1] == [15496, 11, 995, 0]


def test_non_utf8_stdin() -> None:
    expect_error(
        embed("-", *SMALL, input=b"caf\xe9"),
        "standard input is not valid UTF-8 (byte 0xE9 at offset 3)",
    )


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        ([""], None, "text 1 is empty"),
        (["-"], "", "standard input is empty"),
        (["-", "-"], "x", "'-' (standard input) can be given only once"),
    ],
)
def test_empty_or_repeated_input(args, stdin, message) -> None:
    code = 2 if "only once" in message else 1
    expect_error(embed(*args, *SMALL, input=stdin), message, code=code)


# ---------------------------------------------------------------- --output


@pytest.mark.parametrize("suffix", [".npy", ".pt", ".safetensors"])
def test_output_formats(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"emb{suffix}"
    result = embed("Hello, world!", "Hi", *SMALL, "-o", str(target), "--json")
    assert result.exit_code == 0, result.output
    expected = torch.tensor(json.loads(result.stdout)["input_embeddings"])
    if suffix == ".npy":
        written = torch.from_numpy(np.load(target))
    elif suffix == ".pt":
        written = torch.load(target, weights_only=True)
    else:
        from safetensors.torch import load_file

        written = load_file(target)["input_embeddings"]
    assert written.shape == (2, 4, 8) and written.dtype == torch.float32
    assert torch.equal(written, expected)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left


def test_output_keeps_bfloat16_in_safetensors(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    target = tmp_path / "emb.safetensors"
    assert embed("hi", *SMALL, "--dtype", "bfloat16", "-o", str(target)).exit_code == 0
    assert load_file(target)["input_embeddings"].dtype == torch.bfloat16


@pytest.mark.parametrize(
    ("name", "extra", "message", "code"),
    [
        ("x.txt", [], "cannot tell the format of", 2),  # a bad option value: usage
        ("x", [], "suffix '(none)'", 2),
        ("missing/x.npy", [], "the folder", 1),
        ("x.npy", ["--dtype", "bfloat16"], "NumPy has no bfloat16", 2),
    ],
)
def test_output_errors(tmp_path: Path, name: str, extra: list[str], message: str, code) -> None:
    result = embed("hi", *SMALL, *extra, "-o", str(tmp_path / name))
    expect_error(result, message, code=code)
    assert list(tmp_path.iterdir()) == []


def test_output_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "d.npy").mkdir()
    expect_error(embed("hi", *SMALL, "-o", str(tmp_path / "d.npy")), "is a directory")


def test_output_unwritable_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outputs.os, "access", lambda path, mode: False)
    expect_error(embed("hi", *SMALL, "-o", str(tmp_path / "x.npy")), "is not writable")


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_failed_write_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure
) -> None:
    target = tmp_path / "x.npy"
    target.write_bytes(b"previous")

    def half_write(handle, array):
        handle.write(b"\x93NUMPY partial")
        raise failure

    monkeypatch.setattr(np, "save", half_write)
    result = embed("hi", *SMALL, "-o", str(target))
    assert result.exit_code == (1 if isinstance(failure, OSError) else 130)  # 130: interrupted
    if isinstance(failure, OSError):
        assert "Error: cannot write" in result.stderr and "No space left" in result.stderr
    assert target.read_bytes() == b"previous"  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]


def test_non_utf8_argument() -> None:
    # Arguments that were not UTF-8 reach Python with lone surrogates (PEP 383).
    expect_error(embed("caf\udce9", *SMALL), "text argument 1 is not valid UTF-8")


def test_file_is_one_text(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("Hello, world!", encoding="utf-8")
    assert embed_json("-f", str(path), *SMALL)["input_ids"] == [[15496, 11, 995, 0]]
