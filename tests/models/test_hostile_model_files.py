"""Hostile model files, each refused in one error line: config.json and tokenizer.json nested past
Python's limits or holding numbers past its digit limit, a config that disagrees with its tables,
safetensors headers of the same kinds, a sparse gigabyte config, an index naming impossible
files, a ref that never ends, and a tokenizer_config.json that cannot be read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner
from support.hub import place_in_hf_cache
from support.modelfolders import _copy
from support.modelfolders import folders as folders  # a fixture: pytest finds it here

from embedcli.cli import app

runner = make_runner()


# ---------------------------------------------------------------- hostile sources


@pytest.mark.parametrize(
    ("target", "content"),
    [
        ("config.json", "[" * 100000 + "]" * 100000),  # nesting past Python's recursion limit
        ("config.json", '{"n_embd": ' + "9" * 5000 + "}"),  # an integer past the digit limit
        (
            "config.json",
            '{"model_type": "llama", "hidden_size": 16, "rope_theta": 1' + "0" * 400 + "}",
        ),
        ("config.json", '{"model_type": "llama", "hidden_size": 16, "rope_theta": 0}'),
        ("config.json", '{"model_type": "gpt2", "n_embd": 3}'),  # disagrees with the tables
        ("tokenizer.json", "[" * 100000 + "]" * 100000),
    ],
)
def test_hostile_model_files_are_one_error_line(
    folders: dict[str, Path], tmp_path: Path, target: str, content: str
) -> None:
    folder = _copy(folders["gpt2"], tmp_path)
    (folder / target).write_text(content)
    result = runner.invoke(app, ["embed", "Hello", "--weights", str(folder)])
    expect_error(result, "")


def test_hostile_safetensors_headers(tmp_path: Path) -> None:
    import struct

    deep = '{"w": ' + "[" * 100000 + "]" * 100000 + "}"
    for body in (deep, '{"w": {"dtype": "F32", "shape": [' + "9" * 5000 + "]}}"):
        raw = body.encode()
        path = tmp_path / "x.safetensors"
        path.write_bytes(struct.pack("<Q", len(raw)) + raw)
        expect_error(runner.invoke(app, ["weights", str(path)]), "as safetensors")


def test_a_huge_config_is_refused_without_reading_it(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _copy(folders["gpt2"], tmp_path)
    with open(folder / "config.json", "r+b") as handle:
        handle.truncate(1 << 30)  # sparse: a gigabyte on paper
    expect_error(runner.invoke(app, ["weights", str(folder)]), "not a model config")


def test_hostile_index_names_and_refs(
    folders: dict[str, Path], tmp_path: Path, monkeypatch
) -> None:
    folder = _copy(folders["llama"], tmp_path)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.embed_tokens.weight"] = "a\u0000b.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    expect_error(runner.invoke(app, ["weights", str(folder)]), "no usable weight_map")
    cache = tmp_path / "hub"
    place_in_hf_cache(folders["gpt2"], cache, "org/refs")
    ref = cache / "models--org--refs" / "refs" / "main"
    ref.unlink()
    ref.symlink_to("/dev/zero")  # read whole, it would never end
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    expect_error(runner.invoke(app, ["weights", "hf:org/refs"]), "not in the Hugging Face cache")


@pytest.mark.parametrize("kind", ["fifo", "huge", "folder", "not-json", "a-list"])
def test_an_unreadable_tokenizer_config_is_refused_not_skipped(tmp_path: Path, kind: str) -> None:
    """tokenizer_config.json names the pad and end tokens: one that cannot be read was skipped
    (a FIFO) while config.json's twin was refused; both are refused now, the same way."""
    from support.hub import gpt2_tokenizer_json

    gpt2_tokenizer_json(tmp_path)
    config = tmp_path / "tokenizer_config.json"
    config.unlink()
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "huge":
        with config.open("wb") as handle:
            handle.truncate(200 << 20)  # sparse: 200 MB that take no disk
    elif kind == "folder":
        config.mkdir()
    else:
        config.write_text("{nope" if kind == "not-json" else "[1, 2]")
    result = runner.invoke(app, ["tokenize", "hi", "-e", str(tmp_path)])
    expect_error(result, str(config))
    assert ("not valid JSON" if kind == "not-json" else "") in result.stderr
