"""numpy's exact SVD as the oracle of ``embedcli project``, and token tables with structure
planted in them: two strong directions and an offset over N(0, 1) noise; ``structured_checkpoint``
(a fixture, imported by name where it is used) saves one as a GPT-2-shaped checkpoint."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

KEY = "transformer.wte.weight"


def numpy_pca(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(axes (d, 2), variances (2,), every row's coordinates (V, 2)) from numpy's exact SVD."""
    centred = table - table.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:2].T
    return axes, s[:2] ** 2 / (len(table) - 1), centred @ axes


def same_up_to_sign(ours: np.ndarray, theirs: np.ndarray, atol: float) -> None:
    """Columns equal, each up to its sign (an axis and its negation are the same axis)."""
    for k in range(ours.shape[1]):
        sign = 1.0 if ours[:, k] @ theirs[:, k] >= 0 else -1.0
        np.testing.assert_allclose(ours[:, k], sign * theirs[:, k], atol=atol, rtol=0)


def planted(rows: int, width: int, seed: int, strength: float = 6.0) -> torch.Tensor:
    """N(0, 1) noise plus two strong directions and an offset: a table with structure."""
    g = torch.Generator().manual_seed(seed)
    noise = torch.randn(rows, width, generator=g)
    directions = torch.linalg.qr(torch.randn(width, 2, generator=g)).Q.T  # (2, d), orthonormal
    weights = torch.randn(rows, 2, generator=g) * torch.tensor([strength, strength / 2])
    return noise + weights @ directions + 5.0


@pytest.fixture
def structured_checkpoint(tmp_path: Path) -> tuple[Path, torch.Tensor]:
    table = planted(50257, 16, seed=11)
    path = tmp_path / "model.safetensors"
    save_file({KEY: table}, str(path))
    return path, table
