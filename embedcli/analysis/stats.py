"""What a table's values look like: ``embedcli stats``' summary of a token or positional table
(range, mean, spread, row norms and their percentiles), worked out a chunk of rows at a time in
float64, with NaN and infinities counted rather than spread through the sums.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedcli.analysis.rowcount import RowCount, RowsDone
from embedcli.core.memory import CHUNK_ELEMENTS, ensure_host_fits
from embedcli.errors import WeightsError

if TYPE_CHECKING:
    import torch


NORM_PERCENTILES = (0, 5, 25, 50, 75, 95, 100)


@dataclass(frozen=True)
class TableStats:
    """Distribution of one table's values, and of its rows' lengths."""

    name: str
    shape: tuple[int, ...]
    mean: float
    std: float
    min: float
    max: float
    within_one_std: float  # share of values within mean ± std: 0.683 for a normal distribution
    row_norm_percentiles: dict[str, float]  # over the rows whose values are all finite
    non_finite: int = 0  # NaN and ±inf values, left out of every statistic above


def table_stats(name: str, table: torch.Tensor, on_rows: RowsDone | None = None) -> TableStats:
    """Mean, std, min, max, share within one std, and row-norm percentiles, in float64.

    NaN and infinite values are counted and left out (rows holding one have no norm). The table
    is read a chunk of rows at a time into one float64 buffer, worked on in place: memory stays
    the table plus a chunk and a norm per row. ``on_rows(done, total)`` hears the rows read,
    over every pass (three, or four where the values must be scaled)."""
    import numpy as np
    import torch

    rows, width = table.shape
    step = max(1, CHUNK_ELEMENTS // max(width, 1))
    _check_stats_memory(name, rows, step * width)
    buffer = torch.empty((min(step, rows), width), dtype=torch.float64)  # (R, d)
    holed: set[int] = set()  # the chunks (by first row) that hold NaN or inf
    read = RowCount(on_rows, 3 * rows)

    def chunks(scale: float = 1.0):  # (values / scale in float64, finite mask or None: all are)
        for start in range(0, rows, step):
            values = buffer[: min(step, rows - start)]
            values.copy_(table[start : start + step].detach())
            if scale != 1.0:
                values.div_(scale)
            if start not in holed and math.isfinite(float(values.sum())):
                yield values, None  # a finite sum: no NaN or inf in the chunk
            else:
                holed.add(start)
                yield values, values.isfinite()
            read.add(len(values))  # the chunk is done with when the next one is asked for

    count, low, high, total, norms = _first_pass(chunks())
    if not count:
        raise WeightsError(f"the {name} table holds no finite values: all are NaN or infinite")
    scale = _scale(max(abs(low), abs(high)))  # so that sums and squares cannot overflow
    if scale != 1.0:
        read.grow(rows)
        _, _, _, total, norms = _first_pass(chunks(scale))
    mean = total / count  # of the scaled values
    squares, within = 0.0, 0
    for values, finite in chunks(scale):
        values.sub_(mean)
        if finite is not None:
            values.masked_fill_(~finite, 0)
        squares += float(values.square_().sum())
    std = (squares / (count - 1)) ** 0.5 if count > 1 else 0.0
    for values, _ in chunks(scale):
        within += int((values.sub_(mean).abs_() <= std).count_nonzero())  # NaN compares False
    every = np.concatenate(norms) * scale
    if not len(every):
        raise WeightsError(
            f"every row of the {name} table holds a NaN or infinite value: no row has a norm"
        )
    quantiles = np.percentile(every, NORM_PERCENTILES)
    return TableStats(
        name=name,
        shape=tuple(table.shape),
        mean=mean * scale,
        std=std * scale,
        min=low * scale,
        max=high * scale,
        within_one_std=within / count,
        row_norm_percentiles={
            f"p{p}": float(q) for p, q in zip(NORM_PERCENTILES, quantiles, strict=True)
        },
        non_finite=rows * width - count,
    )


def _first_pass(chunks: Iterable[tuple[torch.Tensor, torch.Tensor | None]]) -> tuple:
    """(count, min, max, sum of the finite values, norms of the rows without NaN or inf);
    the chunks are changed in place."""
    count, low, high, total, norms = 0, float("inf"), float("-inf"), 0.0, []
    for values, finite in chunks:
        if finite is None:
            count += values.numel()
            lowest, highest = (float(v) for v in values.aminmax())
            norms.append(values.norm(dim=1).numpy())  # (R,)
        else:
            holes = ~finite
            count += int(finite.count_nonzero())
            lowest = float(values.masked_fill_(holes, float("inf")).min())
            highest = float(values.masked_fill_(holes, float("-inf")).max())
            values.masked_fill_(holes, 0)
            norms.append(values[finite.all(dim=1)].norm(dim=1).numpy())  # (R',)
        low, high = min(low, lowest), max(high, highest)
        total += float(values.sum())
    return count, low, high, total, norms


def _scale(peak: float) -> float:
    """1, or the largest magnitude where squaring values would overflow or underflow float64."""
    return 1.0 if peak == 0 or 1e-100 <= peak <= 1e100 else peak


def _check_stats_memory(name: str, rows: int, chunk: int) -> None:
    """Refuse statistics whose working copies would not fit: norms and a chunk, in float64."""

    ensure_host_fits(
        f"statistics of the {name} table (float64 row norms and a chunk of rows)",
        4 * rows * 8 + 6 * chunk * 8,
    )
