"""inspect-shapes --train against a real training step, counted from its tensors' bytes."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from support.helpers import expect_error, make_runner

from embedcli.analysis.training import training_memory
from embedcli.cli import app
from embedcli.core.config import EmbedConfig
from embedcli.core.embedding import build_embedding

runner = make_runner()
B, T = 3, 5


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def counted_step(config: EmbedConfig, optimizer: str, mixed: bool) -> dict[str, int]:
    """One real step on the CPU; each part's bytes as its tensors hold them."""
    module = build_embedding(config, "cpu")
    params = [p for p in module.parameters()]
    ids = torch.randint(0, config.vocab_size, (B, T))
    trace = module.trace(ids)
    made = [trace.input_ids, trace.token_embeddings, trace.input_embeddings]
    if config.positional == "learned":
        made.append(trace.position_embeddings)
    if trace.scaled_embeddings is not None:
        made.append(trace.scaled_embeddings)
    trace.input_embeddings.float().pow(2).sum().backward()
    updated = params
    master = 0
    if mixed:  # an fp32 master copy carries the update; the bf16 weights are its working copy
        updated = [p.detach().float().requires_grad_() for p in params]
        for m, p in zip(updated, params, strict=True):
            m.grad = p.grad.float()
        master = nbytes(updated)
    make = {"adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}[optimizer]
    step = make(updated, lr=1e-3)
    step.step()
    state = [t for s in step.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    return {
        "parameters": nbytes(params),
        "gradients": nbytes(p.grad for p in params),
        "master weights": master,
        "optimizer state": nbytes(state),
        "activations (input layer)": nbytes(made),
    }


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
@pytest.mark.parametrize("precision", ["float32", "bfloat16", "mixed"])
@pytest.mark.parametrize(
    "config",
    [
        EmbedConfig(vocab_size=50, d_model=8, context_length=16),
        EmbedConfig(vocab_size=70, d_model=6, context_length=8, positional="sinusoidal"),
        EmbedConfig(vocab_size=40, d_model=4, context_length=8, positional="rope"),
        EmbedConfig(vocab_size=30, d_model=4, context_length=8, positional="none", embed_scale=2.0),
    ],
    ids=["learned", "sinusoidal", "rope", "none-scaled"],
)
def test_the_counts_are_a_real_steps(config: EmbedConfig, precision: str, optimizer: str) -> None:
    dtype = "bfloat16" if precision == "mixed" else precision
    real = counted_step(replace(config, dtype=dtype), optimizer, precision == "mixed")
    counted = training_memory(config, B, T, None, optimizer)
    assert {p.part: p.layer[precision] for p in counted.parts} == real
    assert counted.total_layer[precision] == sum(real.values())


def test_the_whole_model_by_its_parameter_count() -> None:
    """The whole model's figures are its parameter count through the same formulas: 16 bytes a
    parameter in mixed precision with AdamW (the ZeRO paper's count), 8 with SGD."""
    config = EmbedConfig()
    model = 124_439_808
    adamw = training_memory(config, 8, 4, model, "adamw")
    assert adamw.total_model["mixed"] == 16 * model
    assert adamw.total_model["float32"] == 16 * model  # 4 + 4 + 8
    assert training_memory(config, 8, 4, model, "sgd").total_model["mixed"] == 8 * model


def test_train_through_the_cli() -> None:
    result = runner.invoke(app, ["inspect-shapes", "--train", "--json", "--optimizer", "sgd"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["training"]
    assert data["optimizer"] == "sgd"
    assert data["model_parameters"] == 124_439_808
    state = next(p for p in data["parts"] if p["part"] == "optimizer state")
    assert state["layer"] == {"float32": 0, "bfloat16": 0, "mixed": 0}
    table = runner.invoke(app, ["inspect-shapes", "--train"], env={"COLUMNS": "100"})
    assert table.exit_code == 0, table.output
    assert "Training memory of one step (AdamW)" in table.stdout
    assert "The whole model, 124,439,808 parameters" in table.stdout
    expect_error(runner.invoke(app, ["inspect-shapes", "--train", "--optimizer", "lion"]),
                 "lion", code=2)  # fmt: skip


def test_optimizer_without_train_is_a_usage_error() -> None:
    result = runner.invoke(app, ["inspect-shapes", "--optimizer", "sgd"])
    expect_error(result, "--optimizer chooses what --train counts: pass --train too", 2)


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_narrow_terminals_put_the_formulas_under_the_table(optimizer: str) -> None:
    args = ["inspect-shapes", "--preset", "gpt2", "--train", "--optimizer", optimizer]
    wide = runner.invoke(app, args, env={"COLUMNS": "160"})
    narrow = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert wide.exit_code == narrow.exit_code == 0, narrow.output
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert "┃ formula" in wide.stdout and "formula" not in narrow.stdout
    assert "optimizer state: " in narrow.stdout  # each part's formula, whole, on its own line
    per = "16 bytes a parameter" if optimizer == "adamw" else "8 bytes a parameter"
    assert per in " ".join(narrow.stdout.split())
