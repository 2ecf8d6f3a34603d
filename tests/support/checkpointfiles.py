"""Small checkpoint files for the tests of what commands make of them (refusals, odd but sound
files, non-finite values): the tables, written as safetensors, .pt or .npz, and each command
that reads a checkpoint, run on one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

from embedcli.cli import app
from support.helpers import make_runner

runner = make_runner()

V, D, C = 64, 8, 16

COMMANDS = {
    "weights": ["weights", "{}"],
    "embed": ["embed", "hi", "--weights", "{}", "--device", "cpu"],
    "inspect-shapes": ["inspect-shapes", "--weights", "{}"],
    "neighbors": ["neighbors", "hi", "--weights", "{}", "--device", "cpu", "-k", "2"],
    "stats": ["stats", "--weights", "{}"],
    "positions": ["positions", "--weights", "{}"],
}


def invoke(command: str, path: Path, *extra: str):
    return runner.invoke(app, [arg.format(path) for arg in COMMANDS[command]] + list(extra))


def write_safetensors(path: Path, tensors: dict[str, torch.Tensor]) -> Path:
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))
    return path


def write_pt(path: Path, state: object) -> Path:
    torch.save(state, path)
    return path


def good_tables(seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {
        "wte.weight": torch.randn(V, D, generator=generator),
        "wpe.weight": torch.randn(C, D, generator=generator),
    }


def write_tables(path: Path, fmt: str, tables: dict[str, torch.Tensor]) -> Path:
    """The same tensors as safetensors, .pt or .npz."""
    if fmt == "safetensors":
        return write_safetensors(path.with_suffix(".safetensors"), tables)
    if fmt == "npz":
        target = path.with_suffix(".npz")
        np.savez(target, **{k: v.numpy() for k, v in tables.items()})
        return target
    return write_pt(path.with_suffix(".pt"), tables)
