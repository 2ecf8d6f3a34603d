"""Tencent's Hunyuan families. Hunyuan V4's first block reads ``hc_mult`` copies of the token
embeddings, (B, T, hc_mult, d): its hyper-connection streams (``HYV4Model.forward``:
``inputs_embeds.unsqueeze(2).expand(-1, -1, hc_mult, -1)``); rope over its MLA heads' rope
part (``qk_rope_head_dim``)."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("Hunyuan (dense)", "hunyuan_v1_dense", arch="HunYuanDenseV1"),
    rope_family("Hunyuan (MoE)", "hunyuan_v1_moe", arch="HunYuanMoEV1"),
    rope_family("Hunyuan V3", "hy_v3", arch="HYV3"),
    rope_family(
        "Hunyuan V4",
        "hy_v4",
        arch="HYV4",
        rope_dim="qk_rope",
        block_layout="streams",
        streams="hc_mult",
    ),
)
