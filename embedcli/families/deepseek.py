"""The multi-head latent attention families (DeepSeek-V2, V3, V3.2, MiniCPM3): rope on
``qk_rope_head_dim`` dimensions of each head. DeepSeek-V4 is not here: its first block reads
``hc_mult`` copies of the token embeddings (hyper-connections), a step embedcli does not have
yet, and its rope sets are keyed by its own names (main, compress), not by layer type.

DeepSeek-V3's parameter formula (latent attention; dense MLPs in the first
``first_k_dense_replace`` layers, then routed experts beside shared ones) and its published
config.
"""

from __future__ import annotations

from embedcli.errors import ConfigError
from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import (
    Fields,
    Formula,
    ParameterCount,
    gated_mlp,
    head,
    linear,
    rms_norm,
)
from embedcli.families.registry import Published, register, rope_family


def _latent_attention(f: Fields, d: int, heads: int) -> int:
    """DeepSeek-V3's attention: queries through an optional low-rank bottleneck, keys and values
    through the latent kv_lora_rank, rope on qk_rope_head_dim of each head."""
    f.choice("attention_bias", False, (False,), "embedcli counts DeepSeek-V3 without biases")
    rope, nope = f.size("qk_rope_head_dim", default=64), f.size("qk_nope_head_dim", default=128)
    value, kv_rank = f.size("v_head_dim", default=128), f.size("kv_lora_rank", default=512)
    q_rank = f.size("q_lora_rank", default=1536, null=None)  # null: queries straight from d
    qk = heads * (rope + nope)
    if q_rank is None:
        queries = linear(d, qk, bias=False)
    else:
        queries = linear(d, q_rank, bias=False) + rms_norm(q_rank) + linear(q_rank, qk, False)
    keys_values = linear(d, kv_rank + rope, bias=False) + rms_norm(kv_rank)
    keys_values += linear(kv_rank, heads * (nope + value), bias=False)
    return queries + keys_values + linear(heads * value, d, bias=False)


def _deepseek_v3(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner, moe_inner = f.size("intermediate_size"), f.size("moe_intermediate_size")
    experts, k = f.size("n_routed_experts"), f.size("num_experts_per_tok")
    shared = f.size("n_shared_experts", default=1)  # DeepseekV3Config: 1
    dense_layers = f.config.get("first_k_dense_replace", 3)  # DeepseekV3Config: 3
    if isinstance(dense_layers, bool) or not isinstance(dense_layers, int) or dense_layers < 0:
        raise ConfigError(f"the {f.where}'s first_k_dense_replace must be a count")
    if k > experts:
        raise ConfigError(
            f"the {f.where}'s num_experts_per_tok {k} exceeds its {experts} n_routed_experts"
        )
    dense_layers = min(dense_layers, layers)
    base = _latent_attention(f, d, heads) + 2 * rms_norm(d)
    expert = gated_mlp(d, moe_inner)
    moe = linear(d, experts, bias=False) + experts * expert + gated_mlp(d, moe_inner * shared)
    tied = f.flag("tie_word_embeddings", False)  # DeepseekV3Config: untied
    outside = vocab * d + rms_norm(d) + head(vocab, d, tied)
    total = outside + layers * base + dense_layers * gated_mlp(d, inner)
    total += (layers - dense_layers) * moe
    skipped = (layers - dense_layers) * (experts - k) * expert
    return ParameterCount(total, total - skipped, experts, k)


_DEEPSEEK_V3 = Published(
    name="deepseek-v3",
    description="DeepSeek-V3",
    hub_id="deepseek-ai/DeepSeek-V3",
    published="685B",
    published_note=(
        "the hub's 685B holds the multi-token-prediction module (num_nextn_predict_layers 1, "
        "about 14B) beside the 671B main model that transformers builds and embedcli counts"
    ),
    config={
        "model_type": "deepseek_v3",
        "architectures": ["DeepseekV3ForCausalLM"],
        "vocab_size": 129280,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "num_hidden_layers": 61,
        "first_k_dense_replace": 3,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "n_group": 8,
        "topk_group": 4,
        "norm_topk_prob": True,
        "routed_scaling_factor": 2.5,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "attention_bias": False,
        "num_nextn_predict_layers": 1,
        "max_position_embeddings": 163840,
        "rms_norm_eps": 1e-06,
        "rope_theta": 10000,
        "rope_scaling": {
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
            "type": "yarn",
        },
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

register(
    rope_family("DeepSeek-V2", "deepseek_v2", arch="DeepseekV2", rope_dim="qk_rope"),
    rope_family(
        "DeepSeek-V3",
        "deepseek_v3",
        arch="DeepseekV3",
        rope_dim="qk_rope",
        # deepseek2.cpp runs DeepSeek V2, V2.5, V3, R1 and Kimi K2 alike: a lookup, then MLA
        # whose rope turns rope.dimension_count dimensions of each head
        gguf=(GGUFArch(name="deepseek2", rope_dims="qk_rope", yarn_log_mul="tenth"),),
        parameters=(Formula("deepseek_v3", "DeepseekV3ForCausalLM", _deepseek_v3),),
        presets=(_DEEPSEEK_V3,),
    ),
    rope_family("DeepSeek-V3.2", "deepseek_v32", arch="DeepseekV32", rope_dim="qk_rope"),
    # DeepSeek V4: hc_mult hyper-connection streams, (B, T, hc_mult, d); its rope sets are
    # keyed main (sliding layers) and compress (the compressed-attention layers)
    rope_family(
        "DeepSeek-V4",
        "deepseek_v4",
        arch="DeepseekV4",
        block_layout="streams",
        streams="hc_mult",
        rope_set_for=(("sliding_attention", "main"), ("*", "compress")),
    ),
    rope_family(
        "MiniCPM3",
        "minicpm3",
        arch="MiniCPM3",
        scale="scale_emb",
        scale_rounding="dtype",
        rope_dim="qk_rope",
        # minicpm3.cpp scales by 12 in float32, whatever the file says
        gguf=(GGUFArch(name="minicpm3", fixed={"scale_emb": 12.0}, rope_dims="qk_rope"),),
    ),
)
