"""The steps of the reference's recipe that are more than a lookup and a sum, each written
out again from its formula (not by embedcli's module): an embedding norm's kinds, ESM's token
dropout, and how a family's first block takes the result (core.layouts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from embedcli.core.config import EmbedConfig


def arranged(
    config: EmbedConfig, hidden: torch.Tensor, extras: dict[str, torch.Tensor] | None = None
) -> torch.Tensor:
    """(B, T, d) as the family's first block takes it, written out again here: n copies of each
    row (hyper-connection streams, stacked or side by side), time-major, channels first, or
    Gemma 3n's AltUp stack (its projections from ``extras``)."""
    import torch

    n = config.streams
    if config.block_layout == "altup":  # x, then each projection rescaled to x's RMS
        rms = torch.mean(hidden**2, dim=-1, keepdim=True) ** 0.5
        streams = [hidden]
        for i in range(n - 1):
            p = torch.nn.functional.linear(hidden, extras[f"altup_{i}"].to(hidden.dtype))
            streams.append(
                p * rms / torch.sqrt(torch.mean(p**2, dim=-1, keepdim=True).clamp(min=1e-5))
            )
        return torch.stack(streams)
    if config.block_layout == "streams":
        return torch.stack([hidden] * n, dim=2)  # (B, T, n, d)
    if config.block_layout == "streams_flat":
        return torch.cat([hidden] * n, dim=2)  # (B, T, n·d)
    if config.block_layout == "time_major":
        return hidden.permute(1, 0, 2)  # (T, B, d)
    if config.block_layout == "channels_first":
        return hidden.permute(0, 2, 1)  # (B, d, T)
    return hidden


def token_dropout(
    hidden: torch.Tensor, ids: torch.Tensor, mask_id: int, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """ESM's formula: zeros for the mask token, then × 0.88 / (1 - observed share), the share
    a float32 count over the unpadded tokens."""
    import torch

    is_mask = (ids == mask_id).unsqueeze(-1)  # (B, T, 1)
    hidden = torch.where(is_mask, torch.zeros((), dtype=hidden.dtype), hidden)
    counted = ids.shape[1] if attention_mask is None else attention_mask.cpu().sum(-1)
    share = (ids == mask_id).sum(-1).float() / counted
    scaled = hidden * (1 - 0.15 * 0.8) / (1 - share)[:, None, None]
    return scaled.to(hidden.dtype)


def norm(
    config: EmbedConfig, x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None
) -> torch.Tensor:
    """The embedding norm, from its formula: LayerNorm (torch's kernel, as every family's
    module calls it), RMSNorm in float32 (its weight then in the input's dtype, or none at
    all: nanochat's), NoNorm."""
    import torch

    if config.norm_kind == "weightless_rmsnorm":
        wide = x.float()
        mean_square = wide.pow(2).mean(dim=-1, keepdim=True)
        return (wide * torch.rsqrt(mean_square + config.norm_eps)).to(x.dtype)
    if config.norm_kind == "weightless_rmsnorm_pow":  # NeoMME's: a power, not rsqrt
        wide = x.float()
        mean_square = wide.pow(2).mean(dim=-1, keepdim=True)
        return (wide * (mean_square + config.norm_eps) ** -0.5).to(x.dtype)
    if config.norm_kind == "nonorm":
        return x * weight + bias
    if config.norm_kind == "float32":  # DeBERTa's: the statistics in float32, by formula
        wide = x.float()
        mean = wide.mean(dim=-1, keepdim=True)
        variance = (wide - mean).pow(2).mean(dim=-1, keepdim=True)
        return weight * ((wide - mean) / torch.sqrt(variance + config.norm_eps)).to(x.dtype) + bias
    if config.norm_kind == "rmsnorm":
        wide = x.float()
        mean_square = wide.pow(2).mean(dim=-1, keepdim=True)
        return weight * (wide * torch.rsqrt(mean_square + config.norm_eps)).to(x.dtype)
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, config.norm_eps)
