"""EleutherAI's GPT-NeoX and GPT-J, and the families built on them (GPT-NeoX Japanese, CodeGen,
Persimmon, StableLM): rope on part of each head (``rotary_dim``, or a partial rotary factor).
"""

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
from embedcli.families.registry import Family, Published, register, rope_family


def _gpt_neox(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner = f.size("intermediate_size")
    f.head_dim(d, heads)
    bias = f.flag("attention_bias", True)  # GPTNeoXConfig: attention_bias True
    layer = 2 * layer_norm(d) + linear(d, 3 * d, bias) + linear(d, d, bias) + mlp(d, inner)
    tied = f.flag("tie_word_embeddings", False)  # GPTNeoXConfig: untied (embed_out)
    return dense(vocab * d + layers * layer + layer_norm(d) + head(vocab, d, tied))


_GPT_NEOX_20B = Published(
    name="gpt-neox-20b",
    description="GPT-NeoX 20B",
    hub_id="EleutherAI/gpt-neox-20b",
    published="20,554,567,680",
    config={
        "model_type": "gpt_neox",
        "architectures": ["GPTNeoXForCausalLM"],
        "vocab_size": 50432,
        "hidden_size": 6144,
        "intermediate_size": 24576,
        "num_hidden_layers": 44,
        "num_attention_heads": 64,
        "max_position_embeddings": 2048,
        "rotary_pct": 0.25,
        "rotary_emb_base": 10000,
        "use_parallel_residual": True,
        "layer_norm_eps": 1e-05,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
    },
)

register(
    Family(
        name="GPT-NeoX (Pythia)",
        model_types=("gpt_neox",),
        architectures=("GPTNeoXModel", "GPTNeoXForCausalLM"),
        token=("embed_in.weight",),
        prefixes=("gpt_neox",),
        head="embed_out.weight",
        gguf=(GGUFArch(name="gptneox", eps="layer_norm_epsilon"),),
        parameters=(Formula("gpt_neox", "GPTNeoXForCausalLM", _gpt_neox),),
        presets=(_GPT_NEOX_20B,),
    ),
    Family(
        name="GPT-J",
        model_types=("gptj",),
        architectures=("GPTJModel", "GPTJForCausalLM"),
        token=("wte.weight",),
        prefixes=("transformer",),
        context=("n_positions",),
        rope_dim="rotary_dim",
    ),
    Family(
        name="CodeGen",
        model_types=("codegen",),
        architectures=("CodeGenModel", "CodeGenForCausalLM"),
        token=("wte.weight",),
        prefixes=("transformer",),
        context=("n_positions", "n_ctx"),
        rope_dim="rotary_dim",
    ),
    Family(
        name="GPT-NeoX Japanese",
        model_types=("gpt_neox_japanese",),
        architectures=("GPTNeoXJapaneseModel", "GPTNeoXJapaneseForCausalLM"),
        token=("embed_in.weight",),
        prefixes=("gpt_neox_japanese",),
        head="embed_out.weight",
    ),
    rope_family("Persimmon", "persimmon", arch="Persimmon"),
    rope_family(
        "StableLM",
        "stablelm",
        arch="StableLm",
        gguf=(GGUFArch(name="stablelm", eps="layer_norm_epsilon"),),
    ),
)
