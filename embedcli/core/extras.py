"""A family's tensors besides the two tables (a projection, token types, an embedding norm),
and the steps that use them: the norm's kinds and the projection's Linear.

Kept apart from core.embedding so that the module stays the recipe (lookup, positions, sum)
and each extra step is one function here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from embedcli.core.config import EmbedConfig
from embedcli.core.kinds import WEIGHTLESS_NORMS
from embedcli.errors import WeightsError


@dataclass
class Extras:
    """The extra tensors of one module (None: the step does not run)."""

    project_in: torch.Tensor | None = None  # (d, w): the projection's weight
    project_bias: torch.Tensor | None = None  # (d,): its bias, where the family's has one
    token_type: torch.Tensor | None = None  # (n, sum_width): the token-type table
    row0: tuple[torch.Tensor, ...] = ()  # (n_i, sum_width) each: tables whose row 0 is added
    concat: tuple[torch.Tensor, ...] = ()  # (n_i, w_i) each: tables whose row 0 is put beside
    replacement: torch.Tensor | None = None  # (w,): the row that replaces replaced_id's rows
    altup: tuple[torch.Tensor, ...] = ()  # (d, d) each: Gemma 3n's AltUp projections
    norm_weight: torch.Tensor | None = None  # (norm_width,); None: no norm, or a weightless one
    norm_bias: torch.Tensor | None = None  # (norm_width,); None: a norm without a bias


def seeded_extra(name: str, shape: tuple[int, ...]) -> torch.Tensor:
    """A family's other tensor as torch initialises its module (the RNG already seeded)."""
    if name == "project_in" or name.startswith("altup_"):  # (d, w): nn.Linear(w, d, bias=False)
        return nn.Linear(shape[1], shape[0], bias=False).weight.detach()
    if name == "token_type" or name.startswith(("row0_", "concat_")):  # nn.Embedding(1, w)
        return nn.Embedding(*shape).weight.detach()
    return torch.ones(shape) if name == "norm_weight" else torch.zeros(shape)  # nn.LayerNorm


def make_extras(
    config: EmbedConfig,
    given: dict[str, torch.Tensor] | None,
    meta: bool,
    seeded: bool,
) -> Extras:
    """The extras ``config`` needs: from ``given`` (a checkpoint's), empty on the meta device,
    or, with ``seeded``, as torch initialises them; a checkpoint that lacks a required one is
    refused. Optional ones (a projection's or a norm's bias) are taken only where given."""
    given = dict(given or {})

    def tensor(name: str, *shape: int) -> torch.Tensor:
        if name in given:
            return given[name]
        if meta:
            return torch.empty(*shape, device="meta")
        if seeded:
            return seeded_extra(name, shape)
        raise WeightsError(
            f"the checkpoint has no {name} tensor, which this model's input layer needs"
        )

    found = Extras()
    if config.projects:
        found.project_in = tensor("project_in", config.d_model, config.projected_width)
        found.project_bias = given.get("project_bias")
    if config.token_types:
        found.token_type = tensor("token_type", 1, config.sum_width)
    if config.replaced_id is not None:  # a learned row, zeros as T5Gemma 2 initialises it
        found.replacement = tensor("replacement", config.width)
    if config.block_layout == "altup":  # streams - 1 projections of the embeddings
        d = config.d_model
        found.altup = tuple(tensor(f"altup_{i}", d, d) for i in range(config.streams - 1))
    found.concat = tuple(
        tensor(f"concat_{i}", 1, width) for i, width in enumerate(config.concat_widths)
    )
    found.row0 = tuple(tensor(f"row0_{i}", 1, config.sum_width) for i in range(config.row0_tables))
    if config.norm_eps is not None and config.norm_kind not in WEIGHTLESS_NORMS:
        found.norm_weight = tensor("norm_weight", config.norm_width)
        if config.norm_kind != "rmsnorm":
            checkpoint = not meta and not seeded
            found.norm_bias = (
                given.get("norm_bias") if checkpoint else tensor("norm_bias", config.norm_width)
            )
    return found


def trigram(hidden: torch.Tensor) -> torch.Tensor:
    """(B, T, w) -> (B, T, 3w): each token's row beside the next token's and the previous
    token's (zeros past the ends), as MobileBERT concatenates them: [next, this, previous]."""
    after = nn.functional.pad(hidden[:, 1:], [0, 0, 0, 1, 0, 0], value=0.0)  # row t + 1
    before = nn.functional.pad(hidden[:, :-1], [0, 0, 1, 0, 0, 0], value=0.0)  # row t - 1
    return torch.cat([after, hidden, before], dim=2)


MASK_RATIO_TRAIN = 0.15 * 0.8  # ESM's: the share of tokens masked in all its training runs


def token_dropout(
    hidden: torch.Tensor, ids: torch.Tensor, mask_id: int, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """ESM's token dropout at inference: the mask token's rows zeroed, then every row scaled
    by (1 - 0.12) / (1 - the sequence's observed share of mask tokens), as EsmEmbeddings does
    (in float32 for the share, back to the rows' dtype)."""
    masked = ids == mask_id  # (B, T)
    hidden = hidden.masked_fill(masked.unsqueeze(-1), 0.0)
    lengths = attention_mask.sum(-1) if attention_mask is not None else ids.shape[1]
    observed = masked.sum(-1).float() / lengths  # (B,)
    return (hidden * (1 - MASK_RATIO_TRAIN) / (1 - observed)[:, None, None]).to(hidden.dtype)


def project(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """(B, T, w) -> (B, T, d): nn.Linear's computation, with its bias where there is one."""
    return nn.functional.linear(hidden, weight, bias)


def normalise(
    hidden: torch.Tensor,
    config: EmbedConfig,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
) -> torch.Tensor:
    """The embedding norm of ``config.norm_kind`` over the last dimension, as the families'
    modules compute it: nn.LayerNorm; an RMSNorm in float32, its weight applied in the input's
    dtype (Llama's); nanochat's RMSNorm in float32 with no weight, cast back to the input's
    dtype (NeoMME's the same with a power for rsqrt); MobileBERT's NoNorm (weight * x + bias,
    no statistics); DeBERTa's LayerNorm written
    out in float32."""
    if config.norm_kind == "weightless_rmsnorm":  # NanoChatRMSNorm: _norm(x.float()).type_as(x)
        x = hidden.float()
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + config.norm_eps)).to(hidden.dtype)
    if config.norm_kind == "weightless_rmsnorm_pow":  # NeoMMERMSNorm(with_scale=False)
        x = hidden.float()
        mean_squared = x.pow(2).mean(-1, keepdim=True) + config.norm_eps
        return (x * torch.pow(mean_squared, -0.5)).to(hidden.dtype)
    if config.norm_kind == "nonorm":
        return hidden * weight + bias  # (B, T, d)
    if config.norm_kind == "float32":  # DeBERTa's own LayerNorm
        x = hidden.float()
        centred = x - x.mean(-1, keepdim=True)
        x = centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + config.norm_eps)
        return weight * x.to(hidden.dtype) + bias
    if config.norm_kind == "rmsnorm":
        dtype = hidden.dtype
        x = hidden.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + config.norm_eps)
        return weight * x.to(dtype)
    width = (hidden.shape[-1],)
    return nn.functional.layer_norm(hidden, width, weight, bias, config.norm_eps)
