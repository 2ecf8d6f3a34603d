"""Google's Gemma families: the token embeddings scaled by √d, rounded to the tables' dtype first
(the normalizer buffer), and Gemma 3's two rope bases (local and global layers).
"""

from __future__ import annotations

from dataclasses import replace

from embedcli.families.params import (
    ATTENTION_BIAS,
    Fields,
    Formula,
    ParameterCount,
    RopeDecoder,
    decoder,
    dense,
    layer_norm,
    linear,
    mlp,
    rms_norm,
    rope_decoder,
)
from embedcli.families.registry import Family, Published, register, rope_family

_SQRT = {"scale": "sqrt_d", "scale_rounding": "dtype"}  # Gemma's normalizer buffer
_GEMMA4_PREFIXES = ("model", "model.language_model", "language_model.model")

# Gemma2Config: norms before and after attention and MLP, 4 key/value heads of 256, tied
_GEMMA2 = RopeDecoder(
    "Gemma2ForCausalLM", norms=4, kv_heads=4, head_dim=256, tie=True, **ATTENTION_BIAS
)
_GEMMA3 = replace(_GEMMA2, model_class="Gemma3ForCausalLM", qk_norm="head")  # as Gemma 2


def _siglip_vision(f: Fields) -> int:
    d, inner = f.size("hidden_size"), f.size("intermediate_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    image, patch = f.size("image_size"), f.size("patch_size")
    channels = f.size("num_channels", default=3)  # SiglipVisionConfig: 3 channels
    f.head_dim(d, heads)
    embeddings = linear(channels * patch * patch, d) + (image // patch) ** 2 * d  # conv, table
    layer = 2 * layer_norm(d) + 4 * linear(d, d) + mlp(d, inner)
    total = embeddings + layers * layer + layer_norm(d)  # post_layernorm
    if f.flag("vision_use_head", True):  # SiglipVisionConfig: the attention-pooling head
        total += d + 4 * linear(d, d) + layer_norm(d) + mlp(d, inner)  # probe, attention
    return total


def _gemma3(f: Fields) -> ParameterCount:
    """Gemma3ForConditionalGeneration: language model, SigLIP vision tower, and projector."""
    text = Fields(f.config.get("text_config"), "gemma3 config's text_config")
    vision = Fields(f.config.get("vision_config"), "gemma3 config's vision_config")
    text.choice("model_type", "gemma3_text", ("gemma3_text",), "a gemma3 language model is one")
    vision.choice(
        "model_type",
        "siglip_vision_model",
        ("siglip_vision_model",),
        "the formula counts a SigLIP vision tower",
    )
    # the wrapper's own tie_word_embeddings decides (Gemma3Config: tied), not its text_config's
    tied = f.flag("tie_word_embeddings", True)
    language = rope_decoder(_GEMMA3, text, tie=tied).total
    vision_d, text_d = vision.size("hidden_size"), text.size("hidden_size")
    projector = vision_d * text_d + rms_norm(vision_d)  # mm_input_projection, mm_soft_emb_norm
    return dense(language + _siglip_vision(vision) + projector)


_GEMMA_2_9B = Published(
    name="gemma-2-9b",
    description="Gemma 2 9B",
    hub_id="google/gemma-2-9b",
    published="9.24B",
    config={
        "model_type": "gemma2",
        "architectures": ["Gemma2ForCausalLM"],
        "vocab_size": 256000,
        "hidden_size": 3584,
        "intermediate_size": 14336,
        "num_hidden_layers": 42,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-06,
        "rope_theta": 10000.0,
        "query_pre_attn_scalar": 256,
        "sliding_window": 4096,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh",
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 1,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
    },
)

_GEMMA_3_27B = Published(
    name="gemma-3-27b",
    description="Gemma 3 27B (with its SigLIP vision tower)",
    hub_id="google/gemma-3-27b-pt",
    published="27.4B",
    config={
        "model_type": "gemma3",
        "architectures": ["Gemma3ForConditionalGeneration"],
        "mm_tokens_per_image": 256,
        "torch_dtype": "bfloat16",
        "text_config": {
            "model_type": "gemma3_text",
            "vocab_size": 262208,
            "hidden_size": 5376,
            "intermediate_size": 21504,
            "num_hidden_layers": 62,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "query_pre_attn_scalar": 168,
            "max_position_embeddings": 131072,
            "rms_norm_eps": 1e-06,
            "rope_theta": 1000000.0,
            "rope_local_base_freq": 10000.0,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
            "sliding_window": 1024,
            "tie_word_embeddings": True,
        },
        "vision_config": {
            "model_type": "siglip_vision_model",
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_hidden_layers": 27,
            "num_attention_heads": 16,
            "image_size": 896,
            "patch_size": 14,
            "num_channels": 3,
            "vision_use_head": False,
        },
    },
)

register(
    rope_family("Gemma", "gemma", arch="Gemma", gguf=("gemma",), **_SQRT),
    rope_family(
        "Gemma 2",
        "gemma2",
        arch="Gemma2",
        **_SQRT,
        gguf=("gemma2",),
        parameters=(decoder("gemma2", _GEMMA2),),
        presets=(_GEMMA_2_9B,),
    ),
    Family(
        name="Gemma 3",
        model_types=("gemma3_text", "gemma3"),
        architectures=("Gemma3Model", "Gemma3ForCausalLM"),
        prefixes=("model", "model.language_model", "language_model.model"),
        **_SQRT,
        gguf=("gemma3",),
        gguf_global_every=6,
        text_config=("gemma3",),
        parameters=(
            decoder("gemma3_text", _GEMMA3),
            Formula("gemma3", "Gemma3ForConditionalGeneration", _gemma3),
        ),
        presets=(_GEMMA_3_27B,),
    ),
    rope_family("VaultGemma", "vaultgemma", arch="VaultGemma", **_SQRT),
    # Gemma 3n's first block reads altup_num_inputs streams stacked, (4, B, T, d): the scaled
    # token embeddings and three projections of them rescaled to their RMS (AltUp); its
    # per-layer inputs are each block's side input
    Family(
        name="Gemma 3n",
        model_types=("gemma3n_text", "gemma3n"),
        architectures=("Gemma3nTextModel", "Gemma3nForCausalLM"),
        prefixes=_GEMMA4_PREFIXES,
        **_SQRT,
        text_config=("gemma3n",),
        block_layout="altup",
        streams="altup_num_inputs",
        altup="altup_projections.{i}.weight",
        side_inputs=(
            (
                "per_layer_inputs",
                "each block's own rows: embed_tokens_per_layer plus a projection of the token "
                "rows, per layer",
            ),
        ),
    ),
    # Gemma 4: the first block reads the scaled token embeddings; the per-layer embeddings
    # (embed_tokens_per_layer, hidden_size_per_layer_input) are each block's side input, not
    # its hidden states. Rope per layer type, the global layers' head_dim in per_layer_config.
    Family(
        name="Gemma 4",
        model_types=("gemma4_text", "gemma4"),
        architectures=("Gemma4TextModel", "Gemma4ForCausalLM"),
        prefixes=_GEMMA4_PREFIXES,
        **_SQRT,
        layer_overrides="per_layer_config",
        derived_overrides=("full_attention", "global_head_dim", 512),
        text_config=("gemma4",),
    ),
    Family(
        name="Gemma 4 unified",
        model_types=("gemma4_unified_text", "gemma4_unified"),
        architectures=("Gemma4UnifiedTextModel", "Gemma4UnifiedForCausalLM"),
        prefixes=_GEMMA4_PREFIXES,
        **_SQRT,
        layer_overrides="per_layer_config",
        derived_overrides=("full_attention", "global_head_dim", 512),
        text_config=("gemma4_unified",),
    ),
)
