"""The forward pass's tensors on the meta device, worked out from the config without torch.

The first operation on torch's meta device makes torch import its compiler stack (torch._dynamo,
torch._refs, sympy) to find the Python meta kernels: seconds of start-up for a table of shapes,
more than importing torch itself. The module does five kinds of operation (an int64 arange, an
embedding lookup, a multiplication by a scalar of its own dtype, an addition with broadcasting,
and rope's float32 angle product), and what each gives back on the meta device is fixed by
torch's documented rules, so ``inspect-shapes`` works the result out here, with exact Python
integers for any size. tests/test_shapeplan.py checks every field against the real module on the
meta device, over many configurations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from embedcli.core.broadcast import BroadcastPlan, explain
from embedcli.core.config import EmbedConfig
from embedcli.core.layouts import arranged_shape
from embedcli.core.steps import step_operation
from embedcli.core.windowpad import padded_length

if TYPE_CHECKING:
    import torch

# Bytes per element, as torch's element_size() gives them.
ELEMENT_SIZES = {"int64": 8, "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class TraceStep:
    """One tensor of the forward pass, described from the real tensor."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    device: str
    numel: int
    bytes: int  # numel times the element size: what the tensor occupies on its device
    operation: str = ""  # what made it, for this configuration (core.steps.step_operation)

    @classmethod
    def of(cls, name: str, tensor: torch.Tensor) -> TraceStep:
        """Describe ``tensor`` as it is, not as it was meant to be."""
        return cls(
            name,
            tuple(tensor.shape),
            str(tensor.dtype).removeprefix("torch."),
            str(tensor.device),
            tensor.numel(),
            tensor.numel() * tensor.element_size(),
        )

    @classmethod
    def planned(cls, name: str, shape: tuple[int, ...], dtype: str) -> TraceStep:
        """Describe the meta tensor an operation would give back: ``shape`` and ``dtype``."""
        numel = math.prod(shape)
        return cls(name, shape, dtype, "meta", numel, numel * ELEMENT_SIZES[dtype])


def with_operations(config: EmbedConfig, steps: list[TraceStep]) -> list[TraceStep]:
    """``steps``, each with the operation that made it under ``config``."""
    names = {s.name for s in steps}
    return [replace(s, operation=step_operation(s.name, config, names)) for s in steps]


def planned_trace(
    config: EmbedConfig, batch_size: int, seq_len: int
) -> tuple[list[TraceStep], BroadcastPlan | None]:
    """The tensors :meth:`InputEmbedding.trace` gives for a (batch_size, seq_len) batch on the
    meta device, in its order, and how the position embeddings broadcast (None: none added).

    Every float table of the module is in ``config.dtype`` (``module.to(dtype)`` converts floating
    tables and buffers, never the int64 position ids), so a lookup, the scale (a scalar tensor of
    the same dtype) and the addition of two same-dtype tensors stay in it; rope's angles are
    computed from ``position_ids.float()`` and are float32 whatever the dtype.
    """
    b, t, d, dtype = batch_size, padded_length(seq_len, config), config.d_model, config.dtype
    tokens, summed = (b, t, d), (b, t, config.sum_width)
    steps = [
        TraceStep.planned("input_ids", (b, t), "int64"),
        TraceStep.planned("token_embeddings", (b, t, config.width), dtype),  # (B, T) -> (B, T, w)
    ]
    if config.embed_scale != 1.0:
        steps.append(TraceStep.planned("scaled_embeddings", (b, t, config.width), dtype))
    if config.replaced_id is not None:
        steps.append(TraceStep.planned("replaced_embeddings", (b, t, config.width), dtype))
    if config.token_dropout_id is not None:
        steps.append(TraceStep.planned("token_dropout_embeddings", (b, t, config.width), dtype))
    if config.trigram:
        steps.append(TraceStep.planned("trigram_embeddings", (b, t, config.projected_width), dtype))
    if config.concat_widths:
        steps.append(TraceStep.planned("concat_embeddings", (b, t, config.projected_width), dtype))
    projection = config.projection if config.projects else None
    if projection == "lookup":
        steps.append(TraceStep.planned("projected_embeddings", tokens, dtype))  # (B, T, w) @ W.T
    if config.token_types:
        steps.append(TraceStep.planned("token_type_embeddings", summed, dtype))
    addition = None
    if config.positional in ("learned", "sinusoidal", "rope"):
        per_sequence = config.position_ids != "arange"  # counted over each sequence: (B, T)
        ids = (b, t) if per_sequence else (t,)
        steps.append(TraceStep.planned("position_ids", ids, "int64"))
        scaling = dict(config.rope_scaling or ())
        if config.positional == "rope" and scaling.get("applied", True):
            pairs = ((config.rope_dim or d) + 1) // 2  # arange(0, r, 2)
            steps.append(TraceStep.planned("rope_angles", (t, pairs), "float32"))  # (T, r/2)
        elif config.positional != "rope":
            position = (*ids, config.sum_width)  # a lookup: (T, s), or (B, T, s) per sequence
            steps.append(TraceStep.planned("position_embeddings", position, dtype))
            addition = explain(summed, position)  # (B, T, s) + (T, s)
    if config.row0_tables:  # row 0 of each table, broadcast over (B, T)
        steps.append(TraceStep.planned("row0_embeddings", summed, dtype))
    if projection == "before_norm":
        steps.append(TraceStep.planned("projected_sum", tokens, dtype))
    if config.norm_eps is not None:
        normed = (b, t, config.norm_width)
        steps.append(TraceStep.planned("embedding_layernorm", normed, dtype))
    if projection == "after_norm":
        steps.append(TraceStep.planned("projected_output", tokens, dtype))
    if config.mask_multiply:
        steps.append(TraceStep.planned("masked_embeddings", tokens, dtype))
    result = tokens if addition is None or projection not in (None, "lookup") else addition.result
    steps.append(TraceStep.planned("input_embeddings", result, dtype))
    if config.block_layout != "tokens":  # the same numbers as block 0 takes them
        steps.append(TraceStep.planned("block_input", arranged_shape(result, config), dtype))
    return with_operations(config, steps), addition
