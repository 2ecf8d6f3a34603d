"""The family-specific fields of a model's ``config.json``: a composed model's inner family,
multimodal rope sections, rope-free layers, each layer's own rope base, the towers not shown,
the input scale, what layer 0 is, the token table's width and the embedding norm's epsilon;
each read and checked."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from embedcli.core.layouts import LAYOUT_WORDS
from embedcli.core.steps import number, round_to
from embedcli.errors import ConfigError
from embedcli.families.registry import Family, family_of, unknown_family
from embedcli.models.positions import count, positive


def first_key(data: dict[str, Any], *names: str) -> str | None:
    for name in names:
        if data.get(name) is not None:
            return name
    return None


def composed(outer: Family, text: dict[str, Any], where: str) -> tuple[Family, str]:
    """The family of a composed model's sub-config (EncoderDecoderModel's encoder), its keys
    under the sub-model's name (``encoder.embeddings...``), and that sub-config's model_type."""
    inner_type = text.get("model_type")
    inner = family_of(inner_type)
    key = outer.composes
    if inner is None:
        raise unknown_family(inner_type, f"{where}'s {key}")
    if inner.composes is not None or inner.text_config or inner.stacks:
        raise ConfigError(
            f"{where}: a {outer.model_type} whose {key} is a {inner.name} model (itself made "
            "of sub-models) is not read; its encoder must be one stack"
        )
    family = replace(
        inner,
        name=f"{inner.name}, as the {key} of {outer.name}",
        prefixes=(key,),
        head=None,
    )
    return family, str(inner_type)


def mrope_section(family: Family, text: dict[str, Any]) -> tuple[int, ...] | None:
    """Multimodal rope's sections, as the model reads them (rope_parameters' mrope_section,
    else transformers' default); None for a family with one position stream."""
    if family.mrope_section is None:
        return None
    for key in ("rope_parameters", "rope_scaling"):
        params = text.get(key)
        if isinstance(params, dict) and isinstance(params.get("mrope_section"), list):
            return tuple(params["mrope_section"])
    return family.mrope_section


def rope_free_layers(family: Family, text: dict[str, Any], where: str) -> tuple[int, ...] | None:
    """The layers whose attention uses no rope, as the model reads them: the config's list of
    1 (rope) and 0, else one in every ``interval`` layers (Llama4TextConfig's rule); or the
    layers whose own rope base is 0 (Granite SWA's), where some are."""
    if family.layer_thetas is not None:
        thetas = layer_thetas(family, text, where) or ()
        return tuple(i for i, theta in enumerate(thetas) if not theta) or None
    if family.rope_layers is None:
        return None
    field, interval_field, interval_default = family.rope_layers
    flags = text.get(field)
    if not flags:
        layers = count(text.get("num_hidden_layers"), "num_hidden_layers", where)
        interval = count(text.get(interval_field, interval_default), interval_field, where)
        flags = [int((i + 1) % interval != 0) for i in range(layers)]
    if not isinstance(flags, list) or any(f not in (0, 1) for f in flags):
        raise ConfigError(f"{where}: {field} must be a list of 1 (rope) and 0 (no rope)")
    return tuple(i for i, flag in enumerate(flags) if flag == 0)


def layer_thetas(family: Family, text: dict[str, Any], where: str) -> tuple[float, ...] | None:
    """Each layer's own rope base (0: that layer has no rope), as the model reads them: entry i
    for layer i, over the num_hidden_layers layers (entries past them are never read); None
    where the family keeps no such list or config.json gives none (every layer: rope_theta). A
    list shorter than the layers, or an entry neither 0 nor a base above 1, is refused."""
    field = family.layer_thetas
    value = None if field is None else text.get(field)
    if field is None or value is None:
        return None
    layers = count(text.get("num_hidden_layers"), "num_hidden_layers", where)
    if layers is None:
        raise ConfigError(f"{where}: {field} is read layer by layer: give num_hidden_layers")
    if not isinstance(value, list) or len(value) < layers:
        raise ConfigError(
            f"{where}: {field} must be a list of one rope base per layer (0: no rope), "
            f"{layers} for num_hidden_layers {layers}; got {repr(value)[:60]}"
        )
    for i, theta in enumerate(value[:layers]):
        if not _zero_or_base(theta):
            raise ConfigError(
                f"{where}: {field}[{i}] must be 0 (no rope in layer {i}) or a rope base above "
                f"1, got {repr(theta)[:40]}"
            )
    return tuple(float(theta) for theta in value[:layers])


def _zero_or_base(value: Any) -> bool:
    """0 (no rope), or a finite number above 1 (a rope base, as rope_theta must be)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return value == 0 or (math.isfinite(float(value)) and value > 1)
    except OverflowError:  # an integer past a float's range
        return False


def layer_rope(field: str, thetas: tuple[float, ...]) -> dict[str, Any]:
    """The rope fields that per-layer bases decide, as transformers picks each layer's rotary
    module by its base: the first block's base (layer 0's; where it is 0, block 0 has no rope
    and the first rope layer's angles are shown), every base with the layers that use it."""
    users: dict[float, list[int]] = {}
    for i, theta in enumerate(thetas):
        if theta:
            users.setdefault(theta, []).append(i)
    first = thetas[0] or next(iter(users))
    bases = {_layers(layers): theta for theta, layers in users.items()}
    return {
        "rope_theta": first,
        "rope_bases": bases if len(bases) > 1 else None,
        "rope_layer_type": f"{field} {number(first)}",
        "rope_layer_types": None,
        "rope_not_in_first_block": None if thetas[0] else f"{field} 0",
    }


def _layers(indices: list[int]) -> str:
    """``layer 3``, ``layers 0, 4, 8``, ``layers 1-3, 5-7``: runs of three or more as ranges."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    said = [str(a) if a == b else f"{a}, {b}" if b == a + 1 else f"{a}-{b}" for a, b in runs]
    return ("layer " if len(indices) == 1 else "layers ") + ", ".join(said)


def rope_free_summary(layers: tuple[int, ...] | None) -> dict[str, Any]:
    """The layers without rope, and whether layer 0 (the first block) uses rope; nothing where
    every layer has rope."""
    if not layers:
        return {}
    return {"rope_free_layers": list(layers), "layer_0_rope": 0 not in layers}


def mrope_summary(section: tuple[int, ...] | None) -> dict[str, Any] | None:
    """What multimodal rope does with token ids alone: its three position streams are each the
    token's position (arange(T)), so every pair's angle is plain rope's."""
    if section is None:
        return None
    return {
        "section": list(section),
        "streams": ["temporal", "height", "width"],
        "text_only": "temporal = height = width = position: the angles are plain rope's",
    }


def layout_summary(family: Family | None, streams: int) -> dict[str, Any] | None:
    """How the first block takes the input embeddings, where not as (B, T, d): the layout's
    name, the stream count where it has streams, and the arrangement in torch's words."""
    if family is None or family.block_layout == "tokens":
        return None
    said = {"layout": family.block_layout}
    if family.streams is not None:
        said["streams"] = streams
    said["how"] = LAYOUT_WORDS[family.block_layout].format(n=streams, m=streams - 1)
    return said


def towers_not_shown(data: dict[str, Any], family: Family) -> dict[str, str] | None:
    """A multimodal config's sub-configs other than its language model's: the towers (vision,
    audio, ...) that embedcli does not show, by config key, with their model_type; and the
    family's side inputs of its first block (Family.side_inputs), by name, with what they are."""
    towers = {
        key: value["model_type"]
        for key, value in data.items()
        if key not in ("text_config", family.text_path[0], *family.stacks)
        and isinstance(value, dict)
        and isinstance(value.get("model_type"), str)
    }
    towers.update(family.side_inputs)
    return towers or None


def stack_shown(family: Family, data: dict[str, Any]) -> str | None:
    """The stack whose first block embedcli shows: the one that runs first (the encoder), or
    the decoder of a checkpoint saved from the family's decoder-only class (BartForCausalLM)."""
    if not family.stacks:
        return None
    architectures = data.get("architectures")
    named = architectures if isinstance(architectures, list) else []
    if named and all(str(a).endswith("ForCausalLM") for a in named) and "decoder" in family.stacks:
        return "decoder"
    return family.stacks[0]


def input_scale(family: Family, text: dict[str, Any], d_model: int | None, where: str) -> float:
    """The factor the family multiplies token embeddings by (1.0: none)."""
    if family.scale is None:
        return 1.0
    if family.scale == "sqrt_d":
        if family.scale_when is not None and not text.get(family.scale_when, True):
            return 1.0
        if d_model is None:
            raise ConfigError(f"{where}: {family.name} scales by sqrt(hidden_size): give it")
        return math.sqrt(d_model)
    if family.scale == "sqrt_d_bfloat16":  # RecurrentGemma's normalizer: a bfloat16 buffer
        if d_model is None:
            raise ConfigError(f"{where}: {family.name} scales by sqrt(hidden_size): give it")
        return round_to(math.sqrt(d_model), "bfloat16")
    value = text.get(family.scale)
    if value is None and family.scale not in family.defaults():  # HRM's: 1 / initializer_range
        raise ConfigError(
            f"{where}: {family.name} derives {family.scale} from other fields where config.json "
            f"leaves it out, and embedcli does not guess it: give {family.scale}"
        )
    if value is None and family.defaults().get(family.scale) is not None:
        raise ConfigError(  # null given where the class defaults to a number: forward fails
            f"{where}: {family.scale} is null, and {family.name}'s model multiplies by it: "
            "give a number"
        )
    return 1.0 if value is None else positive(value, family.scale, where)


def layer_zero(
    family: Family, text: dict[str, Any], given: dict[str, Any], where: str
) -> dict[str, Any]:
    """``text`` with the first block's own overrides (its head_dim) where the family keeps
    per-layer overrides (Gemma 4's per_layer_config, as transformers resolves layer 0's); where
    config.json has none, as transformers derives them (``derived_overrides``), never the
    defaults' own list, which numbers the default model's layers."""
    if family.layer_overrides is None:
        return text
    overrides = given.get(family.layer_overrides)
    if overrides is None:
        derived, types = family.derived_overrides, text.get("layer_types")
        if derived and isinstance(types, list) and types and types[0] == derived[0]:
            head_dim = given.get(derived[1])
            return {**text, "head_dim": derived[2] if head_dim is None else head_dim}
        return text
    if not isinstance(overrides, dict):
        raise ConfigError(f"{where}: {family.layer_overrides} must be an object")
    zero = next((v for k, v in overrides.items() if str(k).isdigit() and int(k) == 0), {})
    unknown = sorted(set(zero) - {"head_dim", "num_key_value_heads"})
    if unknown:
        raise ConfigError(
            f"{where}: {family.layer_overrides} overrides {', '.join(unknown)} for layer 0, "
            "which embedcli does not read"
        )
    return {**text, "head_dim": zero["head_dim"]} if "head_dim" in zero else text


def token_width(family: Family, text: dict[str, Any], d_model: int | None, where: str) -> Any:
    """The token table's width where a projection follows it (None: no projection runs)."""
    if family.project_in is None:
        return None
    key = first_key(text, *family.width)
    width = count(text.get(key), key, where) if key else d_model
    if family.project_when == "always":
        return width
    return width if width is not None and width != d_model else None


def token_dropout_id(family: Family, text: dict[str, Any], where: str) -> int | None:
    """ESM's mask token id where its token dropout flag is on (None: off)."""
    if family.token_dropout is None or not text.get(family.token_dropout):
        return None
    mask_id = text.get("mask_token_id")
    if isinstance(mask_id, bool) or not isinstance(mask_id, int) or mask_id < 0:
        raise ConfigError(
            f"{where}: {family.token_dropout} zeroes the rows of mask_token_id, which must be "
            f"a non-negative integer, got {mask_id!r}"
        )
    return mask_id


def row0_keys(family: Family, text: dict[str, Any], where: str) -> tuple[str, ...]:
    """The keys of the tables whose row 0 is added, in turn: the family's own, or its one
    ``{i}`` key for each entry of the config list ``row0_count`` (TAPAS: type_vocab_sizes)."""
    if family.row0_count is None:
        return family.row0_tables
    sizes = text.get(family.row0_count)
    least = 3 if text.get("reset_position_index_per_cell", True) else 1  # TAPAS reads 1 and 2
    if (
        not isinstance(sizes, list)
        or not least <= len(sizes) <= 64
        or not all(_whole(s) and s > 0 for s in sizes)
    ):
        raise ConfigError(
            f"{where}: {family.name} adds row 0 of one table for each entry of "
            f"{family.row0_count}, which must be a list of {least} to 64 positive sizes, "
            f"got {sizes!r}"
        )
    return tuple(key.format(i=i) for i in range(len(sizes)) for key in family.row0_tables)


def attention_window(family: Family, text: dict[str, Any], where: str) -> tuple[int | None, int]:
    """(the window the ids are padded to a multiple of, the pad id they are padded with):
    Longformer's and LED's ``attention_window`` (one per layer: the largest), and
    ``pad_token_id``; (None, 0) for a family that pads nothing."""
    if family.window is None:
        return None, 0
    value = text.get(family.window)
    sizes = value if isinstance(value, list) and value else [value]
    layers = text.get("num_hidden_layers", text.get("encoder_layers"))
    if isinstance(value, list) and _whole(layers) and len(value) != layers:
        raise ConfigError(  # transformers' encoder refuses it too
            f"{where}: {family.window} lists {len(value)} windows for {layers} layers"
        )
    if not all(_whole(v) and v > 0 and v % 2 == 0 for v in sizes):
        raise ConfigError(
            f"{where}: {family.name} pads the ids to a multiple of {family.window}, which must "
            f"be an even positive integer (or a list of them), got {value!r}"
        )
    pad = text.get("pad_token_id")
    if not _whole(pad) or pad < 0:
        raise ConfigError(
            f"{where}: {family.name} pads the ids with pad_token_id, which must be a "
            f"non-negative integer, got {pad!r}"
        )
    return max(sizes), pad


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def concat_tables(family: Family, text: dict[str, Any], where: str) -> tuple[tuple[str, int], ...]:
    """(key, width) of each table whose row 0 is put beside the token rows, where its flag is
    on (RoCBERT's enable_shape, enable_pronunciation)."""
    found = []
    for key, width_field, flag in family.concat_tables:
        on = text.get(flag)
        if not isinstance(on, bool):
            raise ConfigError(f"{where}: {flag} must be true or false, got {on!r}")
        if not on:
            continue
        width = text.get(width_field)
        if not _whole(width) or width < 1:
            raise ConfigError(f"{where}: {width_field} must be a positive integer, got {width!r}")
        found.append((key, width))
    if family.concat_tables and not found:  # the Linear would still run, from d to d
        flags = " and ".join(flag for _, _, flag in family.concat_tables)
        raise ConfigError(f"{where}: {flags} are all false, which embedcli does not read")
    return tuple(found)


def vocab_rows(family: Family, text: dict[str, Any], where: str) -> int:
    """The token table's rows: the family's vocabulary field (FSMT's src_vocab_size), and the
    rows past it (Mllama's 8)."""
    rows = count(text.get(family.vocab), family.vocab, where)
    if rows is None:
        raise ConfigError(f"{where}: {family.vocab} must be a positive integer, got null")
    return rows + family.extra_rows


def replaced_row(
    family: Family, data: dict[str, Any], text: dict[str, Any], where: str
) -> tuple[int, str] | None:
    """(the id whose rows are replaced, the key of the row): from the sub-config that holds the
    text model (T5Gemma 2's encoder, whose eoi_token_index transformers copies over the outer
    one), its class default where it gives none."""
    if family.replaced_row is None:
        return None
    field, key, default = family.replaced_row
    # transformers' T5Gemma2Config takes the encoder's (its own is overwritten with it)
    outer = data.get(family.text_path[0]) if family.text_path else None
    value = (outer if isinstance(outer, dict) else text).get(field, default)
    if not _whole(value) or not 0 <= value < 2**63:
        raise ConfigError(
            f"{where}: {family.name} replaces the rows of the id in {field}, which must be a "
            f"non-negative integer, got {value!r}"
        )
    return value, key


def streams(family: Family, text: dict[str, Any], where: str) -> int:
    """How many copies of each row the first block reads (hyper-connections' hc_mult): 1 for
    a family without streams."""
    if family.streams is None:
        return 1
    value = text.get(family.streams)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"{where}: {family.name}'s first block reads {family.streams} copies of each "
            f"token's row, which must be a positive integer, got {value!r}"
        )
    if value > 1024:  # real models hold 4; a count past any machine is refused, not shaped
        limit = "more than embedcli reads (1,024)"
        raise ConfigError(f"{where}: {family.streams} {value:,} is {limit}")
    if family.block_layout == "streams_flat" and value < 2:  # Qwen4ExpTextConfig refuses 1
        raise ConfigError(f"{where}: {family.name} needs {family.streams} above 1, got {value}")
    return value


def norm_eps(family: Family, text: dict[str, Any], where: str) -> float | None:
    """The embedding norm's eps from the field the family's code reads (none: the family's
    ``norm_eps_default``, torch's 1e-5 unless it says otherwise)."""
    if not family.normed:
        return None
    key = first_key(text, *family.norm_eps) if family.norm_eps else None
    if key is None:
        return family.norm_eps_default
    value = positive(text[key], key, where)
    if value >= 1:
        raise ConfigError(f"{where}: {key} must be below 1, got {value:g}")
    return value
