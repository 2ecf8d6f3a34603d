"""The fixed sinusoidal position tables, one builder per layout a family uses (``Sinusoid``):
the original Transformer's interleaved sine/cosine pairs, fairseq's halves (all sines, then
all cosines), and Marian's split table (the original Transformer's frequencies, sines first).
``sinusoids(kind, rows, d_model, padding_idx)`` is the one entry point: the core
module and the pipeline ask it for a table by the family's kind.

torch is imported inside the functions that need it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

# sin/cos pairs (the original Transformer's), all sines then all cosines (fairseq's, XGLM's),
# the same without a padding row (Pegasus-X's), or the original Transformer's frequencies with the
# sines first (Marian's, Pegasus's; CTRL's, computed in float32 by torch)
Sinusoid = Literal["interleaved", "halves", "halves_unpadded", "split", "ctrl"]


def sinusoidal_table(context_length: int, d_model: int) -> torch.Tensor:
    """ "Attention Is All You Need": PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] =
    cos(pos / 10000^(2i/d)); computed in float64."""
    import torch

    position = torch.arange(context_length, dtype=torch.float64).unsqueeze(1)  # (C, 1)
    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i
    angles = position / torch.pow(10000.0, even / d_model)  # (C, d/2)
    table = torch.empty(context_length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def halves_sinusoids(rows: int, d_model: int, padding_row: int | None = None) -> torch.Tensor:
    """fairseq's and tensor2tensor's sinusoids (XGLM): the sines of all frequencies in the first
    half of each row, their cosines in the second; the frequencies run 10000^(-k/(h-1)) for
    k < h = d/2; an odd width ends in a zero column; ``padding_row`` is all zeros. In float32,
    as those models compute it."""
    import torch

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


def split_sinusoids(rows: int, d_model: int, padding_row: int | None = None) -> torch.Tensor:
    """Marian's and Pegasus's table (their ``create_weight``): the angles pos / 10000^(2i/d) of
    the original Transformer, computed as they compute them in float64 with numpy; the sines of
    the even columns' angles fill the first ceil(d/2) columns, the cosines of the odd columns'
    the rest; cast to float32. No row is kept at zero (``padding_row`` is not used)."""
    import numpy as np
    import torch

    # np.power on Python scalars, column by column, as create_weight does it
    divisors = np.array([np.power(10000, 2 * (j // 2) / d_model) for j in range(d_model)])
    angles = np.arange(rows, dtype=np.float64)[:, None] / divisors  # (R, d): exact quotients
    sentinel = d_model // 2 if d_model % 2 == 0 else d_model // 2 + 1
    table = torch.empty(rows, d_model, dtype=torch.float32)
    table[:, 0:sentinel] = torch.FloatTensor(np.sin(angles[:, 0::2]))
    table[:, sentinel:] = torch.FloatTensor(np.cos(angles[:, 1::2]))
    return table


def _halves_unpadded(rows: int, d_model: int, padding_idx: int | None) -> torch.Tensor:
    return halves_sinusoids(rows, d_model)  # every row a position (Pegasus-X)


def ctrl_sinusoids(rows: int, d_model: int, padding_row: int | None = None) -> torch.Tensor:
    """CTRL's table (its ``positional_encoding``): column j's angle is pos / 10000^(2(j//2)/d);
    the sines of the even columns' angles, then the cosines of the odd columns'. In float32,
    by CTRL's own torch operations (``padding_row``: not used, CTRL has none)."""
    import torch

    position = torch.arange(rows, dtype=torch.int64).to(torch.float).unsqueeze(1)  # (R, 1)
    column = torch.arange(d_model, dtype=torch.int64).to(torch.float).unsqueeze(0)  # (1, d)
    angles = position * (1 / torch.pow(10000, (2 * (column // 2)) / d_model))  # (R, d)
    return torch.cat([torch.sin(angles[:, 0::2]), torch.cos(angles[:, 1::2])], dim=-1)


def _interleaved(rows: int, d_model: int, padding_idx: int | None) -> torch.Tensor:
    return sinusoidal_table(rows, d_model).float()


_BUILDERS: dict[str, Callable[[int, int, int | None], torch.Tensor]] = {
    "interleaved": _interleaved,
    "halves": halves_sinusoids,
    "halves_unpadded": _halves_unpadded,
    "split": split_sinusoids,
    "ctrl": ctrl_sinusoids,
}


def sinusoids(kind: str, rows: int, d_model: int, padding_idx: int | None = None) -> torch.Tensor:
    """The first ``rows`` rows of the ``kind`` table for width ``d_model``, in float32 as the
    families compute it (``padding_idx``: the row a family keeps at zero, where it has one)."""
    return _BUILDERS[kind](rows, d_model, padding_idx)
