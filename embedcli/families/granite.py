"""IBM's Granite families: the token embeddings times the config's ``embedding_multiplier``;
Granite's parameter formula (Llama's layout) and Granite 3.3 8B's published config.

Granite SWA and GraniteMoE SWA give each layer its own rope base (``layer_rope_theta``, 0 for
no rope; rope_theta only where the list is not given) and keep one rotary module per base:
the first block's angles are layer 0's base, or, where layer 0 has none, the first rope
layer's. Their attention sinks and sliding windows act inside attention.
"""

from __future__ import annotations

from typing import Any

from embedcli.families.ggufarch import GGUFArch, Key
from embedcli.families.params import ATTENTION_BIAS, NULL_KV, RopeDecoder, decoder
from embedcli.families.registry import Published, register, rope_family

_MULTIPLIER = {"scale": "embedding_multiplier"}  # a Python float: no rounding to the dtype
_PER_LAYER = {"layer_thetas": "layer_rope_theta"}  # each layer's own rope base, 0: none

# GraniteConfig: biases where attention_bias (and mlp_bias) say, untied by default
_GRANITE = RopeDecoder(
    "GraniteForCausalLM", mlp_bias="mlp_bias", nullable=NULL_KV, **ATTENTION_BIAS
)

_GRANITE_3_3_8B = Published(
    name="granite-3.3-8b",
    description="Granite 3.3 8B",
    hub_id="ibm-granite/granite-3.3-8b-instruct",
    published="8.17B",
    config={
        "model_type": "granite",
        "architectures": ["GraniteForCausalLM"],
        "vocab_size": 49159,
        "hidden_size": 4096,
        "intermediate_size": 12800,
        "num_hidden_layers": 40,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000000.0,
        "rope_scaling": None,
        "embedding_multiplier": 12.0,
        "attention_multiplier": 0.0078125,
        "residual_multiplier": 0.22,
        "logits_scaling": 16.0,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    },
)

# llama-graph.cpp's build_inp_embd scales by embedding_scale in float32, 0 (its default)
# meaning none; rope.scaling.finetuned false would turn rope off in every block
_GGUF_SCALE: dict[str, Any] = {
    "keys": (Key("embedding_multiplier", "embedding_scale", 1.0, zero=1.0),),
    "rope_switch": True,
    "rope_freqs": True,
}

register(
    rope_family(
        "Granite",
        "granite",
        arch="Granite",
        parameters=(decoder("granite", _GRANITE),),
        presets=(_GRANITE_3_3_8B,),
        gguf=(GGUFArch(name="granite", **_GGUF_SCALE),),
        **_MULTIPLIER,
    ),
    rope_family(
        "GraniteMoE",
        "granitemoe",
        arch="GraniteMoe",
        gguf=(GGUFArch(name="granitemoe", **_GGUF_SCALE),),
        **_MULTIPLIER,
    ),
    rope_family("GraniteMoE (shared)", "granitemoeshared", arch="GraniteMoeShared", **_MULTIPLIER),
    rope_family("Granite SWA", "granite_swa", arch="GraniteSWA", **_MULTIPLIER, **_PER_LAYER),
    rope_family(
        "GraniteMoE SWA", "granitemoe_swa", arch="GraniteMoeSWA", **_MULTIPLIER, **_PER_LAYER
    ),
)
