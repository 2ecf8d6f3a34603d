"""AllenAI's OLMo families."""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import ATTENTION_BIAS, NULL_KV, RopeDecoder, decoder
from embedcli.families.registry import Published, register, rope_family

# norms after attention and after the MLP, none before
_OLMO2 = RopeDecoder("Olmo2ForCausalLM", qk_norm="width", nullable=NULL_KV, **ATTENTION_BIAS)


_OLMO_2_7B = Published(
    name="olmo-2-7b",
    description="OLMo 2 7B (November 2024)",
    hub_id="allenai/OLMo-2-1124-7B",
    published="7.3B",
    config={
        "model_type": "olmo2",
        "architectures": ["Olmo2ForCausalLM"],
        "vocab_size": 100352,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-06,
        "rope_theta": 500000,
        "rope_scaling": None,
        "attention_bias": False,
        "pad_token_id": 100277,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
    },
)

_OLMO_2_13B = Published(
    name="olmo-2-13b",
    description="OLMo 2 13B (November 2024)",
    hub_id="allenai/OLMo-2-1124-13B",
    published="13.7B",
    config={
        "model_type": "olmo2",
        "architectures": ["Olmo2ForCausalLM"],
        "vocab_size": 100352,
        "hidden_size": 5120,
        "intermediate_size": 13824,
        "num_hidden_layers": 40,
        "num_attention_heads": 40,
        "num_key_value_heads": 40,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-06,
        "rope_theta": 500000,
        "rope_scaling": None,
        "attention_bias": False,
        "pad_token_id": 100277,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
    },
)

register(
    rope_family("OLMo", "olmo", arch="Olmo"),
    rope_family(
        "OLMo 2",
        "olmo2",
        arch="Olmo2",
        # olmo2.cpp also runs OLMo 3: where a window is given, 3 layers in 4 slide, turning
        # at rope.freq_base_swa (else the others' base), unscaled
        gguf=(
            GGUFArch(
                name="olmo2",
                swa=4,
                swa_needs_window=True,
                swa_model_type="olmo3",
                swa_base_default=None,
            ),
        ),
        parameters=(decoder("olmo2", _OLMO2),),
        presets=(_OLMO_2_7B, _OLMO_2_13B),
    ),
    rope_family("OLMo 3", "olmo3", arch="Olmo3"),
    rope_family("OLMoE", "olmoe", arch="Olmoe", gguf=(GGUFArch(name="olmoe"),)),
    rope_family("FlexOlmo", "flex_olmo", arch="FlexOlmo"),
)
