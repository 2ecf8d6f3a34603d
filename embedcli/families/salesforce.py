"""Salesforce's CTRL: the token embeddings times √d, plus CTRL's own fixed sinusoids (the sines
of the even columns' angles, then the cosines of the odd columns'); token types, when given,
are rows of the token table, and embedcli adds none (type 0 is not a row CTRL adds)."""

from __future__ import annotations

from embedcli.families.registry import Family, register

register(
    Family(
        name="CTRL",
        model_types=("ctrl",),
        architectures=("CTRLModel", "CTRLLMHeadModel"),
        token=("w.weight",),
        prefixes=("transformer",),
        positional="sinusoidal",
        sinusoid="ctrl",
        scale="sqrt_d",
        context=("n_positions",),
    ),
)
