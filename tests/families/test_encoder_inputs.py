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
        ("deberta", "position_biased_input", False),  # relative-only positions
        ("deberta-v2", "type_vocab_size", 2),  # token types added
    ],
)
def test_what_is_not_computed_is_refused_by_name(
    model_type: str, field: str, value: object
) -> None:
    config = {**BASE, "model_type": model_type, "position_biased_input": True, field: value}
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
