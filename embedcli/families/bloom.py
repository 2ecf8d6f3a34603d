"""The ALiBi families: BLOOM (Press et al.'s slopes, and a LayerNorm of the word embeddings) and
MPT (its own slopes, from alibi_bias_max).
"""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch, Key
from embedcli.families.params import (
    Fields,
    Formula,
    ParameterCount,
    dense,
    head,
    layer_norm,
    linear,
    mlp,
)
from embedcli.families.registry import Family, Published, register


def _bloom(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size", "n_embed")
    layers, heads = f.size("n_layer", "num_hidden_layers"), f.size("n_head", "num_attention_heads")
    f.head_dim(d, heads)
    layer = 2 * layer_norm(d) + linear(d, 3 * d) + linear(d, d) + mlp(d, 4 * d)
    tied = f.flag("tie_word_embeddings", True)  # BloomConfig: tied
    # the word embeddings' own LayerNorm, then the blocks, then ln_f
    return dense(vocab * d + 2 * layer_norm(d) + layers * layer + head(vocab, d, tied))


_BLOOM_176B = Published(
    name="bloom-176b",
    description="BLOOM 176B",
    hub_id="bigscience/bloom",
    published="176,247,271,424",
    config={
        "model_type": "bloom",
        "architectures": ["BloomForCausalLM"],
        "vocab_size": 250880,
        "n_embed": 14336,
        "n_layer": 70,
        "num_attention_heads": 112,
        "layer_norm_epsilon": 1e-05,
        "apply_residual_connection_post_layernorm": False,
        "pad_token_id": 3,
        "torch_dtype": "bfloat16",
    },
)

# mpt.cpp turns ALiBi on only with a max_alibi_bias above 0, and adds a learned table where
# the file has one
_MPT_NO_ALIBI = "without ALiBi llama.cpp reads MPT with no positions, and embedcli reads ALiBi MPT"
_MPT_LEARNED = "llama.cpp adds its learned positions, and embedcli reads ALiBi MPT only"

register(
    Family(
        name="BLOOM",
        model_types=("bloom",),
        architectures=("BloomModel", "BloomForCausalLM"),
        token=("word_embeddings.weight",),
        prefixes=("transformer",),
        positional="alibi",
        norm="word_embeddings_layernorm",
        norm_eps=("layer_norm_epsilon",),
        context=(),
        alibi="press",
        # bloom.cpp: ALiBi with its bias fixed at 8 (Press et al.'s slopes)
        gguf=(GGUFArch(name="bloom", eps="layer_norm_epsilon"),),
        parameters=(Formula("bloom", "BloomForCausalLM", _bloom),),
        presets=(_BLOOM_176B,),
    ),
    Family(
        name="MPT",
        model_types=("mpt",),
        architectures=("MptModel", "MptForCausalLM"),
        token=("wte.weight",),
        prefixes=("transformer",),
        positional="alibi",
        context=("max_seq_len",),
        alibi="mpt",
        gguf=(
            GGUFArch(
                name="mpt",
                eps="layer_norm_epsilon",
                context_field="max_seq_len",
                keys=(Key("attn_config.alibi_bias_max", "attention.max_alibi_bias", None),),
                fixed={"attn_config.alibi": True},
                refused=(
                    ("attention.max_alibi_bias", None, _MPT_NO_ALIBI),
                    ("attention.max_alibi_bias", 0.0, _MPT_NO_ALIBI),
                ),
                refused_tensors=(("position_embd.weight", _MPT_LEARNED),),
            ),
        ),
    ),
)
