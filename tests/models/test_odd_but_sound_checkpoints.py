"""Checkpoints that are odd but sound are read as they are: big-endian and Fortran-order arrays,
tensor names that look like rich markup, PyTorch files with other keys and entries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from support.checkpointfiles import (
    good_tables,
    invoke,
    runner,
    write_pt,
    write_tables,
)

from embedcli.cli import app


def test_big_endian_and_fortran_order_npz_are_read_exactly(tmp_path: Path) -> None:
    tables = good_tables()
    path = tmp_path / "odd.npz"
    np.savez(
        path,
        **{
            "wte.weight": tables["wte.weight"].numpy().astype(">f4"),
            "wpe.weight": np.asfortranarray(tables["wpe.weight"].numpy()),
        },
    )
    listed = json.loads(invoke("weights", path, "--json").stdout)
    assert {t["dtype"] for t in listed["tensors"]} == {"float32"}
    result = runner.invoke(app, ["embed", "--ids", "3 4", "--weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    got = torch.tensor(json.loads(result.stdout)["input_embeddings"])[0]
    assert torch.equal(got, tables["wte.weight"][[3, 4]] + tables["wpe.weight"][:2])


MARKUP = "[bold]net[/x].[/]"


@pytest.mark.parametrize("fmt", ["safetensors", "pt", "npz"])
def test_names_with_markup_pass_through(tmp_path: Path, fmt: str) -> None:
    tables = good_tables()
    state = {
        MARKUP + "token_embedding.weight": tables["wte.weight"],
        MARKUP + "position_embedding.weight": tables["wpe.weight"],
        "[red]other": torch.zeros(2),
    }
    path = write_tables(tmp_path / "markup", fmt, state)
    data = json.loads(invoke("weights", path, "--json").stdout)
    assert data["token_key"] == MARKUP + "token_embedding.weight"
    assert {t["name"] for t in data["tensors"]} == set(state)
    shown = invoke("weights", path)
    assert shown.exit_code == 0, shown.output
    for name in state:
        assert name in shown.stdout
    for command in ("stats", "positions", "inspect-shapes"):
        result = invoke(command, path)
        assert result.exit_code == 0, (command, result.output)
    result = runner.invoke(
        app,
        [
            "embed",
            "--ids",
            "1",
            "--weights",
            str(path),
            "--token-key",
            MARKUP + "token_embedding.weight",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["config"]["token_key"] == MARKUP + "token_embedding.weight"


def test_a_pt_with_other_keys_and_entries_is_listed(tmp_path: Path) -> None:
    state = {**good_tables(), 7: torch.zeros(2), "note": "text"}
    path = write_pt(tmp_path / "x.pt", {"model": state, 3: "three", "epoch": 1})
    data = json.loads(invoke("weights", path, "--json").stdout)
    assert data["other_entries"] == ["3", "epoch"]
    assert {t["name"] for t in data["tensors"]} == {"wte.weight", "wpe.weight"}
