"""fairseq's decoders: OPT, BioGPT, XGLM and TrOCR's text decoder, whose positional tables keep 2
rows before position 0 (OPT counts positions over the attention mask, and may project a narrower
token table).
"""

from __future__ import annotations

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


def _opt(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner, positions = f.size("ffn_dim"), f.size("max_position_embeddings")
    f.head_dim(d, heads)
    proj = f.size("word_embed_proj_dim", default=d, null=d)  # OPTConfig: None, the width
    bias = f.flag("enable_bias", True)  # OPTConfig: biases on
    norm = layer_norm(d) if f.flag("layer_norm_elementwise_affine", True) else 0
    final = f.flag("do_layer_norm_before", True) and not f.flag("_remove_final_layer_norm", False)
    layer = 4 * linear(d, d, bias) + mlp(d, inner, bias) + 2 * norm
    projections = 2 * proj * d if proj != d else 0  # project_in and project_out, no bias
    tied = f.flag("tie_word_embeddings", True)  # OPTConfig: tied
    total = vocab * proj + (positions + 2) * d + projections + layers * layer  # 2 offset rows
    return dense(total + (norm if final else 0) + head(vocab, proj, tied))


_OPT_6_7B = Published(
    name="opt-6.7b",
    description="OPT 6.7B",
    hub_id="facebook/opt-6.7b",
    published="6.66B",
    config={
        "model_type": "opt",
        "architectures": ["OPTForCausalLM"],
        "vocab_size": 50272,
        "hidden_size": 4096,
        "ffn_dim": 16384,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "word_embed_proj_dim": 4096,
        "do_layer_norm_before": True,
        "pad_token_id": 1,
        "torch_dtype": "float16",
    },
)

register(
    Family(
        name="OPT",
        model_types=("opt",),
        architectures=("OPTModel", "OPTForCausalLM"),
        token=("decoder.embed_tokens.weight",),
        positional="learned",
        position="decoder.embed_positions.weight",
        offset=2,
        position_ids="mask",
        project_in="decoder.project_in.weight",
        parameters=(Formula("opt", "OPTForCausalLM", _opt),),
        presets=(_OPT_6_7B,),
    ),
    Family(
        name="BioGPT",
        model_types=("biogpt",),
        architectures=("BioGptModel", "BioGptForCausalLM"),
        prefixes=("biogpt",),
        positional="learned",
        position="embed_positions.weight",
        offset=2,
        scale="sqrt_d",
        scale_when="scale_embedding",
        head="output_projection.weight",
    ),
    Family(
        name="XGLM",
        model_types=("xglm",),
        architectures=("XGLMModel", "XGLMForCausalLM"),
        positional="sinusoidal",
        offset=2,
        sinusoid="halves",
        scale="sqrt_d",
        scale_when="scale_embedding",
    ),
    # TrOCR's decoder alone (TrOCRForCausalLM: model.decoder); its sinusoidal variant
    # (use_learned_position_embeddings: false) and a config without layernorm_embedding are
    # refused, not guessed
    Family(
        name="TrOCR (decoder)",
        model_types=("trocr",),
        architectures=("TrOCRDecoderWrapper", "TrOCRForCausalLM"),
        prefixes=("model.decoder",),
        positional="learned",
        position="embed_positions.weight",
        offset=2,
        scale="sqrt_d",
        scale_when="scale_embedding",
        norm="layernorm_embedding",
        norm_eps=(),
        head="output_projection.weight",
        requires=(("use_learned_position_embeddings", True), ("layernorm_embedding", True)),
    ),
)
