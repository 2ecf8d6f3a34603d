"""The projection itself (embedcli.analysis.projection): principal axes, variances and
coordinates against numpy's exact SVD, on small tables, on a large structured one (the randomized
path) and on values at float32's extremes; axes signed the same on every run; random tables
called isotropic, planted structure found."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from support.pcaoracle import numpy_pca, planted, same_up_to_sign

from embedcli.analysis.projection import principal_axes, project
from embedcli.tokenization.encodings import get_encoding

# ---------------------------------------------------------------- the map, against numpy


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(3, 60),
    width=st.integers(2, 12),
    seed=st.integers(0, 2**32 - 1),
    offset=st.floats(-100, 100),
)
def test_axes_and_variances_equal_numpy_svd_on_small_tables(
    rows: int, width: int, seed: int, offset: float
) -> None:
    # Well-separated spread per dimension, so that each axis is defined (no two near-equal
    # variances, where any rotation of the two would be as right); an offset, so that a
    # missing centring shows.
    g = torch.Generator().manual_seed(seed)
    spread = 3.0 ** -torch.arange(width, dtype=torch.float64)
    rotation = torch.linalg.qr(torch.randn(width, width, generator=g, dtype=torch.float64)).Q
    table = (torch.randn(rows, width, generator=g, dtype=torch.float64) * spread) @ rotation
    table = (table + offset).float()
    values = table.double().numpy()
    axes, variances, coordinates = numpy_pca(values)
    _, s, _ = np.linalg.svd(values - values.mean(axis=0), full_matrices=False)
    if len(s) > 2 and not (s[0] > 1.05 * s[1] > 1.05 * 1.05 * s[2]):
        return  # a draw whose top variances tie: no axis to compare
    scale = float(np.abs(coordinates).max()) + 1e-12
    same_up_to_sign(principal_axes(table)[0].numpy(), axes, atol=2e-3)
    report = project(get_encoding("gpt2"), table, [(0, "top", None)], "test", seeded=False)
    same_up_to_sign(report.cloud, coordinates, atol=2e-4 * scale)
    np.testing.assert_allclose(report.explained_variance, variances, rtol=2e-3)
    total = values.var(axis=0, ddof=1).sum()
    np.testing.assert_allclose(report.total_variance, total, rtol=1e-9)
    np.testing.assert_allclose(report.explained_variance_ratio, variances / total, rtol=2e-3)


def test_the_randomized_axes_equal_numpy_svd_on_a_large_structured_table() -> None:
    # 4,000 x 96: pca_lowrank finds 12 of 96 components, so the randomized path is what runs.
    table = planted(4000, 96, seed=7)
    axes, variances, coordinates = numpy_pca(table.double().numpy())
    ours = principal_axes(table)[0].numpy()
    same_up_to_sign(ours, axes, atol=1e-4)
    report = project(get_encoding("gpt2"), table, [(5, "top", None)], "test", seeded=False)
    np.testing.assert_allclose(report.explained_variance, variances, rtol=1e-5)
    same_up_to_sign(report.cloud, coordinates, atol=1e-3)
    assert report.structure == "structured"


def test_axes_are_signed_by_their_largest_loading_and_the_same_on_every_run() -> None:
    table = planted(500, 20, seed=3)
    (first, _), (second, _) = principal_axes(table), principal_axes(table)
    assert torch.equal(first, second)
    for k in range(2):
        assert first[first[:, k].abs().argmax(), k] > 0
    assert torch.equal(principal_axes(-table)[0].abs(), first.abs())


@pytest.mark.parametrize(
    ("rows", "width"), [(50257, 32), (2000, 300), (300, 2000), (40, 8), (2, 768), (3, 5000)]
)
def test_random_tables_are_isotropic_and_planted_structure_is_found(rows: int, width: int) -> None:
    g = torch.Generator().manual_seed(rows + width)
    noise = torch.randn(rows, width, generator=g)
    enc = get_encoding("gpt2")
    found = project(enc, noise, [(0, "top", None)], "noise", seeded=True)
    # Marchenko–Pastur: the top variance of independent values, (1 + sqrt(d/n))^2 per unit
    # of variance, n = V - 1 rows' worth after centring; from the table's own variance here.
    edge = noise.double().var(dim=0).mean().item() * (1 + (width / (rows - 1)) ** 0.5) ** 2
    assert found.noise_edge == pytest.approx(edge, rel=1e-9)
    assert 0.7 < found.noise_ratio < 1.2
    assert found.structure == "isotropic"
    if rows < 10:
        return  # too few rows to hold structure beyond chance: a 2-row table is one direction
    structured = project(enc, planted(rows, width, seed=1), [(0, "top", None)], "x", seeded=False)
    assert structured.structure == "structured" and structured.noise_ratio > 2


@pytest.mark.parametrize("scale", [1e36, 1e-30, 1.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_extreme_magnitudes_give_the_same_map_and_leave_the_table_alone(
    scale: float, dtype: torch.dtype
) -> None:
    # float32's range squared overflows (1e36 squared is inf): the PCA scales the values it
    # works on, never the table it was given.
    if dtype == torch.float16 and scale != 1.0:
        return  # float16 cannot hold these magnitudes
    base = planted(3000, 40, seed=5)
    table = (base.double() * scale).to(dtype)
    kept = table.clone()
    report = project(get_encoding("gpt2"), table, [(7, "top", None)], "x", seeded=False)
    assert torch.equal(table, kept)
    _, variances, coordinates = numpy_pca(table.double().numpy())
    np.testing.assert_allclose(report.explained_variance, variances, rtol=1e-3)
    same_up_to_sign(report.cloud, coordinates, atol=1e-3 * float(np.abs(coordinates).max()))
    assert 0 < report.explained_variance_ratio[0] <= 1
