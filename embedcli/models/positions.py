"""A config's position fields, read as the family's entry says: rope's bases, rotated
dimensions and scaling (every type of transformers' ROPE_INIT_FUNCTIONS, resolved; transformers
4's top-level keys and 5's ``rope_parameters``, also per layer type;
sliding windows), ALiBi's slopes per head, T5's relative buckets.
"""

from __future__ import annotations

import math
from typing import Any

from embedcli.errors import ConfigError
from embedcli.families.registry import Family
from embedcli.models.ropekinds import PARTIAL_DEFAULT_ROPE, ROPE_ATTENTION, rope_free_kind

# each rope type's fields as transformers' ROPE_INIT_FUNCTIONS read them: (required, optional);
# a rope_type not here is refused by name, never drawn as another
SCALING_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "linear": (("factor",), ()),
    "llama3": (("factor", "low_freq_factor", "high_freq_factor"), ()),
    "dynamic": (("factor",), ()),
    "yarn": (
        ("factor",),
        ("attention_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"),
    ),
    "longrope": (("short_factor", "long_factor"), ("factor", "attention_factor")),
    "proportional": ((), ("factor",)),
    "freq_factors": (("factors",), ()),  # a GGUF file's rope_freqs.weight, a divisor per pair
}
_ORIGINAL = ("llama3", "yarn", "longrope")
MAX_ALIBI_BIAS = 1000  # the types with original_max_position_embeddings


def positive(value: Any, name: str, where: str, low: float = 0.0) -> float:
    """``value`` as a finite number above ``low``, or a ConfigError naming the field."""
    try:
        good = not isinstance(value, bool) and math.isfinite(float(value)) and value > low
    except (TypeError, ValueError, OverflowError):
        good = False
    if not good:
        raise ConfigError(f"{where}: {name} must be a number above {low:g}, got {repr(value)[:40]}")
    return float(value)


MAX_COUNT = 2**40  # every size embedcli takes (docs/reliability.md), a config's too


def count(value: Any, name: str, where: str) -> int | None:
    """``value`` as a positive integer (None stays None), or a ConfigError naming the field."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: {name} must be a positive integer, got {value!r}")
    if value > MAX_COUNT:
        raise ConfigError(
            f"{where}: {name} is {value:,}, past the 2**40 = {MAX_COUNT:,} embedcli takes for "
            "any size"
        )
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
    if family.positional == "relative" and family.relative_buckets:
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
    from embedcli.core.positions import alibi_slopes  # lazy: start-up

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
        if bias_max > MAX_ALIBI_BIAS:  # 2^(bias·k/m) would overflow a float
            raise ConfigError(
                f"{where}: alibi_bias_max is {bias_max:g}; ALiBi's slopes 2^-(bias·k/m) are 0 "
                f"past {MAX_ALIBI_BIAS:,} (MPT's is 8), so embedcli does not read it"
            )
        slopes = alibi_slopes(heads, "mpt", bias_max)
    else:
        slopes = alibi_slopes(heads)
    return {"alibi": True, "alibi_slopes": tuple(slopes), "heads": heads}


def per_layer_rope(family: Family) -> bool:
    """Whether the family's code keeps one rope per layer type (Gemma 3, OLMo 3): its
    transformers defaults (families/defaults.json, read from the config classes) nest
    ``rope_parameters`` by layer type. Every other family reads one flat set for all layers."""
    return family.rope_per_layer or _nested(family.defaults().get("rope_parameters"))


def _nested(params: Any) -> bool:
    """One set per layer type; ``None`` for a layer type without rope (a conv or linear
    attention layer of a hybrid stack)."""
    return (
        isinstance(params, dict)
        and any(isinstance(v, dict) for v in params.values())
        and all(isinstance(v, dict) or v is None for v in params.values())
    )


def _first_type(family: Family, text: dict[str, Any], where: str) -> str | None:
    """The first block's layer type: ``layer_types[0]``, or, where config.json gives a
    sliding_window_pattern instead, the one transformers derives from it (Gemma 3: block i
    slides unless (i + 1) % pattern == 0, so pattern 1 makes every block full attention)."""
    types = text.get("layer_types")
    if types is None and "layer_types" in text and family.defaults().get("layer_types"):
        raise ConfigError(  # transformers derives them from its own pattern: not guessed
            f"{where}: layer_types is null, and {family.name}'s config derives the layers' "
            "kinds from fields embedcli does not read: give layer_types"
        )
    layers = text.get("num_hidden_layers")
    given = types != family.defaults().get("layer_types")  # a default list is derived anew
    if given and isinstance(types, list) and type(layers) is int and len(types) != layers:
        raise ConfigError(  # transformers' validate_layer_type refuses it too
            f"{where}: layer_types lists {len(types):,} layers, but num_hidden_layers is {layers:,}"
        )
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
    defaults = family.defaults().get("rope_parameters")
    if nested:
        filled = [k for k, v in params.items() if v is None and isinstance(defaults, dict)
                  and isinstance(defaults.get(k), dict)]  # fmt: skip
        if filled:  # Gemma 3's code fills a null set with its own default: not guessed
            raise ConfigError(
                f"{where}: rope_parameters sets {filled[0]} to null, which {family.name}'s "
                "config fills with its own default set: give the set"
            )
        first = first or next(iter(params))
        for kind, key in family.rope_set_for:  # DeepSeek V4: sets keyed main and compress
            if kind in (first, "*"):
                first = key
                break
        return {str(k): v for k, v in params.items() if isinstance(v, dict)}, first
    per_type = (
        isinstance(defaults, dict)
        and bool(defaults)
        and all(isinstance(v, dict) or v is None for v in defaults.values())
    )
    if per_type and isinstance(params, dict) and params and not text.get("rope_scaling"):
        raise ConfigError(
            f"{where}: rope_parameters is one set, but {family.name} keeps one per layer type "
            f"({', '.join(defaults)}): embedcli does not guess how its code spreads it"
        )
    merged: dict[str, Any] = {}
    # transformers' convert_rope_params_to_dict: rope_scaling, where given, takes the place of
    # rope_parameters whole (rope_parameters = rope_scaling or rope_parameters)
    scaling = text.get("rope_scaling")
    source = scaling if isinstance(scaling, dict) and scaling else params
    if isinstance(source, dict):
        merged.update(source)
    for name in ("rope_theta", "rotary_emb_base", "partial_rotary_factor", "rotary_pct"):
        if text.get(name) is not None and name not in merged:
            merged[name] = text[name]
    if text.get("rope_local_base_freq") is not None:  # Gemma 3 in transformers 4
        local = {"rope_theta": text["rope_local_base_freq"], "rope_type": "default"}
        sets = {"full_attention": merged, "sliding_attention": local}
        return sets, first or "full_attention"
    types = text.get("layer_types")
    if first and rope_free_kind(first) and isinstance(types, list):
        attending = [t for t in types if isinstance(t, str) and not rope_free_kind(t)]
        if attending:  # one set, for the attention layers: block 0 (conv, mamba) has none
            return {attending[0]: merged}, first
    return {first or "default": merged}, first or "default"


def _rope(family: Family, text: dict[str, Any], heads: int | None, where: str) -> dict[str, Any]:
    sets, first = _rope_sets(family, text, where)
    without = None  # the first block's layer type, where it has no rope (a hybrid's conv)
    if first not in sets:
        types = text.get("layer_types")
        later = [t for t in types if t in sets] if isinstance(types, list) else []
        given = text.get("rope_parameters")
        said_none = isinstance(given, dict) and first in given and given[first] is None
        if not later or (first in ROPE_ATTENTION and not said_none):  # its set missing
            raise ConfigError(f"{where}: layer type {first!r} has no rope_parameters")
        without, first = first, later[0]  # the angles are those of the first rope layers
    label = (lambda name: f"{name} rope_theta") if len(sets) > 1 else (lambda _: "rope_theta")
    bases = {
        name: positive(
            p.get("rope_theta", p.get("rotary_emb_base", 10000.0)), label(name), where, 1
        )
        for name, p in sets.items()
    }
    for name, p in sets.items():
        if "rope_type" in p and p["rope_type"] is None and p.get("type") is None:
            raise ConfigError(  # transformers looks the type up and fails on None
                f"{where}: rope_type is null: give the rope's type (default, linear, ...)"
            )
        kind = p.get("rope_type") or p.get("type") or "default"
        if not isinstance(kind, str):
            raise ConfigError(f"{where}: rope_type must be a name, got {kind!r}")
        if name != first:  # every layer type's entry is checked, not only the drawn
            _scaling(kind, p, text, where, len(sets) > 1 or _nested(text.get("rope_parameters")))
    params = sets[first]
    rope_type = params.get("rope_type") or params.get("type") or "default"
    nested = len(sets) > 1 or _nested(text.get("rope_parameters"))
    scaling = _scaling(rope_type, params, text, where, nested)
    dim = _rope_dim(family, text, params, heads, where, rope_type)
    if scaling and dim is not None:
        from embedcli.core.positions import check_scaling_pairs  # lazy: start-up

        wrong = check_scaling_pairs(scaling, dim)
        if wrong:
            raise ConfigError(f"{where}: {wrong} ({dim} rotated dimensions per head)")
    return {
        "rope_theta": bases[first],
        "rope_bases": bases if len(bases) > 1 else None,
        "rope_dim": dim,
        "rope_scaling": rope_type if rope_type != "default" else None,
        "rope_scaling_params": scaling,
        "rope_layer_type": first if len(sets) > 1 or first != "default" else None,
        "rope_not_in_first_block": without,
        "rope_layer_types": {
            name: p.get("rope_type") or p.get("type") or "default" for name, p in sets.items()
        }
        if len(sets) > 1
        else None,
        "sliding_window": _sliding_window(text, where),
    }


def _sliding_window(text: dict[str, Any], where: str) -> int | None:
    """The attention window of sliding layers (``sliding_window``, or
    ``attention.sliding_window``), reported beside the rope it limits."""
    window = text.get("sliding_window")
    attention = text.get("attention")
    if window is None and isinstance(attention, dict):
        window = attention.get("sliding_window")
    if text.get("use_sliding_window") is False or window in (None, False, 0):
        return None  # transformers' masks slide only where the window is set (Qwen2's flag)
    return count(window, "sliding_window", where)


def _rope_dim(
    family: Family,
    text: dict[str, Any],
    params: dict[str, Any],
    heads: int | None,
    where: str,
    rope_type: str = "default",
) -> int | None:
    """The dimensions each head rotates, by the family's rule; proportional rope: the whole
    head's (it turns part of it and leaves the rest at angle 0)."""
    whole = rope_type == "proportional"
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
    if whole:
        return head_dim
    factor = params.get("partial_rotary_factor", params.get("rotary_pct"))
    if factor is None:
        factor = text.get("partial_rotary_factor", text.get("rotary_pct"))
    if head_dim is None or factor is None:
        return head_dim
    factor = positive(factor, "partial_rotary_factor", where)
    own = text.get("model_type") or family.model_types[0]
    if rope_type == "default" and factor != 1 and own not in PARTIAL_DEFAULT_ROPE:
        raise ConfigError(
            f"{where}: partial_rotary_factor {factor:g} is given, but {family.name}'s own "
            "default rope rotates the whole head (transformers ignores the factor there): "
            "embedcli does not guess which is meant"
        )
    if factor > 1:
        raise ConfigError(f"{where}: partial_rotary_factor must be at most 1, got {factor:g}")
    return int(head_dim * factor)


def _scaling(
    rope_type: str, params: dict[str, Any], text: dict[str, Any], where: str, nested: bool
) -> Any:
    """The scaling parameters, checked and resolved as transformers resolves them (the
    original context, yarn's and longrope's factor from the contexts); None for none. A type
    embedcli does not know is refused by name."""
    if rope_type == "default":
        return None
    if rope_type not in SCALING_KEYS:
        known = ", ".join(("default", *SCALING_KEYS))
        raise ConfigError(
            f"{where}: rope_type {rope_type!r} is not one embedcli computes ({known}): "
            "its angles are refused rather than guessed"
        )
    required, optional = SCALING_KEYS[rope_type]
    label = f"rope_scaling {rope_type}"
    if rope_type == "yarn" and ("short_factor" in params or "long_factor" in params):
        raise ConfigError(
            f"{where}: rope_type 'yarn' with short_factor/long_factor (Phi-3's code reads "
            "that as longrope, yarn's ignores the lists): embedcli does not guess which"
        )
    values: dict[str, Any] = {"rope_type": rope_type}
    for key in required:
        if params.get(key) is None and not (key == "factor" and "factor" in params
                                             and rope_type == "yarn"):  # fmt: skip
            raise ConfigError(f"{where}: {label} needs {key}, which config.json does not give")
    if rope_type in _ORIGINAL:
        values["original_max_position_embeddings"] = _original(params, text, where, nested)
    context = text.get("max_position_embeddings")
    for key in (*required, *optional):
        value = params.get(key)
        if value is None:
            continue
        if key.endswith(("short_factor", "long_factor", "factors")):
            values[key] = _factors(value, f"{label} {key}", where)
        else:
            values[key] = positive(value, f"{label} {key}", where)
    if rope_type in ("yarn", "longrope") and values.get("factor") is None:
        values["factor"] = positive(context, "max_position_embeddings", where) / float(
            values["original_max_position_embeddings"]
        )  # transformers' ratio of the two contexts (DeepSeek-V3, Phi-3)
    elif "factor" in values and values["factor"] < 1 and rope_type != "longrope":
        raise ConfigError(
            f"{where}: rope_scaling factor must be at least 1 (it stretches wavelengths), "
            f"got {values['factor']:g}"
        )
    # equal factors are Llama 4 Scout's (1 and 1): no middle band, as transformers computes it
    if rope_type == "llama3" and values["high_freq_factor"] < values["low_freq_factor"]:
        raise ConfigError(
            f"{where}: rope_scaling high_freq_factor must be at least low_freq_factor"
        )
    if rope_type == "dynamic":
        values["max_position_embeddings"] = count(context, "max_position_embeddings", where)
        if values["max_position_embeddings"] is None:
            raise ConfigError(f"{where}: dynamic rope scaling needs max_position_embeddings")
    if rope_type == "yarn":
        truncate = params.get("truncate", True)
        if not isinstance(truncate, bool):
            raise ConfigError(f"{where}: {label} truncate must be true or false, got {truncate!r}")
        if nested and truncate is not True:
            raise ConfigError(
                f"{where}: {label} truncate {truncate!r} in a per-layer-type rope_parameters: "
                "transformers reads truncate from the top level there, so embedcli does not "
                "guess which applies"
            )
        values["truncate"] = truncate
    if rope_type == "proportional":
        partial = params.get("partial_rotary_factor", text.get("partial_rotary_factor", 1.0))
        values["partial_rotary_factor"] = positive(partial, "partial_rotary_factor", where)
    if rope_type in ("yarn", "longrope"):
        from embedcli.core.rope import rope_attention_factor  # lazy: start-up

        values["attention_factor"] = rope_attention_factor(tuple(values.items()))
    return tuple(values.items())


def _original(params: dict[str, Any], text: dict[str, Any], where: str, nested: bool) -> int:
    """The pretraining context: a transformers 4 config's top-level
    original_max_position_embeddings first (Phi-3), then the rope parameters', then
    max_position_embeddings, as transformers' ``standardize_rope_params`` orders them."""
    value = None if nested else text.get("original_max_position_embeddings")
    if value is None:
        value = params.get("original_max_position_embeddings")
    if value is None:
        value = text.get("max_position_embeddings")
    name = "rope_scaling original_max_position_embeddings"
    if value is None:
        raise ConfigError(f"{where}: {name} is not given (nor max_position_embeddings)")
    length = positive(value, name, where)
    if length < 1 or length != int(length):
        raise ConfigError(
            f"{where}: {name} is a context length, a whole number of tokens; got {length:g}"
        )
    return int(length)


def _factors(value: Any, name: str, where: str) -> tuple[float, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise ConfigError(f"{where}: {name} must be a list of numbers, one per rotated pair")
    return tuple(positive(v, name, where) for v in value)
