"""TII's Falcon: rope, or ALiBi where its config says ``alibi: true``."""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
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


def _falcon(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size", "n_embed")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    f.choice(
        "new_decoder_architecture",
        False,
        (True,),  # FalconConfig: False
        "only Falcon's new decoder architecture (40B, 180B) is counted",
    )
    kv = f.size("num_kv_heads", default=heads, null=heads)  # FalconConfig: None, as many as heads
    inner = f.size("ffn_hidden_size", default=4 * d, null=4 * d)  # FalconConfig: None, 4 × width
    bias = f.flag("bias", False)  # FalconConfig: no biases
    parallel = f.flag("parallel_attn", True)  # FalconConfig: parallel attention and MLP
    # ln_attn and ln_mlp, or one input_layernorm when num_ln_in_parallel_attn is 1
    norms = f.choice("num_ln_in_parallel_attn", None, (None, 1, 2), "it must be 1 or 2") or 2
    head_dim = f.head_dim(d, heads)
    attn = linear(d, (heads + 2 * kv) * head_dim, bias) + linear(d, d, bias)
    layer = attn + mlp(d, inner, bias) + (norms if parallel else 2) * layer_norm(d)
    tied = f.flag("tie_word_embeddings", True)  # FalconConfig: tied
    return dense(vocab * d + layers * layer + layer_norm(d) + head(vocab, d, tied))


_FALCON_40B = Published(
    name="falcon-40b",
    description="Falcon 40B",
    hub_id="tiiuae/falcon-40b",
    published="41.8B",
    published_note=(
        "the checkpoint's files hold lm_head.weight beside the word embeddings it is tied to, "
        "and the hub counts both (83,671,941,120 bytes of bfloat16: 41,835,970,560 values); "
        "the model has 532,676,608 parameters fewer"
    ),
    config={
        "model_type": "falcon",
        "architectures": ["FalconForCausalLM"],
        "vocab_size": 65024,
        "hidden_size": 8192,
        "num_hidden_layers": 60,
        "num_attention_heads": 128,
        "num_kv_heads": 8,
        "new_decoder_architecture": True,
        "parallel_attn": True,
        "bias": False,
        "alibi": False,
        "layer_norm_epsilon": 1e-05,
        "torch_dtype": "bfloat16",
    },
)

register(
    Family(
        name="Falcon",
        model_types=("falcon",),
        architectures=("FalconModel", "FalconForCausalLM"),
        token=("word_embeddings.weight",),
        prefixes=("transformer",),
        alibi="press",
        alibi_flag="alibi",
        # falcon.cpp turns rope (NeoX's), never ALiBi
        gguf=(GGUFArch(name="falcon", eps="layer_norm_epsilon", fixed={"alibi": False}),),
        parameters=(Formula("falcon", "FalconForCausalLM", _falcon),),
        presets=(_FALCON_40B,),
    ),
)
