"""Which positional encoding `embedcli positions` draws: the one the flags describe, a preset's,
or a model's own (``--weights``: its config.json), with every flag checked against it.

A model brings its family and its numbers (rope's base, rotated dimensions and scaling; ALiBi's
head count and slopes; a learned table's sizes): a flag that says otherwise is an error, never
a silent override, and a flag of another family (``--heads`` for rope) is a usage error.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from embedcli.core.config import (
    DEFAULT_SEED,
    PICTURE_D_MODEL,
    PICTURE_POSITIONS,
    EmbedConfig,
    Overrides,
)
from embedcli.core.positions import alibi_slopes, check_scaling_pairs
from embedcli.errors import ConfigError, UsageError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.presets import get_preset, preset_model
from embedcli.models.sources import open_source
from embedcli.models.tables import check_source, find_tables
from embedcli.tokenization.display import plural

if TYPE_CHECKING:
    from embedcli.core.positions import Scaling
    from embedcli.models.config import ModelConfig

DEFAULT_HEADS = 8  # ALiBi's paper draws 8 heads: slopes 1/2, 1/4, ..., 1/256


@dataclass(frozen=True)
class PositionsRequest:
    """What the flags of ``embedcli positions`` ask for; None where a flag was not given."""

    positional: str | None = None
    context_length: int | None = None  # rows: positions (ALiBi: queries and keys)
    d_model: int | None = None  # columns; for rope, the rotated dimensions of one head
    seed: int = DEFAULT_SEED
    weights: str | None = None
    position_key: str | None = None
    preset: str | None = None
    rope_theta: float | None = None
    rope_scaling: Scaling | None = None  # parsed from --rope-scaling
    heads: int | None = None  # ALiBi's head count
    head: int | None = None  # ALiBi: the one head drawn large (0-based)
    similarity: bool = False
    png: bool = False  # --png: a picture of whole heads (ALiBi) is written too
    as_json: bool = False  # --json: every number drawn is written
    access: HubAccess = OFFLINE  # --download, --download-all: hf: sources may use the network


@dataclass(frozen=True)
class Encoding:
    """The positional encoding to draw, as the flags, a preset or a model describe it."""

    family: str  # learned, sinusoidal, rope or alibi
    source: str  # "from the flags", "preset llama-3.1-8b (Llama)", "model-llama (Llama)"
    from_model: bool = False  # a preset or --weights: its numbers are not the flags'
    d_model: int | None = None  # learned: the table's width
    context_length: int | None = None  # learned: the table's rows (the most a picture shows)
    rope_theta: float = 10000.0
    rope_dim: int | None = None  # rotated dimensions of one head (r): r/2 pairs
    rope_scaling: Scaling | None = None  # any type, as rope_angles takes it
    rope_bases: dict[str, float] | None = None  # other layer types' bases (Gemma 3)
    rope_not_in_first_block: str | None = None  # block 0's kind, where it has no rope
    rope_layer_scalings: dict[str, str] | None = None  # layer type -> its rope_type, where several
    heads: int | None = None
    slopes: tuple[float, ...] | None = None
    slope_rule: str = "press"  # press (the paper, BLOOM, Falcon) or mpt
    model_family: str | None = None  # the registry's name (BLOOM, Llama), for the notes


# flag -> (its name on the command line, the families it means something for)
_FAMILY_FLAGS = {
    "rope_theta": ("--rope-theta", ("rope",)),
    "rope_scaling": ("--rope-scaling", ("rope",)),
    "heads": ("--heads", ("alibi",)),
    "head": ("--head", ("alibi",)),
    "d_model": ("-d", ("learned", "sinusoidal", "rope")),
    "similarity": ("--similarity", ("learned", "sinusoidal", "rope")),
}


def resolve(request: PositionsRequest) -> Encoding:
    """The encoding ``request`` asks for, every flag checked against the model it names."""
    if request.weights is not None and request.preset is not None:
        raise UsageError("pass --preset or --weights, not both")
    if request.weights is None and request.position_key is not None:
        raise UsageError("--position-key names a table in --weights: pass --weights")
    if request.weights is not None:
        encoding = _weights_encoding(request.weights, request.position_key, request.access)
    elif request.preset is not None:
        encoding = _preset_encoding(request.preset)
    else:
        encoding = _flags_encoding(request)
    if request.preset is not None:
        return _customized(request, encoding)
    _check_family(request, encoding)
    _check_agrees(request, encoding)
    return encoding


def _customized(request: PositionsRequest, encoding: Encoding) -> Encoding:
    """A preset is where a picture starts, as in inspect-shapes and embed: each flag given
    beside it that says otherwise changes it, and the source says how ("custom: preset gpt2
    with d 64"); a model's files (--weights) are never overridden."""
    said: list[str] = []
    if request.positional not in (None, encoding.family):
        sized = _preset_sizes(request)  # the preset's own sizes for the other family
        drawn = _flags_encoding(sized)
        said.append(f"positional {request.positional}")
        width = sized.d_model if drawn.family in ("learned", "sinusoidal") else None
        encoding = replace(drawn, source=encoding.source, d_model=width)
        _check_family(replace(sized, positional=None), encoding)
    else:
        _check_family(request, encoding)
        encoding, said = _overridden(request, encoding)
        _check_family(request, encoding)  # --head against the heads now drawn
    if not said:
        return encoding
    return replace(encoding, source=f"custom: {encoding.source} with {', '.join(said)}")


def _preset_sizes(request: PositionsRequest) -> PositionsRequest:
    """``request`` with the preset's sizes where the flags give none, for another family: a
    table's width, one head's dimensions for rope, the heads for ALiBi; refused where the
    preset does not know them (GPT-2's sizes name no heads)."""
    name, family = request.preset, request.positional
    assert name is not None
    model = preset_model(name)
    width = model.d_model if model is not None else get_preset(name).config.d_model
    heads = model.heads if model is not None else None
    head_dim = model.rope_dim if model is not None else None
    if head_dim is None and heads and width:
        head_dim = width // heads
    if family == "rope":
        if request.d_model is None and head_dim is None:
            raise UsageError(
                f"preset {name} names no attention heads, so rope's rotated dimensions are "
                "not known: pass -d (one head's)"
            )
        return replace(request, d_model=request.d_model or head_dim)
    if family == "alibi":
        if request.heads is None and heads is None:
            raise UsageError(f"preset {name} names no attention heads: pass --heads")
        return replace(request, heads=request.heads or heads)
    return replace(request, d_model=request.d_model or width)


def _overridden(request: PositionsRequest, encoding: Encoding) -> tuple[Encoding, list[str]]:
    """``encoding`` (a preset's) with the flags that differ from it, and what they changed."""
    said: list[str] = []
    changes: dict[str, Any] = {}
    family, d = encoding.family, request.d_model
    if family == "rope":
        dim = d or encoding.rope_dim or PICTURE_D_MODEL
        theta = encoding.rope_theta if request.rope_theta is None else request.rope_theta
        EmbedConfig(d_model=dim, context_length=1, positional="rope", rope_theta=theta)
        if d is not None and d != encoding.rope_dim:
            changes["rope_dim"] = d
            said.append(f"{d} rotated dimensions")
        if request.rope_theta is not None and request.rope_theta != encoding.rope_theta:
            # one base for every layer now: the preset's other layer types' bases are gone
            changes.update(rope_theta=theta, rope_bases=None, rope_layer_scalings=None)
            said.append(f"rope theta {_shown(theta)}")
        if request.rope_scaling is not None:
            wrong = check_scaling_pairs(request.rope_scaling, dim)
            if wrong:
                raise UsageError(f"--rope-scaling: {wrong} ({dim} dimensions: {dim // 2} pairs)")
            changes.update(rope_scaling=request.rope_scaling, rope_layer_scalings=None)
            said.append(f"rope scaling {_shown(dict(request.rope_scaling))}")
        elif "rope_dim" in changes and encoding.rope_scaling is not None:
            wrong = check_scaling_pairs(encoding.rope_scaling, dim)
            if wrong:
                raise UsageError(f"-d {dim}: the preset's rope scaling does not fit it: {wrong}")
    elif family == "alibi":
        if request.heads is not None and request.heads != encoding.heads:
            slopes = alibi_slopes(request.heads, style=encoding.slope_rule)
            changes.update(heads=request.heads, slopes=tuple(slopes))
            said.append(f"{request.heads} heads")
    elif d is not None and d != encoding.d_model:
        changes["d_model"] = d
        said.append(f"d {d:,}")
    rows, limit = request.context_length, encoding.context_length
    if family == "learned" and rows and limit and rows > limit:
        changes["context_length"] = rows  # a larger table than the preset's
        said.append(f"context {rows:,}")
    return replace(encoding, **changes), said


def _weights_encoding(
    weights: str, position_key: str | None = None, access: HubAccess = OFFLINE
) -> Encoding:
    """A model's own encoding from its config.json, once config.json is checked against the
    checkpoint's tables as inspect-shapes and embed check it; a checkpoint without one holds a
    learned table (the only kind a checkpoint can hold)."""

    source = open_source(weights, access)
    checkpoint = source.checkpoint
    keys = find_tables(checkpoint, None, position_key, source.config)
    position = None if keys.position is None else checkpoint.info(keys.position).shape
    check_source(checkpoint.info(keys.token).shape, position, Overrides(), source.config)
    if source.config is None or source.config.positional == "learned":
        return Encoding("learned", source.label, from_model=True)
    return _model_encoding(source.config, source.label)


def _preset_encoding(name: str) -> Encoding:

    model = preset_model(name)
    if model is not None:
        return _model_encoding(model, f"preset {name}")

    config = get_preset(name).config  # GPT-2's sizes, GPT-3, the book's: learned tables
    return Encoding(
        config.positional,
        f"preset {name}",
        from_model=True,
        d_model=config.d_model,
        context_length=config.context_length,
    )


def _model_encoding(model: ModelConfig, label: str) -> Encoding:
    """What a model's config says, or a refusal naming what it uses instead."""
    family = model.family.name if model.family is not None else model.model_type
    where = f"{label} ({str(family).replace(' (', ', ').replace(')', '')})"  # T5, encoder
    positional = model.positional
    if positional == "rope":
        return _model_rope(model, where, family)
    if positional == "alibi":
        if not model.alibi_slopes or not model.heads:
            raise ConfigError(f"{where}: config.json gives no head count for ALiBi's slopes")
        rule = model.family.alibi if model.family is not None and model.family.alibi else "press"
        return Encoding("alibi", where, True, heads=model.heads, slopes=model.alibi_slopes,
                        slope_rule=rule, model_family=family)  # fmt: skip
    if positional == "learned":
        return Encoding("learned", where, True, d_model=model.d_model,
                        context_length=model.context_length, model_family=family)  # fmt: skip
    raise ConfigError(_refusal(model, where))


def _model_rope(model: ModelConfig, where: str, family: str | None) -> Encoding:
    params = dict(model.rope_scaling_params or ())
    if params.get("applied") is False:
        raise ConfigError(
            f"{where} scales rope with {model.rope_scaling!r}, which embedcli does not compute "
            "(it computes linear and llama3): its angles are not drawn rather than drawn wrong"
        )
    dim = model.rope_dim
    if dim is None:
        raise ConfigError(
            f"{where}: config.json gives no head dimension (num_attention_heads or head_dim), "
            "so the dimensions rope rotates are unknown"
        )
    if dim < 2:
        raise ConfigError(
            f"{where}: config.json's partial rotary factor (partial_rotary_factor or "
            f"rotary_pct) leaves {dim} rotated dimensions in each attention head: nothing for "
            "rope to turn"
        )
    if dim % 2:
        raise ConfigError(
            f"{where}: config.json rotates {dim} dimensions of each attention head, an odd "
            "number: rope turns pairs of dimensions, so its angles are not drawn"
        )
    bases = model.rope_bases
    return Encoding(
        "rope",
        where,
        True,
        rope_theta=model.rope_theta or 10000.0,
        rope_dim=model.rope_dim,
        rope_scaling=model.rope_scaling_params,
        rope_bases=dict(bases) if bases else None,
        rope_layer_scalings=dict(model.rope_layer_types) if model.rope_layer_types else None,
        rope_not_in_first_block=model.rope_not_in_first_block
        or ("layer 0" if 0 in (model.rope_free_layers or ()) else None),
        model_family=family,
    )


def _refusal(model: ModelConfig, where: str) -> str:
    """Why a model's positions are not drawn: what it uses instead."""
    if model.positional == "relative":
        buckets = model.relative or {}
        return (
            f"{where} uses relative position buckets: a learned bias per head for each of "
            f"{buckets.get('num_buckets', '?')} distance buckets (up to "
            f"{buckets.get('max_distance', '?')} positions), added to the attention scores; "
            "embedcli positions does not draw them"
        )
    if model.positional == "sinusoidal":
        own = model.family is not None and model.family.sinusoid != "interleaved"
        return f"{where} adds fixed sinusoids that its checkpoint does not hold" + (
            f" ({model.family.name}'s own layout: sines first, then cosines); embed "  # type: ignore[union-attr]
            "--weights shows its rows, and --positional sinusoidal draws the original "
            "Transformer's interleaved ones, not these"
            if own
            else "; draw them, the original Transformer's, with --positional sinusoidal"
        )
    return f"{where} has no positional encoding (positional {model.positional}): nothing to draw"


def _flags_encoding(request: PositionsRequest) -> Encoding:

    family = request.positional or "sinusoidal"
    if family == "rope":
        dim = request.d_model or PICTURE_D_MODEL
        theta = 10000.0 if request.rope_theta is None else request.rope_theta
        # the one check of rope's numbers: an even width, a base above 1
        rows = request.context_length or PICTURE_POSITIONS
        EmbedConfig(d_model=dim, context_length=rows, positional="rope", rope_theta=theta)
        wrong = check_scaling_pairs(request.rope_scaling, dim)
        if wrong:
            raise UsageError(f"--rope-scaling: {wrong} (-d {dim} rotates {dim // 2} pairs)")
        return Encoding("rope", "from the flags", rope_theta=theta, rope_dim=dim,
                        rope_scaling=request.rope_scaling)  # fmt: skip
    if family == "alibi":
        heads = request.heads or DEFAULT_HEADS
        return Encoding("alibi", "from the flags", heads=heads, slopes=tuple(alibi_slopes(heads)))
    return Encoding(family, "from the flags")


def _check_family(request: PositionsRequest, encoding: Encoding) -> None:
    """--positional must be the model's family; a flag of another family is a usage error."""
    family = encoding.family
    if encoding.from_model and request.positional not in (None, family):
        raise UsageError(
            f"{encoding.source} has {family} positions: drop --positional "
            f"(or pass --positional {family})"
        )
    for name in (f.name for f in fields(request)):
        value = getattr(request, name, None)
        if name not in _FAMILY_FLAGS or value is None or value is False:
            continue
        flag, families = _FAMILY_FLAGS[name]
        if family not in families:
            raise UsageError(_not_this_family(flag, families, encoding))
    if family == "alibi" and request.head is not None and not 0 <= request.head < encoding.heads:
        raise UsageError(
            f"--head {request.head} is out of range: {plural(encoding.heads, 'head')}, "
            f"numbered 0 to {encoding.heads - 1}"
        )


def _not_this_family(flag: str, families: tuple[str, ...], encoding: Encoding) -> str:
    """Why ``flag`` means nothing for ``encoding``'s family, and what to do."""
    family = encoding.family
    why = (
        f"{encoding.source} has {family} positions"
        if encoding.from_model
        else f"this picture is {family}"
    )
    if family == "alibi" and flag == "-d":
        return (
            "-d sets the columns of learned, sinusoidal and rope pictures; ALiBi's bias is "
            "positions by positions (set them with --context-length)"
        )
    if family == "alibi" and flag == "--similarity":
        return (
            "--similarity compares the vectors of positions, and ALiBi gives a position none "
            f"(it biases attention scores); {why}: drop --similarity"
        )
    hint = "" if encoding.from_model else f" (pass --positional {families[0]})"
    return f"{flag} is for {' and '.join(families)} pictures; {why}{hint}"


def _check_agrees(request: PositionsRequest, encoding: Encoding) -> None:
    """A flag given beside a model must say what the model says."""
    if not encoding.from_model:
        return
    checks: list[tuple[str, Any, Any, str]] = []
    if encoding.family == "rope":
        scaling = None if encoding.rope_scaling is None else dict(encoding.rope_scaling)
        checks += [
            ("-d", request.d_model, encoding.rope_dim, "rotated dimensions (head_dim)"),
            ("--rope-theta", request.rope_theta, encoding.rope_theta, "rope theta"),
            ("--rope-scaling", _dict(request.rope_scaling), scaling or "none", "rope scaling"),
        ]
    elif encoding.family == "alibi":
        checks.append(("--heads", request.heads, encoding.heads, "attention heads"))
    elif encoding.d_model is not None:  # a preset's learned table (a checkpoint checks its own)
        checks.append(("-d", request.d_model, encoding.d_model, "width"))
    # a flag against a preset (another flag) is bad usage; against a model's files, bad input
    error = UsageError if request.preset is not None else ConfigError
    for flag, given, own, what in checks:
        if given is not None and given != own:
            shown, owned = _shown_apart(given, own)
            raise error(
                f"{flag} {shown} conflicts with the {what} of {encoding.source}, {owned}; "
                f"drop {flag}"
            )
    rows, limit = request.context_length, encoding.context_length
    if encoding.family == "learned" and encoding.d_model and rows and limit and rows > limit:
        raise error(
            f"--context-length {rows:,} asks for more rows than {encoding.source}'s learned "
            f"table has ({limit:,} positions)"
        )


def _dict(scaling: Scaling | None) -> dict[str, Any] | None:
    return None if scaling is None else dict(scaling)


def _shown_apart(given: Any, own: Any) -> tuple[str, str]:
    """Two values that differ, shown with enough digits to differ (500,000.5, not 500,000)."""
    if isinstance(given, float) and isinstance(own, int | float):
        for digits in range(10, 18):
            pair = f"{given:,.{digits}g}", f"{float(own):,.{digits}g}"
            if pair[0] != pair[1]:
                return pair
        return repr(given), repr(float(own))
    return _shown(given), _shown(own)


def _shown(value: Any) -> str:
    """A flag's or a model's value, as a person writes it."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:,.10g}"
    return str(value)
