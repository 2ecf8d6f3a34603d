"""The steps before the first block, in words: what made each traced tensor of a configuration,
the input scale as the model applies it, and how positions enter.

Worked out here, from the ``EmbedConfig``, so that a trace step carries its own operation and
render/ only lays the words out. One vocabulary: the traced tensors' names (``STEP_ORDER``) are
what ``Family.steps`` lists for a family, and ``STEP_LABELS`` their short words in the manual's
table of families.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Mapping
from typing import Any

from embedcli.core.config import DEFAULT_ROPE_THETA, EmbedConfig
from embedcli.core.kinds import INSIDE_ATTENTION
from embedcli.core.layouts import layout_operation

# The order of the traced tensors, as the module makes them (input_embeddings last).
STEP_ORDER = (
    "input_ids",
    "token_embeddings",
    "scaled_embeddings",
    "replaced_embeddings",
    "token_dropout_embeddings",
    "trigram_embeddings",
    "concat_embeddings",
    "projected_embeddings",
    "token_type_embeddings",
    "position_ids",
    "rope_angles",
    "position_embeddings",
    "row0_embeddings",
    "projected_sum",
    "embedding_layernorm",
    "projected_output",
    "masked_embeddings",
    "input_embeddings",
    "block_input",
)

# The steps a family may take between the lookup and what the first block reads, as the
# manual's table of families says them (a family's own numbers are each model's: see
# Family.step_labels for the words it adds).
STEP_LABELS = {
    "token_embeddings": "lookup",
    "scaled_embeddings": "× scale",
    "replaced_embeddings": "one id's rows replaced",
    "token_dropout_embeddings": "token dropout's × 0.88 / (1 - masked share)",
    "trigram_embeddings": "[next, this, previous] rows",
    "concat_embeddings": "[row, row 0 of more tables]",
    "projected_embeddings": "project_in",
    "token_type_embeddings": "+ token type 0",
    "position_embeddings": "+ positions",
    "row0_embeddings": "+ row 0 of more tables",
    "projected_sum": "Linear to hidden_size",
    "embedding_layernorm": "LayerNorm",
    "projected_output": "Linear to hidden_size",
    "masked_embeddings": "× attention mask",
    "block_input": "arranged for block 0",
}

# The embedding norm's words, by EmbedConfig.norm_kind.
NORM_NAMES = {
    "layernorm": "LayerNorm",
    "rmsnorm": "RMSNorm",
    "nonorm": "NoNorm",
    "float32": "LayerNorm in float32",
    "weightless_rmsnorm": "weightless RMSNorm",
    "weightless_rmsnorm_pow": "weightless RMSNorm",
}

# What each traced tensor is where the configuration changes nothing of it.
STEP_OPERATIONS = {
    "input_ids": "token ids, right-padded to the longest (T)",
    "token_embeddings": "token_embedding(input_ids)",
    "position_ids": "arange(T)",
    "position_embeddings": "position_embedding(position_ids)",
    "input_embeddings": "token_embeddings + position_embeddings",
}

# How each position family that adds nothing enters the model instead.
NOTHING_ADDED = {
    "rope": "rope adds nothing here",
    "alibi": "ALiBi biases attention scores instead",
    "relative": "relative positions act inside attention instead (T5's buckets, DeBERTa's, "
    "XLNet's)",
    "none": "no positions",
}


def round_to(value: float, dtype: str) -> float:
    """``value`` as a float32, float16 or bfloat16 holds it (round to nearest, ties to even)."""
    if dtype == "float16":
        return struct.unpack("<e", struct.pack("<e", value))[0]
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if dtype == "bfloat16":
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def applied_scale(config: EmbedConfig) -> float:
    """The input scale the model multiplies by: rounded to the dtype first where it is (Gemma
    in bfloat16 multiplies by 5.65625, not √32 = 5.65685)."""
    scale = config.embed_scale
    if scale == 1.0 or config.scale_rounding != "dtype":
        return scale
    return round_to(scale, config.dtype)


def scale_text(config: EmbedConfig) -> str:
    """The input scale as applied, said with both numbers where the rounding shows."""
    scale, rounded = config.embed_scale, applied_scale(config)
    if f"{rounded:.6g}" == f"{scale:.6g}":
        return f"{scale:.6g}"
    return f"{rounded:.6g} ({scale:.6g} rounded to {config.dtype})"


def scale_is_root_d(config: EmbedConfig) -> bool:
    """Whether the input scale is √d_model (Gemma's, BioGPT's)."""
    scale = config.embed_scale
    return abs(scale - config.d_model**0.5) < 1e-9 * scale


def number(value: float) -> str:
    """``value`` without a trailing ``.0`` (10000, 0.5)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def rope_formula(config: EmbedConfig, head_dim: int | None = None) -> str:
    """theta^(-2i/r), with what theta and r are: r is one attention head, or the part of each
    head the model rotates (GPT-NeoX's rotary_pct), where the head's width is known."""
    theta, dim = config.rope_theta, config.rope_dim
    if theta == DEFAULT_ROPE_THETA and dim is None:
        return "10000^(-2i/d)"
    rotated = dim or config.d_model
    base = "the model's rope_theta" if theta != DEFAULT_ROPE_THETA else "rope_theta"
    if head_dim == rotated:
        span = f"over {rotated} dimensions: one attention head"
    elif head_dim:
        span = (
            f"over {rotated} of the {head_dim} dimensions of each attention head: the part rotated"
        )
    else:
        span = f"over the {rotated} dimensions rotated in each attention head"
    return f"{number(theta)}^(-2i/{rotated}) ({base}, {span})"


def positions_phrase(config: EmbedConfig, model: Mapping[str, Any] | None = None) -> str:
    """The position family, with what a model's config (``model``, its summary) says of it."""
    positional, model = config.positional, model or {}
    if positional == "alibi" and model.get("alibi_slopes"):
        slopes = model["alibi_slopes"]
        last = len(slopes) - 1
        return (
            f"alibi positions ({len(slopes)} heads; slope of head 0: {slopes[0]:.3g}, "
            f"of head {last}: {slopes[last]:.3g})"
        )
    if positional == "relative" and model.get("relative_attention"):
        rel = model["relative_attention"]
        return (
            f"relative positions ({rel['num_buckets']} buckets, max distance {rel['max_distance']})"
        )
    if positional == "rope" and (
        model.get("rope_bases") or model.get("rope_scaling") or model.get("rope_not_in_first_block")
    ):
        said = [f"θ {v:g} ({k})" for k, v in (model.get("rope_bases") or {}).items()]
        if model.get("rope_not_in_first_block"):  # a hybrid whose block 0 is a conv
            said.append(
                f"layer 0 ({model['rope_not_in_first_block']}) has none; angles of its "
                f"{model.get('rope_layer_type')} layers"
            )
        elif model.get("rope_layer_type") and (
            model.get("rope_layer_types") or model.get("rope_bases")
        ):  # the first block's layer type, or its own base (Granite SWA's layer_rope_theta)
            said.append(f"layer 0: {model['rope_layer_type']}")
        if model.get("rope_scaling"):
            said.append(f"{model['rope_scaling']} scaling")
        if model.get("sliding_window"):
            said.append(f"sliding window {model['sliding_window']:,}")
        return f"rope positions ({', '.join(said)})"
    return "no positions" if positional == "none" else f"{positional} positions"


def _position_rows(config: EmbedConfig) -> str:
    """How the positional rows are numbered."""
    offset = config.position_offset
    plus = f" + {offset}" if offset else ""
    if config.position_ids == "mask":
        return f"counted over the attention mask{plus} (pads: row {offset - 1})"
    if config.position_ids == "padding":
        pad = config.padding_idx
        return f"padding_idx {pad} + 1 + index over non-pad ids (pads: row {pad})"
    return f"arange(T){plus}"


def _input_formula(config: EmbedConfig, names: Collection[str]) -> str:
    """What the first block reads, as the sum and the steps that made it."""
    token = "token_embeddings"
    steps = ("scaled_embeddings", "token_dropout_embeddings", "trigram_embeddings")
    steps += ("concat_embeddings", "replaced_embeddings")
    for name in (*steps, "projected_embeddings"):
        if name in names:
            token = name
    terms = [token]
    if "token_type_embeddings" in names:
        terms.append("token_type_embeddings")
    if "position_embeddings" in names:
        terms.append("position_embeddings")
    if config.positions_first and len(terms) == 3:
        terms[1:] = reversed(terms[1:])  # DeBERTa: positions, then types
    if "row0_embeddings" in names:  # after the positions, before a positions-first type
        at = len(terms) - 1 if config.positions_first and "token_type_embeddings" in terms else None
        terms.insert(len(terms) if at is None else at, "row0_embeddings")
    total = " + ".join(terms)
    if "projected_sum" in names:
        total = f"Linear({total})"
    if "embedding_layernorm" in names:
        total = f"{NORM_NAMES[config.norm_kind]}({total})"
    if "projected_output" in names:
        total = f"Linear({total})"
    if "masked_embeddings" in names:
        total = f"{total} × attention_mask"
    finals = ("embedding_layernorm", "projected_output", "masked_embeddings")
    last = [n for n in finals if n in names]
    read = "what block_input arranges" if "block_input" in names else "what block 0 reads"
    if last:
        return f"{last[-1]}: {total}, {read}"
    if config.positional in INSIDE_ATTENTION and len(terms) == 1:
        return f"{token}: {NOTHING_ADDED[config.positional]}"
    return total


def step_operation(name: str, config: EmbedConfig, names: Collection[str] = ()) -> str:
    """What made the traced tensor ``name`` (``names``: every tensor of the trace), for this
    configuration (positions, rope base, scaling)."""
    positional = config.positional
    if name == "scaled_embeddings":
        return f"token_embeddings × {scale_text(config)}, the model's input scaling"
    if name == "projected_embeddings":
        return f"project_in: a linear map from width {config.projected_width} to d_model"
    if name == "token_type_embeddings":
        return "token_type_embedding(0): every token of segment A, added"
    if name == "row0_embeddings":
        return (
            f"{config.row0_tables} rows added in turn, each row 0 of a table past the token "
            "and position tables (their ids all zero: none given; a table read twice counts "
            "twice)"
        )
    if name == "embedding_layernorm":
        if config.norm_kind == "nonorm":
            return "NoNorm: weight × x + bias, no statistics"
        over = "d_model" if config.norm_width == config.d_model else f"width {config.norm_width}"
        norm = NORM_NAMES[config.norm_kind]
        if config.norm_kind in ("weightless_rmsnorm", "weightless_rmsnorm_pow"):
            root = "rsqrt(mean(x²) + eps)"
            if config.norm_kind == "weightless_rmsnorm_pow":
                root = "(mean(x²) + eps)^-0.5"
            eps = f"eps {config.norm_eps:g}"
            return f"{norm}: x × {root} over {over}, {eps}, in float32, before block 0"
        return f"{norm} over {over}, eps {config.norm_eps:g}, before block 0"
    if name in ("projected_sum", "projected_output"):
        where = "on the sum, before the norm" if name == "projected_sum" else "after the norm"
        return f"a Linear from width {config.width} to d_model {config.d_model}, {where}"
    if name == "token_dropout_embeddings":
        return (
            f"rows of mask token {config.token_dropout_id} zeroed, all × (1 - 0.12) / (1 - the "
            "sequence's share of mask tokens): ESM's token dropout at inference"
        )
    if name == "replaced_embeddings":
        return (
            f"the rows of id {config.replaced_id} replaced by the model's own learned row "
            "(T5Gemma 2's eoi_embedding)"
        )
    if name == "concat_embeddings":
        widths = ", ".join(str(w) for w in config.concat_widths)
        return (
            f"each token's row with row 0 of {len(config.concat_widths)} more tables (widths "
            f"{widths}; no ids given for them) beside it, for the Linear"
        )
    if name == "trigram_embeddings":
        return "the next, this and the previous token's rows side by side (zeros past the ends)"
    if name == "masked_embeddings":
        return "times the attention mask: padding rows become 0"
    if name == "block_input":
        return layout_operation(config)
    if name == "position_ids":
        return _position_rows(config)
    if name == "input_ids" and config.window is not None:
        return (
            f"token ids, right-padded to the longest, then with pad id {config.window_pad_id} to "
            f"a multiple of the attention window, {config.window} (T)"
        )
    if positional == "sinusoidal" and name == "position_embeddings":
        layout = "sines, then cosines" if config.sinusoid == "halves" else "sin/cos"
        return f"{layout} table[position_ids]: fixed, no parameters"
    if name == "position_embeddings":
        return "position_embedding(position_ids)"
    if name == "input_embeddings":
        return _input_formula(config, names)
    if name == "rope_angles":
        theta, dim = config.rope_theta, config.rope_dim
        base = f"{theta:g}" if theta != int(theta) else str(int(theta))
        exponent = "-2i/d" if dim is None else f"-2i/{dim}"
        return f"position_ids × {base}^({exponent}): rotates queries and keys inside attention"
    return STEP_OPERATIONS.get(name, "")
