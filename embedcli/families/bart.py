"""BART and its kin (mBART, PLBart, MVP, Blenderbot, BlenderbotSmall, BigBird-Pegasus): the
encoder runs first; its token embeddings are scaled by √d where the config says so, then learned
positions are added (BART's and MVP's from row 2), and a LayerNorm follows where the family has
one before its first block.
"""

from __future__ import annotations

from embedcli.families.registry import Family, register

_TOKEN = ("embed_tokens.weight", "shared.weight")  # the stack's own table, or the shared one

register(
    Family(
        name="BART (mBART, PLBart, MVP)",
        model_types=("bart", "mbart", "plbart", "mvp"),
        architectures=("BartModel", "BartForConditionalGeneration", "BartForCausalLM"),
        token=_TOKEN,
        positional="learned",
        position="embed_positions.weight",
        offset=2,
        scale="sqrt_d",
        scale_when="scale_embedding",
        norm="layernorm_embedding",
        norm_eps=(),
        stacks=("encoder", "decoder"),
    ),
    # positions from row 0 and no LayerNorm before the first block (BigBird-Pegasus's
    # layernorm_embedding runs after its encoder's layers)
    Family(
        name="Blenderbot (BigBird-Pegasus)",
        model_types=("blenderbot", "bigbird_pegasus"),
        architectures=("BlenderbotModel", "BlenderbotForConditionalGeneration"),
        token=_TOKEN,
        positional="learned",
        position="embed_positions.weight",
        scale="sqrt_d",
        scale_when="scale_embedding",
        stacks=("encoder", "decoder"),
    ),
    Family(
        name="BlenderbotSmall",
        model_types=("blenderbot-small",),
        architectures=("BlenderbotSmallModel", "BlenderbotSmallForConditionalGeneration"),
        token=_TOKEN,
        positional="learned",
        position="embed_positions.weight",
        scale="sqrt_d",
        scale_when="scale_embedding",
        norm="layernorm_embedding",
        norm_eps=(),
        stacks=("encoder", "decoder"),
    ),
)
