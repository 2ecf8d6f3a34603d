"""Tiny models of the hybrid stacks and of Gemma 3n / Gemma 4: see
tests/support/familycases/__init__.py.

SMALL leaves a hybrid's layer pattern at the real model's length (or cuts it to two layers of
one kind, and the attention mask of a stack with no attention layer cannot be built); each
``configure`` here gives the tiny model two layers: one of the family's other kind first (the
block whose input is compared), then one attention layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.familycases.case import VOCAB, Case
from support.familycases.multimodal import small

_LINEAR_THEN_FULL = ["linear_attention", "full_attention"]


def _layer_types(kinds: list[str], **more: Any) -> Callable[[Any], Any]:
    """A fix-up: ``layer_types`` set to ``kinds`` (and ``more`` set), other per-layer lists cut."""

    def configure(config: Any) -> Any:
        config.layer_types = list(kinds)
        for name in ("mlp_layer_types", "swiglu_limits", "swiglu_limits_shared"):
            value = getattr(config, name, None)
            if isinstance(value, list):
                setattr(config, name, value[: config.num_hidden_layers])
        for name, value in more.items():
            setattr(config, name, value)
        return config

    return configure


def _set(**fields: Any) -> Callable[[Any], Any]:
    def configure(config: Any) -> Any:
        for name, value in fields.items():
            setattr(config, name, value)
        return config

    return configure


def _mamba(config: Any) -> Any:
    """A Mamba-2 mixer of the tiny width: 4 heads of 32 over 2 x 64 inner dimensions."""
    for name, value in dict(
        mamba_n_heads=4, mamba_d_head=32, mamba_d_state=8, mamba_chunk_size=16
    ).items():
        if hasattr(config, name):
            setattr(config, name, value)
    return config


def _bamba(config: Any) -> Any:
    config.attn_layer_indices = [1]
    return _mamba(config)


def _falcon_h1(config: Any) -> Any:
    config.mamba_d_ssm = 128
    return _mamba(config)


def _granite4(rope: str | None) -> Callable[[Any], Any]:
    def configure(config: Any) -> Any:
        config.layer_types = list(_LINEAR_THEN_FULL)
        config.position_embedding_type = rope
        return _mamba(config)

    return configure


def _gemma4_text(config: Any, first: str = "sliding_attention") -> Any:
    """A Gemma 4 language model of two layers (``first``, then the other kind; the global one
    with its own head_dim in per_layer_config) and per-layer embeddings of 16: built anew,
    since per_layer_config keeps the real model's layer indices and refuses a shorter stack."""
    other = {"sliding_attention": "full_attention", "full_attention": "sliding_attention"}
    data = config.to_dict()
    for name in ("per_layer_config", "transformers_version", "model_type", "architectures"):
        data.pop(name, None)
    data.update(
        layer_types=[first, other[first]],
        global_head_dim=32,
        hidden_size_per_layer_input=16,
        vocab_size_per_layer_input=VOCAB,
        sliding_window=16,
        num_kv_shared_layers=0,
        enable_moe_block=False,
        num_experts=None,
        top_k_experts=None,
        moe_intermediate_size=None,
    )
    known = {*type(config)().to_dict(), "global_head_dim"}
    return type(config)(**{k: v for k, v in data.items() if k in known})


def _gemma4(config: Any) -> Any:
    """A Gemma 4 wrapper: towers made small, its language model as ``_gemma4_text``'s."""
    config = small(config)
    config.text_config = _gemma4_text(config.text_config)
    return config


def _gemma3n_text(config: Any) -> Any:
    """A Gemma 3n language model of two layers (sliding, then full) with per-layer inputs of
    16 and no KV sharing: built anew, its per-layer lists cut to the layers."""
    from transformers import AutoConfig

    data = config.to_dict()
    for name in ("transformers_version", "model_type", "architectures"):
        data.pop(name, None)
    data.update(
        layer_types=["sliding_attention", "full_attention"],
        activation_sparsity_pattern=[0.0, 0.0],
        hidden_size_per_layer_input=16,
        vocab_size_per_layer_input=VOCAB,
        num_kv_shared_layers=0,
        laurel_rank=8,
        sliding_window=16,
    )
    return AutoConfig.for_model("gemma3n_text", **data)


CASES: tuple[Case, ...] = (
    Case("bailing_hybrid", "bailing_hybrid", configure=_layer_types(_LINEAR_THEN_FULL)),
    Case("bamba", "bamba", configure=_bamba),
    Case("falcon_h1", "falcon_h1", {"embedding_multiplier": 2.5}, configure=_falcon_h1),
    Case(
        "granitemoehybrid",
        "granitemoehybrid",
        {"embedding_multiplier": 12.0},
        configure=_granite4("rope"),
    ),
    # Granite 4.0-H as released: position_embedding_type "nope", no rotary module at all
    Case(
        "granitemoehybrid_nope",
        "granitemoehybrid",
        {"embedding_multiplier": 12.0},
        configure=_granite4("nope"),
        positional="none",
    ),
    Case(
        "jamba",
        "jamba",
        dict(
            attn_layer_period=2,
            attn_layer_offset=1,
            expert_layer_period=2,
            expert_layer_offset=1,
            use_mamba_kernels=False,
        ),
        positional="none",
    ),
    Case(
        "kimi_linear", "kimi_linear", configure=_layer_types(_LINEAR_THEN_FULL), positional="none"
    ),
    Case("lfm2", "lfm2", configure=_layer_types(["conv", "full_attention"])),
    Case("lfm2_moe", "lfm2_moe", configure=_layer_types(["conv", "full_attention"])),
    Case(
        "nemotron_h",
        "nemotron_h",
        configure=_set(layers_block_type=["linear_attention", "full_attention"]),
        positional="none",
    ),
    Case("olmo_hybrid", "olmo_hybrid", configure=_layer_types(_LINEAR_THEN_FULL)),
    Case("qwen3_next", "qwen3_next", configure=_layer_types(_LINEAR_THEN_FULL)),
    Case(
        "recurrent_gemma", "recurrent_gemma", configure=_set(block_types=["recurrent", "attention"])
    ),
    # √80 = 8.944 is 8.9375 in bfloat16: the float32 model multiplies by the rounded value
    Case(
        "recurrent_gemma_80",
        "recurrent_gemma",
        {"hidden_size": 80, "head_dim": 20},
        configure=_set(block_types=["recurrent", "attention"], lru_width=80),
    ),
    Case("xlstm", "xlstm", dict(embedding_dim=64, num_blocks=2), positional="none"),
    Case(
        "zamba",
        "zamba",
        dict(attn_layer_period=2, attn_layer_offset=1, use_mamba_kernels=False),
        # two hybrid layers: the shared attention block is tied across them
        configure=_set(
            num_hidden_layers=3, layers_block_type=["linear_attention", "hybrid", "hybrid"]
        ),
        positional="none",
    ),
    Case(
        "zamba2",
        "zamba2",
        dict(use_mem_rope=True, use_mamba_kernels=False),
        configure=_set(layers_block_type=["linear_attention", "hybrid"], hybrid_layer_ids=[1]),
    ),
    Case(
        "zamba2_nope",
        "zamba2",
        dict(use_mem_rope=False, use_mamba_kernels=False),
        configure=_set(layers_block_type=["linear_attention", "hybrid"], hybrid_layer_ids=[1]),
        positional="none",
    ),
)

CASES += (
    Case("gemma4_text", "gemma4_text", configure=_gemma4_text),
    # a global layer first: its head_dim (32, per_layer_config's) and proportional rope
    Case(
        "gemma4_text_global_first",
        "gemma4_text",
        configure=lambda config: _gemma4_text(config, "full_attention"),
    ),
    Case("gemma4", "gemma4", kind="image_text", configure=_gemma4),
    Case("gemma4_unified_text", "gemma4_unified_text", configure=_gemma4_text),
    Case("gemma4_unified", "gemma4_unified", kind="image_text", configure=_gemma4),
)

# the scales in bfloat16, as the models apply them to bfloat16 tables: Falcon-H1's and Granite
# 4's Python-float multipliers, RecurrentGemma's bfloat16 √80, Gemma 4's √64 in the dtype
CASES += (
    Case(
        "falcon_h1_bf16",
        "falcon_h1",
        {"embedding_multiplier": 2.3},
        dtype="bfloat16",
        configure=_falcon_h1,
    ),
    Case(
        "granitemoehybrid_bf16",
        "granitemoehybrid",
        {"embedding_multiplier": 12.3},
        dtype="bfloat16",
        configure=_granite4("rope"),
    ),
    Case(
        "recurrent_gemma_80_bf16",
        "recurrent_gemma",
        {"hidden_size": 80, "head_dim": 20},
        dtype="bfloat16",
        configure=_set(block_types=["recurrent", "attention"], lru_width=80),
    ),
    Case("gemma4_text_bf16", "gemma4_text", dtype="bfloat16", configure=_gemma4_text),
    # AltUp: block 0 reads (4, B, T, d), the scaled rows and three rescaled projections
    Case("gemma3n_text", "gemma3n_text", configure=_gemma3n_text),
    Case("gemma3n_text_bf16", "gemma3n_text", dtype="bfloat16", configure=_gemma3n_text),
)

# the group's types of transformers' mappings that no case builds: {model_type: why}
_ASSISTANT = (
    "its forward ignores input_ids: the first block reads the main model's hidden states "
    "(inputs_embeds through pre_projection) and its shared key/value states, not token ids"
)
LEFT_OUT: dict[str, str] = {
    "gemma3n": (
        "its vision tower needs timm, which is not installed here: unbuilt (its language "
        "model is gemma3n_text's, exact)"
    ),
    "gemma4_assistant": _ASSISTANT,
    "gemma4_unified_assistant": _ASSISTANT,
}
