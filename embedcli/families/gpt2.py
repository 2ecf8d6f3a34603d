"""GPT-2 and the families with its learned positional table: GPT-2, GPT-Neo, GPT-1 and GPT-BigCode
(StarCoder 1, SantaCoder); and the key layouts of bare GPT-2-shaped checkpoints (nanoGPT, the
book's GPTModel, TransformerLens), read without a config.json.
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
from embedcli.families.registry import Family, Layout, register


def _gpt2(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("n_embd", "hidden_size")
    layers, heads = f.size("n_layer", "num_hidden_layers"), f.size("n_head", "num_attention_heads")
    positions = f.size("n_positions", "max_position_embeddings")
    inner = f.size("n_inner", default=4 * d, null=4 * d)  # GPT2Config: n_inner None, 4 × n_embd
    f.head_dim(d, heads)
    f.choice("add_cross_attention", False, (False,), "cross-attention blocks are not counted")
    layer = 2 * layer_norm(d) + linear(d, 3 * d) + linear(d, d) + mlp(d, inner)
    tied = f.flag("tie_word_embeddings", True)  # GPT2Config: tied
    return dense((vocab + positions) * d + layers * layer + layer_norm(d) + head(vocab, d, tied))


register(
    Family(
        name="GPT-2",
        model_types=("gpt2",),
        architectures=("GPT2Model", "GPT2LMHeadModel"),
        token=("wte.weight",),
        prefixes=("transformer",),
        positional="learned",
        position="wpe.weight",
        context=("n_positions", "max_position_embeddings"),
        gguf=(GGUFArch(name="gpt2", eps="layer_norm_epsilon", context_field="n_positions"),),
        own_encoding=("gpt2", 50257),
        parameters=(Formula("gpt2", "GPT2LMHeadModel", _gpt2),),
        layouts=(
            Layout(
                name="Hugging Face GPT2LMHeadModel / nanoGPT",
                token="transformer.wte.weight",
                position="transformer.wpe.weight",
                head="lm_head.weight",
            ),
            Layout(name="Hugging Face GPT2Model", token="wte.weight", position="wpe.weight"),
            Layout(
                name="LLM-from-scratch GPTModel",
                token="tok_emb.weight",
                position="pos_emb.weight",
                head="out_head.weight",
            ),
            Layout(
                name="TransformerLens",
                token="embed.W_E",
                position="pos_embed.W_pos",
                head="unembed.W_U",
                head_transposed=True,
            ),
        ),
    ),
    Family(
        name="GPT-Neo",
        model_types=("gpt_neo",),
        architectures=("GPTNeoModel", "GPTNeoForCausalLM"),
        token=("wte.weight",),
        prefixes=("transformer",),
        positional="learned",
        position="wpe.weight",
    ),
    Family(
        name="GPT-1 (openai-gpt)",
        model_types=("openai-gpt",),
        architectures=("OpenAIGPTModel", "OpenAIGPTLMHeadModel"),
        token=("tokens_embed.weight",),
        prefixes=("transformer",),
        positional="learned",
        position="positions_embed.weight",
        context=("n_positions",),
    ),
    Family(
        name="GPT-BigCode (StarCoder 1, SantaCoder)",
        model_types=("gpt_bigcode",),
        architectures=("GPTBigCodeModel", "GPTBigCodeForCausalLM"),
        token=("wte.weight",),
        prefixes=("transformer",),
        positional="learned",
        position="wpe.weight",
        context=("n_positions", "max_position_embeddings"),
    ),
)
