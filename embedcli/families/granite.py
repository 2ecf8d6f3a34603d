"""IBM's Granite families: the token embeddings times the config's ``embedding_multiplier``.

Granite SWA and GraniteMoE SWA are not here yet: each layer has its own rope base
(``layer_rope_theta``, 0 for no rope), which embedcli's rope reading does not take.
"""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

_MULTIPLIER = {"scale": "embedding_multiplier"}  # a Python float: no rounding to the dtype

register(
    rope_family("Granite", "granite", arch="Granite", **_MULTIPLIER),
    rope_family("GraniteMoE", "granitemoe", arch="GraniteMoe", **_MULTIPLIER),
    rope_family("GraniteMoE (shared)", "granitemoeshared", arch="GraniteMoeShared", **_MULTIPLIER),
)
