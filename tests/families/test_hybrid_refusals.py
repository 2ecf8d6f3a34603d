"""The hybrid stacks' and Gemma 3n / Gemma 4's input layers as config.json decides them: Gemma
3n's AltUp stack, read with its stream count; what embedcli does not compute is refused by name
(a Gemma 4 layer-0 override it does not read), and what changes the positions or the scale is
read from its field (Granite 4's position_embedding_type, Gemma 4's per_layer_config,
RecurrentGemma's bfloat16 normalizer), never guessed."""

from __future__ import annotations

import math

import pytest

from embedcli.errors import ConfigError
from embedcli.models.config import parse_config

SMALL = {
    "vocab_size": 384,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 96,
}


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "gemma3n_text", **SMALL},
        {"model_type": "gemma3n", "text_config": {"model_type": "gemma3n_text", **SMALL}},
    ],
    ids=["gemma3n_text", "gemma3n"],
)
def test_gemma3n_is_read_as_its_altup_stack(config: dict) -> None:
    """Gemma 3n's first block reads altup_num_inputs streams (4 by default), stacked first;
    its per-layer inputs are named as not shown."""
    summary = parse_config(config, "config.json").summary()
    assert summary["block_input"]["layout"] == "altup"
    assert summary["block_input"]["streams"] == 4
    assert "(4, B, T, d)" in summary["block_input"]["how"]
    assert "per_layer_inputs" in summary["not_shown"]


@pytest.mark.parametrize(
    ("value", "positional"),
    [("rope", "rope"), ("nope", "none"), (None, "none")],
)
def test_granite4_hybrid_has_rope_only_where_position_embedding_type_says_rope(
    value: str | None, positional: str
) -> None:
    config = {"model_type": "granitemoehybrid", **SMALL, "position_embedding_type": value}
    assert parse_config(config, "config.json").positional == positional


@pytest.mark.parametrize(("value", "positional"), [(True, "rope"), (False, "none")])
def test_zamba2_has_rope_only_with_use_mem_rope(value: bool, positional: str) -> None:
    config = {"model_type": "zamba2", **SMALL, "use_mem_rope": value}
    assert parse_config(config, "config.json").positional == positional


def test_granite4_hybrid_default_has_no_positions() -> None:
    """GraniteMoeHybridConfig's position_embedding_type defaults to None: no rotary module."""
    assert parse_config({"model_type": "granitemoehybrid", **SMALL}, "c").positional == "none"


def test_gemma4_layer_zero_head_dim_is_per_layer_configs() -> None:
    text = {
        "model_type": "gemma4_text",
        **SMALL,
        "layer_types": ["full_attention", "sliding_attention"],
        "per_layer_config": {"0": {"head_dim": 32}},
    }
    parsed = parse_config(text, "config.json")
    assert parsed.rope_layer_type == "full_attention"
    assert parsed.rope_layer_types == {
        "full_attention": "proportional",
        "sliding_attention": "default",
    }
    assert parsed.rope_dim == 32  # proportional turns all of layer 0's 32, not head_dim's 16


@pytest.mark.parametrize(
    ("more", "head_dim"),
    [({}, 512), ({"global_head_dim": 32}, 32)],
    ids=["default", "global_head_dim"],
)
def test_gemma4_layer_zero_without_per_layer_config_is_as_transformers_derives_it(
    more: dict, head_dim: int
) -> None:
    """Gemma4TextConfig gives every full_attention layer global_head_dim (512 unless given)."""
    from transformers import Gemma4TextConfig

    types = ["full_attention", "sliding_attention", "full_attention"]
    text = {"model_type": "gemma4_text", **SMALL, "num_hidden_layers": 3, "layer_types": types}
    config = Gemma4TextConfig(**{k: v for k, v in {**text, **more}.items() if k != "model_type"})
    assert config.per_layer_config[0].head_dim == head_dim
    assert parse_config({**text, **more}, "config.json").rope_dim == head_dim


def test_gemma4_layer_zero_override_embedcli_does_not_read_is_refused_by_name() -> None:
    text = {
        "model_type": "gemma4_text",
        **SMALL,
        "layer_types": ["sliding_attention", "full_attention"],
        "per_layer_config": {"0": {"sliding_window": 8}},
    }
    with pytest.raises(ConfigError, match="per_layer_config overrides sliding_window for layer 0"):
        parse_config(text, "config.json")


@pytest.mark.parametrize("width", [64, 80, 2560])
def test_recurrent_gemma_scale_is_sqrt_d_in_bfloat16(width: int) -> None:
    """RecurrentGemma's normalizer is a bfloat16 buffer: √2560 = 50.596 is 50.5, in any dtype."""
    import torch

    config = {**SMALL, "model_type": "recurrent_gemma", "hidden_size": width, "head_dim": 16}
    scale = parse_config({**config, "torch_dtype": "float32"}, "config.json").embed_scale
    assert scale == torch.tensor(math.sqrt(width), dtype=torch.bfloat16).item()
