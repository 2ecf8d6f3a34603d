"""T5 and its kin (mT5, UMT5, LongT5, Switch Transformers): a shared token table read unscaled,
and relative position buckets inside attention (UMT5: in every layer; LongT5: local or
transient-global attention); the encoder runs first."""

from __future__ import annotations

from typing import Any

from embedcli.errors import ConfigError
from embedcli.families.ggufarch import Key, archs
from embedcli.families.params import (
    Fields,
    Formula,
    ParameterCount,
    attention,
    dense,
    head,
    linear,
    rms_norm,
)
from embedcli.families.registry import Family, Published, register


def _t5(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("d_model", "hidden_size")
    heads = f.size("num_heads", "num_attention_heads")
    inner = f.size("d_ff")
    encoder_layers = f.size("num_layers", "num_hidden_layers")
    # T5Config: num_decoder_layers None, as many as the encoder's
    decoder_layers = f.size("num_decoder_layers", default=encoder_layers, null=encoder_layers)
    head_dim = f.size("d_kv", "head_dim", default=64)  # T5Config: d_kv 64
    buckets = f.size("relative_attention_num_buckets", default=32)  # T5Config: 32
    proj = f.config.get("feed_forward_proj", "relu")  # T5Config: "relu", one wi
    parts = proj.split("-") if isinstance(proj, str) else ()
    if len(parts) not in (1, 2) or (len(parts) == 2 and parts[0] != "gated") or not all(parts):
        raise ConfigError(f"the {f.where}'s feed_forward_proj must be ACT or gated-ACT: {proj!r}")
    wi = len(parts)  # gated: wi_0 and wi_1
    ff = wi * linear(d, inner, False) + linear(inner, d, False)
    attn = attention(d, heads, heads, head_dim, False, False) + rms_norm(d)
    encoder = encoder_layers * (attn + ff + rms_norm(d))
    decoders = decoder_layers * (2 * attn + ff + rms_norm(d))
    stacks = encoder + decoders + 2 * (buckets * heads + rms_norm(d))  # first-layer bias, final
    # T5ForConditionalGeneration ties by default; a config saying false (T5 v1.1) has its own
    # lm_head in the checkpoint, and transformers keeps the two apart when it loads them
    tied = f.flag("tie_word_embeddings", True)
    return dense(vocab * d + stacks + head(vocab, d, tied))


_T5_BASE = Published(
    name="t5-base",
    description="T5 base (encoder and decoder)",
    hub_id="google-t5/t5-base",
    published="223M",
    config={
        "model_type": "t5",
        "architectures": ["T5ForConditionalGeneration"],
        "vocab_size": 32128,
        "d_model": 768,
        "d_kv": 64,
        "d_ff": 3072,
        "num_layers": 12,
        "num_decoder_layers": 12,
        "num_heads": 12,
        "relative_attention_num_buckets": 32,
        "relative_attention_max_distance": 128,
        "feed_forward_proj": "relu",
        "layer_norm_epsilon": 1e-06,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    },
)

_GGUF_T5: dict[str, Any] = {
    "eps": "layer_norm_rms_epsilon",
    "keys": (
        Key("relative_attention_num_buckets", "attention.relative_buckets_count", integer=True),
    ),
    "fixed": {"relative_attention_max_distance": 128},
}

register(
    Family(
        name="T5 (encoder)",
        model_types=("t5", "mt5", "umt5", "longt5", "switch_transformers"),
        architectures=("T5EncoderModel", "T5ForConditionalGeneration"),
        token=("shared.weight", "encoder.embed_tokens.weight"),
        prefixes=("",),
        positional="relative",
        context=(),
        parameters=(Formula("t5", "T5ForConditionalGeneration", _t5),),
        presets=(_T5_BASE,),
        stacks=("encoder", "decoder"),
        # t5.cpp and t5encoder.cpp: the encoder's first block reads the lookup; its bucket
        # distance is fixed at 128 in llama-graph.cpp
        gguf=archs("t5", "t5encoder", **_GGUF_T5),
    ),
)
