"""BART (mBART, PLBart): the encoder runs first; its token embeddings are scaled by √d where the
config says so, and a LayerNorm follows the learned positions.
"""

from __future__ import annotations

from embedcli.families.registry import Family, register

register(
    Family(
        name="BART (mBART, PLBart)",
        model_types=("bart", "mbart", "plbart"),
        architectures=("BartModel", "BartForConditionalGeneration", "BartForCausalLM"),
        token=("embed_tokens.weight", "shared.weight"),
        positional="learned",
        position="embed_positions.weight",
        offset=2,
        scale="sqrt_d",
        scale_when="scale_embedding",
        norm="layernorm_embedding",
        norm_eps=(),
        stacks=("encoder", "decoder"),
    ),
)
