"""Tiny random transformers models written as GGUF files, the way llama.cpp's converter lays
them out: ``general.architecture`` and the ``<arch>.*`` hyperparameters from config.json, the
token table as ``token_embd.weight`` in the GGML type asked for, GPT-2's positional table as
``position_embd.weight``, an untied head as ``output.weight``, and the tokenizer.json as
``tokenizer.ggml.*`` (byte-level BPE: tokens in id order, their types, the merges).

The tables are quantized here without embedcli: Q8_0 by the gguf package's quantizer (its
reference port of ggml's), Q6_K by ``quantize_q6_k`` below, which packs ggml's block_q6_k
layout and records the step of every sub-block, so the tests know the error bound of each value
without dequantizing anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# general.architecture for each model_type the tests write
ARCH = {"llama": "llama", "qwen2": "qwen2", "gemma": "gemma", "gpt2": "gpt2", "qwen3": "qwen3"}
ARCH |= {"gemma2": "gemma2", "gemma3_text": "gemma3", "phi3": "phi3"}
TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q6_K")


@dataclass
class Written:
    """A GGUF file written from a model folder, with what the tests check it against."""

    path: Path
    table: np.ndarray  # the float32 token table it was made from
    bound: np.ndarray | None  # per value: the worst error its quantization can carry


def quantize_q6_k(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes of ggml's block_q6_k for each row, the error bound of every value).

    Per super-block of 256 values: 16 sub-blocks of 16, each with an int8 scale; one float16
    super-scale ``d``. A sub-block's step is d * scale, chosen (rounded up) so that its largest
    magnitude is at most 31 steps: every value is rounded to the nearest step, off by at most
    half a step. Layout: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16], d."""
    rows, width = table.shape
    assert width % 256 == 0
    blocks = table.astype(np.float64).reshape(-1, 256)
    sub = blocks.reshape(-1, 16, 16)
    wanted = np.abs(sub).max(axis=2) / 31  # (n, 16): the smallest step that holds the values
    exact = wanted.max(axis=1) / 127
    d = exact.astype(np.float16)
    d = np.where(d.astype(np.float64) < exact, np.nextafter(d, np.float16(np.inf)), d)  # up
    d = np.where(d == 0, np.float16(1), d)
    d64 = d.astype(np.float64)
    scales = np.minimum(np.ceil(wanted / d64[:, None]), 127).astype(np.int8)
    scales = np.where(scales == 0, 1, scales).astype(np.int8)
    steps = d64[:, None] * scales  # (n, 16)
    assert (np.abs(sub) <= 31 * steps[:, :, None] + 1e-12).all()
    q = np.clip(np.rint(sub / steps[:, :, None]), -32, 31).astype(np.int16) + 32  # 0..63
    q = q.reshape(-1, 256)
    ql = np.zeros((q.shape[0], 128), dtype=np.uint8)
    qh = np.zeros((q.shape[0], 64), dtype=np.uint8)
    for e in range(256):
        half, rest = divmod(e, 128)
        nibble, pos = divmod(rest, 64)
        ql[:, half * 64 + pos] |= ((q[:, e] & 0x0F) << (4 * nibble)).astype(np.uint8)
        k, pos32 = divmod(rest, 32)
        qh[:, half * 32 + pos32] |= (((q[:, e] >> 4) & 0x03) << (2 * k)).astype(np.uint8)
    packed = np.concatenate(
        [ql, qh, scales.view(np.uint8), d.reshape(-1, 1).view(np.uint8)], axis=1
    )
    bound = np.repeat(steps / 2, 16, axis=1).reshape(rows, width)
    return packed.reshape(rows, -1), bound


def q8_0_bound(table: np.ndarray) -> np.ndarray:
    """The worst error of each value under ggml's Q8_0: rounded with the float32 scale
    amax/127 (half a step), then the scale stored as float16 (|q| <= 127 times its rounding)."""
    blocks = table.astype(np.float32).reshape(-1, 32)
    d = np.abs(blocks).max(axis=1) / np.float32(127)
    err = np.abs(d.astype(np.float64) - d.astype(np.float16).astype(np.float64))
    bound = d.astype(np.float64) / 2 + 127 * err
    return np.repeat(bound, 32).reshape(table.shape)


def q4_0_bound(table: np.ndarray) -> np.ndarray:
    """The worst error of each value under ggml's Q4_0: the block's largest magnitude is -8
    steps, so a value of the other sign reaches +7 steps at most (a whole step off), and the
    float32 scale is stored as float16 (|q - 8| <= 8 times its rounding)."""
    blocks = table.astype(np.float32).reshape(-1, 32)
    peak = blocks[np.arange(len(blocks)), np.abs(blocks).argmax(axis=1)]
    d = np.abs(peak / np.float32(-8)).astype(np.float64)
    err = np.abs(d - d.astype(np.float16).astype(np.float64))
    return np.repeat(d + 8 * err, 32).reshape(table.shape)


def _stored(table: np.ndarray, kind: str) -> tuple[np.ndarray, Any, np.ndarray | None]:
    """(data for GGUFWriter.add_tensor, raw_dtype or None, per-value bound or None)."""
    import gguf
    from gguf.constants import GGMLQuantizationType as Q

    if kind == "F32":
        return table.astype(np.float32), None, None
    if kind == "F16":
        return table.astype(np.float16), None, None
    if kind == "BF16":
        return gguf.quants.quantize(table.astype(np.float32), Q.BF16), Q.BF16, None
    if kind == "Q8_0":
        return gguf.quants.quantize(table.astype(np.float32), Q.Q8_0), Q.Q8_0, q8_0_bound(table)
    if kind == "Q4_0":
        return gguf.quants.quantize(table.astype(np.float32), Q.Q4_0), Q.Q4_0, q4_0_bound(table)
    if kind == "Q6_K":
        packed, bound = quantize_q6_k(table)
        return packed, Q.Q6_K, bound
    raise ValueError(kind)


def tokenizer_fields(folder: Path) -> dict[str, Any]:
    """tokenizer.ggml.* of a byte-level BPE tokenizer.json, as llama.cpp's converter writes
    them (tokens in id order; NORMAL 1, CONTROL 3 for special added tokens, USER_DEFINED 4)."""
    spec = json.loads((folder / "tokenizer.json").read_text())
    vocab = dict(spec["model"]["vocab"])
    kinds = {}
    for added in spec.get("added_tokens", []):
        vocab[added["content"]] = added["id"]
        kinds[added["id"]] = 3 if added.get("special") else 4
    size = max(vocab.values()) + 1
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [5] * size  # UNUSED where the vocabulary has a hole
    for piece, index in vocab.items():
        tokens[index] = piece
        types[index] = kinds.get(index, 1)
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    eos = next((a["id"] for a in spec.get("added_tokens", []) if a.get("special")), 0)
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "gpt-2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": eos,
        "tokenizer.ggml.eos_token_id": eos,
        "tokenizer.ggml.add_bos_token": False,
    }


def add_fields(writer: Any, fields: dict[str, Any]) -> None:
    """Metadata as llama.cpp's converter types it: ints as uint32, floats as float32, token
    types as an int32 array, scores as float32s."""
    import gguf

    for key, value in fields.items():
        if key == "tokenizer.ggml.token_type":
            kind = gguf.GGUFValueType
            writer.add_key_value(key, list(value), kind.ARRAY, sub_type=kind.INT32)
        elif key == "tokenizer.ggml.scores":
            writer.add_array(key, [float(v) for v in value])
        elif isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, str):  # add_string drops an empty one
            writer.add_key_value(key, value, gguf.GGUFValueType.STRING)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        else:
            writer.add_array(key, value)


def hyperparameters(config: dict[str, Any]) -> dict[str, Any]:
    """The <arch>.* keys of a config.json, as llama.cpp's converter names them."""
    model_type = config["model_type"]
    arch = ARCH[model_type]
    if model_type == "gpt2":
        return {
            f"{arch}.context_length": config["n_positions"],
            f"{arch}.embedding_length": config["n_embd"],
            f"{arch}.block_count": config["n_layer"],
            f"{arch}.attention.head_count": config["n_head"],
            f"{arch}.attention.layer_norm_epsilon": float(config["layer_norm_epsilon"]),
        }
    rope = config.get("rope_parameters") or {}
    theta = rope.get("rope_theta", config.get("rope_theta", 10000.0))
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return {
        f"{arch}.context_length": config["max_position_embeddings"],
        f"{arch}.embedding_length": config["hidden_size"],
        f"{arch}.block_count": config["num_hidden_layers"],
        f"{arch}.feed_forward_length": config["intermediate_size"],
        f"{arch}.attention.head_count": config["num_attention_heads"],
        f"{arch}.attention.head_count_kv": config["num_key_value_heads"],
        f"{arch}.attention.key_length": head_dim,
        f"{arch}.attention.value_length": head_dim,
        f"{arch}.rope.dimension_count": head_dim,
        f"{arch}.rope.freq_base": float(theta),
        f"{arch}.attention.layer_norm_rms_epsilon": float(config.get("rms_norm_eps", 1e-6)),
    }


def write_gguf(folder: Path, path: Path, kind: str = "F32", **extra: Any) -> Written:
    """Write the model saved in ``folder`` (config.json, model.safetensors, tokenizer.json) as
    a GGUF file, its token table in GGML type ``kind``; ``extra`` adds or replaces keys."""
    import gguf
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text())
    weights = {k: v.astype(np.float32) for k, v in load_file(folder / "model.safetensors").items()}
    model_type = config["model_type"]
    arch = ARCH[model_type]
    if model_type == "gpt2":
        token = weights["transformer.wte.weight"]
        position = weights["transformer.wpe.weight"]
        head = None  # GPT-2 ties its head
    else:
        token = weights["model.embed_tokens.weight"]
        position = None
        tied = config.get("tie_word_embeddings", True)
        head = None if tied else weights.get("lm_head.weight")
    writer = gguf.GGUFWriter(path, arch)
    add_fields(writer, {"general.name": f"tiny {model_type}", **hyperparameters(config)})
    add_fields(writer, {**tokenizer_fields(folder), **extra})
    data, raw, bound = _stored(token, kind)
    writer.add_tensor("token_embd.weight", data, raw_dtype=raw)
    if position is not None:
        writer.add_tensor("position_embd.weight", position)
    if head is not None:
        writer.add_tensor("output.weight", head)
    writer.add_tensor("output_norm.weight", np.ones(token.shape[1], dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Written(path, token, bound)
