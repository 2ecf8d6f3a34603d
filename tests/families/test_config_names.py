"""Names a transformers config class knows a field by besides the one embedcli reads
(families/defaults.json's aliases and derived fields, observed from the classes themselves)."""

from __future__ import annotations

import pytest

from embedcli.models.config import parse_config


def test_bloom_legacy_n_embed_is_its_width() -> None:
    """bigscience/bloom's config.json says n_embed; transformers' BloomConfig reads it as
    hidden_size. Before, the class default (64) was taken instead."""
    model = parse_config({"model_type": "bloom", "n_embed": 14336, "n_head": 112}, "c")
    assert model.d_model == 14336


def test_an_alias_of_a_stored_name_wins_over_its_default() -> None:
    """GPT2Config stores hidden_size as n_embd and max_position_embeddings as n_positions."""
    model = parse_config(
        {"model_type": "gpt2", "hidden_size": 1024, "max_position_embeddings": 2048, "n_head": 16},
        "c",
    )
    assert (model.d_model, model.context_length) == (1024, 2048)


def test_a_derived_default_follows_the_field_it_derives_from() -> None:
    """OPTConfig's word_embed_proj_dim defaults to the hidden_size given: no projection."""
    model = parse_config({"model_type": "opt", "hidden_size": 4096, "num_attention_heads": 32}, "c")
    assert model.token_width is None and model.d_model == 4096


def test_two_names_of_one_field_that_disagree_are_refused() -> None:
    from embedcli.errors import ConfigError

    with pytest.raises(ConfigError, match="n_embd"):
        parse_config({"model_type": "gpt2", "hidden_size": 1024, "n_embd": 768}, "c")
