"""RoCBERT's rows side by side (EmbedConfig.concat_widths) and TAPAS's and LayoutLM's row-0
tables (row0_tables): the module, the planned shapes and the reference agree; configs that
embedcli cannot read are refused by name."""

from __future__ import annotations

import pytest
import torch

from embedcli import EmbedConfig, build_embedding
from embedcli.core.shapeplan import planned_trace
from embedcli.errors import ConfigError
from embedcli.models.config import parse_config

IDS = torch.tensor([[1, 5, 9]])


def test_rows_beside_each_token_feed_a_wider_projection() -> None:
    config = EmbedConfig(vocab_size=16, d_model=8, context_length=8, positional="learned",
                         token_width=8, concat_widths=(4, 2), norm_eps=1e-12)  # fmt: skip
    assert config.projects and config.projected_width == 14
    module = build_embedding(config)
    trace = module.trace(IDS)
    beside = trace.concat_embeddings
    assert beside is not None and tuple(beside.shape) == (1, 3, 14)
    assert torch.equal(beside[0, 0, 8:12], beside[0, 2, 8:12])  # the same row 0 for every token
    planned, _ = planned_trace(config, 1, 3)
    assert [(s.name, s.shape) for s in planned] == [(s.name, s.shape) for s in trace.steps]


def test_row0_tables_are_added_after_the_positions() -> None:
    config = EmbedConfig(vocab_size=16, d_model=8, context_length=8, positional="learned",
                         row0_tables=3)  # fmt: skip
    trace = build_embedding(config).trace(IDS)
    shown = trace.row0_embeddings
    assert shown is not None and tuple(shown.shape) == (1, 3, 8)
    total = trace.token_embeddings + trace.position_embeddings + shown
    assert torch.allclose(trace.input_embeddings, total, atol=1e-6)


def test_one_ids_rows_are_replaced_by_the_learned_row() -> None:
    config = EmbedConfig(vocab_size=16, d_model=8, context_length=8, positional="rope",
                         embed_scale=2.0, replaced_id=5)  # fmt: skip
    table = torch.randn(16, 8)
    row = torch.arange(8.0)
    module = build_embedding(config, tables=(table, None), extras={"replacement": row})
    trace = module.trace(torch.tensor([[1, 5, 9, 5]]))
    got = trace.input_embeddings[0]
    assert torch.equal(got[1], row) and torch.equal(got[3], row)
    assert torch.equal(got[0], table[1] * 2.0)
    assert [s.name for s in trace.steps][2:4] == ["scaled_embeddings", "replaced_embeddings"]
    planned, _ = planned_trace(config, 1, 4)
    assert [(s.name, s.shape) for s in planned] == [(s.name, s.shape) for s in trace.steps]


def test_the_replaced_id_is_the_encoders() -> None:
    """transformers' T5Gemma2Config copies its encoder's eoi_token_index over its own (default
    256000): the encoder's is the one read."""
    text = {"model_type": "t5gemma2_text", "vocab_size": 64, "hidden_size": 16,
            "num_attention_heads": 4, "head_dim": 4, "max_position_embeddings": 32}  # fmt: skip
    config = {
        "model_type": "t5gemma2", "eoi_token_index": 9,
        "encoder": {"model_type": "t5gemma2_encoder", "eoi_token_index": 7, "text_config": text},
        "decoder": {"model_type": "t5gemma2_decoder", "vocab_size": 64},
    }  # fmt: skip
    assert parse_config(config, "config.json").replaced[0] == 7
    del config["encoder"]["eoi_token_index"]
    assert parse_config(config, "config.json").replaced[0] == 256000
    for bad in (-1, 2**64, "7", None):
        config["encoder"]["eoi_token_index"] = bad
        with pytest.raises(ConfigError, match="eoi_token_index"):
            parse_config(config, "config.json")


_ROC = {"model_type": "roc_bert", "vocab_size": 64, "hidden_size": 16,
        "max_position_embeddings": 32, "num_attention_heads": 4, "concat_input": True}  # fmt: skip


def test_the_tables_switched_on_are_read() -> None:
    model = parse_config({**_ROC, "enable_shape": True, "enable_pronunciation": False,
                          "shape_embed_dim": 4}, "config.json")  # fmt: skip
    assert [w for _, w in model.concat] == [4]
    assert model.embed_fields()["concat_widths"] == (4,)


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"enable_shape": False, "enable_pronunciation": False}, "all false"),
        ({"enable_shape": "yes"}, "enable_shape"),
        ({"shape_embed_dim": 0}, "shape_embed_dim"),
        ({"concat_input": False}, "concat_input"),
    ],
)
def test_what_it_cannot_read_is_refused(fields: dict, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        parse_config({**_ROC, **fields}, "config.json")


def test_tapas_needs_its_list_of_type_sizes() -> None:
    base = {"model_type": "tapas", "vocab_size": 64, "hidden_size": 16,
            "max_position_embeddings": 32, "num_attention_heads": 4}  # fmt: skip
    model = parse_config({**base, "type_vocab_sizes": [3, 5, 4]}, "config.json")
    assert model.row0_keys == tuple(
        f"embeddings.token_type_embeddings_{i}.weight" for i in (0, 1, 2)
    )
    with pytest.raises(ConfigError, match="type_vocab_sizes"):
        parse_config({**base, "type_vocab_sizes": []}, "config.json")


@pytest.mark.parametrize("sizes", [[3], [3, 0, 5], [3, -1, 5], [3.0, 256, 256]])
def test_tapas_type_sizes_must_be_positive_and_hold_its_cells(sizes: list) -> None:
    """TAPAS reads the column and row types (tables 1 and 2) to number positions per cell."""
    base = {"model_type": "tapas", "vocab_size": 64, "hidden_size": 16,
            "max_position_embeddings": 32, "num_attention_heads": 4}  # fmt: skip
    with pytest.raises(ConfigError, match="type_vocab_sizes"):
        parse_config({**base, "type_vocab_sizes": sizes}, "config.json")
