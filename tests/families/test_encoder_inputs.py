"""The encoders' input-layer fields embedcli does not compute are refused by name, and the
ones it reads decide the steps (a projection only from a narrower table where the family's
Linear exists only then)."""

from __future__ import annotations

import pytest

from embedcli.errors import ConfigError
from embedcli.models.config import parse_config

BASE = {"vocab_size": 100, "hidden_size": 64, "num_attention_heads": 4}


@pytest.mark.parametrize(
    ("model_type", "field", "value"),
    [
        ("deberta", "position_biased_input", True),  # a learned table added
        ("deberta-v2", "type_vocab_size", 2),  # token types added
        ("mobilebert", "normalization_type", "layer_norm"),
        ("mobilebert", "trigram_input", False),
        ("esm", "position_embedding_type", "absolute"),  # ESM-1's learned positions
        ("esm", "emb_layer_norm_before", True),
    ],
)
def test_what_is_not_computed_is_refused_by_name(
    model_type: str, field: str, value: object
) -> None:
    config = {**BASE, "model_type": model_type, "position_biased_input": False}
    config["relative_attention"] = True
    config.update({"position_embedding_type": "rotary", "emb_layer_norm_before": False})
    config[field] = value
    with pytest.raises(ConfigError, match=field):
        parse_config(config, "config.json")


def test_electra_projects_only_a_narrower_table_and_albert_always() -> None:
    electra = parse_config({**BASE, "model_type": "electra", "embedding_size": 64}, "c")
    albert = parse_config({**BASE, "model_type": "albert", "embedding_size": 64}, "c")
    narrow = parse_config({**BASE, "model_type": "electra", "embedding_size": 32}, "c")
    assert electra.token_width is None and albert.token_width == 64 and narrow.token_width == 32
    assert albert.embed_fields()["projection"] == "after_norm"


def test_distilbert_s_eps_is_its_modules() -> None:
    config = parse_config({**BASE, "model_type": "distilbert", "dim": 64, "n_heads": 4}, "c")
    assert config.norm_eps == 1e-12


@pytest.mark.parametrize("name", ["deberta", "xlm", "albert", "esm"])
def test_padded_batches_are_exact(name: str, tmp_path) -> None:
    """Two sequences of different lengths: the pads' rows zeroed by the attention mask where
    the model multiplies by it (DeBERTa, XLM), as the model itself gives them."""
    import json

    import torch
    from support.familycases.encoders import CASES
    from support.familymodels import build, first_block_input, load
    from support.helpers import make_runner

    from embedcli.cli import app

    case = next(c for c in CASES if c.name == name)
    folder = build(case, tmp_path / name)
    out = tmp_path / "out.pt"
    args = ["embed", "--weights", str(folder), "--ids", "5,17,200,42,9", "--ids", "8,200"]
    result = make_runner().invoke(app, [*args, "--pad-id", "1", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    ids, mask = report["input_ids"], report["attention_mask"]
    assert mask == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    expected = first_block_input(load(folder, case), ids, mask)
    got = torch.load(out)
    assert torch.equal(got, expected), (got - expected).abs().max()
    masked = any(s["name"] == "masked_embeddings" for s in report["steps"])
    assert masked == (name != "albert")
    dropped = any(s["name"] == "token_dropout_embeddings" for s in report["steps"])
    assert dropped == (name == "esm")


def test_roformer_s_angles_are_its_sinusoidal_table(tmp_path) -> None:
    """RoFormer keeps its rotary sines as a frozen nn.Embedding (sines, then cosines of
    position x 10000^(-2i/head_dim)), not an inv_freq buffer: embed's angles give its rows."""
    import json

    import torch
    from support.familycases.encoders import CASES
    from support.familymodels import build, load
    from support.helpers import make_runner

    from embedcli.cli import app

    case = next(c for c in CASES if c.name == "roformer")
    folder = build(case, tmp_path / "roformer")
    result = make_runner().invoke(
        app, ["embed", "--weights", str(folder), "--ids", "5,17,200,42,9", "--json"]
    )
    assert result.exit_code == 0, result.output
    angles = torch.tensor(json.loads(result.stdout)["rope_angles"])  # (T, r/2)
    table = load(folder, case).roformer.encoder.embed_positions.weight[: angles.shape[0]]
    half = table.shape[1] // 2
    assert angles.shape[1] == half
    assert torch.allclose(table[:, :half], angles.sin(), atol=1e-6)
    assert torch.allclose(table[:, half:], angles.cos(), atol=1e-6)


@pytest.mark.parametrize("name", ["albert", "deberta", "mobilebert", "esm"])
def test_streaming_and_shapes_run_the_same_steps(name: str, tmp_path) -> None:
    """--lines and inspect-shapes (on the CPU and planned without torch) go through the new
    steps too, in the same order as embed's batch."""
    import json

    from support.familycases.encoders import CASES
    from support.familymodels import build
    from support.helpers import make_runner

    from embedcli.cli import app

    runner = make_runner()
    folder = build(next(c for c in CASES if c.name == name), tmp_path / name)
    text = "Hello, world! The quick brown fox."
    batch = json.loads(
        runner.invoke(app, ["embed", "--weights", str(folder), text, "--json"]).stdout
    )
    (tmp_path / "one.txt").write_text(text + "\n")
    lines = runner.invoke(
        app, ["embed", "--weights", str(folder), "--lines", "-f", str(tmp_path / "one.txt")]
    )
    assert lines.exit_code == 0, lines.output
    assert (
        json.loads(lines.stdout.splitlines()[0])["input_embeddings"] == batch["input_embeddings"][0]
    )
    shapes = runner.invoke(
        app, ["inspect-shapes", "--weights", str(folder), "--device", "cpu", "--json"]
    )
    planned = runner.invoke(app, ["inspect-shapes", "--weights", str(folder), "--json"])
    assert shapes.exit_code == 0 and planned.exit_code == 0, shapes.output + planned.output
    on_cpu = [(t["name"], t["shape"]) for t in json.loads(shapes.stdout)["tensors"]]
    assert on_cpu == [(t["name"], t["shape"]) for t in json.loads(planned.stdout)["tensors"]]
    assert [n for n, _ in on_cpu] == [s["name"] for s in batch["steps"]]
