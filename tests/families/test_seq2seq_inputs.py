"""Encoder-decoders: each sinusoid layout is the model's own table, to the bit, and `embed --json`
says which stack's first block it shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from support.familycases.seq2seq import CASES
from support.familymodels import build
from support.helpers import make_runner

from embedcli.cli import app
from embedcli.core.sinusoids import sinusoids
from embedcli.models.config import parse_config

SIZES = [(16, 8), (40, 64), (9, 7)]  # rows, width (an odd width too)


@pytest.mark.parametrize(("rows", "width"), SIZES)
@pytest.mark.parametrize("model_type", ["marian", "pegasus"])
def test_split_sinusoids_are_create_weight(model_type: str, rows: int, width: int) -> None:
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding
    from transformers.models.pegasus.modeling_pegasus import PegasusSinusoidalPositionalEmbedding

    kind = {
        "marian": MarianSinusoidalPositionalEmbedding,
        "pegasus": PegasusSinusoidalPositionalEmbedding,
    }[model_type]
    expected = kind(rows, width).create_weight()
    assert torch.equal(sinusoids("split", rows, width), expected)


@pytest.mark.parametrize(("rows", "width"), [(16, 8), (40, 64)])
@pytest.mark.parametrize("padding_idx", [1, 0])
def test_halves_sinusoids_with_padding_are_m2m100s(rows: int, width: int, padding_idx: int) -> None:
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding

    expected = M2M100SinusoidalPositionalEmbedding.get_embedding(rows, width, padding_idx)
    assert torch.equal(sinusoids("halves", rows, width, padding_idx), expected)


@pytest.mark.parametrize(("rows", "width"), [(16, 8), (40, 64)])
def test_unpadded_halves_are_pegasus_xs(rows: int, width: int) -> None:
    from transformers.models.pegasus_x.modeling_pegasus_x import (
        PegasusXSinusoidalPositionalEmbedding,
    )

    expected = PegasusXSinusoidalPositionalEmbedding(width)(torch.zeros(1, rows, width))[0]
    assert torch.equal(sinusoids("halves_unpadded", rows, width), expected)


@pytest.mark.parametrize(
    ("config", "stack"),
    [
        ({"model_type": "mvp"}, "encoder"),
        ({"model_type": "marian", "architectures": ["MarianMTModel"]}, "encoder"),
        ({"model_type": "t5"}, "encoder"),
        ({"model_type": "bart", "architectures": ["BartForCausalLM"]}, "decoder"),
        ({"model_type": "llama"}, None),
    ],
)
def test_the_summary_names_the_stack_shown(config: dict[str, object], stack: str | None) -> None:
    sizes = {"vocab_size": 64, "d_model": 8, "hidden_size": 8, "max_position_embeddings": 32}
    sizes |= {"num_attention_heads": 2, "num_heads": 2}
    summary = parse_config({**sizes, **config}, "config.json").summary()
    assert summary.get("stack") == stack


@pytest.mark.parametrize("name", ["marian", "t5gemma"])
def test_embed_json_says_the_encoder_is_shown(name: str, tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == name)
    folder = build(case, tmp_path / case.name)
    result = make_runner().invoke(
        app, ["embed", "--weights", str(folder), "--ids", "5,17,42", "--json"]
    )
    assert result.exit_code == 0, result.output
    model = json.loads(result.stdout)["config"]["model"]
    assert model["stack"] == "encoder"
    assert "not_shown" not in model  # the stacks are not towers left out


def test_prophetnet_with_another_padding_row_is_refused_by_name() -> None:
    from embedcli.errors import ConfigError

    sizes = {"vocab_size": 64, "hidden_size": 8, "num_encoder_attention_heads": 2}
    config = {"model_type": "prophetnet", "max_position_embeddings": 32, **sizes}
    assert parse_config(config, "config.json").context_length == 31  # row 0 is the pads'
    with pytest.raises(ConfigError, match="pad_token_id"):
        parse_config({**config, "pad_token_id": 1}, "config.json")


def _bert(**more: object) -> dict[str, object]:
    sizes = {"vocab_size": 64, "hidden_size": 8, "num_attention_heads": 2}
    return {"model_type": "bert", "max_position_embeddings": 32, **sizes, **more}


def test_an_encoder_decoder_is_read_through_its_encoders_family() -> None:
    config = {"model_type": "encoder-decoder", "encoder": _bert(), "decoder": _bert()}
    model = parse_config(config, "config.json")
    assert model.family is not None and model.family.prefixes == ("encoder",)
    assert model.family.token_type is not None  # BERT's steps, under encoder.
    assert model.summary()["stack"] == "encoder"
    assert "not_shown" not in model.summary()


def test_an_encoder_decoder_of_an_unknown_encoder_is_refused_by_name() -> None:
    from embedcli.errors import EmbedCLIError

    config = {"model_type": "encoder-decoder", "encoder": {"model_type": "nonesuch"}}
    with pytest.raises(EmbedCLIError, match="nonesuch"):
        parse_config(config, "config.json")


def test_pegasus_x_in_another_dtype_is_refused_by_name() -> None:
    from embedcli.errors import ConfigError

    sizes = {"vocab_size": 64, "d_model": 8, "num_attention_heads": 2}
    config = {"model_type": "pegasus_x", "max_position_embeddings": 32, **sizes}
    parse_config({**config, "dtype": "float32"}, "config.json")
    with pytest.raises(ConfigError, match="dtype"):
        parse_config({**config, "dtype": "bfloat16"}, "config.json")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_pegasus_xs_sinusoids_in_another_dtype_are_refused(tmp_path: Path, dtype: str) -> None:
    """Pegasus-X computes its table in the embeddings' dtype (exp and sin in bfloat16), not in
    float32 then cast: embedcli's float32 table cast would differ (342 of 1,024 values at
    bfloat16, measured), so any dtype but float32 is refused, and float32 stays exact."""
    case = next(c for c in CASES if c.model_type == "pegasus_x")
    folder = str(build(case, tmp_path / case.name))
    refused = make_runner().invoke(
        app, ["embed", "--weights", folder, "--ids", "5,6,7", "--dtype", dtype]
    )
    assert refused.exit_code == 1, refused.output
    assert refused.stderr.startswith("Error: this family computes its sinusoids in the embeddings'")
    assert f"({dtype} here)" in refused.stderr and "Traceback" not in refused.output
    kept = make_runner().invoke(
        app, ["embed", "--weights", folder, "--ids", "5,6,7", "--dtype", "float32"]
    )
    assert kept.exit_code == 0, kept.output
