"""Positional encodings as formulas: the sinusoidal table and rope's rotation angles."""

from __future__ import annotations

import torch


def sinusoidal_table(context_length: int, d_model: int) -> torch.Tensor:
    """ "Attention Is All You Need": PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] =
    cos(pos / 10000^(2i/d)); computed in float64."""
    position = torch.arange(context_length, dtype=torch.float64).unsqueeze(1)  # (C, 1)
    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i
    angles = position / torch.pow(10000.0, even / d_model)  # (C, d/2)
    table = torch.empty(context_length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def rope_angles(
    position_ids: torch.Tensor,
    dim: int,
    theta: float = 10000.0,
    scaling: tuple[tuple[str, object], ...] | None = None,
) -> torch.Tensor:
    """RoPE's rotation angle for each position and pair of dimensions: pos * theta^(-2i/r),
    with r the dimensions rotated (one attention head's) and theta the model's base; a model's
    ``linear`` or ``llama3`` scaling (Llama 3.1 and later) applied to the frequencies."""
    even = torch.arange(0, dim, 2, dtype=torch.int64, device=position_ids.device).float()
    inverse_frequency = 1.0 / (theta ** (even / dim))  # (r/2,), as Hugging Face computes it
    if scaling:
        inverse_frequency = _scaled_frequencies(inverse_frequency, dict(scaling))
    return position_ids.float().unsqueeze(1) * inverse_frequency  # (T, 1) * (r/2,) -> (T, r/2)


def _scaled_frequencies(inverse: torch.Tensor, scaling: dict) -> torch.Tensor:
    """Linear scaling divides every frequency by the factor; llama3 divides only the low ones
    (wavelength above original_context / low_freq_factor) and blends the middle band."""
    import math

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


def halves_sinusoids(rows: int, d_model: int, padding_row: int | None = None) -> torch.Tensor:
    """fairseq's and tensor2tensor's sinusoids (XGLM): the sines of all frequencies in the first
    half of each row, their cosines in the second; the frequencies run 10000^(-k/(h-1)) for
    k < h = d/2; an odd width ends in a zero column; ``padding_row`` is all zeros. In float32,
    as those models compute it."""
    import math

    half = d_model // 2
    step = math.log(10000) / (half - 1) if half > 1 else 0.0
    frequencies = torch.exp(torch.arange(half, dtype=torch.int64).float() * -step)  # (h,)
    angles = torch.arange(rows, dtype=torch.int64).float().unsqueeze(1) * frequencies  # (R, h)
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
    if d_model % 2:
        table = torch.cat([table, torch.zeros(rows, 1)], dim=1)
    if padding_row is not None and 0 <= padding_row < rows:
        table[padding_row] = 0
    return table


def alibi_slopes(heads: int, style: str = "press", bias_max: float = 8.0) -> list[float]:
    """ALiBi's slope per attention head (Press et al.): for n heads, a power of two, the
    geometric sequence 2^(-8k/n), k = 1..n; otherwise the n' = largest power of two below n
    first, then every other slope of the sequence for 2n'. ``style="mpt"``: MPT's variant, the
    sequence 2^(-bias_max·k/m) for m the next power of two, odd k's first when m > n."""
    import math

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
