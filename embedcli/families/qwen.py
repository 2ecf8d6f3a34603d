"""Alibaba's Qwen 2 and Qwen 3, dense and mixtures of experts."""

from __future__ import annotations

from embedcli.errors import ConfigError
from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import (
    DERIVE,
    NULL_KV,
    Fields,
    Formula,
    ParameterCount,
    RopeDecoder,
    attention,
    decoder,
    gated_mlp,
    head,
    linear,
    rms_norm,
)
from embedcli.families.registry import Published, register, rope_family

# Qwen2Config: 32 key/value heads when absent, as many as the heads when null
_QWEN2 = RopeDecoder("Qwen2ForCausalLM", qkv_bias=True, kv_heads=32, nullable=NULL_KV)


def _qwen3_moe(f: Fields) -> ParameterCount:
    """Qwen3MoeForCausalLM: Llama's layout with a head_dim RMSNorm on q and k, and a router and
    num_experts gated MLPs of moe_intermediate_size in every sparse layer (each layer not in
    mlp_only_layers whose number, from 1, is a multiple of decoder_sparse_step); the others
    keep a dense MLP of intermediate_size. Defaults: Qwen3MoeConfig's."""
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    kv = f.size("num_key_value_heads", default=4)
    head_dim = f.size("head_dim", default=DERIVE)  # absent: width // heads; null: refused
    if head_dim is DERIVE:
        head_dim = f.head_dim(d, heads)
    experts, k = f.size("num_experts", default=128), f.size("num_experts_per_tok", default=8)
    inner, expert_inner = f.size("intermediate_size"), f.size("moe_intermediate_size", default=768)
    step = f.size("decoder_sparse_step", default=1)
    dense_only = f.config.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in dense_only
    ):
        raise ConfigError(f"the {f.where}'s mlp_only_layers must be a list of layer numbers")
    sparse = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    bias = f.flag("attention_bias", False)
    layer = attention(d, heads, kv, head_dim, bias, bias) + 2 * head_dim + 2 * rms_norm(d)
    expert = gated_mlp(d, expert_inner)
    moe = linear(d, experts, bias=False) + experts * expert
    tied = f.flag("tie_word_embeddings", False)
    outside = vocab * d + rms_norm(d) + head(vocab, d, tied)
    total = outside + layers * layer + sparse * moe + (layers - sparse) * gated_mlp(d, inner)
    if k > experts:
        raise ConfigError(f"the {f.where}'s num_experts_per_tok {k} exceeds its {experts} experts")
    return ParameterCount(total, total - sparse * (experts - k) * expert, experts, k)


_QWEN2_5_7B = Published(
    name="qwen2.5-7b",
    description="Qwen2.5 7B",
    hub_id="Qwen/Qwen2.5-7B",
    published="7.62B",
    config={
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "vocab_size": 152064,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0,
        "sliding_window": 131072,
        "use_sliding_window": False,
        "max_window_layers": 28,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

_QWEN3_MOE = {
    "model_type": "qwen3_moe",
    "architectures": ["Qwen3MoeForCausalLM"],
    "vocab_size": 151936,
    "head_dim": 128,
    "num_key_value_heads": 4,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "rope_scaling": None,
    "attention_bias": False,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "norm_topk_prob": True,
    "sliding_window": None,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

_QWEN3_30B_A3B = Published(
    name="qwen3-30b-a3b",
    description="Qwen3 30B-A3B (3.3B active)",
    hub_id="Qwen/Qwen3-30B-A3B",
    published="30.5B",
    config={
        **_QWEN3_MOE,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "moe_intermediate_size": 768,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "max_window_layers": 48,
    },
)

_QWEN3_235B_A22B = Published(
    name="qwen3-235b-a22b",
    description="Qwen3 235B-A22B (22B active)",
    hub_id="Qwen/Qwen3-235B-A22B",
    published="235B",
    config={
        **_QWEN3_MOE,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "moe_intermediate_size": 1536,
        "num_hidden_layers": 94,
        "num_attention_heads": 64,
        "max_window_layers": 94,
    },
)

register(
    rope_family(
        "Qwen2",
        "qwen2",
        arch="Qwen2",
        gguf=(GGUFArch(name="qwen2"),),
        parameters=(decoder("qwen2", _QWEN2),),
        presets=(_QWEN2_5_7B,),
    ),
    rope_family("Qwen2-MoE", "qwen2_moe", arch="Qwen2Moe", gguf=(GGUFArch(name="qwen2moe"),)),
    rope_family("Qwen3", "qwen3", arch="Qwen3", gguf=(GGUFArch(name="qwen3"),)),
    rope_family(
        "Qwen3-MoE",
        "qwen3_moe",
        arch="Qwen3Moe",
        gguf=(GGUFArch(name="qwen3moe"),),
        parameters=(Formula("qwen3_moe", "Qwen3MoeForCausalLM", _qwen3_moe),),
        presets=(_QWEN3_30B_A3B, _QWEN3_235B_A22B),
    ),
)
