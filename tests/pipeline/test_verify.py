"""`embed --verify` against a reference worked out without the core module or the loader: it
agrees for every family, dtype and source, and it disagrees when the module or the loader is
wrong (the old reference, built from the module's own tables, agreed with itself)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from support.checkpoints import LAYOUTS, make
from support.helpers import make_runner

from embedcli.cli import app
from embedcli.core import embedding
from embedcli.core import sinusoids as fixed
from embedcli.core.config import EmbedConfig
from embedcli.models import tables as weights
from embedcli.pipeline.reference import reference_embeddings, sinusoids

runner = make_runner()
FAMILIES = ("learned", "sinusoidal", "rope", "none")
DTYPES = ("float32", "float16", "bfloat16")


def verified(*args: str) -> dict:
    result = runner.invoke(
        app, ["embed", "Hello, world! A longer text", *args, "--verify", "--device", "cpu",
              "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["verify"]


def test_sinusoidal_verify_agrees_on_the_cpu() -> None:
    # The bug: the reference added only a learned table, which sinusoids do not have, and
    # reported "cpu DISAGREES with the CPU: largest difference 1".
    result = runner.invoke(
        app, ["embed", "Hello", "--positional", "sinusoidal", "--verify", "-d", "8", "--device",
              "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "agrees with a separate CPU computation" in " ".join(result.stdout.split())


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_seeded_tables_agree_for_every_family_and_dtype(family: str, dtype: str) -> None:
    found = verified("--positional", family, "--dtype", dtype, "-d", "16", "--context-length",
                     "32")  # fmt: skip
    assert found["ok"] is True and found["max_abs_diff"] == 0.0


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_checkpoints_agree_in_every_format_and_dtype(
    tmp_path: Path, layout: str, dtype: str
) -> None:
    path, *_ = make(tmp_path, layout)
    found = verified("--weights", str(path), "--dtype", dtype)
    assert found["ok"] is True and found["max_abs_diff"] == 0.0


def test_the_reference_is_the_recipe_and_the_formula() -> None:
    # By hand: manual_seed, the token table, then the positional one; sin and cos by math.
    config = EmbedConfig(vocab_size=100, d_model=6, context_length=8, seed=7)
    torch.manual_seed(7)
    token = torch.nn.Embedding(100, 6).weight.detach()
    position = torch.nn.Embedding(8, 6).weight.detach()
    ids = torch.tensor([[5, 99, 0]])
    expected = (token[ids] + position[:3]).double()
    assert torch.equal(reference_embeddings(config, ids)[0], expected)
    assert sinusoids(3, 4)[2, 3].item() == math.cos(2 / 10000 ** (2 / 4))
    # NumPy's sin and torch's may round one value a float64 ulp apart (seen on some CPUs);
    # a formula off anywhere is off by far more than four ulps of a value in [-1, 1].
    ulp = torch.finfo(torch.float64).eps
    torch.testing.assert_close(
        sinusoids(50, 16), fixed.sinusoidal_table(50, 16), atol=4 * ulp, rtol=0
    )


def test_a_wrong_sinusoid_in_the_module_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = embedding.sinusoids

    def swapped(kind: str, rows: int, width: int, pad: int | None) -> torch.Tensor:
        return real(kind, rows, width, pad).flip(1)  # sin and cos the wrong way round

    monkeypatch.setattr(embedding, "sinusoids", swapped)
    result = runner.invoke(
        app, ["embed", "Hello there", "--positional", "sinusoidal", "--verify", "-d", "8",
              "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "Error: cpu disagrees with the CPU" in result.stderr


def test_tables_drawn_in_the_wrong_order_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def positions_first(self, config, table) -> None:
        self.position_embedding = table(config.context_length, config.d_model)
        self.token_embedding = table(config.vocab_size, config.d_model)

    monkeypatch.setattr(embedding.InputEmbedding, "_create_tables", positions_first)
    result = runner.invoke(app, ["embed", "Hello", "--verify", "-d", "8", "--device", "cpu"])
    assert result.exit_code == 1
    assert "Error: cpu disagrees with the CPU" in result.stderr


def test_a_loader_that_changes_the_tables_is_caught(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path, *_ = make(tmp_path, "hf-gpt2model")
    real = weights.read_tables

    def nudged(*args, **kwargs):
        tables = real(*args, **kwargs)
        tables.token = tables.token + 0.25
        return tables

    monkeypatch.setattr(weights, "read_tables", nudged)
    result = runner.invoke(
        app, ["embed", "Hello", "--weights", str(path), "--verify", "--device", "cpu"]
    )
    assert result.exit_code == 1
    assert "Error: cpu disagrees with the CPU by 0.25" in result.stderr


def test_checkpoints_the_loader_reads_are_read_again_too(tmp_path: Path) -> None:
    import numpy as np
    from safetensors.torch import save_file

    torch.manual_seed(0)
    token, position = torch.randn(50257, 8), torch.randn(16, 8)
    # big-endian arrays in an .npz
    big = {"embed.W_E": token.numpy().astype(">f4"), "pos_embed.W_pos": position.numpy()}
    big["pos_embed.W_pos"] = big["pos_embed.W_pos"].astype(">f4")
    np.savez(tmp_path / "be.npz", **big)
    # a state dict with a key that is not a string, before the tables
    torch.save({7: torch.zeros(2), "transformer.wte.weight": token,
                "transformer.wpe.weight": position}, tmp_path / "intkey.pt")  # fmt: skip
    # the same name bare and behind torch.compile's prefix: the bare one is the table asked for
    save_file({"_orig_mod.transformer.wte.weight": torch.randn(50257, 8),
               "transformer.wte.weight": token, "transformer.wpe.weight": position},
              str(tmp_path / "both.safetensors"))  # fmt: skip
    keys = ["--token-key", "transformer.wte.weight", "--position-key", "transformer.wpe.weight"]
    for name, extra in (("be.npz", []), ("intkey.pt", []), ("both.safetensors", keys)):
        found = verified("--weights", str(tmp_path / name), *extra)
        assert found["ok"] is True and found["max_abs_diff"] == 0.0, name
        assert found["reference"] == "the checkpoint's files, read again"


def test_a_disagreement_on_the_cpu_is_not_blamed_on_the_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def positions_first(self, config, table) -> None:
        self.position_embedding = table(config.context_length, config.d_model)
        self.token_embedding = table(config.vocab_size, config.d_model)

    monkeypatch.setattr(embedding.InputEmbedding, "_create_tables", positions_first)
    result = runner.invoke(app, ["embed", "Hello", "--verify", "-d", "8", "--device", "cpu"])
    assert "module and its reference differ on the CPU itself" in result.stderr
    assert "try --device cpu" not in result.stderr
