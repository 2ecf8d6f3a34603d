"""A GGUF file as a model source: its checkpoint, its config (from the metadata, through the
family registry), where its input layer's tensors are, and what ``weights`` says about it.

llama.cpp names the input layer's tensors the same way in every architecture: ``token_embd``
(the token table), ``position_embd`` (a learned positional table, GPT-2), ``token_embd_norm``
(an embedding LayerNorm), ``token_types`` (BERT's), and ``output`` for an untied head (absent:
tied to the token table).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.errors import WeightsError
from embedcli.models.gguf.checkpoint import GGUFCheckpoint
from embedcli.models.gguf.config import gguf_model_config
from embedcli.models.keys import TableKeys

if TYPE_CHECKING:
    from embedcli.models.config import ModelConfig
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint

TOKEN = "token_embd.weight"
POSITION = "position_embd.weight"
HEAD = "output.weight"
_EXTRAS = {
    "token_type": "token_types.weight",
    "norm_weight": "token_embd_norm.weight",
    "norm_bias": "token_embd_norm.bias",
}


def open_gguf(path: Path) -> tuple[GGUFCheckpoint, ModelConfig]:
    """A GGUF file's checkpoint and config: header and metadata read and checked, the config
    mapped through the family registry; no tensor read."""

    checkpoint = GGUFCheckpoint(path)
    if TOKEN not in checkpoint.names:
        raise WeightsError(
            f"{path} has no {TOKEN}: it is not a model with a token table (a LoRA adapter, a "
            "vision projector or a draft of one?)"
        )
    rows = checkpoint.info(TOKEN).shape[0]
    return checkpoint, gguf_model_config(checkpoint.file, rows, checkpoint.read_dtype(TOKEN))


def gguf_tables(
    checkpoint: GGUFCheckpoint,
    model: ModelConfig | None,
    token_key: str | None = None,
    position_key: str | None = None,
) -> TableKeys:
    """Where a GGUF file keeps its input layer, by llama.cpp's names."""
    token = token_key or TOKEN
    checkpoint.info(token)  # an unknown key is an error naming it
    family = None if model is None else model.family
    positional = None if model is None else model.positional
    position = None
    if position_key is not None and position_key.lower() != "none":
        checkpoint.info(position_key)
        position = position_key
    elif position_key is None and positional == "learned":
        if POSITION not in checkpoint.names:
            raise WeightsError(
                f"{checkpoint.path}: a model with learned positions keeps them in {POSITION}, "
                "and this file has none"
            )
        position = POSITION
    extras: list[tuple[str, str]] = []
    if family is not None:
        wanted = {"token_type": family.token_type, "norm_weight": family.norm}
        wanted["norm_bias"] = family.norm
        for name, key in _EXTRAS.items():
            if wanted[name] is None:
                continue
            if key not in checkpoint.names:
                raise WeightsError(
                    f"{checkpoint.path}: a {family.name} model has {key} before its first block, "
                    "and this file does not"
                )
            extras.append((name, key))
    head = HEAD if HEAD in checkpoint.names else None
    layout = "GGUF" if family is None else f"GGUF, {family.name} ({model.model_type})"  # type: ignore[union-attr]
    return TableKeys(layout, token, position, head, extras=tuple(extras))


# the metadata keys `weights` shows, after the architecture's prefix
_SHOWN = (
    "context_length",
    "embedding_length",
    "block_count",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "rope.dimension_count",
    "rope.freq_base",
    "rope.freq_base_swa",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scaling.original_context_length",
    "vocab_size",
)


def gguf_summary(checkpoint: GGUFCheckpoint) -> dict[str, Any]:
    """What ``weights`` says of a GGUF file beyond its tensors: version, architecture, the
    input layer's metadata, the tokenizer's, and every tensor's GGML type and bytes."""
    gguf = checkpoint.file
    arch_value = gguf.get("general.architecture")
    arch = str(arch_value.value) if arch_value is not None and arch_value.type == 8 else None
    fields: dict[str, Any] = {}
    if arch is not None:
        for key in _SHOWN:
            found = gguf.get(f"{arch}.{key}")
            if found is not None and found.type != 9:
                fields[f"{arch}.{key}"] = found.value
    tokenizer: dict[str, Any] = {}
    for key in ("model", "pre", "bos_token_id", "eos_token_id", "add_bos_token"):
        found = gguf.get(f"tokenizer.ggml.{key}")
        if found is not None and found.type != 9:
            tokenizer[key] = found.value
    tokens = gguf.get("tokenizer.ggml.tokens")
    if tokens is not None and tokens.type == 9:
        tokenizer["tokens"] = len(tokens.value)
    name = gguf.get("general.name")
    return {
        "version": gguf.version,
        "architecture": arch,
        "name": str(name.value) if name is not None and name.type == 8 else None,
        "metadata": fields,
        "tokenizer": tokenizer,
        "alignment": gguf.alignment,
        "tensor_types": {t.name: checkpoint.ggml_type(t.name) for t in gguf.tensors},
        "tensor_bytes": {t.name: t.nbytes for t in gguf.tensors},
        "file_bytes": gguf.size,
    }
