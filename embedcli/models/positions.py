"""A config's position fields, read as the family's entry says: rope's bases, rotated
dimensions and scaling (transformers 4's top-level keys and 5's ``rope_parameters``, also per
layer type), ALiBi's slopes per head, T5's relative buckets.
"""

from __future__ import annotations

import math
from typing import Any

from embedcli.errors import ConfigError
from embedcli.families.registry import Family

# the rope scaling types embedcli computes the angles of, and the fields each needs; with any
# other (yarn, dynamic, longrope, ...) the angles are not shown, and the report says so
SCALING_KEYS = {
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}


def positive(value: Any, name: str, where: str, low: float = 0.0) -> float:
    """``value`` as a finite number above ``low``, or a ConfigError naming the field."""
    try:
        good = not isinstance(value, bool) and math.isfinite(float(value)) and value > low
    except (TypeError, ValueError, OverflowError):
        good = False
    if not good:
        raise ConfigError(f"{where}: {name} must be a number above {low:g}, got {repr(value)[:40]}")
    return float(value)


def count(value: Any, name: str, where: str) -> int | None:
    """``value`` as a positive integer (None stays None), or a ConfigError naming the field."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: {name} must be a positive integer, got {value!r}")
    return value


def _heads(text: dict[str, Any], where: str) -> int | None:
    for name in ("num_attention_heads", "n_head", "n_heads", "num_heads"):
        if text.get(name) is not None:
            return count(text[name], name, where)
    return None


def _width(text: dict[str, Any]) -> Any:
    return text.get("hidden_size", text.get("n_embd", text.get("d_model")))


def read_positions(family: Family, text: dict[str, Any], where: str) -> dict[str, Any]:
    """The position fields of ``text`` (a config's text part) for ``family``."""
    heads = _heads(text, where)
    width = _width(text)
    if heads is not None and isinstance(width, int) and heads > width:
        raise ConfigError(f"{where}: {heads:,} attention heads for a width of {width:,}")
    if heads and isinstance(width, int) and width % heads and text.get("head_dim") is None:
        # GPT-2, OPT, BLOOM... split the width among the heads, and refuse to build otherwise
        raise ConfigError(
            f"{where}: hidden size {width} is not a multiple of {heads} attention heads "
            "(and no head_dim is given): the config does not describe a model"
        )
    if family.positional == "relative":
        relative = {}
        for key, name in (("relative_attention_num_buckets", "num_buckets"),
                          ("relative_attention_max_distance", "max_distance")):  # fmt: skip
            value = count(text.get(key), key, where)
            if value is None:
                raise ConfigError(f"{where}: {key} must be a positive integer")
            relative[name] = value
        return {"relative": relative, "heads": heads}
    alibi = family.positional == "alibi" or bool(family.alibi_flag and text.get(family.alibi_flag))
    if alibi:
        return _alibi(family, text, heads, where)
    if family.positional != "rope":
        return {"heads": heads}
    return {**_rope(family, text, heads, where), "heads": heads}


def _alibi(family: Family, text: dict[str, Any], heads: int | None, where: str) -> dict[str, Any]:
    # lazy: this module is loaded at start-up (the presets); the formulas are not
    from embedcli.core.positions import alibi_slopes

    if heads is None:
        raise ConfigError(f"{where}: ALiBi needs the head count (num_attention_heads)")
    if family.alibi == "mpt":
        attn = text.get("attn_config") if isinstance(text.get("attn_config"), dict) else {}
        if attn.get("alibi", True) is not True:
            raise ConfigError(
                f"{where}: MPT's attn_config.alibi must be true (embedcli reads "
                f"ALiBi MPT models only), got {attn.get('alibi')!r}"
            )
        bias_max = positive(attn.get("alibi_bias_max", 8), "alibi_bias_max", where)
        slopes = alibi_slopes(heads, "mpt", bias_max)
    else:
        slopes = alibi_slopes(heads)
    return {"alibi": True, "alibi_slopes": tuple(slopes), "heads": heads}


def per_layer_rope(family: Family) -> bool:
    """Whether the family's code keeps one rope per layer type (Gemma 3, OLMo 3): its
    transformers defaults (families/defaults.json, read from the config classes) nest
    ``rope_parameters`` by layer type. Every other family reads one flat set for all layers."""
    return _nested(family.defaults().get("rope_parameters"))


def _nested(params: Any) -> bool:
    return (
        isinstance(params, dict)
        and bool(params)
        and all(isinstance(v, dict) for v in params.values())
    )


def _first_type(family: Family, text: dict[str, Any], where: str) -> str | None:
    """The first block's layer type: ``layer_types[0]``, or, where config.json gives a
    sliding_window_pattern instead, the one transformers derives from it (Gemma 3: block i
    slides unless (i + 1) % pattern == 0, so pattern 1 makes every block full attention)."""
    types = text.get("layer_types")
    first = types[0] if isinstance(types, list) and types and isinstance(types[0], str) else None
    pattern = text.get("sliding_window_pattern")
    if pattern is None:
        return first
    if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
        raise ConfigError(f"{where}: sliding_window_pattern must be a positive integer")
    derived = "sliding_attention" if 1 % pattern else "full_attention"
    if types == family.defaults().get("layer_types"):
        if text.get("num_hidden_layers") == len(types) and first != derived:
            raise ConfigError(
                f"{where}: layer_types {types!r} and sliding_window_pattern {pattern} "
                "disagree about the first block's attention"
            )
        return derived  # the list is the family's default: the pattern decides
    return first  # config.json's own layer_types come first, as in transformers


def _rope_sets(
    family: Family, text: dict[str, Any], where: str
) -> tuple[dict[str, dict[str, Any]], str]:
    """{layer type: rope parameters}, and the first block's layer type."""
    first = _first_type(family, text, where)
    params = text.get("rope_parameters")
    nested = isinstance(params, dict) and any(isinstance(v, dict) for v in params.values())
    if nested and not (per_layer_rope(family) and _nested(params)):
        listed = ", ".join(k for k, v in params.items() if isinstance(v, dict))
        raise ConfigError(
            f"{where}: rope_parameters holds one set per layer type ({listed}), but "
            f"{family.name}'s code reads one set for every layer (transformers ignores the "
            "nested ones): embedcli does not guess which applies"
        )
    if nested:
        return {str(k): v for k, v in params.items()}, first or next(iter(params))
    merged: dict[str, Any] = {}
    for source in (params, text.get("rope_scaling")):
        if isinstance(source, dict):
            merged.update(source)
    for name in ("rope_theta", "rotary_emb_base", "partial_rotary_factor", "rotary_pct"):
        if text.get(name) is not None and name not in merged:
            merged[name] = text[name]
    if text.get("rope_local_base_freq") is not None:  # Gemma 3 in transformers 4
        local = {"rope_theta": text["rope_local_base_freq"], "rope_type": "default"}
        sets = {"full_attention": merged, "sliding_attention": local}
        return sets, first or "full_attention"
    return {first or "default": merged}, first or "default"


def _rope(family: Family, text: dict[str, Any], heads: int | None, where: str) -> dict[str, Any]:
    sets, first = _rope_sets(family, text, where)
    if first not in sets:
        raise ConfigError(f"{where}: layer type {first!r} has no rope_parameters")
    label = (lambda name: f"{name} rope_theta") if len(sets) > 1 else (lambda _: "rope_theta")
    bases = {
        name: positive(
            p.get("rope_theta", p.get("rotary_emb_base", 10000.0)), label(name), where, 1
        )
        for name, p in sets.items()
    }
    for name, p in sets.items():
        kind = p.get("rope_type") or p.get("type") or "default"
        if not isinstance(kind, str):
            raise ConfigError(f"{where}: rope_type must be a name, got {kind!r}")
        if name != first:
            _scaling(kind, p, where)  # every layer type's entry is checked, not only the drawn
    params = sets[first]
    rope_type = params.get("rope_type") or params.get("type") or "default"
    return {
        "rope_theta": bases[first],
        "rope_bases": bases if len(bases) > 1 else None,
        "rope_dim": _rope_dim(family, text, params, heads, where),
        "rope_scaling": rope_type if rope_type != "default" else None,
        "rope_scaling_params": _scaling(rope_type, params, where),
    }


def _rope_dim(
    family: Family, text: dict[str, Any], params: dict[str, Any], heads: int | None, where: str
) -> int | None:
    """The dimensions each head rotates, by the family's rule."""
    if family.rope_dim == "qk_rope":
        return count(text.get("qk_rope_head_dim"), "qk_rope_head_dim", where)
    d_model = _width(text)
    head_dim = count(text.get("head_dim"), "head_dim", where)
    if head_dim is None and heads and isinstance(d_model, int):
        if d_model % heads:
            raise ConfigError(
                f"{where}: hidden size {d_model} is not a multiple of {heads} attention heads "
                "(and no head_dim is given)"
            )
        head_dim = d_model // heads
    if family.rope_dim == "rotary_dim":
        rotary = count(text.get("rotary_dim"), "rotary_dim", where)
        return rotary if rotary is not None else head_dim
    factor = params.get("partial_rotary_factor", params.get("rotary_pct"))
    if factor is None:
        factor = text.get("partial_rotary_factor", text.get("rotary_pct"))
    if head_dim is None or factor is None:
        return head_dim
    factor = positive(factor, "partial_rotary_factor", where)
    if factor > 1:
        raise ConfigError(f"{where}: partial_rotary_factor must be at most 1, got {factor:g}")
    return int(head_dim * factor)


def _scaling(rope_type: str, params: dict[str, Any], where: str) -> Any:
    """The scaling parameters embedcli applies (linear, llama3), checked; for any other type,
    the type with ``applied: False``; None for none."""
    if rope_type == "default":
        return None
    if rope_type not in SCALING_KEYS:
        return (("rope_type", rope_type), ("applied", False))
    values = {
        key: positive(params.get(key), f"rope_scaling {key}", where)
        for key in SCALING_KEYS[rope_type]
    }
    # the same rules as --rope-scaling's (core.positions.parse_rope_scaling)
    if values["factor"] < 1:
        raise ConfigError(
            f"{where}: rope_scaling factor must be at least 1 (it stretches wavelengths), "
            f"got {values['factor']:g}"
        )
    if rope_type == "llama3" and values["high_freq_factor"] <= values["low_freq_factor"]:
        raise ConfigError(f"{where}: rope_scaling high_freq_factor must exceed low_freq_factor")
    original = values.get("original_max_position_embeddings")
    if original is not None and (original < 1 or original != int(original)):
        raise ConfigError(
            f"{where}: rope_scaling original_max_position_embeddings is a context length, a "
            f"whole number of tokens; got {original:g}"
        )
    return (("rope_type", rope_type), *values.items())
