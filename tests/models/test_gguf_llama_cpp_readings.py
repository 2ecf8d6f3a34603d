"""GGUF files whose keys llama.cpp's code reads otherwise than a transformers config would say
them: each either read as llama.cpp reads it, or refused by name, never shown another way with
exit 0. The files hold the input layer's tensors only, written with the gguf package (the
cases a hostile trial found: llama.cpp's own runs of them are in its report)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.ggufmodels import add_fields
from support.helpers import expect_error, make_runner

from embedcli.cli import app

gguf = pytest.importorskip("gguf")
runner = make_runner()
D, V = 32, 64


def arch_file(path: Path, arch: str, keys: dict[str, Any], tensors: dict[str, Any]) -> Path:
    """A GGUF file of ``arch``: 2 blocks of width 32, 4 heads of 8, a context of 64, both
    epsilon keys, a 64-row F32 token table, then ``keys`` (over the arch's prefix; a value of
    None drops the key) and ``tensors``."""
    writer = gguf.GGUFWriter(path, arch)
    common: dict[str, Any] = {
        "context_length": 64, "embedding_length": D, "block_count": 2,
        "attention.head_count": 4, "attention.key_length": 8,
        "attention.layer_norm_epsilon": 1e-5, "attention.layer_norm_rms_epsilon": 1e-6,
    }  # fmt: skip
    names = {
        (k[1:] if k.startswith(".") else f"{arch}.{k}"): v for k, v in {**common, **keys}.items()
    }
    add_fields(writer, {name: value for name, value in names.items() if value is not None})
    writer.add_tokenizer_model("llama")
    writer.add_token_list([f"t{i}" for i in range(V)])
    writer.add_token_scores([0.0] * V)
    writer.add_token_types([1] * V)
    rng = np.random.default_rng(0)
    table = {"token_embd.weight": rng.standard_normal((V, D)).astype(np.float32)}
    for name, tensor in {**table, **tensors}.items():
        writer.add_tensor(name, np.asarray(tensor, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def positions(path: Path) -> Any:
    return runner.invoke(app, ["positions", "--weights", str(path), "--json"])


PAIRS = 4  # a head of 8 turns 4 pairs
REFUSED = {
    "LongRoPE factors with no scaling type (Phi-3's converter writes none)": (
        "phi3",
        {},
        {
            "rope_factors_long.weight": np.ones(PAIRS) * 2,
            "rope_factors_short.weight": np.ones(PAIRS),
        },
        "scales rope by LongRoPE factors",
    ),
    "an attention factor outside YaRN": (
        "llama",
        {"rope.scaling.attn_factor": 0.5},
        {},
        "which llama.cpp multiplies cos and sin",
    ),
    "a YaRN beta of 0, which llama.cpp turns with as written": (
        "mistral3",
        {
            "rope.scaling.type": "yarn",
            "rope.scaling.factor": 4.0,
            "rope.scaling.yarn_beta_fast": 0.0,
        },
        {},
        "yarn_beta_fast is 0",
    ),
    "scaling type none with a factor, which llama.cpp's sliding layers still take": (
        "gemma2",
        {"rope.scaling.type": "none", "rope.scaling.factor": 4.0},
        {},
        "so llama.cpp turns the full layers unscaled, but its sliding layers",
    ),
    "a sliding window of 0 (gemma2)": (
        "gemma2",
        {"attention.sliding_window": 0},
        {},
        "would then attend to no token at all",
    ),
    "a sliding window of 0 (cohere2)": (
        "cohere2",
        {"attention.sliding_window": 0},
        {},
        "would then attend to no token at all",
    ),
    "rope_freqs.weight where llama.cpp's code does not load it": (
        "qwen2",
        {},
        {"rope_freqs.weight": np.ones(PAIRS) * 2},
        "does not load",
    ),
    "a flag where a scale is": (
        "granite",
        {"embedding_scale": False},
        {},
        "granite.embedding_scale must be a number",
    ),
    "an empty scaling type, which llama.cpp asserts on": (
        "llama",
        {"rope.scaling.type": ""},
        {},
        "rope.scaling.type is ''",
    ),
    "an ALiBi bias past any slope a float holds": (
        "mpt",
        {"attention.max_alibi_bias": 1e30},
        {},
        "alibi_bias_max is 1e+30",
    ),
    "a token-type count that is a string": (
        "bert",
        {".tokenizer.ggml.token_type_count": "2"},
        {
            "position_embd.weight": np.zeros((64, D)),
            "token_types.weight": np.zeros((2, D)),
            "token_embd_norm.weight": np.ones(D),
            "token_embd_norm.bias": np.zeros(D),
        },
        "token_type_count must be an integer",
    ),
    "a token-type table narrower than the rows": (
        "bert",
        {},
        {
            "position_embd.weight": np.zeros((64, D)),
            "token_types.weight": np.zeros((2, 16)),
            "token_embd_norm.weight": np.ones(D),
            "token_embd_norm.bias": np.zeros(D),
        },
        "token_types.weight is a (2, 16)",
    ),
    "a norm narrower than the rows": (
        "bloom",
        {},
        {"token_embd_norm.weight": np.ones(16), "token_embd_norm.bias": np.zeros(16)},
        "token_embd_norm.weight is a (16,)",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_files_llama_cpp_reads_another_way_are_refused_by_name(name: str, tmp_path: Path) -> None:
    arch, keys, tensors, message = REFUSED[name]
    path = arch_file(tmp_path / f"{arch}.gguf", arch, keys, tensors)
    for command in (["positions", "--weights", str(path)], ["embed", "--weights", str(path),
                                                             "--ids", "1,2"]):  # fmt: skip
        expect_error(runner.invoke(app, command), message)


def test_rope_freqs_divide_each_pairs_frequency(tmp_path: Path) -> None:
    """llama's rope_freqs.weight (Llama 3.1's scaling, as the converter writes it): each
    pair's frequency divided by its factor, as llama.cpp's rope does."""
    factors = [1.0, 2.0, 4.0, 8.0]
    path = arch_file(tmp_path / "llama.gguf", "llama", {"rope.freq_base": 10000.0},
                     {"rope_freqs.weight": factors})  # fmt: skip
    result = runner.invoke(app, ["embed", "--weights", str(path), "--ids", "1,2", "--json"])
    assert result.exit_code == 0, result.output
    angles = json.loads(result.stdout)["rope_angles"][1]  # position 1
    want = [10000.0 ** (-2 * i / 8) / f for i, f in enumerate(factors)]
    assert angles == pytest.approx(want, rel=1e-6)


def test_a_zero_original_context_is_the_training_context(tmp_path: Path) -> None:
    """rope.scaling.original_context_length 0 is llama.cpp's 'unset': its context reads the
    training context instead."""
    keys = {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0}
    zero = arch_file(tmp_path / "zero.gguf", "llama",
                     {**keys, "rope.scaling.original_context_length": 0}, {})  # fmt: skip
    same = arch_file(tmp_path / "same.gguf", "llama",
                     {**keys, "rope.scaling.original_context_length": 64}, {})  # fmt: skip
    first, second = positions(zero), positions(same)
    assert first.exit_code == 0, first.output
    ours, theirs = json.loads(first.stdout), json.loads(second.stdout)
    assert ours["inverse_frequencies"] == theirs["inverse_frequencies"]
    assert ours["scaling"] == theirs["scaling"]


def test_gemma3n_reads_four_altup_streams_whatever_the_file_says(tmp_path: Path) -> None:
    """llama.cpp's n_altup is 4 (llama-hparams.h); gemma3n.cpp never reads altup.num_inputs."""
    rng = np.random.default_rng(1)
    tensors = {"altup_proj.weight": rng.standard_normal((3, D, D)) * 0.1}
    path = arch_file(tmp_path / "gemma3n.gguf", "gemma3n",
                     {"altup.num_inputs": 2, "attention.sliding_window": 16}, tensors)  # fmt: skip
    out = tmp_path / "out.pt"
    result = runner.invoke(app, ["embed", "--weights", str(path), "--ids", "1,2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    import torch

    assert torch.load(out).shape == (4, 1, 2, D)
    assert math.isfinite(float(torch.load(out).abs().max()))
