"""The hybrid stacks: blocks of attention mixed with state-space (Mamba), linear-attention,
convolution or recurrent blocks. Whatever the first block is, it reads the token table's rows
(Falcon-H1 and Granite 4 times ``embedding_multiplier``, RecurrentGemma times √d); positions are
what the attention layers use: rope (on some layers only), or none at all (Jamba, Nemotron-H,
Zamba, Kimi Linear's NoPE attention, xLSTM).
"""

from __future__ import annotations

from embedcli.families.registry import Family, register, rope_family

_NONE = {"positional": "none"}

register(
    # its checkpoints keep the token table as model.word_embeddings (renamed on load and save)
    rope_family(
        "Bailing hybrid (Ring-linear)",
        "bailing_hybrid",
        arch="BailingHybrid",
        token=("word_embeddings.weight", "embed_tokens.weight"),
        rope_dim="qk_rope",  # its full-attention layers are MLA's
    ),
    rope_family("Bamba", "bamba", arch="Bamba"),
    rope_family("Falcon-H1", "falcon_h1", arch="FalconH1", scale="embedding_multiplier"),
    rope_family(
        "Granite 4 (MoE hybrid)",
        "granitemoehybrid",
        arch="GraniteMoeHybrid",
        scale="embedding_multiplier",
        rope_when=("position_embedding_type", "rope"),
    ),
    rope_family("Jamba", "jamba", arch="Jamba", **_NONE),
    rope_family("Kimi Linear", "kimi_linear", arch="KimiLinear", **_NONE),
    rope_family("LFM2", "lfm2", arch="Lfm2"),
    rope_family("LFM2 MoE", "lfm2_moe", arch="Lfm2Moe"),
    Family(
        name="Nemotron-H",
        model_types=("nemotron_h",),
        architectures=("NemotronHModel", "NemotronHForCausalLM"),
        token=("embeddings.weight",),
        prefixes=("model", "backbone"),
        **_NONE,
    ),
    rope_family("OLMo hybrid", "olmo_hybrid", arch="OlmoHybrid"),
    rope_family("Qwen3-Next", "qwen3_next", arch="Qwen3Next"),
    Family(
        name="xLSTM",
        model_types=("xlstm",),
        architectures=("xLSTMModel", "xLSTMForCausalLM"),
        token=("embeddings.weight",),
        prefixes=("backbone",),
        context=(),
        **_NONE,
    ),
    # RecurrentGemma's normalizer is a bfloat16 buffer: √d rounded to bfloat16 in any dtype
    rope_family(
        "RecurrentGemma", "recurrent_gemma", arch="RecurrentGemma", scale="sqrt_d_bfloat16"
    ),
    rope_family("Zamba", "zamba", arch="Zamba", **_NONE),
    # Zamba2's shared attention blocks turn rope only with use_mem_rope (default false)
    rope_family("Zamba2", "zamba2", arch="Zamba2", rope_when=("use_mem_rope", True)),
)
