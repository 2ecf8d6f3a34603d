"""The dtype a model folder's config.json names (``dtype``, or ``torch_dtype``) is the one its
input layer is computed in; one embedcli does not know is refused naming it and the dtypes it
knows (never computed in float32 instead); none named, or "auto", is the checkpoint's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner
from support.modelfolders import _copy, embed_json
from support.modelfolders import folders as folders  # a fixture: pytest finds it here

from embedcli.cli import app

runner = make_runner()


def _with_dtype(folders: dict[str, Path], tmp_path: Path, **dtype: object) -> Path:
    folder = _copy(folders["llama"], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config.pop("dtype", None)
    config.pop("torch_dtype", None)
    (folder / "config.json").write_text(json.dumps({**config, **dtype}))
    return folder


@pytest.mark.parametrize(
    ("dtype", "named"),
    [
        ({"torch_dtype": "banana"}, 'torch_dtype "banana"'),
        ({"torch_dtype": "float8_e4m3fn"}, 'torch_dtype "float8_e4m3fn"'),
        ({"dtype": "float64"}, 'dtype "float64"'),
        ({"dtype": 16}, "dtype 16"),
    ],
)
@pytest.mark.parametrize("command", ["embed", "inspect-shapes"])
def test_a_dtype_embedcli_does_not_know_is_refused(
    folders: dict[str, Path], tmp_path: Path, dtype: dict, named: str, command: str
) -> None:
    folder = _with_dtype(folders, tmp_path, **dtype)
    args = ["embed", "--ids", "1,2"] if command == "embed" else [command]
    result = runner.invoke(app, [*args, "--weights", str(folder)])
    expect_error(
        result,
        f"the model's config.json names {named}, a dtype embedcli does not know (it knows "
        "float32, float16, bfloat16); pass --dtype to choose one",
    )


def test_dtype_chooses_where_the_config_names_an_unknown_one(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = _with_dtype(folders, tmp_path, torch_dtype="banana")
    assert (
        embed_json("--ids", "1,2", "--weights", str(folder), "--dtype", "float16")["config"][
            "dtype"
        ]
        == "float16"
    )


@pytest.mark.parametrize(
    "dtype", [{}, {"torch_dtype": "auto"}, {"torch_dtype": None}], ids=["none", "auto", "null"]
)
def test_no_dtype_named_is_the_checkpoints_own(
    folders: dict[str, Path], tmp_path: Path, dtype: dict
) -> None:
    folder = _with_dtype(folders, tmp_path, **dtype)
    stored = json.loads(runner.invoke(app, ["weights", str(folder), "--json"]).stdout)
    table = next(t for t in stored["tensors"] if t["name"] == stored["token_key"])
    got = embed_json("--ids", "1,2", "--weights", str(folder))["config"]["dtype"]
    assert got == table["dtype"]


@pytest.mark.parametrize("key", ["dtype", "torch_dtype"])
def test_a_known_dtype_is_used(folders: dict[str, Path], tmp_path: Path, key: str) -> None:
    folder = _with_dtype(folders, tmp_path, **{key: "bfloat16"})
    got = embed_json("--ids", "1,2", "--weights", str(folder))["config"]["dtype"]
    assert got == "bfloat16"
