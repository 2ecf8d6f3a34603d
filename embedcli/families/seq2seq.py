"""Encoder-decoders with fixed sinusoids (Marian, Pegasus, M2M100, NLLB-MoE): the encoder runs
first; its token embeddings are scaled by √d where the config says so, and a table computed from
a formula (never read from the checkpoint) is added; no norm before the first block.
"""

from __future__ import annotations

from embedcli.families.registry import Family, register

_TOKEN = ("encoder.embed_tokens.weight", "shared.weight")  # the encoder's own, or the shared one

register(
    # create_weight: the original Transformer's angles, sines in the first half, from row 0
    Family(
        name="Marian (Pegasus)",
        model_types=("marian", "pegasus"),
        architectures=("MarianModel", "MarianMTModel"),
        token=_TOKEN,
        positional="sinusoidal",
        sinusoid="split",
        scale="sqrt_d",
        scale_when="scale_embedding",
        stacks=("encoder", "decoder"),
    ),
    # fairseq's sinusoids, numbered from padding_idx + 1 as RoBERTa numbers its positions
    Family(
        name="M2M100 (NLLB-MoE)",
        model_types=("m2m_100", "nllb-moe"),
        architectures=("M2M100Model", "M2M100ForConditionalGeneration"),
        token=_TOKEN,
        positional="sinusoidal",
        sinusoid="halves",
        position_ids="padding",
        scale="sqrt_d",
        scale_when="scale_embedding",
        stacks=("encoder", "decoder"),
    ),
)
