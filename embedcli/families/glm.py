"""Zhipu's GLM families; GLM-4 MoE Lite and GLM MoE DSA rotate ``qk_rope_head_dim`` dimensions
of their latent-attention heads."""

from __future__ import annotations

from embedcli.families.ggufarch import ANY, GGUFArch
from embedcli.families.registry import register, rope_family

register(
    rope_family("GLM", "glm", arch="Glm"),
    rope_family(
        "GLM-4",
        "glm4",
        arch="Glm4",
        gguf=(
            GGUFArch(
                name="glm4",
                refused=(
                    (
                        "rope.dimension_sections",
                        ANY,
                        "llama.cpp turns multimodal rope sections (GLM-4.1V's), which "
                        "embedcli does not read for GLM-4",
                    ),
                ),
            ),
        ),
    ),
    rope_family("GLM-4 MoE", "glm4_moe", arch="Glm4Moe"),
    rope_family("GLM-4 MoE Lite", "glm4_moe_lite", arch="Glm4MoeLite", rope_dim="qk_rope"),
    rope_family("GLM MoE DSA", "glm_moe_dsa", arch="GlmMoeDsa", rope_dim="qk_rope"),
)
