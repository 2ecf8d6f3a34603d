"""Tiny models of the BERT-shaped encoders (masked LM mostly) beyond BERT and RoBERTa: see
tests/support/familycases/__init__.py."""

from __future__ import annotations

from typing import Any

from support.familycases.case import Case


def _learned(name: str, model_type: str, kind: str = "masked", **fields: Any) -> Case:
    return Case(name, model_type, fields, kind=kind, positional="learned")


def _language(config: Any) -> Any:
    """X-MOD builds only with a default language for its adapters."""
    config.default_language = config.languages[0]
    return config


def _neomme(config: Any) -> Any:
    """NeoMME with a full-attention first layer (its value table is read there too)."""
    config.layer_types = ["full_attention", "sliding_attention"][: config.num_hidden_layers]
    config.per_layer_config = None
    return config


# RoBERTa-style position numbering starts after padding_idx: the table holds its rows too
_PADDED = {"max_position_embeddings": 98}

CASES: tuple[Case, ...] = (
    _learned("megatron-bert", "megatron-bert"),
    _learned("megatron-bert-base", "megatron-bert", kind="base"),
    Case(
        "megatron-bert-fp16", "megatron-bert", kind="masked", positional="learned", dtype="float16"
    ),
    _learned("roberta-prelayernorm", "roberta-prelayernorm", **_PADDED),
    _learned("xlm-roberta-xl", "xlm-roberta-xl", **_PADDED),
    _learned("mra", "mra"),
    _learned("yoso", "yoso"),
    _learned("nystromformer", "nystromformer"),
    _learned("bert-generation", "bert-generation", kind="causal", is_decoder=True),
    _learned("bert-generation-base", "bert-generation", kind="base"),
    _learned("ernie", "ernie"),
    _learned("mpnet", "mpnet", **_PADDED),
    _learned("luke", "luke", **_PADDED, entity_vocab_size=16, entity_emb_size=32),
    Case(
        "luke-bf16",
        "luke",
        {**_PADDED, "entity_vocab_size": 16, "entity_emb_size": 32},
        kind="masked",
        positional="learned",
        dtype="bfloat16",
    ),
    Case("xmod", "xmod", _PADDED, kind="masked", positional="learned", configure=_language),
    _learned("ibert", "ibert", **_PADDED, quant_mode=False),  # quant_mode True is refused
    Case("modernbert", "modernbert", kind="masked"),
    Case("modernbert-base", "modernbert", kind="base"),
    Case("modernbert-bf16", "modernbert", kind="masked", dtype="bfloat16"),
    Case("nomic_bert", "nomic_bert", kind="masked"),
    Case("gte", "gte", {"type_vocab_size": 2}, kind="masked"),
    Case("jina_embeddings_v3", "jina_embeddings_v3", kind="masked"),
    Case("eurobert", "eurobert", kind="masked"),
    # row 0 of the shape and pronunciation tables beside each row, then a Linear
    _learned("roc_bert", "roc_bert", shape_embed_dim=16, pronunciation_embed_dim=8),
    _learned("roc_bert-shape", "roc_bert", shape_embed_dim=16, enable_pronunciation=False),
    # a weightless RMSNorm after the factorised lookup; layer 0 full attention reads the
    # value table too (named as not shown)
    Case("neomme", "neomme", {"embedding_rank": 24}, kind="masked", configure=_neomme),
    Case(
        "neomme-bf16",
        "neomme",
        {"embedding_rank": 24},
        kind="masked",
        dtype="bfloat16",
        configure=_neomme,
    ),
    Case("ultrabert", "ultrabert", kind="masked"),
    Case(
        "ultrabert-global-first",
        "ultrabert",
        {"layer_types": ["full_attention", "sliding_attention"]},
        kind="masked",
    ),
)

# the group's types of transformers' mappings that no case builds: {model_type: why}
LEFT_OUT: dict[str, str] = {}
