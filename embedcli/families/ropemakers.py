"""More makers' decoders on Llama's input layer: ``model.embed_tokens``, rope, nothing else
before the first block, whatever the blocks are (mixtures of experts, linear attention, sliding
windows, convolutions). Where a family's config names another maker's classes (IQuest-Coder:
Llama's; Param-2 and Sarvam-MoE: GLM-4 MoE's; Sarvam-MLA: DeepSeek-V3's), its entry says so.
"""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

_WORD = ("word_embeddings.weight", "embed_tokens.weight")

register(
    rope_family("IQuest-Coder", "iquestcoder", arch="Llama"),
    rope_family("JetMoE", "jetmoe", arch="JetMoe"),
    rope_family("Kolibri 1", "kolibri1", arch="Kolibri1"),
    rope_family("Kolibri 1.1", "kolibri1_1", arch="Kolibri1_1"),
    rope_family("Laguna", "laguna", arch="Laguna"),
    rope_family("Lara Mini", "lara_mini", arch="LaraMini"),
    rope_family("LFM 3", "lfm3", arch="Lfm3"),
    rope_family("Mellum", "mellum", arch="Mellum"),
    rope_family("MiMo-V2-Flash", "mimo_v2_flash", arch="MiMoV2Flash"),
    rope_family("MiniCPM 5 MoE", "minicpm5_moe", arch="MiniCPM5Moe"),
    # their checkpoints keep the token table as model.word_embeddings (transformers renames it
    # to embed_tokens on load, and back on save)
    rope_family("Param-2 MoE", "param2moe", arch="Glm4Moe", token=_WORD),
    rope_family("Sarvam-MoE", "sarvam_moe", arch="Glm4Moe", token=_WORD),
    rope_family("Sarvam-MLA", "sarvam_mla", arch="DeepseekV3", rope_dim="qk_rope"),
    rope_family("Solar Open", "solar_open", arch="SolarOpen"),
    rope_family("Youtu", "youtu", arch="Youtu", rope_dim="qk_rope"),
    rope_family("ZAYA", "zaya", arch="Zaya"),
)
