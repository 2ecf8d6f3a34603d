"""A GGUF file as a model source: its checkpoint, its config (from the metadata, through the
family registry), where its input layer's tensors are, and what ``weights`` says about it.

llama.cpp names the input layer's tensors the same way in every architecture: ``token_embd``
(the token table), ``position_embd`` (a learned positional table, GPT-2), ``token_embd_norm``
(an embedding LayerNorm), ``token_types`` (BERT's), and ``output`` for an untied head (absent:
tied to the token table).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.errors import WeightsError
from embedcli.models.gguf.checkpoint import GGUFCheckpoint
from embedcli.models.gguf.config import gguf_model_config
from embedcli.models.gguf.file import Value
from embedcli.models.keys import TableKeys

if TYPE_CHECKING:
    from embedcli.models.config import ModelConfig
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint

TOKEN = "token_embd.weight"
POSITION = "position_embd.weight"
HEAD = "output.weight"
ALTUP = "altup_proj.weight"  # Gemma 3n's AltUp projections, stacked (streams - 1, d, d)
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
    return checkpoint, gguf_model_config(checkpoint.file, rows)


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
    if family is not None and family.altup is not None:  # Gemma 3n: one stacked tensor
        assert model is not None
        shape = checkpoint.info(ALTUP).shape if ALTUP in checkpoint.names else None
        if shape is None or len(shape) != 3 or shape[0] != model.streams - 1:
            raise WeightsError(
                f"{checkpoint.path}: its metadata says {model.streams} AltUp streams, so "
                f"{ALTUP} must hold {model.streams - 1} projections; it is {shape}"
            )
        extras += [(f"altup_{i}", f"{ALTUP}[{i}]") for i in range(model.streams - 1)]
    if family is not None:
        wanted = {"token_type": family.token_type, "norm_weight": family.norm}
        wanted["norm_bias"] = family.norm
        for name, key in _EXTRAS.items():
            if wanted[name] is None:
                continue
            if key not in checkpoint.names:
                raise WeightsError(
                    f"{checkpoint.path} has no {key}: embedcli reads {family.name} with it "
                    "before the first block, and does not compute the model without it (llama.cpp "
                    "would leave that step out, or refuse the file)"
                )
            extras.append((name, key))
    if model is not None and family is not None:  # the shapes the steps need, from the header
        from embedcli.models.familykeys import check_extras  # lazy, as tables.py loads it

        check_extras(checkpoint, model, token, position, list(extras))  # type: ignore[arg-type]
    head = HEAD if HEAD in checkpoint.names else None
    layout = "GGUF" if family is None else f"GGUF, {family.name} ({model.model_type})"  # type: ignore[union-attr]
    return TableKeys(layout, token, position, head, extras=tuple(extras))


_LISTED = 1024  # an array's entries listed in full; a longer one is summed up
_TEXT = 200  # characters of a string value listed (a chat template's are counted instead)


def _number(value: Any, kind: int | None) -> Any:
    """A float32 as the shortest decimal that is that float32 (1e-06, not 9.99999997e-07);
    an infinity or NaN as its name (JSON has no such number)."""
    import numpy as np

    if kind not in (6, 12):
        return value
    number = float(value)
    if not math.isfinite(number):
        return str(number)
    return float(str(np.float32(number))) if kind == 6 else number


def _plain(value: Value) -> Any:
    """A metadata value as JSON: a number, a string (a long one cut, saying its length), an
    array as a list, or, past _LISTED entries, its length and first entries."""
    if value.type == 8:
        text = str(value.value)
        return text if len(text) <= _TEXT else f"{text[:_TEXT]}... ({len(text):,} characters)"
    if value.type != 9:
        return _number(value.value, value.type)
    if value.element == 8:
        return {"strings": len(value.value)}
    entries = [_number(v, value.element) for v in value.value[:_LISTED].tolist()]
    if len(value.value) <= _LISTED:
        return entries
    return {"entries": len(value.value), "first": entries[:8]}


def gguf_summary(checkpoint: GGUFCheckpoint) -> dict[str, Any]:
    """What ``weights`` says of a GGUF file beyond its tensors: version, architecture, the
    input layer's metadata, the tokenizer's, and every tensor's GGML type and bytes."""
    gguf = checkpoint.file
    arch_value = gguf.get("general.architecture")
    arch = str(arch_value.value) if arch_value is not None and arch_value.type == 8 else None
    # every key of the architecture (the input layer's, the positions', the blocks'), and
    # every tokenizer key but the vocabulary itself, counted
    fields = {
        key: _plain(value)
        for key, value in gguf.metadata.items()
        if arch is not None and key.startswith(f"{arch}.")
    }
    tokenizer: dict[str, Any] = {}
    for key, value in gguf.metadata.items():
        name = key.removeprefix("tokenizer.ggml.").removeprefix("tokenizer.")
        if not key.startswith("tokenizer."):
            continue
        if value.type == 9:  # tokens, scores, types, merges: how many
            tokenizer[name] = len(value.value)
        elif name == "chat_template":
            tokenizer[name] = f"{len(str(value.value)):,} characters"
        else:
            tokenizer[name] = _plain(value)
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
