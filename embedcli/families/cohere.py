"""Cohere's Command R families."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("Cohere (Command R)", "cohere", arch="Cohere"),
    rope_family("Cohere 2", "cohere2", arch="Cohere2"),
)
