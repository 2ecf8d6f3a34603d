"""Decoders whose input layer hangs on a config field embedcli cannot read as transformers does
(HRM's derived embedding scale) are refused by the field's name: never a number computed without
it; rope kept per layer type with rope-free types (Beam, Ergo, Cohere Compass) is read as
the rope layers use it, and so is a rope base per layer (Granite SWA's layer_rope_theta, 0 for
none); a per-layer list that is not one base per layer is refused."""

from __future__ import annotations

import math

import pytest

from embedcli.core.config import EmbedConfig
from embedcli.core.steps import positions_phrase
from embedcli.errors import ConfigError
from embedcli.models.config import ModelConfig, parse_config

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


def _swa(model_type: str = "granite_swa", **fields: object) -> dict:
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    return {"model_type": model_type, **SMALL, "rope_parameters": rope, **fields}


def _phrase(read: ModelConfig) -> str:
    config = EmbedConfig(vocab_size=384, d_model=64, positional="rope", rope_theta=read.rope_theta)
    return positions_phrase(config, read.summary())


@pytest.mark.parametrize("model_type", ["granite_swa", "granitemoe_swa"])
def test_the_first_block_reads_layer_zeros_own_rope_base(model_type: str) -> None:
    """layer_rope_theta replaces rope_theta layer by layer: block 0's base is layer 0's, and
    every base is named with the layers that use it."""
    thetas = [5e4, 1e4, 5e4, 5e4, 5e4, 0]
    read = parse_config(_swa(model_type, num_hidden_layers=6, layer_rope_theta=thetas), "c")
    assert read.rope_theta == 5e4
    assert read.rope_bases == {"layers 0, 2-4": 5e4, "layer 1": 1e4}
    assert read.rope_layer_type == "layer_rope_theta 50000"
    assert read.rope_not_in_first_block is None and read.rope_free_layers == (5,)
    assert "layer 0: layer_rope_theta 50000" in _phrase(read)


def test_layer_zero_without_rope_shows_the_first_rope_layers_angles() -> None:
    """A 0 at layer 0: block 0 has no rope, said by name; the angles are layer 1's base."""
    read = parse_config(_swa(layer_rope_theta=[0, 2e4]), "c")
    assert read.positional == "rope" and read.rope_theta == 2e4
    assert read.rope_not_in_first_block == "layer_rope_theta 0"
    assert read.rope_free_layers == (0,) and read.summary()["layer_0_rope"] is False
    assert "layer 0 (layer_rope_theta 0) has none" in _phrase(read)


def test_no_layer_with_rope_is_no_positions() -> None:
    read = parse_config(_swa(layer_rope_theta=[0, 0]), "c")
    assert read.positional == "none" and read.rope_free_layers == (0, 1)


def test_without_the_list_every_layer_reads_rope_theta() -> None:
    """GraniteSWAConfig fills a missing layer_rope_theta with rope_theta for every layer."""
    read = parse_config(_swa(), "c")
    assert read.rope_theta == 1e4 and read.rope_bases is None and read.rope_free_layers is None


def test_entries_past_the_layers_are_not_read() -> None:
    """transformers reads layer_rope_theta[i] for each of num_hidden_layers layers only."""
    read = parse_config(_swa(layer_rope_theta=[3e4, 3e4, 0, 7e4]), "c")
    assert read.rope_theta == 3e4 and read.rope_bases is None and read.rope_free_layers is None


@pytest.mark.parametrize(
    ("thetas", "said"),
    [
        ("10000", "must be a list of one rope base per layer"),
        ({"0": 1e4}, "must be a list of one rope base per layer"),
        ([1e4], "must be a list of one rope base per layer"),  # 1 base for 2 layers
        ([1e4, -5.0], r"layer_rope_theta\[1\] must be 0 \(no rope in layer 1\) or a rope base"),
        ([0.5, 1e4], r"layer_rope_theta\[0\] must be 0"),
        ([1e4, True], r"layer_rope_theta\[1\] must be 0"),
        ([1e4, "1e4"], r"layer_rope_theta\[1\] must be 0"),
        ([1e4, math.nan], r"layer_rope_theta\[1\] must be 0"),
        ([1e4, math.inf], r"layer_rope_theta\[1\] must be 0"),
        ([1e4, None], r"layer_rope_theta\[1\] must be 0"),
        ([1e4, 10**400], r"layer_rope_theta\[1\] must be 0"),
    ],
)
def test_a_malformed_layer_rope_theta_is_refused(thetas: object, said: str) -> None:
    with pytest.raises(ConfigError, match=said) as refused:
        parse_config(_swa(layer_rope_theta=thetas), "config.json")
    assert "\n" not in str(refused.value)


def test_layer_rope_theta_without_the_layer_count_is_refused() -> None:
    config = _swa(layer_rope_theta=[1e4, 1e4])
    del config["num_hidden_layers"]
    with pytest.raises(ConfigError, match="layer_rope_theta is read layer by layer"):
        parse_config(config, "config.json")


@pytest.mark.parametrize("model_type", ["granite", "granitemoe", "granitemoe_swa"])
def test_a_null_embedding_multiplier_is_refused_not_read_as_one(model_type: str) -> None:
    """transformers keeps null and its forward multiplies by it (a TypeError): there is no
    input to show, and 1.0 would be a guess."""
    config = {"model_type": model_type, **SMALL, "embedding_multiplier": None}
    with pytest.raises(ConfigError, match="embedding_multiplier is null"):
        parse_config(config, "config.json")
    assert parse_config({"model_type": model_type, **SMALL}, "config.json").embed_scale == 1.0
