"""Mistral AI's families: Mistral, Ministral, Ministral 3 and Mixtral (a mixture of experts)."""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import RopeDecoder, decoder
from embedcli.families.registry import Published, register, rope_family

# MistralConfig and MixtralConfig: 8 key/value heads
_MISTRAL = RopeDecoder("MistralForCausalLM", kv_heads=8, nullable=("head_dim",))
_MIXTRAL = RopeDecoder("MixtralForCausalLM", kv_heads=8, nullable=("head_dim",), experts=True)


_MISTRAL_7B = Published(
    name="mistral-7b",
    description="Mistral 7B v0.1",
    hub_id="mistralai/Mistral-7B-v0.1",
    published="7.24B",
    config={
        "model_type": "mistral",
        "architectures": ["MistralForCausalLM"],
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

_MIXTRAL_8X7B = Published(
    name="mixtral-8x7b",
    description="Mixtral 8x7B v0.1",
    hub_id="mistralai/Mixtral-8x7B-v0.1",
    published="46.7B",
    config={
        "model_type": "mixtral",
        "architectures": ["MixtralForCausalLM"],
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

# the language model of Mistral Small 3.1 (Mistral3ForConditionalGeneration's text_config, a
# Mistral): its count leaves out the vision tower and projector (about 0.4B of the hub's 24B)
_MISTRAL_SMALL_3_1 = Published(
    name="mistral-small-3.1",
    description="Mistral Small 3.1 24B (its text model)",
    hub_id="mistralai/Mistral-Small-3.1-24B-Base-2503",
    published="24B",
    config={
        "model_type": "mistral",
        "architectures": ["MistralForCausalLM"],
        "vocab_size": 131072,
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 1000000000.0,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

register(
    rope_family(
        "Mistral",
        "mistral",
        arch="Mistral",
        parameters=(decoder("mistral", _MISTRAL),),
        presets=(_MISTRAL_7B, _MISTRAL_SMALL_3_1),
    ),
    rope_family("Ministral", "ministral", arch="Ministral"),
    rope_family(
        "Ministral 3",
        "ministral3",
        arch="Ministral3",
        # the text model of Mistral 3's GGUF files (Ministral 3, Mistral Small 3.x, Devstral)
        gguf=(GGUFArch(name="mistral3", yarn_betas=True, yarn_log_mul="raw", rope_freqs=True),),
    ),
    rope_family(
        "Mixtral",
        "mixtral",
        arch="Mixtral",
        parameters=(decoder("mixtral", _MIXTRAL),),
        presets=(_MIXTRAL_8X7B,),
    ),
)
