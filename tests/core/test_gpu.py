"""Checks that need a real accelerator; skipped where torch sees none (run by bench/gpu-check)."""

from __future__ import annotations

import json

import pytest
import torch
from support.helpers import make_runner

from embedcli import EmbedConfig, build_embedding
from embedcli.cli import app

runner = make_runner()

ACCELERATORS = [
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.cuda,
            pytest.mark.skipif(
                not torch.cuda.is_available(), reason="no CUDA device visible to torch"
            ),
        ],
    ),
    pytest.param(
        "mps",
        marks=[
            pytest.mark.mps,
            pytest.mark.skipif(
                not (torch.backends.mps.is_available()), reason="no MPS device visible to torch"
            ),
        ],
    ),
]


@pytest.mark.parametrize("device", ACCELERATORS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_same_seed_same_numbers_as_cpu(device: str, dtype: str) -> None:
    config = EmbedConfig(d_model=64, dtype=dtype)
    ids = torch.tensor([[15496, 11, 995, 0], [50256, 1, 2, 3]])
    cpu = build_embedding(config, "cpu")
    accel = build_embedding(config, device)
    assert accel.position_ids.device.type == device
    assert torch.equal(accel.token_embedding.weight.cpu(), cpu.token_embedding.weight)
    assert torch.equal(accel(ids).cpu(), cpu(ids))


@pytest.mark.parametrize("device", ACCELERATORS)
def test_embed_verify_on_device(device: str) -> None:
    result = runner.invoke(
        app, ["embed", "Hello, world!", "hi", "--device", device, "--verify", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config"]["device"].startswith(device)
    assert {s["device"] for s in data["steps"]} == {data["config"]["device"]}
    assert data["verify"]["ok"] is True


@pytest.mark.parametrize("device", ACCELERATORS)
def test_out_of_range_id_is_caught_before_the_device(device: str) -> None:
    result = runner.invoke(app, ["embed", "--ids", "1,50257", "--device", device])
    assert result.exit_code == 1
    assert "out of range" in result.stderr


@pytest.mark.parametrize("device", ACCELERATORS)
def test_neighbors_on_device_equal_cpu(device: str) -> None:
    from embedcli.analysis.neighbors import nearest_tokens

    table = torch.randn(5000, 32, generator=torch.Generator().manual_seed(0))
    on_cpu = nearest_tokens(table, [1, 2, 4999], 5, chunk_rows=700)
    on_device = nearest_tokens(table, [1, 2, 4999], 5, chunk_rows=700, device=device)
    assert [[i for i, _ in row] for row in on_device] == [[i for i, _ in row] for row in on_cpu]


@pytest.mark.parametrize("device", ACCELERATORS)
def test_stream_embed_on_device(device: str, tmp_path) -> None:
    import numpy as np

    out = tmp_path / "o.npy"
    result = runner.invoke(
        app,
        ["embed", "--window", "8", "-d", "16", "--device", device, "-o", str(out)],
        input="the quick brown fox " * 50,
    )
    assert result.exit_code == 0, result.output
    cpu_out = tmp_path / "c.npy"
    runner.invoke(
        app,
        ["embed", "--window", "8", "-d", "16", "--device", "cpu", "-o", str(cpu_out)],
        input="the quick brown fox " * 50,
    )
    assert np.array_equal(np.load(out), np.load(cpu_out))
