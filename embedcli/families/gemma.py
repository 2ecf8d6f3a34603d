"""Google's Gemma families: the token embeddings scaled by √d, rounded to the tables' dtype first
(the normalizer buffer), and Gemma 3's two rope bases (local and global layers).
"""

from __future__ import annotations

from dataclasses import replace

from embedcli.errors import ConfigError
from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import (
    ATTENTION_BIAS,
    Fields,
    Formula,
    ParameterCount,
    RopeDecoder,
    attention,
    decoder,
    dense,
    gated_mlp,
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


def _gemma3n_inner(f: Fields, layers: int) -> list[int]:
    """intermediate_size: one width for every layer, or a list of one per layer."""
    value = f.config.get("intermediate_size", 16384)  # Gemma3nTextConfig: 16384
    widths = value if isinstance(value, list) else [value] * layers
    if len(widths) != layers or not all(
        isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in widths
    ):
        raise ConfigError(
            f"the {f.where}'s intermediate_size must be a positive integer or a list of "
            f"{layers}, got {repr(value)[:40]}"
        )
    return widths


def _gemma3n_text(f: Fields) -> ParameterCount:
    """Gemma3nForCausalLM: its token table and per-layer table (vocab_size_per_layer_input rows
    of num_hidden_layers x hidden_size_per_layer_input) and that table's projection and norm;
    AltUp's projections in and out; in each layer Gemma's attention with q and k norms (the
    last num_kv_shared_layers layers reuse earlier keys and values: no k, v or k norm), a gated
    MLP, four norms, AltUp's router and coefficients, LAuReL's low-rank pair and the per-layer
    input's gate and projection. Defaults: Gemma3nTextConfig's (E4B's sizes)."""
    vocab, d = f.size("vocab_size", default=262400), f.size("hidden_size", default=2048)
    layers = f.size("num_hidden_layers", default=35)
    heads, kv = f.size("num_attention_heads", default=8), f.size("num_key_value_heads", default=2)
    head_dim = f.size("head_dim", default=256)
    per_layer = f.size("hidden_size_per_layer_input", default=256)
    per_vocab = f.size("vocab_size_per_layer_input", default=262144)
    n, rank = f.size("altup_num_inputs", default=4), f.size("laurel_rank", default=64)
    shared = f.config.get("num_kv_shared_layers", 15)
    if not isinstance(shared, int) or isinstance(shared, bool) or not 0 <= shared < layers:
        raise ConfigError(f"the {f.where}'s num_kv_shared_layers must be 0 to {layers - 1}")
    kv_part = 2 * linear(d, kv * head_dim, bias=False) + rms_norm(head_dim)  # k, v; k norm
    attn = attention(d, heads, kv, head_dim, False, False) - 2 * linear(d, kv * head_dim, False)
    altup = 2 * rms_norm(d) + linear(d, n, False) + linear(n, n * n, False) + linear(n, n, False)
    laurel = 2 * d * rank + rms_norm(d)
    per_input = linear(d, per_layer, False) + linear(per_layer, d, False) + rms_norm(d)
    layer = attn + rms_norm(head_dim) + 4 * rms_norm(d) + altup + laurel + per_input
    total = layers * layer + (layers - shared) * kv_part
    total += sum(gated_mlp(d, inner) for inner in _gemma3n_inner(f, layers))
    total += vocab * d + per_vocab * layers * per_layer + linear(d, layers * per_layer, False)
    total += rms_norm(per_layer) + 2 * (n - 1) * d * d + rms_norm(d)
    tied = f.flag("tie_word_embeddings", True)  # Gemma3nTextConfig: tied
    return dense(total + (0 if tied else vocab * d))


# google/gemma-3n-E4B's text model (its config.json's text_config, as Gemma3nForCausalLM
# builds it): every fifth layer global, the last 15 reuse earlier keys and values
_GEMMA_3N_E4B = Published(
    name="gemma-3n-e4b",
    description="Gemma 3n E4B (its text model)",
    hub_id="google/gemma-3n-E4B",
    published="8B",
    published_note=(
        "Google's model card gives E4B's raw count as 8B, its vision and audio towers "
        "included; transformers' Gemma3nForCausalLM, the text model embedcli counts, has "
        "6.84B, 2.35B of them the per-layer table"
    ),
    config={
        "model_type": "gemma3n_text",
        "architectures": ["Gemma3nForCausalLM"],
        "torch_dtype": "bfloat16",
        "vocab_size": 262400,
        "vocab_size_per_layer_input": 262144,
        "hidden_size": 2048,
        "hidden_size_per_layer_input": 256,
        "intermediate_size": [16384] * 35,
        "num_hidden_layers": 35,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "max_position_embeddings": 32768,
        "sliding_window": 512,
        "rms_norm_eps": 1e-06,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 7,
        "activation_sparsity_pattern": [0.95] * 10 + [0.0] * 25,
        "altup_num_inputs": 4,
        "laurel_rank": 64,
        "num_kv_shared_layers": 15,
        "final_logit_softcapping": 30.0,
        "tie_word_embeddings": True,
    },
)


register(
    rope_family("Gemma", "gemma", arch="Gemma", gguf=(GGUFArch(name="gemma"),), **_SQRT),
    rope_family(
        "Gemma 2",
        "gemma2",
        arch="Gemma2",
        **_SQRT,
        # gemma2.cpp: every other layer slides, with a window of 4,096 where none is given
        gguf=(GGUFArch(name="gemma2", swa=2, swa_window=4096),),
        parameters=(decoder("gemma2", _GEMMA2),),
        presets=(_GEMMA_2_9B,),
    ),
    Family(
        name="Gemma 3",
        model_types=("gemma3_text", "gemma3"),
        architectures=("Gemma3Model", "Gemma3ForCausalLM"),
        prefixes=("model", "model.language_model", "language_model.model"),
        **_SQRT,
        # gemma3.cpp: 5 layers in 6 slide where a window is given, turning at
        # rope.freq_base_swa (10,000 where absent), unscaled
        gguf=(GGUFArch(name="gemma3", swa=6, swa_needs_window=True),),
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
        # gemma3n.cpp: 4 layers in 5 slide unless the file lists them; 4 AltUp streams
        # whatever the file says (llama-hparams.h's n_altup), their projections one tensor,
        # altup_proj.weight
        gguf=(
            GGUFArch(
                name="gemma3n",
                model_type="gemma3n_text",
                swa=5,
                fixed={"altup_num_inputs": 4},
            ),
        ),
        parameters=(Formula("gemma3n_text", "Gemma3nForCausalLM", _gemma3n_text),),
        presets=(_GEMMA_3N_E4B,),
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
