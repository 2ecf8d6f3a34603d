"""inspect-shapes --train: the memory one training step holds, counted from the sizes alone.

For the input layer (its P parameters in one or two tables, and the tensors its forward pass
makes for a (B, T) batch) and for the whole preset model (its parameter count), in each precision:
float32, bfloat16 (float16 weighs the same), and mixed precision as the ZeRO paper counts it
(bf16 weights and gradients, an fp32 master copy, fp32 optimizer state). Optimizers as torch
keeps their state: AdamW two moments like the weights plus a float32 step count per tensor; SGD
(no momentum) nothing. tests/test_training.py holds the input layer's figures to a real step's
tensors, byte for byte. No torch here.
"""

from __future__ import annotations

from dataclasses import dataclass

from embedcli.core.config import EmbedConfig

OPTIMIZERS = ("adamw", "sgd")
PRECISIONS = ("float32", "bfloat16", "mixed")
STEP_BYTES = 4  # AdamW's step count: a float32 scalar tensor per parameter tensor


@dataclass(frozen=True)
class TrainingPart:
    """One kind of memory, in bytes per precision (field names are the JSON keys)."""

    part: str
    formula: str  # how the bytes are counted, P the parameters, B T d the batch
    layer: dict[str, int]  # precision -> bytes, for the input layer
    model: dict[str, int] | None  # the same for the whole model, where its size is known


@dataclass(frozen=True)
class TrainingMemory:
    """What --train adds to inspect-shapes."""

    optimizer: str
    layer_parameters: int
    model_parameters: int | None
    parts: list[TrainingPart]
    total_layer: dict[str, int]
    total_model: dict[str, int] | None


def _weights(precision: str) -> int:
    return 4 if precision == "float32" else 2  # mixed: bf16 working weights


def training_memory(
    config: EmbedConfig, batch: int, seq: int, model_parameters: int | None, optimizer: str
) -> TrainingMemory:
    """Parameters, gradients, master weights, optimizer state and the input layer's
    activations for one step, per precision."""
    p = config.num_parameters
    tensors = 2 if config.has_positional_table else 1
    b, t, d = batch, seq, config.d_model
    # a learned table's lookup makes a (T, d) tensor; sinusoidal rows are a view of a buffer
    fixed = config.positional == "learned"
    activation_values = 2 * b * t * d + (t * d if fixed else 0)  # token, input; positions
    scaled = b * t * d if config.embed_scale != 1.0 else 0

    def each(count: int, size: object) -> dict[str, int]:
        sizes = size if isinstance(size, dict) else dict.fromkeys(PRECISIONS, size)
        return {k: count * sizes[k] for k in PRECISIONS}

    weights = {k: _weights(k) for k in PRECISIONS}
    moments = {"float32": 4, "bfloat16": 2, "mixed": 4}  # like the weights torch updates
    master = {"float32": 0, "bfloat16": 0, "mixed": 4}
    adamw = optimizer == "adamw"

    def parts_for(n: int, steps: int) -> list[tuple[str, str, dict[str, int]]]:
        state = each(2 * n, moments) if adamw else each(0, 0)
        if adamw:
            state = {k: v + steps * STEP_BYTES for k, v in state.items()}
        return [
            ("parameters", "P × bytes of the weights (mixed: bf16)", each(n, weights)),
            ("gradients", "P × bytes of the weights", each(n, weights)),
            ("master weights", "mixed only: P × 4 (an fp32 copy the optimizer updates)",
             each(n, master)),
            ("optimizer state",
             "AdamW: 2 moments × P × bytes of what it updates, + 4 bytes a tensor (its step)"
             if adamw else "SGD without momentum keeps none", state),
        ]  # fmt: skip

    layer = parts_for(p, tensors)
    model = parts_for(model_parameters, 0) if model_parameters else None
    activation = (
        "activations (input layer)",
        "B×T ids × 8 + (2 × B×T×d"
        + (" + T×d" if fixed else "")
        + ") × bytes"
        + (" + B×T×d scaled" if scaled else ""),
        {k: b * t * 8 + (activation_values + scaled) * weights[k] for k in PRECISIONS},
    )
    parts = [
        TrainingPart(name, formula, values, None if model is None else model[i][2])
        for i, (name, formula, values) in enumerate(layer)
    ]
    parts.append(TrainingPart(*activation, None))
    total_layer = {k: sum(part.layer[k] for part in parts) for k in PRECISIONS}
    total_model = (
        None
        if model is None
        else {k: sum(part.model[k] for part in parts if part.model) for k in PRECISIONS}
    )
    return TrainingMemory(optimizer, p, model_parameters, parts, total_layer, total_model)
