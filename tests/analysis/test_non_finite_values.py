"""NaN, infinite, huge and tiny values in a table: `stats` counts the values that are not finite and
leaves them out, `neighbors` leaves out the rows that hold them and refuses them as queries, and
nothing overflows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from support.checkpointfiles import (
    D,
    V,
    invoke,
    runner,
    write_tables,
)
from support.helpers import expect_error

from embedcli.cli import app


def table_with_holes() -> torch.Tensor:
    table = torch.randn(V, D, generator=torch.Generator().manual_seed(1))
    table[5, 2] = float("nan")
    table[6] = float("inf")
    table[7, 0] = float("-inf")
    return table


@pytest.mark.parametrize("fmt", ["safetensors", "pt", "npz"])
def test_stats_count_non_finite_values_and_leave_them_out(tmp_path: Path, fmt: str) -> None:
    table = table_with_holes()
    path = write_tables(tmp_path / "holes", fmt, {"wte.weight": table})
    result = runner.invoke(app, ["stats", "--weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["tables"][0]
    values = table.double().numpy()
    finite = values[np.isfinite(values)]
    assert entry["non_finite"] == D + 2
    assert entry["mean"] == pytest.approx(finite.mean(), abs=1e-12)
    assert entry["std"] == pytest.approx(finite.std(ddof=1), rel=1e-9)
    assert (entry["min"], entry["max"]) == (finite.min(), finite.max())
    rows = values[np.isfinite(values).all(axis=1)]
    norms = np.linalg.norm(rows, axis=1)
    assert entry["row_norm_percentiles"]["p50"] == pytest.approx(np.percentile(norms, 50))
    assert "nan" not in result.stdout.lower()
    shown = runner.invoke(app, ["stats", "--weights", str(path)])
    assert shown.exit_code == 0, shown.output


def test_stats_of_a_table_without_finite_values(tmp_path: Path) -> None:
    path = write_tables(tmp_path / "nan", "npz", {"wte.weight": torch.full((V, D), float("nan"))})
    expect_error(invoke("stats", path), "the token_embeddings table holds no finite values")


def test_stats_of_huge_and_tiny_values_do_not_overflow(tmp_path: Path) -> None:
    for scale in (1e300, 1e-300):
        table = torch.randn(V, D, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
        path = write_tables(tmp_path / "scaled", "npz", {"wte.weight": table * scale})
        entry = json.loads(invoke("stats", path, "--json").stdout)["tables"][0]
        values = table.numpy()
        assert entry["mean"] / scale == pytest.approx(values.mean(), rel=1e-9)
        assert entry["std"] / scale == pytest.approx(values.std(ddof=1), rel=1e-9)
        p100 = np.linalg.norm(values, axis=1).max()
        assert entry["row_norm_percentiles"]["p100"] / scale == pytest.approx(p100, rel=1e-9)


@pytest.mark.parametrize("fmt", ["safetensors", "pt", "npz"])
def test_neighbors_leave_out_rows_with_nan_and_refuse_them_as_queries(
    tmp_path: Path, fmt: str
) -> None:
    table = table_with_holes()
    path = write_tables(tmp_path / "holes", fmt, {"wte.weight": table})
    result = runner.invoke(
        app, ["neighbors", "--ids", "1", "--weights", str(path), "-k", str(V), "--json"]
    )
    assert result.exit_code == 0, result.output
    found = [n["id"] for n in json.loads(result.stdout)["tokens"][0]["neighbors"]]
    assert sorted(found) == [i for i in range(V) if i not in (1, 5, 6, 7)]
    for token in ("5", "6", "7"):
        result = runner.invoke(app, ["neighbors", "--ids", token, "--weights", str(path)])
        expect_error(result, f"the row of token {token} holds NaN or infinite values")


def test_neighbors_of_a_single_row_table(tmp_path: Path) -> None:
    path = write_tables(tmp_path / "one", "safetensors", {"wte.weight": torch.ones(1, D)})
    result = runner.invoke(app, ["neighbors", "--ids", "0", "--weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tokens"][0]["neighbors"] == []
