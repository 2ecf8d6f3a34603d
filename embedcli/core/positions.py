"""Positional encodings as formulas: ``--rope-scaling``'s spec, rope's angles wrapped and by
distance (the frequencies themselves are core/rope.py's, every scaling), and ALiBi's slopes
and biases.

torch is imported inside the functions that need it: a flag's spec (``--rope-scaling``) is read
without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from embedcli.core.rope import (  # noqa: F401  (the rope formulas' home; kept importable here)
    ROPE_TYPES,
    Scaling,
    rope_angles,
    rope_attention_factor,
    rope_inverse_frequencies,
    rope_sequence_length,
)

if TYPE_CHECKING:
    import torch

# The --rope-scaling forms: positional fields after the type, then optional NAME=VALUE ones
# (yarn's and longrope's); llama3's defaults are Llama 3.1's published ones.
SCALING_FIELDS = {
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    "dynamic": ("factor", "max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings"),
    "longrope": ("factor", "original_max_position_embeddings", "short_factor", "long_factor"),
    "proportional": ("factor", "partial_rotary_factor"),
}
SCALING_OPTIONS = {
    "yarn": ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate"),
    "longrope": ("attention_factor",),
}
LLAMA3_DEFAULTS = (1.0, 4.0, 8192.0)  # low, high, original context (Llama 3.1's config.json)
SCALING_FORMS = {
    "linear": "linear:FACTOR",
    "llama3": "llama3:FACTOR[:LOW:HIGH:ORIGINAL]",
    "dynamic": "dynamic:FACTOR:CONTEXT",
    "yarn": "yarn:FACTOR:ORIGINAL[:NAME=VALUE...]",
    "longrope": "longrope:FACTOR:ORIGINAL:SHORT,...:LONG,...[:attention_factor=A]",
    "proportional": "proportional:FACTOR[:PARTIAL]",
}
SCALING_SPECS = ", ".join(SCALING_FORMS.values())
_CONTEXTS = ("original_max_position_embeddings", "max_position_embeddings")


def parse_rope_scaling(spec: str) -> Scaling:
    """A ``--rope-scaling`` spec as the pairs a model's config gives: ``linear:8``, ``llama3:8``
    (Llama 3.1's low 1, high 4 and original 8192), ``llama3:8:1:4:8192``, ``dynamic:2:4096``
    (factor, context), ``yarn:4:32768`` (factor, original context; then ``beta_fast=32``,
    ``beta_slow=1``, ``mscale=1``, ``mscale_all_dim=1``, ``attention_factor=A``,
    ``truncate=false``), ``longrope:16:4096:1,1.2,...:2,4,...`` (factor, original context, a short
    and a long factor per pair; then ``attention_factor=A``), ``proportional:1:0.25`` (factor,
    partial rotary factor). A ValueError says what is wrong with any other."""
    text = spec.strip().lower()
    name, _, rest = text.partition(":")
    parts = rest.split(":") if rest else []
    example = f"write {SCALING_SPECS}"
    if name not in SCALING_FIELDS:
        known = ", ".join(SCALING_FIELDS)
        raise ValueError(f"{spec!r}: embedcli computes {known} rope scaling; {example}")
    values = [p for p in parts if "=" not in p]
    options = [p for p in parts if "=" in p]
    if options and parts[: len(values)] != values:
        raise ValueError(f"{spec!r}: NAME=VALUE options come after the positional fields")
    fields = SCALING_FIELDS[name]
    if name == "llama3" and len(values) == 1:
        values += [f"{v:g}" for v in LLAMA3_DEFAULTS]
    if name == "proportional" and len(values) == 1:
        values.append("1")
    if len(values) != len(fields):
        raise ValueError(f"{spec!r}: write {SCALING_FORMS[name]}")
    pairs: dict[str, object] = {"rope_type": name}
    for field, value in zip(fields, values, strict=True):
        if field.endswith("_factor") and name == "longrope" and field != "factor":
            pairs[field] = tuple(_spec_number(v, spec) for v in value.split(","))
        else:
            pairs[field] = _spec_number(value, spec)
    for option in options:
        key, _, value = option.partition("=")
        if key not in SCALING_OPTIONS.get(name, ()):
            allowed = ", ".join(SCALING_OPTIONS.get(name, ())) or "none"
            raise ValueError(f"{spec!r}: {name} takes no option {key!r} (its options: {allowed})")
        if key in pairs:
            raise ValueError(f"{spec!r}: {key} is given twice")
        if key == "truncate":
            if value not in ("true", "false"):
                raise ValueError(f"{spec!r}: truncate is true or false, got {value!r}")
            pairs[key] = value == "true"
        else:
            pairs[key] = _spec_number(value, spec)
    _check_spec(name, pairs, spec)
    return tuple(pairs.items())


def _check_spec(name: str, pairs: dict[str, object], spec: str) -> None:
    factor = float(pairs["factor"])  # type: ignore[arg-type]
    if factor < 1:
        raise ValueError(f"{spec!r}: the factor must be at least 1 (it stretches wavelengths)")
    if name == "llama3":
        low, high = pairs["low_freq_factor"], pairs["high_freq_factor"]
        if not 0 < low <= high:  # type: ignore[operator]  (equal: Llama 4 Scout's)
            raise ValueError(f"{spec!r}: llama3 needs 0 < LOW <= HIGH, got {low:g} and {high:g}")
    for key in _CONTEXTS:
        length = pairs.get(key)
        if length is not None and (length < 1 or length != int(length)):  # type: ignore[operator]
            what = "ORIGINAL" if key.startswith("original") else "CONTEXT"
            raise ValueError(f"{spec!r}: {what} is a context length: a whole number of tokens")
    partial = pairs.get("partial_rotary_factor")
    if partial is not None and partial > 1:  # type: ignore[operator]
        raise ValueError(f"{spec!r}: PARTIAL is the share of the head turned, at most 1")
    if name == "longrope" and len(pairs["short_factor"]) != len(pairs["long_factor"]):  # type: ignore[arg-type]
        raise ValueError(f"{spec!r}: longrope's SHORT and LONG lists have one factor per pair each")


def check_scaling_pairs(scaling: Scaling | None, dim: int) -> str | None:
    """Why a scaling does not fit ``dim`` rotated dimensions (longrope's factor lists have
    one per pair), or None."""
    params = dict(scaling or ())
    if params.get("rope_type") == "freq_factors" and len(params["factors"]) != dim // 2:  # type: ignore[arg-type]
        return f"rope_freqs.weight has {len(params['factors'])} factors for {dim // 2} pairs"  # type: ignore[arg-type]
    if params.get("rope_type") != "longrope":
        return None
    for key in ("short_factor", "long_factor"):
        if len(params[key]) != dim // 2:  # type: ignore[arg-type]
            return f"longrope's {key} has {len(params[key])} factors for {dim // 2} pairs"  # type: ignore[arg-type]
    return None


def _spec_number(value: str, spec: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{spec!r}: {value!r} is not a number; write {SCALING_SPECS}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{spec!r}: {value!r} must be a positive finite number")
    return number


def wrap_angles(angles: torch.Tensor) -> torch.Tensor:
    """Angles in radians as the rotations they are: wrapped to (-π, π], in float64."""
    import torch

    wrapped = math.pi - torch.remainder(math.pi - angles.double(), 2 * math.pi)
    return torch.where(wrapped <= -math.pi, wrapped + 2 * math.pi, wrapped)  # remainder's 2π


def rope_distance_similarity(inverse_frequency: torch.Tensor, length: int) -> torch.Tensor:
    """S(k) = mean over pairs of cos(k · inv_freq_i) for distances k = 0..length-1, in float64:
    the cosine between two rotated copies of one vector whose pairs have equal magnitudes, k
    positions apart (the rotation of pair i by k·inv_freq_i turns it by that much)."""
    import torch

    distance = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    return torch.cos(distance * inverse_frequency.double()).mean(dim=1)  # (T,)


def by_distance(profile: torch.Tensor) -> torch.Tensor:
    """The (T, T) Toeplitz matrix M[m, n] = profile[|m - n|]."""
    import torch

    index = torch.arange(len(profile))
    return profile[(index.unsqueeze(1) - index).abs()]


def alibi_slopes(heads: int, style: str = "press", bias_max: float = 8.0) -> list[float]:
    """ALiBi's slope per attention head (Press et al.): for n heads, a power of two, the
    geometric sequence 2^(-8k/n), k = 1..n; otherwise the n' = largest power of two below n
    first, then every other slope of the sequence for 2n'. ``style="mpt"``: MPT's variant, the
    sequence 2^(-bias_max·k/m) for m the next power of two, even k's first (then the
    odd) when m > n, as transformers' ``build_mpt_alibi_tensor`` orders them."""
    if style == "mpt":
        m = 2 ** math.ceil(math.log2(heads))
        slopes = [1.0 / 2 ** (k * bias_max / m) for k in range(1, m + 1)]
        if m != heads:
            slopes = (slopes[1::2] + slopes[::2])[:heads]
        return slopes
    n = 2 ** math.floor(math.log2(heads))

    def sequence(count: int) -> list[float]:
        ratio = 2 ** (-(2 ** -(math.log2(count) - 3)))
        return [ratio**k for k in range(1, count + 1)]

    slopes = sequence(n)
    if n != heads:
        slopes += sequence(2 * n)[0::2][: heads - n]
    return slopes


def alibi_bias(slopes: Sequence[float], length: int) -> torch.Tensor:
    """ALiBi's bias of each head on the attention scores, (H, T, T) in float64:
    bias[h, i, j] = -slope_h · (i - j) for a key j at or before the query i; NaN (masked: a
    causal query never sees it) for j > i."""
    import torch

    index = torch.arange(length, dtype=torch.float64)
    behind = index - index.unsqueeze(1)  # (T, T): j - i, so that the diagonal is +0, not -0
    slope = torch.tensor(list(slopes), dtype=torch.float64).view(-1, 1, 1)  # (H, 1, 1)
    bias = slope * behind  # (H, T, T)
    return bias.masked_fill(behind > 0, math.nan)
