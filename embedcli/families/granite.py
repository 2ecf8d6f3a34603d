"""IBM's Granite families: the token embeddings times the config's ``embedding_multiplier``."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

_MULTIPLIER = {"scale": "embedding_multiplier"}  # a Python float: no rounding to the dtype

register(
    rope_family("Granite", "granite", arch="Granite", **_MULTIPLIER),
    rope_family("GraniteMoE", "granitemoe", arch="GraniteMoe", **_MULTIPLIER),
    rope_family("GraniteMoE (shared)", "granitemoeshared", arch="GraniteMoeShared", **_MULTIPLIER),
)
