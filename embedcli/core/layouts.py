"""How a family's first block takes the input embeddings, where that is not the (B, T, d)
tensor itself: the same numbers, arranged as the block reads them.

- ``streams``: hyper-connections (DeepSeek V4, HY V4): ``streams`` copies of each token's row,
  (B, T, n, d), as ``inputs_embeds.unsqueeze(2).expand(-1, -1, n, -1)``.
- ``streams_flat``: the copies side by side, (B, T, n·d) (Qwen 4 Exp's ``repeat``).
- ``time_major``: (T, B, d), as XLNet and FSMT's encoders transpose their batches.
- ``channels_first``: (B, d, T), as SqueezeBERT's encoder permutes for its 1-D convolutions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from embedcli.core.config import EmbedConfig

if TYPE_CHECKING:  # tensor methods only: importing this module needs no torch
    import torch

# What each arrangement is, as the pipeline table says it (n: the config's stream count).
LAYOUT_WORDS = {
    "streams": "input_embeddings.unsqueeze(2).expand(-1, -1, {n}, -1): {n} hyper-connection "
    "streams, each a copy, (B, T, {n}, d)",
    "streams_flat": "input_embeddings.repeat(1, 1, {n}): {n} hyper-connection streams side by "
    "side, (B, T, {n}·d)",
    "time_major": "input_embeddings.transpose(0, 1): time-major, (T, B, d)",
    "channels_first": "input_embeddings.permute(0, 2, 1): channels first for 1-D convolutions, "
    "(B, d, T)",
}


def arrange(hidden: torch.Tensor, config: EmbedConfig) -> torch.Tensor:
    """(B, T, d) -> the tensor the first block reads, by ``config.block_layout``."""
    layout, n = config.block_layout, config.streams
    if layout == "streams":
        return hidden.unsqueeze(2).expand(-1, -1, n, -1).contiguous()
    if layout == "streams_flat":
        return hidden.repeat(1, 1, n)
    if layout == "time_major":
        return hidden.transpose(0, 1).contiguous()
    if layout == "channels_first":
        return hidden.permute(0, 2, 1).contiguous()
    return hidden


def arranged_shape(shape: tuple[int, ...], config: EmbedConfig) -> tuple[int, ...]:
    """The shape :func:`arrange` gives a (B, T, d) ``shape``."""
    b, t, d = shape
    n = config.streams
    return {
        "streams": (b, t, n, d),
        "streams_flat": (b, t, n * d),
        "time_major": (t, b, d),
        "channels_first": (b, d, t),
    }.get(config.block_layout, shape)


def layout_operation(config: EmbedConfig) -> str:
    """The block_input step's operation."""
    return LAYOUT_WORDS[config.block_layout].format(n=config.streams) + ": what block 0 reads"
