"""Zhipu's GLM families."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("GLM", "glm", arch="Glm"),
    rope_family("GLM-4", "glm4", arch="Glm4"),
    rope_family("GLM-4 MoE", "glm4_moe", arch="Glm4Moe"),
)
