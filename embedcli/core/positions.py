"""Positional encodings as formulas: rope's frequencies and rotation angles
(with a model's linear or llama3 scaling), and ALiBi's slopes and biases.

torch is imported inside the functions that need it: a flag's spec (``--rope-scaling``) is read
without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

Scaling = tuple[tuple[str, object], ...]  # (("rope_type", "llama3"), ("factor", 8.0), ...)

# The rope scaling types computed here, and their fields after the factor, in the order a
# --rope-scaling spec gives them; llama3's defaults are Llama 3.1's published ones.
SCALING_FIELDS = {
    "linear": (),
    "llama3": ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}
LLAMA3_DEFAULTS = (1.0, 4.0, 8192.0)  # low, high, original context (Llama 3.1's config.json)
SCALING_SPECS = "linear:FACTOR, llama3:FACTOR or llama3:FACTOR:LOW:HIGH:ORIGINAL"


def parse_rope_scaling(spec: str) -> Scaling:
    """A ``--rope-scaling`` spec as the pairs a model's config gives: ``linear:8``, ``llama3:8``
    (Llama 3.1's low 1, high 4 and original 8192) or ``llama3:8:1:4:8192``. A ValueError says
    what is wrong with any other."""
    text = spec.strip().lower()
    name, _, rest = text.partition(":")
    values = rest.split(":") if rest else []
    example = f"write {SCALING_SPECS} (llama3:8 is Llama 3.1's)"
    if name not in SCALING_FIELDS:
        known = " and ".join(SCALING_FIELDS)
        raise ValueError(f"{spec!r}: embedcli computes {known} rope scaling; {example}")
    fields = SCALING_FIELDS[name]
    if len(values) == 1 and fields:
        values += [f"{v:g}" for v in LLAMA3_DEFAULTS]
    if len(values) != 1 + len(fields):
        raise ValueError(f"{spec!r}: {example}")
    numbers = [_spec_number(v, spec) for v in values]
    if numbers[0] < 1:
        raise ValueError(f"{spec!r}: the factor must be at least 1 (it stretches wavelengths)")
    if name == "llama3":
        low, high, original = numbers[1:]
        if not 0 < low < high:
            raise ValueError(f"{spec!r}: llama3 needs 0 < LOW < HIGH, got {low:g} and {high:g}")
        if original < 1 or original != int(original):
            raise ValueError(f"{spec!r}: ORIGINAL is a context length: a whole number of tokens")
    return (("rope_type", name), ("factor", numbers[0]), *zip(fields, numbers[1:], strict=True))


def _spec_number(value: str, spec: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{spec!r}: {value!r} is not a number; write {SCALING_SPECS}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{spec!r}: {value!r} must be a positive finite number")
    return number


def rope_inverse_frequencies(
    dim: int, theta: float = 10000.0, scaling: Scaling | None = None, device: object = None
) -> torch.Tensor:
    """RoPE's frequency per pair of rotated dimensions, theta^(-2i/r) for i < r/2, in float32
    as Hugging Face computes it; a model's ``linear`` or ``llama3`` scaling applied."""
    import torch

    even = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float()
    inverse_frequency = 1.0 / (theta ** (even / dim))  # (r/2,)
    if scaling:
        inverse_frequency = _scaled_frequencies(inverse_frequency, dict(scaling))
    return inverse_frequency


def rope_angles(
    position_ids: torch.Tensor,
    dim: int,
    theta: float = 10000.0,
    scaling: Scaling | None = None,
) -> torch.Tensor:
    """RoPE's rotation angle for each position and pair of dimensions: pos * theta^(-2i/r),
    with r the dimensions rotated (one attention head's) and theta the model's base; a model's
    ``linear`` or ``llama3`` scaling (Llama 3.1 and later) applied to the frequencies."""
    inverse_frequency = rope_inverse_frequencies(dim, theta, scaling, position_ids.device)
    return position_ids.float().unsqueeze(1) * inverse_frequency  # (T, 1) * (r/2,) -> (T, r/2)


def _scaled_frequencies(inverse: torch.Tensor, scaling: dict) -> torch.Tensor:
    """Linear scaling divides every frequency by the factor; llama3 divides only the low ones
    (wavelength above original_context / low_freq_factor) and blends the middle band."""
    import torch

    factor = float(scaling["factor"])
    if scaling["rope_type"] == "linear":
        return inverse / factor
    low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
    original = float(scaling["original_max_position_embeddings"])
    wavelength = 2 * math.pi / inverse
    scaled = torch.where(wavelength > original / low, inverse / factor, inverse)
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    middle = ~(wavelength < original / high) * ~(wavelength > original / low)
    return torch.where(middle, blended, scaled)


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
