"""Longformer's and LED's padding to the attention window: before the lookup their models pad
the ids with the config's pad_token_id (and the attention mask with zeros) to a multiple of
``attention_window``, so the first block reads those rows too. The same here, on the lists
the pipeline shows and on the module's tensors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from embedcli.core.config import EmbedConfig

if TYPE_CHECKING:  # tensor methods only
    import torch


def padded_length(length: int, config: EmbedConfig) -> int:
    """``length`` rounded up to a multiple of the attention window (unchanged without one)."""
    window = config.window
    return length if window is None else -(-length // window) * window


def window_padded(
    ids: list[list[int]], mask: list[list[int]], config: EmbedConfig
) -> tuple[list[list[int]], list[list[int]]]:
    """(ids, attention mask), each row right-padded to a multiple of the window with the
    model's pad id (mask 0); a model that numbers positions 0..T-1 must hold the padded T."""
    if config.window is None or not ids:
        return ids, mask
    length = padded_length(len(ids[0]), config)
    extra = length - len(ids[0])
    check_padded(length, config)
    pad = config.window_pad_id
    return [row + [pad] * extra for row in ids], [row + [0] * extra for row in mask]


def check_padded(length: int, config: EmbedConfig, what: str = "the sequence") -> None:
    """Where the pads take positions too (LED: 0..T-1 over the padded T), the padded length
    must fit the context; the fix names the longest input whose pads still fit."""
    if config.window is None or config.position_ids != "arange" or not config.context_limit:
        return
    fit = config.context_length // config.window * config.window
    fix = (
        f"its pads take positions too: cut it to at most {fit} tokens (--truncate {fit})"
        if fit
        else f"attention_window {config.window} is longer than the context itself"
    )
    config.check_length(
        padded_length(length, config), f"{what} padded to attention_window {config.window}", fix
    )


def pad_tensors(
    ids: torch.Tensor, mask: torch.Tensor | None, config: EmbedConfig
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The same on (B, T) tensors, as the module receives them (a no-op where the pipeline
    padded already)."""
    length = padded_length(ids.shape[1], config)
    if length == ids.shape[1]:
        return ids, mask
    check_padded(ids.shape[1], config)  # streaming and --lines come here first
    from torch.nn.functional import pad  # lazy: this module is imported without torch

    extra = length - ids.shape[1]
    if mask is None:
        mask = ids.new_ones(ids.shape)
    return pad(ids, (0, extra), value=config.window_pad_id), pad(mask, (0, extra), value=0)
