"""The recurrent families: Mamba (1, 2, Falcon Mamba) and RWKV, with no positions at all."""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
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
        gguf=(
            GGUFArch(name="mamba", eps="layer_norm_rms_epsilon"),
            GGUFArch(
                name="mamba2",
                model_type="mamba2",
                eps="layer_norm_rms_epsilon",
                # Mamba 2's SSM heads, which nothing before block 0 reads
                fixed={"num_heads": None, "head_dim": None},
            ),
        ),
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
