"""Databricks' DBRX: ``transformer.wte``, rope, nothing else before the first block; its
context field is ``max_seq_len``."""

from __future__ import annotations

from embedcli.families.registry import Family, register

register(
    Family(
        name="DBRX",
        model_types=("dbrx",),
        architectures=("DbrxModel", "DbrxForCausalLM"),
        token=("wte.weight",),
        prefixes=("transformer",),
        context=("max_seq_len", "max_position_embeddings"),
    ),
)
