"""`embedcli inspect-shapes` and `embedcli broadcast` through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import assert_cli_leaves_unimported, expect_error, make_runner, script_env

from embedcli.cli import app
from embedcli.core.config import PRESETS

runner = make_runner()


def run_json(*args: str) -> dict:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)


def gpt_parameters(vocab: int, d: int, context: int, layers: int) -> int:
    """GPT-2-style model, written out layer by layer (HF GPT2LMHeadModel, head tied)."""
    layer_norm = 2 * d
    attention = (d * 3 * d + 3 * d) + (d * d + d)  # c_attn, c_proj
    mlp = (d * 4 * d + 4 * d) + (4 * d * d + d)  # c_fc, c_proj
    block = 2 * layer_norm + attention + mlp
    return vocab * d + context * d + layers * block + layer_norm  # + ln_f


# name: (d_model, context_length, layers, published parameter count or None)
EXPECTED = {
    "gpt2": (768, 1024, 12, 124_439_808),
    "gpt2-medium": (1024, 1024, 24, 354_823_168),
    "gpt2-large": (1280, 1024, 36, 774_030_080),
    "gpt2-xl": (1600, 1024, 48, 1_557_611_200),
    "gpt3": (12288, 2048, 96, None),
    "book-ch2": (256, 4, None, None),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_preset(name: str) -> None:
    d, context, layers, published = EXPECTED[name]
    data = run_json("inspect-shapes", "--preset", name)
    b, t = 8, 4
    assert data["config"]["preset"] == name
    assert (data["config"]["d_model"], data["config"]["context_length"]) == (d, context)
    shapes = {row["name"]: row["shape"] for row in data["tensors"]}
    assert shapes == {
        "input_ids": [b, t],
        "token_embeddings": [b, t, d],
        "position_ids": [t],
        "position_embeddings": [t, d],
        "input_embeddings": [b, t, d],
    }
    for row in data["tensors"]:
        size = 8 if row["dtype"] == "int64" else 4
        numel = 1
        for n in row["shape"]:
            numel *= n
        assert row["device"] == "meta"
        assert (row["numel"], row["bytes"]) == (numel, numel * size)
    params = data["parameters"]
    assert params["token_embeddings"] == 50257 * d
    assert params["position_embeddings"] == context * d
    assert params["total"] == (50257 + context) * d
    assert params["bytes"] == 4 * params["total"]
    assert params["bytes_by_dtype"] == {
        "float32": 4 * params["total"],
        "float16": 2 * params["total"],
        "bfloat16": 2 * params["total"],
    }
    if layers is None:
        assert params["model_parameters"] is None and params["share_of_model"] is None
    else:
        full = gpt_parameters(50257, d, context, layers)
        assert params["model_parameters"] == full
        assert params["share_of_model"] == pytest.approx(params["total"] / full)
        if published is not None:
            assert full == published
    assert data["broadcast"]["aligned"] == [[b, t, d], [1, t, d]]
    assert data["combine"] == {
        "d_model": d,
        "add_width": d,
        "concat_width": 2 * d,
        "add_linear_parameters": d * d + d,
        "concat_linear_parameters": 2 * d * d + d,
    }


def test_gpt3_is_175b() -> None:
    assert PRESETS["gpt3"].model_parameters == pytest.approx(175e9, rel=0.005)


def test_book_ch2_is_the_chapter_2_tensor() -> None:
    data = run_json("inspect-shapes", "--preset", "book-ch2")
    assert data["tensors"][-1]["shape"] == [8, 4, 256]


def test_default_is_gpt2_small() -> None:
    data = run_json("inspect-shapes")
    assert data["config"]["preset"] == "gpt2"
    assert data["parameters"]["share_of_model"] == pytest.approx(39_383_808 / 124_439_808)


def test_flags_override_the_preset() -> None:
    data = run_json(
        "inspect-shapes",
        "--preset",
        "gpt3",
        "-d",
        "64",
        "-b",
        "2",
        "-t",
        "3",
        "--vocab-size",
        "1000",
        "--context-length",
        "16",
        "--dtype",
        "bf16",
    )
    cfg = data["config"]
    assert (cfg["d_model"], cfg["vocab_size"], cfg["context_length"]) == (64, 1000, 16)
    assert (cfg["batch_size"], cfg["seq_len"], cfg["dtype"]) == (2, 3, "bfloat16")
    assert data["tensors"][-1] == {
        "name": "input_embeddings",
        "shape": [2, 3, 64],
        "dtype": "bfloat16",
        "device": "meta",
        "numel": 384,
        "bytes": 768,
    }
    assert data["parameters"]["bytes"] == 2 * (1000 + 16) * 64
    assert data["parameters"]["model_parameters"] is None  # not gpt3's sizes any more


def test_positional_none() -> None:
    data = run_json("inspect-shapes", "--positional", "none", "-d", "8")
    assert [row["name"] for row in data["tensors"]] == [
        "input_ids",
        "token_embeddings",
        "input_embeddings",
    ]
    assert data["broadcast"] is None
    assert data["parameters"]["position_embeddings"] == 0


def test_real_device_cpu() -> None:
    data = run_json(
        "inspect-shapes",
        "--device",
        "cpu",
        "-b",
        "2",
        "-t",
        "5",
        "-d",
        "16",
        "--vocab-size",
        "100",
        "--context-length",
        "8",
    )
    assert {row["device"] for row in data["tensors"]} == {"cpu"}
    assert data["config"]["device"] == "cpu"
    assert data["tensors"][-1]["shape"] == [2, 5, 16]


def test_meta_gpt3_stays_small(tmp_path: Path) -> None:
    """GPT-3's tables would take 2.4 GiB in float32; on meta the process allocates none of it."""
    # A helper process runs the command and reports its child's peak RSS alone.
    helper = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(done.stdout, end='')\n"
    )
    command = [sys.executable, "-m", "embedcli", "inspect-shapes", "--preset", "gpt3", "--json"]
    done = subprocess.run(
        [sys.executable, "-c", helper, *command],
        env=script_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    first, _, report = done.stdout.partition("\n")
    code, peak_kib = (int(n) for n in first.split())
    assert code == 0, done.stderr
    assert json.loads(report)["parameters"]["bytes"] > 2 * 2**30
    assert peak_kib < 1024 * 1024, f"peak RSS {peak_kib} KiB"


def test_sequence_beyond_context_is_the_core_error() -> None:
    result = runner.invoke(app, ["inspect-shapes", "--preset", "book-ch2", "-t", "5"])
    expect_error(result, "--seq-len (5) exceeds the context length (4); lower -t/--seq-len")


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (
            ["--preset", "gpt5"],
            "'gpt5' is not a preset; did you mean 'gpt3' or 'gpt2'? the presets",
            2,
        ),
        (["--preset", "gpt2-larg"], "did you mean 'gpt2-large'", 2),
        (["--device", "tpu"], "'tpu' is not a device", 2),
        (["--dtype", "int8"], "'int8' is not one of: float32", 2),
        (["-d", "0"], "0 is not in the range x>=1", 2),
        (["-b", "0"], "batch-size", 2),
        (["--device", "cpu", "-d", "100000000"], "lower --d-model", 1),
    ],
)
def test_inspect_errors(args: list[str], message: str, code: int) -> None:
    expect_error(runner.invoke(app, ["inspect-shapes", *args]), message, code)


def test_list_presets() -> None:
    result = runner.invoke(app, ["inspect-shapes", "--list-presets"])
    assert result.exit_code == 0
    for name in PRESETS:
        assert name in result.stdout
    data = run_json("inspect-shapes", "--list-presets")
    assert [p["name"] for p in data["presets"]][: len(PRESETS)] == list(PRESETS)
    assert data["presets"][0]["model_parameters"] == 124_439_808


def test_inspect_golden(golden) -> None:
    result = runner.invoke(app, ["inspect-shapes", "--preset", "book-ch2"])
    assert result.exit_code == 0, result.output
    golden("inspect_book_ch2.txt", result.stdout)


def test_list_presets_golden(golden) -> None:
    result = runner.invoke(app, ["inspect-shapes", "--list-presets"])
    golden("presets.txt", result.stdout)


# ---------------------------------------------------------------- broadcast


def test_broadcast_json_contract() -> None:
    assert run_json("broadcast", "8,4,256", "4,256") == {
        "shapes": [[8, 4, 256], [4, 256]],
        "aligned": [[8, 4, 256], [1, 4, 256]],
        "axes": [
            {"axis": -3, "sizes": [8, 1], "result": 8, "rule": "stretch"},
            {"axis": -2, "sizes": [4, 4], "result": 4, "rule": "equal"},
            {"axis": -1, "sizes": [256, 256], "result": 256, "rule": "equal"},
        ],
        "result": [8, 4, 256],
    }


def test_broadcast_golden(golden) -> None:
    result = runner.invoke(app, ["broadcast", "8,1,6,1", "(7,1,5)", "[]"])
    assert result.exit_code == 0, result.output
    golden("broadcast.txt", result.stdout)


def test_broadcast_error_line() -> None:
    result = runner.invoke(app, ["broadcast", "(8,4,256)", "(3,256)"])
    assert result.exit_code == 1
    assert (
        result.stderr
        == "Error: cannot broadcast (8,4,256) with (3,256): axis -2 has sizes 4 and 3\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["8,4"], "give at least two shapes"),
        (["8,4", "a,b"], "cannot read the shape 'a,b'"),
        (["8,4", "8,,4"], "cannot read the shape"),
        # a hostile trial's: numpy and torch refuse these; embedcli printed a result, exit 0,
        # and 4,000 axes took 11.9 s and 299 MB to draw
        (["(9223372036854775808,)", "(1,)"], "has a size of 9,223,372,036,854,775,808, past the"),
        (["1099511627777", "1"], "has a size of 1,099,511,627,777, past the 2**40"),
        ([",".join(["1"] * 65), "1"], "has 65 axes; embedcli takes at most 64, as NumPy does"),
        ([",".join(["2"] * 4000), "1"], "has 4,000 axes; embedcli takes at most 64, as NumPy does"),
    ],
)
def test_broadcast_usage_errors(args: list[str], message: str) -> None:
    expect_error(runner.invoke(app, ["broadcast", *args]), message, code=2)


def test_broadcast_takes_the_bounds_themselves() -> None:
    for args in ([",".join(["1"] * 64), "1"], ["1099511627776", "1"]):
        done = runner.invoke(app, ["broadcast", *args, "--json"])
        assert done.exit_code == 0, done.output


SYNTAXES = [
    lambda s: ",".join(map(str, s)),
    lambda s: "(" + ",".join(map(str, s)) + ("," if len(s) == 1 else "") + ")",
    lambda s: "[" + ", ".join(map(str, s)) + "]",
    lambda s: "x".join(map(str, s)) if s else "()",
]


@settings(max_examples=150, deadline=None)
@given(
    shapes=st.lists(st.lists(st.integers(0, 5), max_size=4).map(tuple), min_size=2, max_size=4),
    syntax=st.lists(st.integers(0, len(SYNTAXES) - 1), min_size=4, max_size=4),
)
def test_broadcast_cli_agrees_with_torch(shapes, syntax) -> None:
    written = [SYNTAXES[k](s) if s or k else "()" for s, k in zip(shapes, syntax, strict=False)]
    result = runner.invoke(app, ["broadcast", *written, "--json"])
    try:
        expected = list(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith("Error: cannot broadcast ")
        return
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["result"] == expected


def test_broadcast_and_inspect_never_import_torch() -> None:
    assert_cli_leaves_unimported(["broadcast", "8,4,256", "4,256"])
    assert_cli_leaves_unimported(["broadcast", "8,4,256", "4,256", "--json"])
    assert_cli_leaves_unimported(["inspect-shapes", "--list-presets"])
