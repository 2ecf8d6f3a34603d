"""A hub repo shaped like Llama 3.1 405B, sparse on disk: its config.json, its index (126
layers, 191 shards), and the first and last shards with a few known rows written, so that a fetch
of the wrong row reads as a different number (tests/models/test_hub_rows.py and
test_hub_downloads.py serve it through the FakeHub)."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import torch

from support.hub import gpt2_tokenizer_json

LLAMA_TABLE = "model.embed_tokens.weight"
BIG = "org/llama-405b"
BIG_SHAPE = (128256, 16384)  # Llama 3.1 405B's token table, bfloat16: 3.9 GiB
BIG_FIRST = "model-00001-of-00191.safetensors"
BIG_LAST = "model-00191-of-00191.safetensors"
BIG_IDS = [50256, 15496]  # "Hello" with the BOS its tokenizer adds
MIB = 1 << 20
LLAMA_405B_CONFIG = """{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
 "vocab_size": 128256, "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126,
 "num_attention_heads": 128, "num_key_value_heads": 8, "max_position_embeddings": 131072,
 "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
 "torch_dtype": "bfloat16", "tie_word_embeddings": false, "bos_token_id": 128000,
 "eos_token_id": 128001, "rms_norm_eps": 1e-05, "hidden_act": "silu"}"""


# ---------------------------------------------------------------- repos


def _bos_tokenizer(folder: Path) -> None:
    """GPT-2's tokenizer.json with a BOS added to every text (as Llama's is), written compact."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    tokenizer = Tokenizer.from_file(str(gpt2_tokenizer_json(folder)))
    tokenizer.post_processor = TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 50256)]
    )
    tokenizer.save(str(folder / "tokenizer.json"), pretty=False)
    (folder / "tokenizer_config.json").unlink()


def big_row(row: int, width: int = BIG_SHAPE[1]) -> torch.Tensor:
    """The values written in row ``row`` of the sparse table: exact in bfloat16, unlike any
    other row's (and unlike the zeros of the rows not written)."""
    return ((torch.arange(width) % 13 - 6 + row % 97 + 1) / 16).to(torch.bfloat16)


def write_sparse_safetensors(
    path: Path, tensors: list[tuple[str, tuple[int, ...]]], rows: dict[str, list[int]]
) -> None:
    """A bfloat16 safetensors file of ``tensors`` that holds only ``rows`` (big_row values);
    everything else is a hole, so gigabytes cost nothing on disk."""
    header, offset = {}, 0
    for name, shape in tensors:
        nbytes = 2 * int(torch.tensor(shape).prod())
        header[name] = {
            "dtype": "BF16",
            "shape": list(shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    base = 8 + len(raw)
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        handle.truncate(base + offset)
        for name, written in rows.items():
            start, width = header[name]["data_offsets"][0], header[name]["shape"][1]
            for row in written:
                handle.seek(base + start + row * width * 2)
                handle.write(big_row(row, width).view(torch.int16).numpy().tobytes())


def make_405b_shaped(folder: Path) -> Path:
    """Llama 3.1 405B's config.json, index (126 layers, 191 shards) and first and last shards
    (the token table, the head), sparse; a tokenizer of GPT-2's ids with a BOS."""
    folder.mkdir(parents=True)
    vocab, width = BIG_SHAPE
    config = json.loads(LLAMA_405B_CONFIG)
    assert (config["vocab_size"], config["hidden_size"]) == (vocab, width)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    _bos_tokenizer(folder)
    weight_map = {LLAMA_TABLE: BIG_FIRST, "lm_head.weight": BIG_LAST, "model.norm.weight": BIG_LAST}
    parts = ("input_layernorm", "post_attention_layernorm", "mlp.down_proj", "mlp.gate_proj")
    parts += ("mlp.up_proj", "self_attn.k_proj", "self_attn.o_proj", "self_attn.q_proj")
    for layer in range(126):
        shard = f"model-{2 + layer * 189 // 126:05d}-of-00191.safetensors"
        for part in (*parts, "self_attn.v_proj"):
            weight_map[f"model.layers.{layer}.{part}.weight"] = shard
    index = {"metadata": {"total_size": 810_000_000_000}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    written = sorted({r + step for r in BIG_IDS for step in (-2, -1, 0, 1, 2)})
    write_sparse_safetensors(folder / BIG_FIRST, [(LLAMA_TABLE, BIG_SHAPE)], {LLAMA_TABLE: written})
    write_sparse_safetensors(
        folder / BIG_LAST, [("lm_head.weight", BIG_SHAPE), ("model.norm.weight", (width,))], {}
    )
    return folder


def cached_files(suffix: str) -> list[Path]:
    return [p for p in (Path(os.environ["EMBEDCLI_CACHE_DIR"]) / "tensors").rglob(f"*{suffix}")]
