"""Reports -> JSON-ready dicts: the ``--json`` twin of every view in render/.

A report's field names are its JSON keys, so each twin is ``asdict`` plus the exceptions named in
its docstring. This module imports nothing of rich (nor does the package's ``__init__``), so
``--json`` and ``--count`` never pay for it; io/jsonstream writes the dicts out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from embedcli.corpus.pieces import encodings_for
from embedcli.corpus.report import FileCount
from embedcli.tokenization.engines import used_by

if TYPE_CHECKING:
    import tiktoken

    from embedcli.analysis.neighbors import TokenNeighbors
    from embedcli.analysis.projection import Projection
    from embedcli.analysis.stats import TableStats
    from embedcli.core.broadcast import BroadcastPlan
    from embedcli.core.config import EmbedConfig, Preset
    from embedcli.core.devices import DeviceInfo
    from embedcli.corpus.windows import WindowPlan
    from embedcli.models.inventory import WeightsReport
    from embedcli.pipeline.embed import EmbedReport
    from embedcli.pipeline.positionmaps import Heatmap
    from embedcli.pipeline.shapes import ShapesReport
    from embedcli.pipeline.sourceinfo import SourceInfo
    from embedcli.pipeline.undertrained import UndertrainedReport
    from embedcli.tokenization.encodings import Token
    from embedcli.tokenization.explain import Explained
    from embedcli.tokenization.tokens import TokenizeReport


def broadcast_json(plan: BroadcastPlan) -> dict[str, Any]:
    """``{"shapes", "aligned", "axes": [{"axis", "sizes", "result", "rule"}], "result"}``."""
    return {
        "shapes": [list(s) for s in plan.shapes],
        "aligned": [list(s) for s in plan.aligned],
        "axes": [
            {"axis": a.axis, "sizes": list(a.sizes), "result": a.result, "rule": a.rule}
            for a in plan.axes
        ],
        "result": list(plan.result),
    }


def token_json(token: Token) -> dict[str, Any]:
    """A token's fields, less ``display`` (a table's rendering) and the context fields that are
    None (``index``, ``pad``, ``score``)."""
    data = asdict(token)
    del data["display"]
    for key in ("index", "pad", "score", "added"):
        if data[key] is None:
            del data[key]
    return data


def embed_config_json(config: EmbedConfig, source: SourceInfo) -> dict[str, Any]:
    """One ``config`` object: the config's fields (``EmbedConfig.to_dict``), then the source's;
    a seeded source says ``weights: null`` alone, a checkpoint's says ``seed: null`` (the seed
    played no part), its keys, and its model summary and table type where it has them."""
    data = {
        **config.to_dict(),
        "device": source.device,
        "requested_device": source.requested_device,
        "encoding": source.encoding,
        "pad_id": source.pad_id,
    }
    if not source.trained:
        return {**data, "weights": None}
    data.update(
        seed=None,
        weights=source.weights,
        layout=source.layout,
        token_key=source.token_key,
        position_key=source.position_key,
    )
    if source.model:
        data["model"] = source.model
    if source.table_type is not None:
        data["table_type"] = asdict(source.table_type)
    return data


def embed_json(report: EmbedReport) -> dict[str, Any]:
    """The embed report as plain JSON types. Exceptions: ``config`` and ``source`` are one
    object (:func:`embed_config_json`); each step's ``operation`` is left out; each token also
    carries ``position``, the same number as ``index`` under its name before 0.2 (kept for one
    release)."""
    return {
        "config": embed_config_json(report.config, report.source),
        "input_ids": report.input_ids,
        "attention_mask": report.attention_mask,
        "tokens": [[{**token_json(t), "position": t.index} for t in seq] for seq in report.tokens],
        "truncated": report.truncated,
        "steps": [
            {"name": s.name, "shape": list(s.shape), "dtype": s.dtype, "device": s.device}
            for s in report.steps  # the operation is the table's: not in the JSON
        ],
        "broadcast": None if report.broadcast is None else broadcast_json(report.broadcast),
        "token_embeddings": report.token_embeddings,
        "position_embeddings": report.position_embeddings,
        "input_embeddings": report.input_embeddings,
        "verify": None
        if report.verify is None
        else {**asdict(report.verify), "ok": report.verify.ok},
        "rope_angles": report.rope_angles,
        "rope_attention_factor": report.rope_attention_factor,
        "rope_sequence_length": report.rope_sequence_length,
        "scaled_embeddings": report.scaled_embeddings,
        "projected_embeddings": report.projected_embeddings,
        "token_type_embeddings": report.token_type_embeddings,
        "position_ids": report.position_ids,
        "similarity": report.similarity,
        # where the family has them: the row-0 tables' sum, what block 0 reads (its layout)
        **(
            {"row0_embeddings": report.row0_embeddings}
            if report.row0_embeddings is not None
            else {}
        ),
        **({"block_input": report.block_input} if report.block_input is not None else {}),
    }


def devices_json(
    rows: Sequence[DeviceInfo], torch_version: str, cuda_version: str | None, auto: str
) -> dict[str, Any]:
    """``embedcli devices --json``."""
    return {
        "torch_version": torch_version,
        "cuda_version": cuda_version,
        "auto": auto,
        "devices": [asdict(row) for row in rows],
    }


def tokenize_json(report: TokenizeReport) -> dict[str, Any]:
    """``{"encoding", "n_vocab", "count", "tokens": [{"id", "piece", "bytes", "index"}]}``;
    without tokens when only the count was asked for (``characters`` and ``segments`` are for
    the table view)."""
    data: dict[str, Any] = {
        "encoding": report.encoding,
        "n_vocab": report.n_vocab,
        "count": report.count,
    }
    if report.tokens is not None:
        data["tokens"] = [token_json(t) for t in report.tokens]
    if report.offsets is not None:
        data["offsets"] = report.offsets
    return data


def explain_json(explained: Explained) -> dict[str, Any]:
    """``tokenize --explain --json``: the encoding, its split pattern, the chunks shown (each
    with its starting parts, merge steps and ids; parts as hex bytes), how many chunks there
    are, and every id."""
    return asdict(explained)


def tokenize_jsons(reports: TokenizeReport | Sequence[TokenizeReport]) -> dict[str, Any]:
    """One encoding's object, or ``{"encodings": [...]}`` for several."""
    if not isinstance(reports, Sequence):
        return tokenize_json(reports)
    objects = [tokenize_json(report) for report in reports]
    return objects[0] if len(objects) == 1 else {"encodings": objects}


def shapes_json(report: ShapesReport) -> dict[str, Any]:
    """``{"config", "tensors", "parameters", "broadcast", ...}`` for ``inspect-shapes --json``:
    ``config`` holds the config's fields, the batch, the device and the preset's."""
    return {
        "config": {
            **report.config.to_dict(),
            "batch_size": report.batch_size,
            "seq_len": report.seq_len,
            "device": report.device,
            "preset": report.preset,
            "preset_source": report.preset_source,
            "preset_changes": report.preset_changes,
        },
        "tensors": [
            {
                "name": t.name,
                "shape": list(t.shape),
                "dtype": t.dtype,
                "device": t.device,
                "numel": t.numel,
                "bytes": t.bytes,
            }
            for t in report.tensors
        ],
        "parameters": asdict(report.parameters),
        "broadcast": None if report.broadcast is None else broadcast_json(report.broadcast),
        "combine": asdict(report.combine),
        **({} if report.training is None else {"training": asdict(report.training)}),
    }


def presets_json(presets: Sequence[Preset]) -> dict[str, Any]:
    """``inspect-shapes --list-presets --json``: ``{"presets": [...]}``, in family order."""

    def one(p: Preset) -> dict[str, Any]:
        cfg = p.config
        return {
            "name": p.name,
            "description": p.description,
            "family": p.family,
            "source": p.source,
            "vocab_size": cfg.vocab_size,
            "d_model": cfg.d_model,
            "context_length": cfg.context_length if cfg.context_limit else None,
            "positional": cfg.positional,
            "batch_size": p.batch_size,
            "seq_len": p.seq_len,
            "n_layers": p.n_layers,
            "model_parameters": p.model_parameters,
            "active_parameters": p.active_parameters,
            "experts": p.experts,
            "experts_per_token": p.experts_per_token,
            "published": p.published,
            "published_note": p.published_note,
        }

    return {"presets": [one(p) for p in presets]}


def weights_json(report: WeightsReport) -> dict[str, Any]:
    """``embedcli weights --json``."""
    return {
        "path": report.path,
        "format": report.format,
        "layout": report.layout,
        "token_key": report.token_key,
        "position_key": report.position_key,
        "head_key": report.head_key,
        "head_tied": report.head_tied,
        "parameters": report.parameters,
        "detection_error": report.detection_error,
        "other_entries": report.extra,
        "model": report.model,
        "input_layer": report.input_layer,
        "tensors": [_tensor_json(t, report.gguf) for t in report.tensors],
        **({"gguf": _gguf_json(report.gguf)} if report.gguf else {}),
        **({"ollama": asdict(report.ollama)} if report.ollama else {}),
    }


def _tensor_json(tensor: Any, gguf: dict[str, Any] | None) -> dict[str, Any]:
    found = {"name": tensor.name, "shape": list(tensor.shape), "dtype": tensor.dtype}
    if gguf:  # how the tensor is stored, and what it is read as (dtype)
        found["ggml_type"] = gguf["tensor_types"][tensor.name]
        found["bytes"] = gguf["tensor_bytes"][tensor.name]
    return found


def _gguf_json(gguf: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in gguf.items() if k not in ("tensor_types", "tensor_bytes")}


def stats_json(source: str, stats: Sequence[TableStats]) -> dict[str, Any]:
    """``embedcli stats --json``."""
    return {"source": source, "tables": [{**asdict(s), "shape": list(s.shape)} for s in stats]}


def neighbors_json(source: str, rows: Sequence[TokenNeighbors]) -> dict[str, Any]:
    """``embedcli neighbors --json``."""
    return {
        "source": source,
        "tokens": [
            {**token_json(row.token), "neighbors": [token_json(n) for n in row.neighbors]}
            for row in rows
        ],
    }


def undertrained_json(report: UndertrainedReport) -> dict[str, Any]:
    """``embedcli undertrained --json``: ``asdict``, each candidate's token as its fields."""
    data = asdict(report)
    data["shape"] = list(report.shape)
    data["candidates"] = [
        {**token_json(c.token), **{k: v for k, v in asdict(c).items() if k != "token"}}
        for c in report.candidates
    ]
    return data


def project_json(report: Projection) -> dict[str, Any]:
    """``embedcli project --json``: ``asdict`` less ``cloud`` (every row's coordinates: ask for
    them with --first-ids), each point a token's fields with its ``origin``, ``x`` (PC1) and ``y``
    (PC2); ``noise_ratio`` added."""
    return {
        "source": report.source,
        "seeded": report.seeded,
        "encoding": report.encoding,
        "table_shape": list(report.table_shape),
        "method": report.method,
        "explained_variance": list(report.explained_variance),
        "explained_variance_ratio": list(report.explained_variance_ratio),
        "total_variance": report.total_variance,
        "noise_edge": report.noise_edge,
        "noise_ratio": report.noise_ratio,
        "structure": report.structure,
        "points": [
            {**token_json(p.token), "origin": p.origin, "x": p.x, "y": p.y} for p in report.points
        ],
    }


def heatmap_json(positional: str, heatmap: Heatmap) -> dict[str, Any]:
    """``embedcli positions --json``."""
    return {
        "positional": positional,
        "kind": heatmap.kind,
        "source": heatmap.source,
        "shape": list(heatmap.matrix.shape),
        "matrix": heatmap.matrix,
    }


def windows_json(
    enc: tiktoken.Encoding, plan: WindowPlan, shown: list[dict[str, list]]
) -> dict[str, Any]:
    """``embedcli windows --json``: the plan's fields and properties, and the shown batches."""
    return {
        "encoding": enc.name,
        **asdict(plan),
        "num_windows": plan.num_windows,
        "num_batches": plan.num_batches,
        "dropped_windows": plan.dropped_windows,
        "dropped_tokens": plan.dropped_tokens,
        "batches": shown,
    }


def count_file_json(item: Any) -> dict[str, Any]:
    """One line of ``count --jsonl``: a file's counts, or why it was skipped."""

    if isinstance(item, FileCount):
        return {"path": item.path, "bytes": item.bytes, "tokens": dict(item.tokens)}
    return {"path": item.path, "skipped": item.reason}


def _engines(names: Any) -> dict[str, list[str]]:
    """The engines that counted each encoding (engines.py), fastest first."""

    own = encodings_for(tuple(names))
    return {name: used_by(enc) for name, enc in zip(names, own, strict=True)}


def count_json(
    report: Any, context: tuple[str | None, int] | None = None, sort: str = "tokens"
) -> dict[str, Any]:
    """``count --json``: ``{"encodings", "files", "skipped", "totals", "engines"}`` (and
    ``context``), files in ``--sort`` order; ``engines``: which engines counted each
    encoding."""
    data = {
        "encodings": list(report.encodings),
        "files": [count_file_json(f) for f in report.sorted_files(sort)],
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "totals": report.totals,
        "engines": _engines(report.encodings),
    }
    if context is not None:
        label, size = context
        data["context"] = {
            "name": label,
            "tokens": size,
            "share": {n: report.totals["tokens"][n] / size for n in report.encodings},
        }
    return data
