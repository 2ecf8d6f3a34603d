"""MiniMax's families: MiniMax-Text (lightning attention between softmax layers) and MiniMax-M2
(a mixture of experts); both read ``model.embed_tokens`` as Llama does, rope in attention."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("MiniMax", "minimax", arch="MiniMax"),
    rope_family("MiniMax-M2", "minimax_m2", arch="MiniMaxM2"),
)
