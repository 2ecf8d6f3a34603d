"""inspect-shapes, its presets, and broadcasting (also how embed shows the addition)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.core.broadcast import BroadcastPlan
from embedcli.core.steps import NORM_NAMES, rope_formula, scale_is_root_d, scale_text
from embedcli.render.common import (
    WIDE,
    add_row,
    first_fitting,
    format_bytes,
    format_shape,
    heading,
    items_line,
    new_table,
    note,
    plural,
    to_text,
)

if TYPE_CHECKING:
    from embedcli.analysis.training import TrainingMemory
    from embedcli.core.config import EmbedConfig
    from embedcli.pipeline.shapes import ShapesReport

TENSOR_NAMES = ("token_embeddings", "position_embeddings")
ADDITION_TITLE = "Broadcast: position embeddings are added to every sequence of the batch"


def broadcast_table(plan: BroadcastPlan, names: Sequence[str], *, stacked: bool = False) -> Table:
    """Per axis: each operand's size after left-padding, the result, and the rule applied;
    ``stacked`` puts each padded shape on a line of its own (narrow terminals)."""
    table = Table()
    table.add_column(Text("axis"), justify="right", no_wrap=True)
    for name, shape, aligned in zip(names, plan.shapes, plan.aligned, strict=True):
        header = f"{name}\n{format_shape(shape)}"
        if len(aligned) > len(shape):
            header += "\n" if stacked else " "
            header += f"→ {format_shape(aligned)}"
        table.add_column(Text(header, justify="right"), justify="right", no_wrap=True)
    table.add_column(Text("result"), justify="right", no_wrap=True)
    table.add_column(Text("rule"), no_wrap=True)
    for axis in plan.axes:
        sizes = []
        for shape, aligned, size in zip(plan.shapes, plan.aligned, axis.sizes, strict=True):
            padded = axis.axis + len(aligned) < len(aligned) - len(shape)  # left of the real axes
            sizes.append(f"{size} (padded)" if padded else str(size))
        rule = "sizes equal: kept" if axis.rule == "equal" else f"1 stretched to {axis.result}"
        add_row(table, axis.axis, *sizes, axis.result, rule)
    return table


def broadcast_block(plan: BroadcastPlan, names: Sequence[str], title: str, width: int) -> Group:
    """Title, the axis table (stacked headers when the terminal is narrow), and the result."""
    return Group(
        heading(title),
        first_fitting(
            width,
            lambda: broadcast_table(plan, names),
            lambda: broadcast_table(plan, names, stacked=True),
        ),
        Text(f"result: {format_shape(plan.result)}"),
    )


def addition_view(
    plan: BroadcastPlan | None,
    config: EmbedConfig,
    *,
    width: int,
    head_dim: int | None = None,
    model: Mapping[str, Any] | None = None,
) -> RenderableType:
    """How positions enter: the broadcast of the addition, or why nothing is added; and a
    model's input scaling (Gemma's sqrt(d_model)). ``head_dim``: one attention head's width,
    where known; ``model``: what a model's config.json says (its rope scaling)."""
    scaled = (
        f"scaled_embeddings = token_embeddings × {scale_text(config)} (the model's input scaling"
        + (f", √d_model = √{config.d_model})" if scale_is_root_d(config) else ")")
        if config.embed_scale != 1.0
        else None
    )
    source = "scaled_embeddings" if scaled else "token_embeddings"
    if config.projects and config.projection == "lookup":  # OPT's, MobileBERT's
        source = "projected_embeddings"
    if config.token_types:
        source = f"{source} + token_type_embeddings"
    if plan is not None:
        title = ADDITION_TITLE
        if len(plan.shapes[1]) == 3:
            title = "Broadcast: each sequence reads its own position rows (counted per sequence)"
        names = (source, TENSOR_NAMES[1])  # what the positions are added to
        view: RenderableType = broadcast_block(plan, names, title, width)
    elif config.positional == "rope":
        view = Text(
            f"positional rope: nothing is added, input_embeddings = {_normed(source, config)}; "
            "attention "
            f"rotates each pair of query and key dimensions by rope_angles = position × "
            f"{rope_formula(config, head_dim)}, so a rope model has no position_embeddings "
            f"tensor at all{_rope_scaling(config, model)}"
        )
    else:
        how = {
            "alibi": "attention adds a bias per head, slope × distance, to its scores",
            "relative": "attention adds a learned bias per distance bucket (T5) to its scores"
            if (model or {}).get("relative_attention") or not model
            else "attention computes the relative positions itself (DeBERTa's, Funnel's and "
            "XLNet's relative encodings)",
        }.get(config.positional, "the model has no positions")
        view = Text(
            f"positional {config.positional}: nothing is added, input_embeddings = "
            f"{_normed(source, config)}; {how}"
        )
    return view if scaled is None else Group(Text(scaled), view)


def _rope_scaling(config: EmbedConfig, model: Mapping[str, Any] | None) -> str:
    """What the rope note says of a model's rope scaling: applied, or not computed."""
    scaling = (model or {}).get("rope_scaling")
    said = dict(config.rope_scaling or ())
    if said:  # the type, also where no model summary comes with it
        scaling = scaling or said.get("rope_type")
    if said and said.get("applied", True):
        return f", with the model's {scaling} rope scaling applied to the frequencies"
    if scaling:
        return (
            f" (the model's rope_scaling, {scaling}, which stretches long contexts, is one "
            "embedcli does not compute: no angles are shown)"
        )
    return ""


def _normed(source: str, config: EmbedConfig) -> str:
    """The tensor the first block reads: ``source``, or its norm (BLOOM's LayerNorm)."""
    return f"{NORM_NAMES[config.norm_kind]}({source})" if config.norm_eps is not None else source


def broadcast_view(plan: BroadcastPlan, *, width: int = 100, plain: bool = True) -> RenderableType:
    """``embedcli broadcast``: the aligned shapes, each axis's rule, then the result."""
    names = [f"shape {i}" for i in range(1, len(plan.shapes) + 1)]
    steps = Text(
        "Right-align the shapes and pad the shorter ones with 1s on the left; then, per axis, "
        "equal sizes are kept and a 1 is stretched to the other size."
    )
    return Group(steps, broadcast_block(plan, names, "Broadcast, axis by axis", width))


# ---------------------------------------------------------------- inspect-shapes


def _tensors_table(report: ShapesReport, columns: Sequence[str]) -> Table:
    table = new_table(*columns, right=("numel", "bytes"))
    for t in report.tensors:
        values = {
            "tensor": t.name,
            "shape": format_shape(t.shape),
            "dtype": t.dtype,
            "device": t.device,
            "numel": f"{t.numel:,}",
            "bytes": format_bytes(t.bytes),
        }
        add_row(table, *(values[c] for c in columns))
    return table


def tensors_block(report: ShapesReport, width: int) -> Group:
    """Every tensor of the forward pass; narrow terminals lose device, then dtype (both are in
    the header line)."""
    full = ("tensor", "shape", "dtype", "device", "numel", "bytes")
    return Group(
        heading("Tensors of the forward pass"),
        first_fitting(
            width,
            lambda: _tensors_table(report, full),
            lambda: _tensors_table(report, [c for c in full if c != "device"]),
            lambda: _tensors_table(report, [c for c in full if c not in ("device", "dtype")]),
        ),
    )


def shapes_tables(report: ShapesReport, *, width: int = 100, plain: bool = True) -> RenderableType:
    """Every tensor, the broadcast, the parameters, and addition versus concatenation."""
    cfg = report.config
    header = items_line(
        [
            configuration_label(report),
            f"vocab {cfg.vocab_size:,}",
            f"d {cfg.d_model:,}",
            f"context {cfg.context_length:,}" if cfg.context_limit else "no context limit",
            f"{cfg.positional} positions",
            f"batch {report.batch_size:,}",
            f"seq-len {report.seq_len:,}",
            report.device,
            cfg.dtype,
        ],
        width,
        lead="inspect-shapes",
    )
    parts = [
        header,
        tensors_block(report, width),
        addition_view(report.broadcast, cfg, width=width, head_dim=report.head_dim),
        parameters_block(report, width),
    ]
    if report.broadcast is not None:  # only where position vectors are added at all
        parts.append(combine_block(report))
    if report.training is not None:
        parts.append(training_block(report.training, width))
    return Group(*parts)


CHANGE_NAMES = {"vocab_size": "vocab", "d_model": "d", "context_length": "context"}


def configuration_label(report: ShapesReport) -> str:
    """The configuration actually used: the preset and where its values come from, or what
    the flags changed in it ("custom: gpt2 with d 4,096"), never the bare preset's name."""
    if report.preset_changes and report.preset != "checkpoint":
        changed = ", ".join(
            f"{CHANGE_NAMES.get(k, k)} {v:,}" if isinstance(v, int) else f"{k} {v}"
            for k, v in report.preset_changes.items()
        )
        return f"custom: {report.preset} with {changed}"
    if report.preset == "checkpoint":  # --weights: no preset at all
        return f"checkpoint {report.preset_description}"
    hub = report.preset_source and "/" in report.preset_source  # a model's hub id
    source = f", {report.preset_source}" if hub else ""
    return f"preset {report.preset} ({report.preset_description}{source})"


PRECISION_HEADS = {"float32": "float32", "bfloat16": "bf16 / fp16", "mixed": "mixed"}


def training_block(memory: TrainingMemory, width: int) -> Group:
    """One training step's memory, part by part, per precision: the input layer, then the
    whole model where its size is known; the formulas, and what mixed precision means."""
    name = {"adamw": "AdamW", "sgd": "SGD"}[memory.optimizer]
    parts: list[RenderableType] = [
        heading(f"Training memory of one step ({name}): the input layer, "
                f"{memory.layer_parameters:,} parameters"),
        _training_table(memory, "layer", width),
    ]  # fmt: skip
    if memory.total_model is not None:
        parts += [
            heading(f"The whole model, {memory.model_parameters:,} parameters (activations not "
                    "counted: they depend on its layers)"),
            _training_table(memory, "model", width),
        ]  # fmt: skip
    per_parameter = (
        "16 bytes a parameter, the ZeRO paper's count"
        if name == "AdamW"
        else ("8 bytes a parameter, no optimizer state")
    )
    parts.append(
        note(
            "mixed: bf16 weights and gradients, an fp32 master copy and fp32 optimizer state "
            f"({name}: {per_parameter})"
        )
    )
    return Group(*parts)


def _training_table(memory: TrainingMemory, which: str, width: int) -> RenderableType:
    heads = list(PRECISION_HEADS.values())

    def table(formulas: bool) -> Table:
        built = new_table(
            "part", *(["formula"] if formulas else []), *heads, right=heads, wrap=("formula",)
        )
        rows = [(p.part, p.formula, getattr(p, which)) for p in memory.parts]
        total = memory.total_layer if which == "layer" else memory.total_model
        for part, formula, values in [*rows, ("total", "", total)]:
            if values is None:
                continue
            cells = [format_bytes(values[k]) for k in PRECISION_HEADS]
            add_row(built, part, *([formula] if formulas else []), *cells)
        return built

    with_formulas = table(True)
    if _natural_width(with_formulas) <= width:
        return with_formulas
    # Too narrow for the formulas beside the numbers (a column of a few letters a line): the
    # table without them, and each part's formula under it.
    formulas = [f"{p.part}: {p.formula}" for p in memory.parts if getattr(p, which) is not None]
    return Group(table(False), *(note(line) for line in formulas))


def _natural_width(renderable: RenderableType) -> int:
    """The columns ``renderable`` takes when nothing wraps."""
    return max((cell_len(line) for line in to_text(renderable, width=WIDE).splitlines()), default=0)


def _parameters_table(report: ShapesReport, half: str | None, stored: bool = True) -> Table:
    """The tables' parameters and bytes: in float32, in 16 bits (``half`` its heading; None:
    left out, for a narrow terminal), and as the checkpoint's file holds them."""
    p, cfg = report.parameters, report.config
    held = p.stored if stored else None  # a checkpoint's tables as its file holds them
    sizes = ("float32", *([half] if half else []), *(["in the file"] if held else []))
    table = new_table("table", "shape", "parameters", *sizes, right=("parameters", *sizes))

    def cells(bytes32: int, bytes16: int, name: str | None) -> tuple[str, ...]:
        found = "" if not held else (
            format_bytes(sum(t["bytes"] for t in held.values())) if name is None
            else f"{format_bytes(held[name]['bytes'])} {held[name]['type']}" if name in held
            else ""
        )  # fmt: skip
        return (
            format_bytes(bytes32),
            *([format_bytes(bytes16)] if half else []),
            *([found] if held else []),
        )

    rows = [("token_embeddings", (cfg.vocab_size, cfg.width), p.token_embeddings)]
    if p.position_embeddings:
        shape = (cfg.position_rows, cfg.d_model)
        rows.append(("position_embeddings", shape, p.position_embeddings))
    for name, shape, count in rows:
        add_row(
            table, name, format_shape(shape), f"{count:,}",
            *cells(p.table_bytes(name, "float32"), p.table_bytes(name, "float16"), name),
        )  # fmt: skip
    if cfg.positional in ("sinusoidal", "rope"):
        fixed = "fixed buffer" if cfg.positional == "sinusoidal" else "none"
        add_row(table, f"{cfg.positional} positions", fixed, "0", *cells(0, 0, ""))
    total = p.bytes_by_dtype["float32"], p.bytes_by_dtype["float16"]
    add_row(table, "total", "", f"{p.total:,}", *cells(*total, None))
    return table


def parameters_block(report: ShapesReport, width: int) -> Group:
    """Rows for each table and the total, with memory in every dtype; then the share."""
    p = report.parameters
    parts: list[RenderableType] = [
        heading("Parameters"),
        first_fitting(
            width,
            lambda: _parameters_table(report, "float16 / bfloat16"),
            lambda: _parameters_table(report, "16-bit"),
            lambda: _parameters_table(report, None),
            lambda: _parameters_table(report, "16-bit", stored=False),
        ),
    ]
    if report.config.positional == "sinusoidal":
        parts.append(note("sinusoidal positions are a fixed (context, d) buffer: no parameters"))
    else:
        inside = {
            "rope": "rope angles are computed inside attention: no parameters",
            "alibi": "ALiBi's slopes are fixed numbers, one per head, used inside attention: "
            "no parameters",
            "relative": "relative positions act inside attention (T5's bias, a small learned "
            "table of buckets × heads; DeBERTa's and XLNet's encodings): counted in the model, "
            "not here",
        }.get(report.config.positional)
        if inside:
            parts.append(note(inside))
    if p.model_parameters is not None and p.share_of_model is not None:
        parts.append(Text(f"the embeddings are {p.share_of_model:.2%} of {_whole(report)}"))
    if p.active_parameters is not None and p.experts is not None:
        parts.append(
            Text(
                f"a mixture of experts: each token runs through {p.experts_per_token} of the "
                f"{p.experts} experts of each layer that has them, {p.active_parameters:,} "
                f"parameters ({p.share_of_active:.2%} of them are the embeddings); every "
                "expert is counted in the total and held in memory"
            )
        )
    return Group(*parts)


def _whole(report: ShapesReport) -> str:
    """What the share is of: the checkpoint's parameters, or the preset model's."""
    count = f"{report.parameters.model_parameters:,}"
    if report.preset == "checkpoint":
        return f"the {count} parameters in {report.preset_description} (tied tensors counted once)"
    head = (
        "output head tied to the token table"
        if report.preset_tied
        else "its output head is a separate vocab × d matrix, not counted in the embeddings"
    )
    return f"the whole {report.preset} model's {count} parameters ({head})"


def combine_block(report: ShapesReport) -> Group:
    """Adding keeps the width at d; concatenating doubles it, and the next layer pays."""
    c = report.combine
    table = new_table(
        "combine",
        "result width",
        "first linear layer",
        "its parameters",
        right=("result width", "first linear layer", "its parameters"),
    )
    for name, size, params in (
        ("add", c.add_width, c.add_linear_parameters),
        ("concatenate", c.concat_width, c.concat_linear_parameters),
    ):
        add_row(table, name, f"{size:,}", f"{size:,} → {c.d_model:,}", f"{params:,}")
    extra = c.concat_extra_parameters
    return Group(
        heading("Add or concatenate token and position vectors?"),
        table,
        Text(f"concatenating costs {plural(extra, 'more parameter')} in that layer alone"),
    )
