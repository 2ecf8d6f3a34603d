"""RoPE's frequencies and rotation angles for every scaling transformers computes
(``ROPE_INIT_FUNCTIONS``: default, linear, dynamic, yarn, longrope, llama3, proportional), in
float32 with the operations transformers uses, llama.cpp's frequency factors (a GGUF file's
``rope_freqs.weight``, each pair's frequency divided by its own factor), and the attention
factor yarn and longrope apply to cos and sin. transformers is never imported: its formulas
are written here, checked against it in tests/core/test_rope_scaling.py.

A scaling is the pairs a model's config gives, resolved (factor, original context, attention
factor) when the config is read: ``(("rope_type", "yarn"), ("factor", 4.0), ...)``. torch is
imported inside the functions that need it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

Scaling = tuple[tuple[str, object], ...]  # (("rope_type", "llama3"), ("factor", 8.0), ...)

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")


def rope_inverse_frequencies(
    dim: int,
    theta: float = 10000.0,
    scaling: Scaling | None = None,
    device: object = None,
    seq_len: int | None = None,
) -> torch.Tensor:
    """RoPE's frequency per pair of rotated dimensions, theta^(-2i/r) for i < r/2, in float32
    as transformers computes it, the model's scaling applied. ``seq_len`` (the positions read,
    max position + 1) matters to dynamic (a larger base past the context) and longrope (its
    long factors past the original context) only."""
    params = dict(scaling or ())
    kind = params.get("rope_type", "default")
    if kind == "dynamic":
        return _dynamic(dim, theta, params, device, seq_len)
    if kind == "yarn":
        return _yarn(dim, theta, params, device)
    if kind == "proportional":
        return _proportional(dim, theta, params, device)
    inverse = 1.0 / (theta ** (_exponents(dim, device) / dim))  # (r/2,)
    if kind == "linear":
        return inverse / float(params["factor"])
    if kind == "llama3":
        return _llama3(inverse, params)
    if kind == "longrope":
        return _longrope(dim, theta, params, device, seq_len)
    if kind == "freq_factors":  # llama.cpp's rope_freqs.weight: a divisor per pair
        import torch

        return inverse / torch.tensor(params["factors"], dtype=torch.float32, device=device)
    return inverse


def rope_angles(
    position_ids: torch.Tensor,
    dim: int,
    theta: float = 10000.0,
    scaling: Scaling | None = None,
) -> torch.Tensor:
    """RoPE's rotation angle for each position and pair of dimensions: pos * inv_freq_i, with
    r the dimensions rotated (one attention head's) and theta the model's base, the model's
    scaling applied for the positions read (max position + 1, as the model's forward sees)."""
    if position_ids.device.type == "meta":  # a shape plan: no values, and none change a shape
        seq_len = position_ids.shape[-1] if position_ids.ndim else None
    else:
        seq_len = int(position_ids.max()) + 1 if position_ids.numel() else None
    inverse = rope_inverse_frequencies(dim, theta, scaling, position_ids.device, seq_len)
    return position_ids.float().unsqueeze(-1) * inverse  # (..., T, 1) * (r/2,) -> (..., T, r/2)


def rope_attention_factor(scaling: Scaling | None) -> float:
    """What attention multiplies cos and sin by: yarn's and longrope's attention factor (the
    config's ``attention_factor``, else the one the paper suggests), 1 for the others."""
    params = dict(scaling or ())
    given = params.get("attention_factor")
    if params.get("rope_type") not in ("yarn", "longrope"):
        return 1.0
    if given is not None:
        return float(given)
    factor = float(params["factor"])
    if params["rope_type"] == "longrope":
        original = float(params["original_max_position_embeddings"])
        return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    mscale, mscale_all_dim = params.get("mscale"), params.get("mscale_all_dim")
    if mscale and mscale_all_dim:
        return float(_yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim))
    return _yarn_mscale(factor)


def rope_sequence_length(scaling: Scaling | None, seq_len: int) -> int | None:
    """The sequence length dynamic scaling's angles are for: the positions read, or the
    context (max_position_embeddings) where they are fewer; None for the other types."""
    params = dict(scaling or ())
    if params.get("rope_type") != "dynamic":
        return None
    return max(seq_len, int(params["max_position_embeddings"]))


def _exponents(dim: int, device: object, count: int | None = None) -> torch.Tensor:
    import torch

    stop = dim if count is None else 2 * count
    return torch.arange(0, stop, 2, dtype=torch.int64, device=device).float()  # 2i


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _llama3(inverse: torch.Tensor, params: dict) -> torch.Tensor:
    """llama3 divides only the low frequencies (wavelength above original_context /
    low_freq_factor) by the factor, and blends the middle band."""
    import torch

    factor = float(params["factor"])
    low, high = float(params["low_freq_factor"]), float(params["high_freq_factor"])
    original = float(params["original_max_position_embeddings"])
    wavelength = 2 * math.pi / inverse
    scaled = torch.where(wavelength > original / low, inverse / factor, inverse)
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    middle = ~(wavelength < original / high) * ~(wavelength > original / low)
    return torch.where(middle, blended, scaled)


def _dynamic(
    dim: int, theta: float, params: dict, device: object, seq_len: int | None
) -> torch.Tensor:
    """Dynamic NTK: past the context, a larger base, theta · (factor·T/context -
    (factor - 1))^(r/(r-2)). The model computes it at start (T = context) in Python floats,
    and past the context in float32 tensors, from the positions its forward reads."""
    import torch

    factor, context = float(params["factor"]), int(params["max_position_embeddings"])
    if seq_len is None or seq_len <= context:
        base = theta * ((factor * context / context) - (factor - 1)) ** (dim / (dim - 2))
    else:
        length = torch.tensor(seq_len, dtype=torch.int64, device=device)
        length = torch.maximum(length, torch.tensor(context, dtype=torch.int64, device=device))
        base = theta * ((factor * length / context) - (factor - 1)) ** (dim / (dim - 2))
    return 1.0 / (base ** (_exponents(dim, device) / dim))


def _yarn(dim: int, theta: float, params: dict, device: object) -> torch.Tensor:
    """YaRN: interpolated (÷ factor) frequencies below the correction range, extrapolated
    (kept) above it, a linear ramp between (beta_fast and beta_slow rotations in the original
    context; ``truncate`` rounds the range to whole pairs)."""
    import torch

    factor = float(params["factor"])
    original = float(params["original_max_position_embeddings"])
    fast, slow = params.get("beta_fast") or 32, params.get("beta_slow") or 1

    def correction(rotations: float) -> float:
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(theta))

    low, high = correction(fast), correction(slow)
    if params.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    powers = theta ** (_exponents(dim, device) / dim)
    extrapolation, interpolation = 1.0 / powers, 1.0 / (factor * powers)
    kept = 1 - ramp.to(device=device, dtype=torch.float)
    return interpolation * (1 - kept) + extrapolation * kept


def _longrope(
    dim: int, theta: float, params: dict, device: object, seq_len: int | None
) -> torch.Tensor:
    """LongRoPE: each frequency divided by its own factor, the short ones up to the original
    context, the long ones past it."""
    import torch

    long = seq_len is not None and seq_len > float(params["original_max_position_embeddings"])
    factors = params["long_factor" if long else "short_factor"]
    ext = torch.tensor(list(factors), dtype=torch.float32, device=device)
    return 1.0 / (ext * theta ** (_exponents(dim, device) / dim))


def _proportional(dim: int, theta: float, params: dict, device: object) -> torch.Tensor:
    """Proportional rope: the first partial_rotary_factor of the head's pairs turn at
    theta^(-2i/head_dim) (÷ factor), the rest not at all (zero frequencies); ``dim`` is the
    whole head."""
    import torch

    turned = int(float(params.get("partial_rotary_factor", 1.0)) * dim // 2)
    inverse = 1.0 / (theta ** (_exponents(dim, device, turned) / dim))
    still = dim // 2 - turned
    if still > 0:
        inverse = torch.cat((inverse, torch.zeros(still, dtype=torch.float32, device=device)))
    return inverse / float(params.get("factor", 1.0))
