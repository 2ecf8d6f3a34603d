"""Alibaba's Qwen 2 and Qwen 3, dense and mixtures of experts."""

from __future__ import annotations

from embedcli.families.params import NULL_KV, RopeDecoder, decoder
from embedcli.families.registry import Published, register, rope_family

# Qwen2Config: 32 key/value heads when absent, as many as the heads when null
_QWEN2 = RopeDecoder("Qwen2ForCausalLM", qkv_bias=True, kv_heads=32, nullable=NULL_KV)


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

register(
    rope_family(
        "Qwen2",
        "qwen2",
        arch="Qwen2",
        gguf=("qwen2",),
        parameters=(decoder("qwen2", _QWEN2),),
        presets=(_QWEN2_5_7B,),
    ),
    rope_family("Qwen2-MoE", "qwen2_moe", arch="Qwen2Moe"),
    rope_family("Qwen3", "qwen3", arch="Qwen3", gguf=("qwen3",)),
    rope_family("Qwen3-MoE", "qwen3_moe", arch="Qwen3Moe"),
)
