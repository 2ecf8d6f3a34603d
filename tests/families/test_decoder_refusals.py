"""A decoder whose config turns on an input step embedcli does not compute is refused by the
field's name (TrOCR's sinusoidal positions or no embedding LayerNorm, ModernBERT-decoder's
LayerNorm with a bias): never a number computed as if the step were off."""

from __future__ import annotations

import pytest

from embedcli.errors import ConfigError
from embedcli.models.config import parse_config

SMALL = {
    "vocab_size": 384,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "max_position_embeddings": 96,
}

REFUSED = [
    ("trocr", "use_learned_position_embeddings", False),  # fairseq sinusoids from the pads
    ("trocr", "layernorm_embedding", False),  # no LayerNorm before the first block
    ("modernbert-decoder", "norm_bias", True),  # a LayerNorm with a bias
]


@pytest.mark.parametrize(("model_type", "field", "value"), REFUSED)
def test_an_input_step_embedcli_does_not_compute_is_refused_by_name(
    model_type: str, field: str, value: object
) -> None:
    config = {"model_type": model_type, **SMALL, field: value}
    with pytest.raises(ConfigError, match=field):
        parse_config(config, "config.json")


@pytest.mark.parametrize(("model_type", "field", "value"), REFUSED)
def test_the_other_value_is_read(model_type: str, field: str, value: object) -> None:
    config = {"model_type": model_type, **SMALL, field: not value}
    parsed = parse_config(config, "config.json")
    assert parsed.family is not None and model_type in parsed.family.model_types
