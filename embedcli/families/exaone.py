"""LG AI Research's EXAONE families (EXAONE 4 is with Llama's makers): EXAONE 3 is built as
Llama's classes; EXAONE MoE has its own."""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
from embedcli.families.registry import register, rope_family

register(
    # its checkpoints keep GPT-2's names (transformer.wte), which transformers renames on load
    rope_family(
        "EXAONE",
        "exaone",
        arch="Llama",
        token=("embed_tokens.weight", "wte.weight"),
        prefixes=("model", "transformer"),
        gguf=(GGUFArch(name="exaone", rope_freqs=True),),
    ),
    rope_family("EXAONE MoE", "exaone_moe", arch="ExaoneMoe"),
)
