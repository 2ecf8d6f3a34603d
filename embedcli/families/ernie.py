"""Baidu's ERNIE 4.5 families."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("ERNIE 4.5", "ernie4_5", arch="Ernie4_5"),
    rope_family("ERNIE 4.5 MoE", "ernie4_5_moe", arch="Ernie4_5_Moe"),
)
