"""Tiny models of the encoders group: see tests/support/familycases/__init__.py."""

from __future__ import annotations

from support.familycases.case import Case

_NARROW = {"embedding_size": 32}  # a table narrower than hidden_size: the Linear runs
# as published DeBERTas: relative positions only, inside attention (and a narrow table here)
_RELATIVE = {"position_biased_input": False, "relative_attention": True, **_NARROW}

CASES: tuple[Case, ...] = (
    Case("albert", "albert", _NARROW, kind="masked", positional="learned"),
    Case("albert-square", "albert", {"embedding_size": 64}, kind="masked", positional="learned"),
    Case("electra", "electra", _NARROW, kind="masked", positional="learned"),
    Case("convbert", "convbert", _NARROW, kind="masked", positional="learned"),
    Case(
        "rembert",
        "rembert",
        {"input_embedding_size": 32, "output_embedding_size": 48},
        kind="masked",
        positional="learned",
    ),
    Case("fnet", "fnet", kind="masked", positional="learned"),
    Case("distilbert", "distilbert", kind="masked", positional="learned"),
    Case(
        "distilbert-sinusoidal",
        "distilbert",
        {"sinusoidal_pos_embds": True},
        kind="masked",
        positional="learned",
    ),
    Case(
        "big_bird",
        "big_bird",
        {"attention_type": "original_full"},
        kind="masked",
        positional="learned",
    ),
    Case(
        "big_bird-rescaled",
        "big_bird",
        {"rescale_embeddings": True},  # block_sparse: a short input runs as original_full
        kind="masked",
        positional="learned",
    ),
    Case(
        "deberta",
        "deberta",
        _RELATIVE,
        kind="masked",
        positional="relative",
    ),
    Case(
        "deberta-v2",
        "deberta-v2",
        _RELATIVE,
        kind="masked",
        positional="relative",
    ),
    Case("xlm", "xlm", kind="masked", positional="learned"),
    Case(
        "xlm-sinusoidal",
        "xlm",
        {"sinusoidal_embeddings": True},
        kind="masked",
        positional="learned",
    ),
    Case("flaubert", "flaubert", kind="masked", positional="learned"),
    Case(
        "mobilebert",
        "mobilebert",
        {"embedding_size": 16, "intra_bottleneck_size": 32, "true_hidden_size": 32},
        kind="masked",
        positional="learned",
    ),
    Case(
        "esm",
        "esm",
        {
            "position_embedding_type": "rotary",
            "token_dropout": True,
            "emb_layer_norm_before": False,
            "pad_token_id": 1,
            "mask_token_id": 200,  # among the ids embedded: its row is dropped
        },
        kind="masked",
    ),
    Case("esmc", "esmc", {"num_key_value_heads": 4}, kind="masked"),  # no grouped queries
    Case("roformer", "roformer", {"embedding_size": 32}, kind="masked"),
    # three blocks of one layer each (the later ones pool): the first layer's input is read
    Case(
        "funnel",
        "funnel",
        {"block_sizes": [1, 1, 1], "d_inner": 96, "d_head": 16},
        kind="masked",
        positional="relative",
    ),
    # 7 ids padded to 8 with pad_token_id (attention_window 4): the pads take padding_idx
    Case(
        "longformer",
        "longformer",
        {"attention_window": 4, "max_position_embeddings": 98},
        kind="masked",
        positional="learned",
    ),
    # row 0 of more tables: TAPAS's seven token-type tables, LayoutLM's box tables
    Case("tapas", "tapas", kind="masked", positional="learned"),
    Case("layoutlm", "layoutlm", kind="masked", positional="learned"),
    # channels first: the first block reads (B, d, T), through its own forward (no hook)
    Case("squeezebert", "squeezebert", {"embedding_size": 64}, kind="masked", positional="learned"),
    # time-major: the first block reads (T, B, d); causal is XLNetLMHeadModel
    Case("xlnet", "xlnet", {"d_inner": 96, "n_head": 4, "d_head": 16}, positional="relative"),
)

# the group's types of transformers' mappings that no case builds: {model_type: why}
LEFT_OUT: dict[str, str] = {
    "perceiver": (
        "its first block is a cross-attention whose query is a learned latent array, the same "
        "for every input; the token embeddings (+ learned positions) are only its keys and "
        "values, which embedcli's one-tensor model of what a block reads cannot say"
    ),
}
