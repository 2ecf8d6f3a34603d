"""OpenAI's open-weight decoders (gpt-oss): Llama's input layer, yarn rope by default; and the
parameter formula of their attention (with biases and one sink per head) and biased experts,
with the published configs of gpt-oss-20b and gpt-oss-120b.
"""

from __future__ import annotations

from embedcli.errors import ConfigError
from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import (
    Fields,
    Formula,
    ParameterCount,
    attention,
    head,
    linear,
    rms_norm,
)
from embedcli.families.registry import Published, register, rope_family


def _gpt_oss(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner = f.size("intermediate_size")
    kv = f.size("num_key_value_heads", default=8)  # GptOssConfig: 8
    head_dim = f.size("head_dim", default=64)  # GptOssConfig: 64
    bias = f.flag("attention_bias", True)  # GptOssConfig: q, k, v and o with biases
    experts = f.size("num_local_experts", default=128)  # GptOssConfig: 128
    k = f.size("num_experts_per_tok", "experts_per_token", default=4)  # GptOssConfig: 4
    if k > experts:
        raise ConfigError(
            f"the {f.where}'s num_experts_per_tok {k} exceeds its {experts} num_local_experts"
        )
    sinks = heads  # one learned attention sink per head
    router = linear(d, experts)  # with a bias
    expert = d * 2 * inner + 2 * inner + inner * d + d  # gate_up and down, each with a bias
    layer = attention(d, heads, kv, head_dim, bias, bias) + sinks + 2 * rms_norm(d) + router
    tied = f.flag("tie_word_embeddings", False)  # GptOssConfig: untied
    outside = vocab * d + rms_norm(d) + head(vocab, d, tied)
    total = outside + layers * (layer + experts * expert)
    return ParameterCount(total, total - layers * (experts - k) * expert, experts, k)


def _gpt_oss_config(layers: int, experts: int) -> dict:
    """gpt-oss's published config.json (its MXFP4 quantization_config left out: the count is
    of the model's parameters, whatever their storage)."""
    return {
        "model_type": "gpt_oss",
        "architectures": ["GptOssForCausalLM"],
        "vocab_size": 201088,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_hidden_layers": layers,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "num_local_experts": experts,
        "num_experts_per_tok": 4,
        "experts_per_token": 4,
        "attention_bias": True,
        "layer_types": ["sliding_attention", "full_attention"] * (layers // 2),
        "sliding_window": 128,
        "max_position_embeddings": 131072,
        "initial_context_length": 4096,
        "rms_norm_eps": 1e-05,
        "rope_theta": 150000,
        "rope_scaling": {
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "rope_type": "yarn",
            "truncate": False,
        },
        "swiglu_limit": 7.0,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


_GPT_OSS_20B = Published(
    name="gpt-oss-20b",
    description="gpt-oss 20B",
    hub_id="openai/gpt-oss-20b",
    published="21B",
    config=_gpt_oss_config(24, 32),
)

_GPT_OSS_120B = Published(
    name="gpt-oss-120b",
    description="gpt-oss 120B",
    hub_id="openai/gpt-oss-120b",
    published="117B",
    config=_gpt_oss_config(36, 128),
)

register(
    rope_family(
        "gpt-oss",
        "gpt_oss",
        arch="GptOss",
        gguf=(GGUFArch(name="gpt-oss", swa=2),),  # openai-moe.cpp: every other layer slides
        parameters=(Formula("gpt_oss", "GptOssForCausalLM", _gpt_oss),),
        presets=(_GPT_OSS_20B, _GPT_OSS_120B),
    ),
)
