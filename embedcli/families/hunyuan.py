"""Tencent's Hunyuan families. Hunyuan V4 is not here: its first block reads ``hc_mult``
copies of the token embeddings (hyper-connections), a step embedcli does not have yet."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("Hunyuan (dense)", "hunyuan_v1_dense", arch="HunYuanDenseV1"),
    rope_family("Hunyuan (MoE)", "hunyuan_v1_moe", arch="HunYuanMoEV1"),
    rope_family("Hunyuan V3", "hy_v3", arch="HYV3"),
)
