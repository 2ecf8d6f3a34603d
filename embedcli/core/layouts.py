"""How a family's first block takes the input embeddings, where that is not the (B, T, d)
tensor itself: the same numbers, arranged as the block reads them.

- ``streams``: hyper-connections (DeepSeek V4, HY V4): ``streams`` copies of each token's row,
  (B, T, n, d), as ``inputs_embeds.unsqueeze(2).expand(-1, -1, n, -1)``.
- ``streams_flat``: the copies side by side, (B, T, n·d) (Qwen 4 Exp's ``repeat``).
- ``time_major``: (T, B, d), as XLNet and FSMT's encoders transpose their batches.
- ``channels_first``: (B, d, T), as SqueezeBERT's encoder permutes for its 1-D convolutions.
- ``altup``: Gemma 3n's (n, B, T, d) stack: the embeddings x, then each of its n - 1 AltUp
  projections of x rescaled to x's root mean square (``Gemma3nTextModel.forward``).
"""

from __future__ import annotations

from collections.abc import Sequence
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
    "altup": "stack([x, then each of {m} AltUp projections of x, × rms(x) / rms(projection)]): "
    "{n} streams, ({n}, B, T, d)",
}


def arrange(
    hidden: torch.Tensor, config: EmbedConfig, altup: Sequence[torch.Tensor] = ()
) -> torch.Tensor:
    """(B, T, d) -> the tensor the first block reads, by ``config.block_layout`` (``altup``:
    Gemma 3n's (d, d) projection weights)."""
    layout, n = config.block_layout, config.streams
    if layout == "altup":
        return altup_stack(hidden, altup)
    if layout == "streams":
        return hidden.unsqueeze(2).expand(-1, -1, n, -1).contiguous()
    if layout == "streams_flat":
        return hidden.repeat(1, 1, n)
    if layout == "time_major":
        return hidden.transpose(0, 1).contiguous()
    if layout == "channels_first":
        return hidden.permute(0, 2, 1).contiguous()
    return hidden


def altup_stack(x: torch.Tensor, weights: Sequence[torch.Tensor]) -> torch.Tensor:
    """Gemma 3n's AltUp streams, as its model computes them in x's dtype: x, then each
    projection p = x @ W.T scaled by mean(x²)^0.5 / sqrt(max(mean(p²), 1e-5)); stacked first."""
    import torch  # lazy: this module is imported without torch
    from torch.nn.functional import linear

    target = (x**2).mean(dim=-1, keepdim=True) ** 0.5
    streams = [x]
    for weight in weights:
        p = linear(x, weight)
        magnitude = (p**2).mean(dim=-1, keepdim=True).clamp(min=1e-5).sqrt()
        streams.append(p * target / magnitude)
    return torch.stack(streams, dim=0)


def arranged_shape(shape: tuple[int, ...], config: EmbedConfig) -> tuple[int, ...]:
    """The shape :func:`arrange` gives a (B, T, d) ``shape``."""
    b, t, d = shape
    n = config.streams
    return {
        "streams": (b, t, n, d),
        "streams_flat": (b, t, n * d),
        "time_major": (t, b, d),
        "channels_first": (b, d, t),
        "altup": (n, b, t, d),
    }.get(config.block_layout, shape)


def layout_operation(config: EmbedConfig) -> str:
    """The block_input step's operation."""
    n = config.streams
    return LAYOUT_WORDS[config.block_layout].format(n=n, m=n - 1) + ": what block 0 reads"
