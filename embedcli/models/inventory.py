"""What a checkpoint holds (``embedcli weights``): every tensor from the headers, the tables
found, the parameter count (tied tensors once), and whether the output head is tied to the token
table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from embedcli.core.memory import CHUNK_ELEMENTS
from embedcli.errors import WeightsError
from embedcli.models.checkpoint import Checkpoint
from embedcli.models.formats import TensorInfo
from embedcli.models.gguf.ollama import OllamaModel, describe, is_ollama
from embedcli.models.gguf.source import gguf_summary
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.sources import ModelSource, open_source
from embedcli.models.tables import TableKeys, find_tables, position_rows_before

if TYPE_CHECKING:
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint
    from embedcli.models.protocols import Checkpoint as CheckpointLike
    from embedcli.models.sources import ModelSource


@dataclass
class WeightsReport:
    """What ``embedcli weights`` shows about a checkpoint."""

    path: str
    format: str
    tensors: list[TensorInfo]
    layout: str | None
    token_key: str | None
    position_key: str | None
    head_key: str | None
    head_tied: str  # "same storage", "equal values", "not tied", "no output head"
    parameters: int  # elements of all tensors, tied tensors counted once
    detection_error: str | None = None
    extra: list[str] = field(default_factory=list)  # other entries of a PyTorch checkpoint
    model: dict[str, Any] | None = None  # what a model folder's config.json says, summarised
    input_layer: dict[str, str] = field(default_factory=dict)  # key -> its role before block 0
    gguf: dict[str, Any] | None = None  # a GGUF file's architecture, metadata, GGML types
    ollama: OllamaModel | None = None  # an Ollama model's manifest: its layers, its template


def inspect_weights(
    path: str | Path | Checkpoint | ModelSource,
    token_key: str | None = None,
    position_key: str | None = None,
    access: HubAccess = OFFLINE,
) -> WeightsReport:
    """List every tensor, detect the tables, and tell whether the output head is tied."""

    if isinstance(path, ModelSource):
        source = path
    elif isinstance(path, Checkpoint):
        source = ModelSource(str(path.path), path.path.name, path)
    else:
        source = open_source(path, access)
    checkpoint = source.checkpoint
    named = source.folder is not None or source.hub or source.spec.startswith("ollama:")
    label = source.label if named else str(checkpoint.path)
    model = source.summary()
    parameters = checkpoint.unique_parameters()
    gguf = None
    if checkpoint.is_gguf:
        gguf = gguf_summary(cast("GGUFCheckpoint", checkpoint))
    ollama = describe(source.spec) if is_ollama(source.spec) else None
    try:
        keys = find_tables(checkpoint, token_key, position_key, source.config)
    except WeightsError as exc:
        return WeightsReport(
            label, checkpoint.format, checkpoint.tensors, None, None, None, None,
            "no output head", parameters, str(exc), sorted(checkpoint.extra), model, gguf=gguf,
            ollama=ollama,
        )  # fmt: skip
    tied = head_tying(source, keys)
    if tied == "equal values":
        parameters -= checkpoint.info(keys.head).numel  # one table stored twice: count it once
    return WeightsReport(
        label, checkpoint.format, checkpoint.tensors, keys.layout, keys.token, keys.position,
        keys.head, tied, parameters, None, sorted(checkpoint.extra), model,
        _input_layer(keys, source), gguf, ollama,
    )  # fmt: skip


_ROLES = {
    "token_type": "token-type table (type 0 is added)",
    "norm_weight": "embedding LayerNorm weight",
    "norm_bias": "embedding LayerNorm bias",
    "project_in": "projection to hidden_size (project_in)",
    "project_bias": "the projection's bias",
    "replacement": "the row that replaces one id's rows (T5Gemma 2's EOI)",
}


def _input_layer(keys: TableKeys, source: ModelSource) -> dict[str, str]:
    """Every tensor that runs before the first block, with its role."""
    roles = {keys.token: "token table"}
    if keys.position is not None:
        before = position_rows_before(source.config)
        roles[keys.position] = "positional table" + (
            f" (position 0 is row {before})" if before else ""
        )
    for name, key in keys.extras:  # a table read twice (LayoutLM's x) is named once
        if name.startswith("altup_"):
            roles[key] = "an AltUp projection of the token rows (a stream block 0 reads)"
        elif name.startswith("concat_"):
            roles[key] = "table whose row 0 is put beside each row (no ids given)"
        elif name.startswith("row0_"):
            roles.setdefault(key, "table whose row 0 is added (ids all zero)")
        else:
            roles[key] = _ROLES[name]
    return roles


def head_tying(source: ModelSource, keys: TableKeys) -> str:
    """How the head relates to the token table: as a model's config.json says (reading no
    values), else compared (same storage, then equal values); over the network, never compared."""
    said = None if source.config is None else source.config.tie_word_embeddings
    if source.checkpoint.is_gguf:  # llama.cpp ties a head by leaving output out
        return "not tied (GGUF)" if keys.head is not None else "tied (GGUF)"
    if said is False and keys.head is None:
        return "no output head"  # a base model (LlamaModel): nothing to tie
    if said is not None:
        return "tied (config.json)" if said else "not tied (config.json)"
    if keys.head is None:
        return "no output head"
    if source.remote:  # comparing would fetch both tables
        return "not compared"
    return _head_tied(source.checkpoint, keys)


def _head_tied(checkpoint: CheckpointLike, keys: TableKeys) -> str:
    """'same storage', 'equal values' or 'not tied': the head compared with the token table,
    from the header first (shape and dtype), then a chunk of rows at a time."""
    if checkpoint.shares_storage(keys.token, keys.head):
        return "same storage"
    token, head = checkpoint.info(keys.token), checkpoint.info(keys.head)
    shape = head.shape[::-1] if keys.head_transposed else head.shape
    if shape != token.shape or head.dtype != token.dtype:
        return "not tied"
    first = checkpoint.load(keys.token)
    second = checkpoint.load(keys.head)
    second = second.T if keys.head_transposed else second
    step = max(1, CHUNK_ELEMENTS // max(first.shape[1], 1))
    for start in range(0, first.shape[0], step):
        a, b = first[start : start + step], second[start : start + step]  # (R, d)
        if not bool(((a == b) | (a.isnan() & b.isnan())).all()):
            return "not tied"
    return "equal values"
