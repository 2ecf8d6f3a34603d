"""Microsoft's Phi families."""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import NULL_KV, RopeDecoder, decoder
from embedcli.families.registry import Published, register, rope_family

_PHI3 = RopeDecoder("Phi3ForCausalLM", nullable=NULL_KV)  # fused qkv_proj, gate_up_proj


_PHI_3_MINI = Published(
    name="phi-3-mini",
    description="Phi-3 mini (4k)",
    hub_id="microsoft/Phi-3-mini-4k-instruct",
    published="3.82B",
    config={
        "model_type": "phi3",
        "architectures": ["Phi3ForCausalLM"],
        "vocab_size": 32064,
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 4096,
        "original_max_position_embeddings": 4096,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "sliding_window": 2047,
        "pad_token_id": 32000,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

_PHI_4 = Published(
    name="phi-4",
    description="Phi-4 (14B)",
    hub_id="microsoft/phi-4",
    published="14.7B",
    config={
        "model_type": "phi3",
        "architectures": ["Phi3ForCausalLM"],
        "vocab_size": 100352,
        "hidden_size": 5120,
        "intermediate_size": 17920,
        "num_hidden_layers": 40,
        "num_attention_heads": 40,
        "num_key_value_heads": 10,
        "max_position_embeddings": 16384,
        "original_max_position_embeddings": 16384,
        "rms_norm_eps": 1e-05,
        "rope_theta": 250000,
        "rope_scaling": None,
        "sliding_window": None,
        "attention_bias": False,
        "pad_token_id": 100349,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

register(
    rope_family(
        "Phi", "phi", arch="Phi", gguf=(GGUFArch(name="phi2", eps="layer_norm_epsilon"),)
    ),
    rope_family(
        "Phi-3",
        "phi3",
        arch="Phi3",
        gguf=(GGUFArch(name="phi3"),),  # its sliding window is off in llama.cpp
        parameters=(decoder("phi3", _PHI3),),
        presets=(_PHI_3_MINI, _PHI_4),
    ),
    rope_family("Phi-MoE", "phimoe", arch="PhiMoE"),
)
