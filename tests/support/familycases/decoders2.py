"""Tiny models of the second decoders group (more makers' rope decoders, MiniMax, Ministral 3,
TrOCR, ModernBERT-decoder): see tests/support/familycases/__init__.py.

SMALL leaves a config's per-layer lists at the real model's length; ``layers`` cuts each to the
tiny model's layers.
"""

from __future__ import annotations

from typing import Any

from support.familycases.case import Case

# the per-layer lists some configs keep, each as long as the layers
_PER_LAYER = (
    "layer_types",
    "mlp_layer_types",
    "num_attention_heads_per_layer",
    "kv_source_layers",
)


def layers(config: Any) -> Any:
    """``config`` with its per-layer lists cut to its layers."""
    n = config.num_hidden_layers
    for name in _PER_LAYER:
        value = getattr(config, name, None)
        if isinstance(value, list):
            setattr(config, name, value[:n])
    return config


def _rope(name: str, model_type: str, configure: Any = layers, **fields: Any) -> Case:
    return Case(name, model_type, fields, configure=configure)


def _inkling2(config: Any) -> Any:
    """Inkling 2's head as wide as the tiny vocabulary (its unpadded_vocab_size is the real
    model's, larger than VOCAB)."""
    config = layers(config)
    config.unpadded_vocab_size = config.vocab_size
    return config


def _mla_head(config: Any) -> Any:
    """Youtu's head_dim is its qk_rope_head_dim (its config sets it so on load; SMALL's
    head_dim, set after, would give its rotary module other angles than its attention's)."""
    config.head_dim = config.qk_rope_head_dim
    return config


def _kolibri1_1(config: Any) -> Any:
    """Kolibri 1.1's indexed-attention layers among the tiny model's layers."""
    config.layer_types = ["sliding_attention", "indexed_attention"]
    config.index_layers = [1]
    config.kv_source_layers = [0, 1]
    config.mlp_only_layers = [0]
    config.index_num_heads = 2  # at most the query heads of a key head (4 / 2)
    config.index_topk = 8
    config.index_num_local_tokens = 4
    config.index_num_sink_tokens = 2
    return config


def _lfm3(config: Any) -> Any:
    """LFM 3's two layers: a convolution first (no rope), then a full-attention layer."""
    config.layer_types = ["conv", "full_attention"]
    return config


CASES: tuple[Case, ...] = (
    _rope("iquestcoder", "iquestcoder"),
    _rope("jetmoe", "jetmoe"),
    _rope("kolibri1", "kolibri1"),
    _rope("kolibri1_1", "kolibri1_1", configure=_kolibri1_1),
    _rope("laguna", "laguna"),
    _rope("lara_mini", "lara_mini"),
    _rope("lfm3", "lfm3", configure=_lfm3),
    _rope("mellum", "mellum"),
    # partial_rotary_factor 0.334 of head_dim 48: 16 rotated dimensions, as of the real 192
    _rope("mimo_v2_flash", "mimo_v2_flash", head_dim=48),
    _rope("minicpm5_moe", "minicpm5_moe"),
    _rope("param2moe", "param2moe"),
    _rope("sarvam_moe", "sarvam_moe"),
    _rope("sarvam_mla", "sarvam_mla"),
    _rope("solar_open", "solar_open"),
    _rope("youtu", "youtu", configure=_mla_head),
    _rope("zaya", "zaya", num_experts_per_tok=1),
    _rope("minimax", "minimax"),
    _rope("minimax_m2", "minimax_m2"),
    _rope("ministral3", "ministral3"),
    Case("inkling_text", "inkling_text", positional="none", configure=layers),
    Case("inkling2_text", "inkling2_text", positional="none", configure=_inkling2),
    Case("inkling2_loop_text", "inkling2_loop_text", positional="none", configure=_inkling2),
    Case("modernbert_decoder", "modernbert-decoder", configure=layers),
    Case("trocr", "trocr", positional="learned"),
    Case("trocr_scaled", "trocr", {"scale_embedding": True}, positional="learned"),
    _rope("nanochat", "nanochat"),  # a weightless RMSNorm of the token rows, in float32
    Case("nanochat-bf16", "nanochat", dtype="bfloat16"),
    Case("nanochat-f16", "nanochat", dtype="float16"),
)

# the group's types of transformers' mappings that no case builds: {model_type: why}
LEFT_OUT: dict[str, str] = {}
