"""Rope and the layers' kinds of a GGUF file, as llama.cpp reads them, in the config.json
fields of the family the architecture maps onto.

- Which blocks slide: ``attention.sliding_window_pattern`` as a list of flags, else as N, else
  the architecture's own N (llama.cpp's ``load_swa_pattern``: layer i slides unless
  i % N == N - 1), where the architecture has sliding layers at all.
- Rope: ``rope.freq_base`` (10,000 where absent), ``rope.dimension_count`` (the whole head where
  absent), and the scaling llama.cpp applies: ``rope.scaling.type`` (linear where absent, as
  llama.cpp reads it), its factor, YaRN's original context, betas and attention factor
  (llama.cpp's ``get_mscale``), and the frequency factors stored as ``rope_freqs.weight``.
  LongRoPE's factors are chosen by llama.cpp from the context it is run with, not from the file,
  so its angles are refused. A family with one rope set per layer type (Gemma 3) gets the
  sliding layers' own base; one with a single set, whose sliding layers llama.cpp would turn
  with another base, is refused.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from embedcli.errors import ConfigError
from embedcli.models.gguf.metadata import Metadata, tensor_values
from embedcli.models.positions import per_layer_rope

if TYPE_CHECKING:
    from embedcli.families.ggufarch import GGUFArch
    from embedcli.families.registry import Family

LLAMA_CPP_TYPES = ("none", "linear", "yarn", "longrope")  # llama_rope_scaling_type_from_string
FREQ_FACTORS = "rope_freqs.weight"
LONGROPE = {"rope_factors_long.weight", "rope_factors_short.weight"}


def sliding_layers(meta: Metadata, arch: GGUFArch, blocks: int) -> list[bool] | None:
    """For each block, whether llama.cpp makes it a sliding-window (or chunked) layer; None
    where none of the architecture's layers slide."""
    if arch.swa is None:
        return None
    window = meta.integer("attention.sliding_window", low=0)
    if arch.swa_needs_window and not window:
        return None  # Gemma 3, OLMo 2: sliding layers only with a window
    if arch.swa_window_zero_off and window == 0:
        return None  # Llama 4 with sliding_window 0: no chunked layers
    if arch.swa_blocks is not None and blocks != arch.swa_blocks:
        return None  # EXAONE 4: only its 64-block model slides
    listed = meta.flags("attention.sliding_window_pattern", blocks)
    if listed is not None:
        return listed
    every = meta.integer("attention.sliding_window_pattern", low=0)
    every = arch.swa if every is None else every
    return [every == 0 or i % every < every - 1 for i in range(blocks)]


def _base(meta: Metadata, name: str, default: float) -> float:
    """A rope base: ``default`` where the key is absent; a value the file gives must be above
    1 (0 too is refused, never read as absent)."""
    theta = meta.number(name)
    if theta is None:
        return default
    if not theta > 1:
        raise ConfigError(f"{meta.where}: {meta.key(name)} must be a number above 1, got {theta!r}")
    return theta


def _mscale(factor: float, mscale: float) -> float:
    """llama.cpp's get_mscale (and transformers' yarn_get_mscale)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


def _yarn(meta: Metadata, arch: GGUFArch, factor: float, context: int) -> dict[str, Any]:
    """YaRN as llama.cpp applies it: its corrections truncated to whole pairs (ggml's floorf
    and ceilf), betas 32 and 1 unless the architecture's code reads them from the file, and
    the attention factor of llama-context.cpp (yarn_log_multiplier as mscale_all_dim, mscale 1
    or, for DeepSeek 2, equal to it), times rope.scaling.attn_factor."""
    # 0 is llama.cpp's "unset": its context then reads the training context
    original = meta.integer("rope.scaling.original_context_length", low=0) or context
    fast, slow = 32.0, 1.0
    if arch.yarn_betas:
        for name in ("yarn_beta_fast", "yarn_beta_slow"):
            beta = meta.number(f"rope.scaling.{name}")
            if beta is not None and not beta > 0:  # llama.cpp turns with a 0 as written
                raise ConfigError(
                    f"{meta.where}: {meta.key('rope.scaling.' + name)} is {beta:g}; llama.cpp "
                    "turns YaRN with it as written, where transformers' formula (embedcli's) "
                    "reads a 0 as its default: embedcli does not read this file's rope"
                )
        fast = meta.number("rope.scaling.yarn_beta_fast") or fast
        slow = meta.number("rope.scaling.yarn_beta_slow") or slow
    log_mul = meta.number("rope.scaling.yarn_log_multiplier") if arch.yarn_log_mul else None
    if log_mul and arch.yarn_log_mul == "tenth":
        log_mul /= 0.1  # DeepSeek 2's converter stores 0.1 * mscale_all_dim
    if log_mul:
        mscale = log_mul if arch.yarn_log_mul == "tenth" and log_mul != 1.0 else 1.0
        attention = _mscale(factor, mscale) / _mscale(factor, log_mul)
    else:
        attention = _mscale(factor, 1.0)
    times = meta.number("rope.scaling.attn_factor")
    attention *= 1.0 if times is None else times
    return {
        "rope_type": "yarn",
        "factor": factor,
        "original_max_position_embeddings": original,
        "beta_fast": fast,
        "beta_slow": slow,
        "truncate": True,
        "attention_factor": attention,
    }


def _scaling(meta: Metadata, arch: GGUFArch, pairs: int, context: int) -> dict[str, Any]:
    """The rope set's scaling keys, as llama.cpp scales its frequencies."""
    kind = meta.string("rope.scaling.type")
    kind = "linear" if kind is None else kind
    if kind not in LLAMA_CPP_TYPES:
        raise ConfigError(
            f"{meta.where}: {meta.key('rope.scaling.type')} is {kind!r}, which llama.cpp does "
            f"not read ({', '.join(LLAMA_CPP_TYPES)}), so embedcli does not guess its rope"
        )
    factor = meta.number("rope.scaling.factor")
    if factor is None:
        factor = meta.number("rope.scale_linear")
    scaled = kind != "none" and factor not in (None, 0.0, 1.0)
    names = {t.name for t in meta.gguf.tensors}
    if not arch.rope_freqs and FREQ_FACTORS in names:
        raise ConfigError(
            f"{meta.where} has {FREQ_FACTORS}, which llama.cpp's {meta.arch} code does not load "
            "(it refuses the file: a tensor too many), so embedcli does not read its rope"
        )
    factors = tensor_values(meta.gguf, FREQ_FACTORS, pairs)
    if kind == "longrope" or names & LONGROPE:
        raise ConfigError(
            f"{meta.where} scales rope by LongRoPE factors, which llama.cpp picks by the "
            "context it is run with (rope_factors_long past "
            "rope.scaling.original_context_length, rope_factors_short within it), not by "
            "anything the file says: embedcli does not guess which, so it does not read rope"
        )
    if factors is not None:
        if scaled:
            raise ConfigError(
                f"{meta.where} scales rope twice: {kind} scaling and {FREQ_FACTORS}, which "
                "embedcli does not combine"
            )
        return {"rope_type": "freq_factors", "factors": factors}
    attention = meta.number("rope.scaling.attn_factor")
    if attention not in (None, 1.0) and (not scaled or kind != "yarn"):
        raise ConfigError(
            f"{meta.where}: {meta.key('rope.scaling.attn_factor')} is {attention:g}, which "
            f"llama.cpp multiplies cos and sin by; embedcli shows an attention factor for YaRN's "
            "scaling only, so it does not read this file's rope"
        )
    if not scaled:
        return {"rope_type": "default"}
    assert factor is not None
    if factor < 1:
        raise ConfigError(
            f"{meta.where}: {meta.key('rope.scaling.factor')} must be at least 1 (it "
            f"stretches wavelengths), got {factor:g}"
        )
    if kind == "linear":
        return {"rope_type": "linear", "factor": factor}
    return _yarn(meta, arch, factor, context)


def rope_fields(
    meta: Metadata,
    family: Family,
    arch: GGUFArch,
    text: dict[str, Any],
    sliding: list[bool] | None,
) -> None:
    """rope_parameters (one set, or one per layer type) and the rotated dimensions, into
    ``text`` as config.json has them."""
    head_dim = text["head_dim"]
    if meta.boolean("rope.scaling.finetuned") is False and arch.rope_switch:
        raise ConfigError(
            f"{meta.where}: {meta.key('rope.scaling.finetuned')} is false, so llama.cpp "
            f"turns no rope in any block, and embedcli reads {family.name} with rope"
        )
    rotated = meta.integer("rope.dimension_count") or head_dim
    if rotated > head_dim and arch.rope_dims == "partial":
        raise ConfigError(
            f"{meta.where}: {meta.key('rope.dimension_count')} {rotated} is more than a "
            f"head's {head_dim} dimensions"
        )
    if rotated % 2:
        head = f"{head_dim:,} dimension{'s' * (head_dim != 1)}"
        source = (
            meta.key("attention.key_length")
            if meta.has("attention.key_length")
            else (f"{meta.key('embedding_length')} / {meta.key('attention.head_count')}")
        )
        said = (
            f"{meta.key('rope.dimension_count')} is {rotated}, an odd number (a head has {head})"
            if meta.has("rope.dimension_count")
            else f"a head has {head} ({source}), an odd number, and "
            f"{meta.key('rope.dimension_count')} says no other"
        )
        raise ConfigError(
            f"{meta.where}: {said}: rope turns pairs of dimensions, so it cannot rotate an "
            "odd number"
        )
    factor = meta.number("rope.scaling.factor")
    if (
        sliding
        and any(sliding)
        and not per_layer_rope(family)
        and meta.string("rope.scaling.type") == "none"
        and factor not in (None, 0.0, 1.0)
    ):
        raise ConfigError(
            f"{meta.where}: {meta.key('rope.scaling.type')} is none, so llama.cpp turns the "
            f"full layers unscaled, but its sliding layers by {meta.key('rope.scaling.factor')} "
            f"{factor:g}: embedcli reads {family.name} with one rope for every layer"
        )
    base = _base(meta, "rope.freq_base", 10000.0)
    params = {**_scaling(meta, arch, rotated // 2, text[arch.context_field]), "rope_theta": base}
    if arch.rope_dims == "qk_rope":
        text["qk_rope_head_dim"] = rotated
    else:
        params["partial_rotary_factor"] = rotated / head_dim
    slides = bool(sliding) and any(sliding or ())
    swa_base = meta.number("rope.freq_base_swa")
    if per_layer_rope(family):
        local_default = base if arch.swa_base_default is None else arch.swa_base_default
        local = {"rope_type": "default", "rope_theta": _base(meta, "rope.freq_base_swa",
                                                             local_default)}  # fmt: skip
        if arch.swa_rope_scaled:
            local = {**params, "rope_theta": local["rope_theta"]}
        else:
            local["partial_rotary_factor"] = params.get("partial_rotary_factor")
        sets = {"full_attention": params, "sliding_attention": local}
    else:
        if slides and swa_base is not None and swa_base != base:
            raise ConfigError(
                f"{meta.where}: llama.cpp turns the sliding layers with "
                f"{meta.key('rope.freq_base_swa')} {swa_base:g} and the others with "
                f"{meta.key('rope.freq_base')} {base:g}, and embedcli reads {family.name} "
                "with one rope for every layer"
            )
        sets = {"": params}
    defaults = family.defaults(text["model_type"]).get("rope_parameters") or {}
    for name, values in sets.items():
        stated = defaults.get(name, {}) if name else defaults
        for key in stated if isinstance(stated, dict) else ():
            values.setdefault(key, None)  # a key llama.cpp has no value for: not the class's
    text["rope_parameters"] = sets.get("", sets)
