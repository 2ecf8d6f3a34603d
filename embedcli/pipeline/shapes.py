"""The inspect-shapes job: every tensor of the forward pass, the parameters and their cost.

On the meta device (the default) nothing is allocated: the tensors are worked out from the config
(embedcli.core.shapeplan, proven equal to the module's meta trace), so any model size is
inspected at the cost of starting Python; on a real device the core module runs with real numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from embedcli.analysis.training import TrainingMemory, training_memory
from embedcli.core.broadcast import BroadcastPlan
from embedcli.core.config import DTYPES, EmbedConfig, Preset, changes
from embedcli.core.devices import dtype_size
from embedcli.core.memory import ensure_room
from embedcli.core.shapeplan import TraceStep, planned_trace
from embedcli.core.windowpad import check_padded
from embedcli.errors import ConfigError
from embedcli.pipeline.embed import prepare_module
from embedcli.pipeline.shapesrequest import ShapesRequest
from embedcli.pipeline.sources import shapes_source

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Parameters:
    """The two tables' parameter counts, and what they weigh."""

    token_embeddings: int
    position_embeddings: int
    total: int
    bytes: int  # in the configured dtype
    bytes_by_dtype: dict[str, int]
    model_parameters: int | None  # the whole model's, where the preset knows it
    share_of_model: float | None  # total / model_parameters
    # a mixture of experts: the parameters one token runs through, and k of the E experts
    active_parameters: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    # a checkpoint's tables as the file holds them, {table: {"type": "Q8_0", "bytes": n}},
    # where the flags change none of their sizes
    stored: dict[str, dict[str, Any]] | None = None

    def table_bytes(self, table: str, dtype: str) -> int:
        """What one table (``token_embeddings``, ``position_embeddings``) weighs in ``dtype``."""
        return getattr(self, table) * dtype_size(dtype)

    @property
    def share_of_active(self) -> float | None:
        """total / active_parameters: the embeddings' share of what one token runs through."""
        return None if not self.active_parameters else self.total / self.active_parameters


@dataclass(frozen=True)
class CombineCost:
    """Adding position vectors keeps the width d; concatenating doubles it, and the first
    linear layer that reads the result (projecting back to d) pays for it."""

    d_model: int
    add_width: int
    concat_width: int
    add_linear_parameters: int  # d -> d, weights and bias
    concat_linear_parameters: int  # 2d -> d, weights and bias

    @property
    def concat_extra_parameters(self) -> int:
        """What concatenating costs the first linear layer beyond adding."""
        return self.concat_linear_parameters - self.add_linear_parameters


@dataclass
class ShapesReport:
    """Everything ``embedcli inspect-shapes`` shows, as plain data."""

    config: EmbedConfig
    batch_size: int  # B of the batch traced
    seq_len: int  # T
    device: str  # where the module ran ("meta": shapes only)
    preset: str
    preset_description: str
    preset_source: str | None  # a real family's hub id
    preset_changes: dict[str, Any]  # what the flags changed from the preset's own config
    preset_tied: bool  # the preset's output head is its token table
    tensors: list[TraceStep]  # every tensor of the forward pass, measured from the tensor
    parameters: Parameters
    broadcast: BroadcastPlan | None
    combine: CombineCost
    training: TrainingMemory | None = None  # with --train
    # one attention head's width where the preset knows it (rope's note: the part rotated);
    # not in the JSON, whose config is a model folder's too, and a folder's Preset has no heads
    head_dim: int | None = None


def count_parameters(config: EmbedConfig, preset: Preset) -> Parameters:
    """Parameters of the token and positional tables, their memory per dtype, their share."""
    token = config.vocab_size * config.width
    position = config.position_rows * config.d_model if config.has_positional_table else 0
    total = token + position
    # The share only means something for the preset's own sizes.
    same = ("vocab_size", "d_model", "context_length", "positional")  # the dtype changes no count
    own = all(getattr(config, name) == getattr(preset.config, name) for name in same)
    model = preset.model_parameters if own else None
    moe = own and preset.experts is not None
    return Parameters(
        token_embeddings=token,
        position_embeddings=position,
        total=total,
        bytes=total * dtype_size(config.dtype),
        bytes_by_dtype={name: total * dtype_size(name) for name in DTYPES},
        model_parameters=model,
        share_of_model=None if model is None else total / model,
        active_parameters=preset.active_parameters if moe else None,
        experts=preset.experts if moe else None,
        experts_per_token=preset.experts_per_token if moe else None,
        stored={t: {"type": kind, "bytes": size} for t, kind, size in preset.stored}
        if own and preset.stored
        else None,
    )


def combine_cost(d_model: int) -> CombineCost:
    """Addition versus concatenation of token and position vectors of width ``d_model``."""
    return CombineCost(
        d_model=d_model,
        add_width=d_model,
        concat_width=2 * d_model,
        add_linear_parameters=d_model * d_model + d_model,
        concat_linear_parameters=2 * d_model * d_model + d_model,
    )


def inspect(request: ShapesRequest) -> ShapesReport:
    """``inspect-shapes``: the preset (with the flags applied) or the checkpoint the request
    names, every tensor of its forward pass planned on the request's device."""
    base, config, tables = shapes_source(
        request.preset, request.overrides, request.weights, request.token_key,
        request.position_key, load=request.device != "meta", access=request.access,
    )  # fmt: skip
    return run_inspect(
        config, base, batch_size=request.batch_size, seq_len=request.seq_len,
        device=request.device, tables=tables, train=request.counted_training,
    )  # fmt: skip


def run_inspect(
    config: EmbedConfig,
    preset: Preset,
    *,
    batch_size: int | None = None,
    seq_len: int | None = None,
    device: str = "meta",
    tables: tuple[torch.Tensor, torch.Tensor | None] | None = None,
    planned: bool = True,
    train: str | None = None,
) -> ShapesReport:
    """Trace a (batch, seq_len) batch (the preset's own sizes where not given) through the
    module on ``device``. On the meta device (shapes only) the tensors are worked out from the
    config (:mod:`embedcli.core.shapeplan`) without importing torch; ``planned=False`` runs the
    module there instead, as the tests do to check that the two agree. ``train`` (an optimizer's
    name) adds the memory of one training step."""
    batch_size = batch_size or preset.batch_size
    seq_len = seq_len or preset.seq_len
    config.check_length(seq_len, "--seq-len", "lower -t/--seq-len or raise --context-length")
    check_padded(seq_len, config, "--seq-len")  # LED: the window's pads take positions
    if batch_size * seq_len * config.d_model * 8 >= 2**63:  # torch counts bytes in an int64
        raise ConfigError(
            f"a ({batch_size:,}, {seq_len:,}, {config.d_model:,}) tensor has more bytes than "
            "torch can count; lower -b, -t or -d"
        )
    if planned and device == "meta" and tables is None:
        steps, addition = planned_trace(config, batch_size, seq_len)
    else:
        if tables is None and device != "meta":
            _check_seeded_room(config)
        device, steps, addition = _module_trace(config, batch_size, seq_len, device, tables)
    parameters = count_parameters(config, preset)
    training = None
    if train is not None:
        training = training_memory(config, batch_size, seq_len, parameters.model_parameters, train)
    return ShapesReport(
        config=config,
        batch_size=batch_size,
        seq_len=seq_len,
        device=device,
        preset=preset.name,
        preset_description=preset.description,
        preset_source=preset.source,
        preset_changes=changes(preset, config),
        preset_tied=preset.tied,
        tensors=steps,
        parameters=parameters,
        broadcast=addition,
        combine=combine_cost(config.d_model),
        training=training,
        head_dim=preset.head_dim if config.positional == "rope" else None,
    )


def _check_seeded_room(config: EmbedConfig) -> None:
    """The seeded tables are made on this machine's CPU in float32 (and converted to the
    dtype there): refused, before any is made, where they would take most of its memory."""

    rows = config.vocab_size + (config.position_rows if config.has_positional_table else 0)
    need = rows * config.width * 4
    if config.dtype != "float32":
        need += rows * config.width * dtype_size(config.dtype)
    ensure_room(
        f"the seeded float32 tables ({rows:,} rows × {config.width:,})"
        + ("" if config.dtype == "float32" else f" and their {config.dtype} copy"),
        need,
        "lower --d-model or --vocab-size, or leave --device at meta (shapes only, allocates "
        "nothing)",
    )


def _module_trace(
    config: EmbedConfig,
    batch_size: int,
    seq_len: int,
    device: str,
    tables: tuple[torch.Tensor, torch.Tensor | None] | None,
) -> tuple[str, list[TraceStep], BroadcastPlan | None]:
    """Build the module on ``device`` and trace a batch of seeded random ids (zeros on meta):
    the device it resolved to, every tensor, and how the positions broadcast."""
    import torch

    pair = None if tables is None else (tables[0], tables[1])
    extras = tables[2] if tables is not None and len(tables) > 2 else None  # a family's others
    module, target = prepare_module(
        config, device, pair, batch_size, seq_len, allow_meta=True, extras=extras
    )
    if target.type == "meta":
        ids = torch.zeros(batch_size, seq_len, dtype=torch.long, device="meta")
    else:
        generator = torch.Generator().manual_seed(config.seed)
        ids = torch.randint(0, config.vocab_size, (batch_size, seq_len), generator=generator)
    with torch.inference_mode():
        trace = module.trace(ids)
    return str(target), trace.steps, trace.addition
