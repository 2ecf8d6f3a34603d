"""The multi-head latent attention families (DeepSeek-V2, V3, V3.2, MiniCPM3): rope on
``qk_rope_head_dim`` dimensions of each head. DeepSeek-V4 is not here: its first block reads
``hc_mult`` copies of the token embeddings (hyper-connections), a step embedcli does not have
yet, and its rope sets are keyed by its own names (main, compress), not by layer type.
"""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("DeepSeek-V2", "deepseek_v2", arch="DeepseekV2", rope_dim="qk_rope"),
    rope_family("DeepSeek-V3", "deepseek_v3", arch="DeepseekV3", rope_dim="qk_rope"),
    rope_family("DeepSeek-V3.2", "deepseek_v32", arch="DeepseekV32", rope_dim="qk_rope"),
    rope_family(
        "MiniCPM3",
        "minicpm3",
        arch="MiniCPM3",
        scale="scale_emb",
        scale_rounding="dtype",
        rope_dim="qk_rope",
    ),
)
