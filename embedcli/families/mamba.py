"""The recurrent families: Mamba (1, 2, Falcon Mamba) and RWKV, with no positions at all."""

from __future__ import annotations

from embedcli.families.registry import Family, register

register(
    Family(
        name="Mamba",
        model_types=("mamba", "mamba2", "falcon_mamba"),
        architectures=("MambaModel", "MambaForCausalLM"),
        token=("embeddings.weight", "embedding.weight"),
        prefixes=("backbone",),
        positional="none",
        context=(),
    ),
    Family(
        name="RWKV",
        model_types=("rwkv",),
        architectures=("RwkvModel", "RwkvForCausalLM"),
        token=("embeddings.weight",),
        prefixes=("rwkv",),
        positional="none",
        context=(),
        head="head.weight",
    ),
)
