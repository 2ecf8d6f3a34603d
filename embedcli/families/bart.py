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
    # LED: its encoder pads the ids with pad_token_id to a multiple of attention_window (the
    # largest of its layers') first; positions 0..T-1 from row 0 over the padded T, LayerNorm
    Family(
        name="LED",
        model_types=("led",),
        architectures=("LEDModel", "LEDForConditionalGeneration"),
        token=_TOKEN,
        prefixes=("led",),
        positional="learned",
        position="embed_positions.weight",
        norm="layernorm_embedding",
        norm_eps=(),
        stacks=("encoder", "decoder"),
        context=("max_encoder_position_embeddings",),
        window="attention_window",
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
