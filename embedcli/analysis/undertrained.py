"""Which rows of a table were (almost) never trained: the indicator of Land and Bartolo,
"Fishing for Magikarp" (2024), worked out a chunk of rows at a time in float64.

The first principal component of the matrix (centred, as PCA takes it) is a direction every
row shares; it is removed from every row. The rows of tokens known to be unused (the
reference) are averaged, the same component removed, and each row's cosine similarity to that
mean is the indicator: near 1 for a row that points where the untrained rows point. Since the
mean of rows without the component is orthogonal to it, each row needs only its own
projection: ``x' = x - (x.c) c``, ``cos = x'.r / (|x'| |r|)``.

Two passes over the matrix (the sums of rows and of their outer products, centred in
float64 once they are summed, and the row norms; then the cosines), a chunk of rows in one
float64 buffer: memory is the matrix as stored, one chunk, the d x d scatter and two float64
numbers per row. Rows that hold NaN or infinity are left out of the component and
the reference, and have no cosine (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedcli.analysis.rowcount import RowCount, RowsDone
from embedcli.core.memory import CHUNK_ELEMENTS, ensure_host_fits
from embedcli.errors import WeightsError

_FLAT = 1e-10  # a variance this small a share of the whole is rounding, not a direction

if TYPE_CHECKING:
    import numpy as np
    import torch


@dataclass(frozen=True)
class Indicator:
    """Each row's cosine to the unused direction (first component removed), and what it took."""

    cosine: np.ndarray  # (V,) float64; NaN: a row holding NaN or inf, or nothing left of it
    first_pc_share: float  # the share of the centred variance along the removed component
    non_finite: int  # rows holding NaN or infinity, left out
    norms: np.ndarray  # (V,) float64: each row's own L2 norm (NaN as above)


def _chunks(
    table: torch.Tensor, buffer: torch.Tensor, read: RowCount, scale: float = 1.0
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """(first row, the rows in float64 divided by ``scale``, which rows are finite), a chunk
    at a time."""
    import torch

    rows, step = table.shape[0], buffer.shape[0]
    for start in range(0, rows, step):
        values = buffer[: min(step, rows - start)]
        values.copy_(table[start : start + step].detach())
        if math.isfinite(float(values.sum())):  # a finite sum: no NaN or inf in the chunk
            finite = torch.ones(len(values), dtype=torch.bool)
        else:
            finite = values.isfinite().all(dim=1)  # (R,)
            values[~finite] = 0.0
        if scale != 1.0:
            values /= scale
        yield start, values, finite
        read.add(len(values))


def _sums(
    matrix: torch.Tensor, buffer: torch.Tensor, read: RowCount, is_reference: torch.Tensor,
    scale: float,
) -> tuple:  # fmt: skip
    """The first pass: (sum of the finite rows, sum of their outer products, sum of the finite
    reference rows, finite rows, finite reference rows, largest magnitude, row norms)."""
    import numpy as np
    import torch

    rows, width = matrix.shape
    total = torch.zeros(width, dtype=torch.float64)
    reference_total = torch.zeros(width, dtype=torch.float64)
    scatter = torch.zeros((width, width), dtype=torch.float64)  # (d, d): sum of x x^T
    finite_rows, finite_reference = 0, 0
    norms = np.empty(rows, dtype=np.float64)
    peak = 0.0
    for start, values, finite in _chunks(matrix, buffer, read, scale):
        peak = max(peak, float(values.abs().max()))
        found = values.norm(dim=1)  # (R,)
        found[~finite] = float("nan")
        norms[start : start + len(values)] = found.numpy() * scale
        total += values.sum(dim=0)  # rows holding NaN or inf are zeros here
        scatter += values.T @ values
        finite_rows += int(finite.count_nonzero())
        chosen = is_reference[start : start + len(values)] & finite
        finite_reference += int(chosen.count_nonzero())
        reference_total += values[chosen].sum(dim=0)
    return total, scatter, reference_total, finite_rows, finite_reference, peak, norms


def check_memory(rows: int, width: int, step: int) -> None:
    """Refuse an indicator whose working copies would not fit: a chunk and its products,
    the d x d scatter and its eigenvectors, and the per-row numbers, in float64."""
    ensure_host_fits(
        f"the undertrained indicator of a {rows:,} x {width:,} table (float64: a chunk of "
        "rows, the d x d scatter, and numbers per row)",
        8 * (4 * step * width + 4 * width * width + 6 * rows),
    )


def unused_cosine(
    matrix: torch.Tensor, reference: Sequence[int], on_rows: RowsDone | None = None
) -> Indicator:
    """Every row's cosine to the mean reference row, once the first principal component is
    removed; ``on_rows(done, total)`` hears the rows read over the two passes."""
    import numpy as np
    import torch

    rows, width = matrix.shape
    if width < 2:
        raise WeightsError(
            f"the table is {width} wide: with its first principal component removed, no "
            "direction is left to compare"
        )
    step = max(1, CHUNK_ELEMENTS // width)
    check_memory(rows, width, min(step, rows))
    buffer = torch.empty((min(step, rows), width), dtype=torch.float64)  # (R, d)
    is_reference = torch.zeros(rows, dtype=torch.bool)
    is_reference[torch.as_tensor(list(reference), dtype=torch.long)] = True
    read = RowCount(on_rows, 2 * rows)

    total, scatter, reference_total, finite_rows, finite_reference, peak, norms = _sums(
        matrix, buffer, read, is_reference, 1.0
    )
    scale = 1.0 if peak == 0 or 1e-100 <= peak <= 1e100 else peak  # squares stay in float64
    if scale != 1.0:
        read.grow(rows)
        total, scatter, reference_total, finite_rows, finite_reference, _, norms = _sums(
            matrix, buffer, read, is_reference, scale
        )
    if finite_reference == 0:
        raise WeightsError(
            "every reference row holds NaN or infinity: there is no unused direction"
        )
    if finite_rows < 2:
        raise WeightsError("fewer than two rows hold finite values: there is no component")
    mean = total / finite_rows  # (d,)
    scatter -= finite_rows * torch.outer(mean, mean)  # centred, in float64
    # LAPACK through numpy: torch's eigh of a 640 x 640 matrix took 7 s here, numpy's 0.25 s
    eigenvalues, eigenvectors = np.linalg.eigh(scatter.numpy())
    component = torch.from_numpy(np.ascontiguousarray(eigenvectors[:, -1]))  # (d,): its sign
    spread = float(eigenvalues.clip(min=0).sum())  # does not matter
    whole = float(scatter.diagonal().sum()) + finite_rows * float(mean @ mean)
    if not spread > _FLAT * whole:
        raise WeightsError("the rows do not vary: there is no principal component to remove")
    share = float(eigenvalues[-1]) / spread
    if 1 - share < _FLAT:
        raise WeightsError(
            "every row lies along one line (the first principal component): with it removed, "
            "nothing is left to compare"
        )

    reference_mean = reference_total / finite_reference
    direction = reference_mean - (reference_mean @ component) * component  # (d,)
    length = float(direction.norm())
    if not length > _FLAT * float(reference_mean.norm()):
        raise WeightsError(
            "the reference rows' mean lies along the first principal component: with it "
            "removed, no unused direction is left"
        )

    cosine = np.empty(rows, dtype=np.float64)
    for start, values, finite in _chunks(matrix, buffer, read, scale):
        values -= torch.outer(values @ component, component)  # (R, d): x - (x.c) c
        lengths = values.norm(dim=1)  # (R,)
        found = ((values @ direction) / (lengths * length)).clamp(-1.0, 1.0)
        found[~finite | (lengths == 0)] = float("nan")  # 0 / 0 for a row with nothing left
        cosine[start : start + len(values)] = found.numpy()
    return Indicator(cosine, share, rows - finite_rows, norms)


def row_norms(table: torch.Tensor, on_rows: RowsDone | None = None) -> np.ndarray:
    """Each row's L2 norm in float64 (NaN for a row holding NaN or infinity), a chunk at a
    time."""
    import numpy as np
    import torch

    rows, width = table.shape
    step = max(1, CHUNK_ELEMENTS // max(width, 1))
    buffer = torch.empty((min(step, rows), width), dtype=torch.float64)
    norms = np.empty(rows, dtype=np.float64)
    for start, values, finite in _chunks(table, buffer, RowCount(on_rows, rows)):
        found = values.norm(dim=1)
        found[~finite] = float("nan")
        norms[start : start + len(values)] = found.numpy()
    return norms
