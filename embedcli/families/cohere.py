"""Cohere's Command R families, and the text model of Cohere's Compass (North) wrapper."""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
from embedcli.families.registry import Family, register, rope_family

register(
    rope_family(
        "Cohere (Command R)",
        "cohere",
        arch="Cohere",
        gguf=(GGUFArch(name="command-r", eps="layer_norm_epsilon"),),
    ),
    rope_family(
        "Cohere 2",
        "cohere2",
        arch="Cohere2",
        # cohere2.cpp: 3 layers in 4 slide, and only they turn rope
        gguf=(GGUFArch(name="cohere2", eps="layer_norm_epsilon", swa=4),),
    ),
    rope_family("Cohere 2 MoE", "cohere2_moe", arch="Cohere2Moe"),
    # its multimodal rope sections read one position stream for text: plain rope angles
    Family(
        name="Cohere Compass (text)",
        model_types=("cohere_compass_text",),
        architectures=("CohereCompassTextModel", "CohereCompassForCausalLM"),
        rope_per_layer=True,
    ),
)
