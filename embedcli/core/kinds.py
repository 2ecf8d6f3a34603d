"""The kinds of step a model family's input layer may take, as names: its position family,
position numbering, scale rounding, projection place, norm kind and block layout (each a
Literal, with its tuple of values where code checks against it)."""

from __future__ import annotations

from typing import Literal, get_args

# Sinusoid layouts whose family computes the table in the embeddings' dtype (Pegasus-X: pe in
# inputs_embeds.dtype), not in float32 and then cast: only float32 is exact here.
TABLE_DTYPE_SINUSOIDS = frozenset({"halves_unpadded"})

Positional = Literal["learned", "sinusoidal", "rope", "alibi", "relative", "none"]
POSITIONAL_FAMILIES: tuple[Positional, ...] = get_args(Positional)
# rope, alibi (a bias per head on the attention scores) and relative (T5's buckets) act inside
# attention: they add nothing to the tensor the first block reads
INSIDE_ATTENTION: tuple[Positional, ...] = ("rope", "alibi", "relative", "none")
PositionIds = Literal["arange", "mask", "padding"]  # how a model numbers positions
POSITION_IDS: tuple[PositionIds, ...] = get_args(PositionIds)
ScaleRounding = Literal["dtype", "float"]  # the input scale rounded to the tables' dtype, or not
# where a family's projection runs: "lookup" (OPT's project_in, right after the lookup),
# "before_norm" (DeBERTa's embed_proj of the sum), "after_norm" (ALBERT's and ELECTRA's Linear
# from the table's width to d_model, after the embedding norm)
Projection = Literal["lookup", "before_norm", "after_norm"]
# nonorm: MobileBERT's weight * x + bias; float32: a LayerNorm written out in float32
# (DeBERTa's: mean, variance, (x - mean) / sqrt(variance + eps), then weight * x + bias);
# weightless_rmsnorm: an RMSNorm in float32 with no weight at all, cast back (nanochat's:
# x * rsqrt(mean(x^2) + eps)); weightless_rmsnorm_pow: the same written with a power, x *
# (mean(x^2) + eps)^-0.5 (NeoMME's; its last bit may differ from rsqrt's)
NormKind = Literal[
    "layernorm", "rmsnorm", "nonorm", "float32", "weightless_rmsnorm", "weightless_rmsnorm_pow"
]
# no tensor to read
WEIGHTLESS_NORMS: frozenset[str] = frozenset({"weightless_rmsnorm", "weightless_rmsnorm_pow"})
# how the first block takes the input embeddings (core.layouts): as they are, or the same
# numbers arranged otherwise (hyper-connection streams, time-major, channels first)
# altup: Gemma 3n's stack of the embeddings and their AltUp projections, (n, B, T, d)
BlockLayout = Literal["tokens", "streams", "streams_flat", "time_major", "channels_first", "altup"]
BLOCK_LAYOUTS: tuple[BlockLayout, ...] = get_args(BlockLayout)
