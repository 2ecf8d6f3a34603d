"""An encoder or decoder whose config turns on an input step embedcli does not compute is
refused by the field's name, whether the config.json says it or leaves it to transformers'
default: never a number computed as if it were off (ERNIE's task rows, ModernBERT's and
ModernBERT-decoder's LayerNorm with a bias, TrOCR's sinusoids or missing embedding LayerNorm)."""

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
    ("ernie", "use_task_id", True),  # a task-type row added after the positions
    ("modernbert", "norm_bias", True),  # a LayerNorm with a bias
    ("modernbert-decoder", "norm_bias", True),
    ("trocr", "use_learned_position_embeddings", False),  # fairseq sinusoids from the pads
    ("trocr", "layernorm_embedding", False),  # no LayerNorm before the first block
]


@pytest.mark.parametrize(("model_type", "field", "value"), REFUSED)
def test_an_input_step_embedcli_does_not_compute_is_refused_by_name(
    model_type: str, field: str, value: object
) -> None:
    config = {"model_type": model_type, **SMALL, field: value}
    with pytest.raises(ConfigError, match=field) as refused:
        parse_config(config, "config.json")
    # the message says what embedcli reads, not why the other value differs (it is not always
    # a matter of positions: ERNIE's task rows, ModernBERT's norm bias)
    assert "only with" in str(refused.value) and "positions" not in str(refused.value)


@pytest.mark.parametrize(
    ("model_type", "field", "value"),
    REFUSED,
)
def test_transformers_default_of_the_field_is_the_one_read(
    model_type: str, field: str, value: object
) -> None:
    """Left out of config.json, the field is what transformers' config class makes it."""
    transformers = pytest.importorskip("transformers")

    default = getattr(transformers.AutoConfig.for_model(model_type), field)
    config = {"model_type": model_type, **SMALL}
    if default != value:
        parse_config(config, "config.json")  # read, as the field's default is computed
        return
    with pytest.raises(ConfigError, match=field):
        parse_config(config, "config.json")


@pytest.mark.parametrize(("model_type", "field", "value"), REFUSED)
def test_the_other_value_is_read(model_type: str, field: str, value: object) -> None:
    parsed = parse_config({"model_type": model_type, **SMALL, field: not value}, "config.json")
    assert parsed.family is not None and model_type in parsed.family.model_types


@pytest.mark.parametrize(("model_type", "field"), [("bart", "encoder_layers"),
                                                   ("marian", "encoder_layers"),
                                                   ("t5", "num_layers")])  # fmt: skip
def test_an_encoder_without_layers_is_refused(model_type: str, field: str) -> None:
    """With no encoder block the first block to run is the decoder's: showing the encoder's
    input as the first block's would be another tensor (up to 4.3 apart in BART)."""
    config = {"model_type": model_type, **SMALL, "d_model": 64, field: 0}
    with pytest.raises(ConfigError, match=f"{field} is 0: the model's first block is its decoder"):
        parse_config(config, "config.json")
