"""Decoders whose input layer hangs on a config field embedcli cannot read as transformers does
(HRM's derived embedding scale) are refused by the field's name: never a number computed without
it; rope kept per layer type with rope-free types (Beam, Ergo, Cohere Compass) is read as
the rope layers use it."""

from __future__ import annotations

import pytest

from embedcli.errors import ConfigError
from embedcli.models.config import parse_config

SMALL = {
    "vocab_size": 384,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "max_position_embeddings": 96,
}


@pytest.mark.parametrize("given", [{}, {"embedding_scale": None}])
def test_hrm_text_without_its_embedding_scale_is_refused(given: dict) -> None:
    """HRM's config class makes a missing embedding_scale 1 / initializer_range."""
    config = {"model_type": "hrm_text", **SMALL, "initializer_range": 0.05, **given}
    with pytest.raises(ConfigError, match="embedding_scale"):
        parse_config(config, "config.json")


def test_hrm_text_with_its_embedding_scale_is_read() -> None:
    config = {"model_type": "hrm_text", **SMALL, "embedding_scale": 20.0}
    assert parse_config(config, "config.json").embed_scale == 20.0


@pytest.mark.parametrize("model_type", ["beam", "ergo", "cohere_compass_text"])
def test_a_first_block_without_rope_shows_the_rope_layers_angles(model_type: str) -> None:
    """Their rope_parameters hold one set per layer type, and None for a type without rope:
    where block 0 has none, the angles are those of the first layers that have one, and the
    config says which layer type block 0 is."""
    rope = {"full_attention": None, "sliding_attention": {"rope_type": "default"}}
    layer_types = ["full_attention", "sliding_attention"]
    config = {
        "model_type": model_type,
        **SMALL,
        "rope_parameters": rope,
        "layer_types": layer_types,
    }
    read = parse_config(config, "config.json")
    assert read.rope_not_in_first_block == "full_attention"
    assert read.rope_layer_type == "sliding_attention"


@pytest.mark.parametrize("model_type", ["beam", "ergo", "cohere_compass_text"])
def test_rope_in_no_layer_the_model_has_is_refused(model_type: str) -> None:
    rope = {"full_attention": None, "sliding_attention": {"rope_type": "default"}}
    layer_types = ["full_attention", "full_attention"]
    config = {
        "model_type": model_type,
        **SMALL,
        "rope_parameters": rope,
        "layer_types": layer_types,
    }
    with pytest.raises(ConfigError, match="has no rope_parameters"):
        parse_config(config, "config.json")
