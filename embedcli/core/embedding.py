"""The core module: token embeddings plus positional embeddings, and a trace of every step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from embedcli.core.broadcast import BroadcastPlan, explain
from embedcli.core.config import EmbedConfig
from embedcli.core.devices import torch_dtype
from embedcli.core.positions import rope_angles, sinusoidal_table
from embedcli.core.shapeplan import TraceStep
from embedcli.errors import TokenIdError


@dataclass(frozen=True)
class EmbeddingTrace:
    """Every intermediate tensor of one forward pass, in order."""

    input_ids: torch.Tensor  # (B, T)
    token_embeddings: torch.Tensor  # (B, T, d), as looked up
    position_ids: torch.Tensor | None  # (T,)
    position_embeddings: torch.Tensor | None  # (T, d)
    input_embeddings: torch.Tensor  # (B, T, d)
    rope_angles: torch.Tensor | None = None  # (T, r/2): rotary positions, applied in attention
    scaled_embeddings: torch.Tensor | None = None  # (B, T, d): times the model's embed_scale

    @property
    def steps(self) -> list[TraceStep]:
        """Name, shape, dtype and device of each tensor that exists, in pipeline order."""
        names = (
            "input_ids",
            "token_embeddings",
            "scaled_embeddings",
            "position_ids",
            "rope_angles",
            "position_embeddings",
        )
        steps = [TraceStep.of(n, getattr(self, n)) for n in names if getattr(self, n) is not None]
        return [*steps, TraceStep.of("input_embeddings", self.input_embeddings)]

    @property
    def addition(self) -> BroadcastPlan | None:
        """How position embeddings broadcast onto token embeddings; None when nothing is added."""
        if self.position_embeddings is None:
            return None
        return explain(tuple(self.token_embeddings.shape), tuple(self.position_embeddings.shape))


def cosine_similarity(rows: torch.Tensor) -> torch.Tensor:
    """(n, d) -> (n, n) cosine similarities, in float64."""
    normed = rows.double() / rows.double().norm(dim=1, keepdim=True).clamp_min(1e-12)
    return normed @ normed.T


def check_token_ids(
    ids: torch.Tensor,
    config: EmbedConfig,
    hint: str = "raise --vocab-size or fix the ids",
    *,
    length: bool = True,
) -> torch.Tensor:
    """Return ``ids`` as (B, T) int64, or raise a domain error naming the offending id (and,
    with ``length``, a sequence longer than the context length).

    Checked before any lookup, so a bad id is a clear message, never an IndexError or a CUDA
    device-side assert.
    """
    from_lists = isinstance(ids, list)
    if from_lists:  # Python ints: checked before a tensor could overflow on them
        _check_id_lists(ids, config.vocab_size, hint)
        ids = torch.tensor(ids, dtype=torch.long)
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TokenIdError(f"token ids must be integers, got a {ids.dtype} tensor")
    if ids.dim() == 1:
        ids = ids.unsqueeze(0)  # (T,) -> (1, T)
    if ids.dim() != 2:
        raise TokenIdError(f"token ids must have shape (B, T) or (T,), got {tuple(ids.shape)}")
    if length:
        config.check_length(ids.shape[1])
    if not from_lists and ids.device.type != "meta" and ids.numel():
        bad = (ids < 0) | (ids >= config.vocab_size)
        if bool(bad.any()):
            row, col = (int(i) for i in bad.nonzero()[0])
            _refuse_id(int(ids[row, col]), row, col, config.vocab_size, hint)
    return ids.long()


def _check_id_lists(rows: list[list[int]], vocab: int, hint: str) -> None:
    """The same check as on a tensor, on Python ints of any size (torch would overflow)."""
    for row, values in enumerate(rows):
        for col, value in enumerate(values):
            if not 0 <= value < vocab:
                _refuse_id(value, row, col, vocab, hint)


def _refuse_id(value: int, row: int, col: int, vocab: int, hint: str) -> None:
    """Raise TokenIdError for the id at (row, col), in words a user can act on."""
    where = f"(sequence {row}, position {col})"
    if value < 0:
        raise TokenIdError(f"token id {value} {where} is negative; ids start at 0")
    raise TokenIdError(
        f"token id {value} {where} is out of range for a vocabulary of {vocab} "
        f"(valid ids: 0 to {vocab - 1}); {hint}"
    )


class InputEmbedding(nn.Module):
    """GPT-style input layer: ``token_embedding(ids) + position_embedding(arange(T))``.

    The tables are created on the CPU exactly as ``torch.manual_seed(seed)``, then
    ``nn.Embedding(vocab_size, d_model)``, then ``nn.Embedding(context_length, d_model)``, so the
    same seed gives the same numbers on every device (and those of any tutorial seeded this way).
    Use :func:`build_embedding` to place a module on a device and dtype.
    """

    def __init__(
        self,
        config: EmbedConfig,
        *,
        meta: bool = False,
        tables: tuple[torch.Tensor, torch.Tensor | None] | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        if tables is not None:
            # Trained tables (from a checkpoint) are used as they are: no copy, no initialisation.
            token, position = tables
            self.token_embedding = nn.Embedding.from_pretrained(token, freeze=False)
            self.position_embedding = (
                nn.Embedding.from_pretrained(position, freeze=False)
                if position is not None and config.has_positional_table
                else None
            )
        elif meta:
            # Shapes only: nothing is allocated, so any size can be inspected. Empty meta tables
            # skip the random initialisation, whose meta kernels take torch a second to load.
            self._create_tables(
                config,
                lambda rows: nn.Embedding.from_pretrained(
                    torch.empty(rows, config.d_model, device="meta"), freeze=False
                ),
            )
        else:
            # fork_rng keeps the caller's global RNG state untouched.
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(config.seed)
                self._create_tables(config, lambda rows: nn.Embedding(rows, config.d_model))
        # Non-persistent buffers: follow .to(device), stay out of the state dict.
        self.register_buffer(
            "position_ids",
            torch.arange(config.context_length).to("meta" if meta else "cpu"),
            persistent=False,
        )
        if config.positional == "sinusoidal":
            table = (
                torch.empty(config.context_length, config.d_model, device="meta")
                if meta
                else sinusoidal_table(config.context_length, config.d_model).float()
            )
            self.register_buffer("sinusoidal_table", table, persistent=False)

    def _create_tables(self, config: EmbedConfig, table: Callable[[int], nn.Embedding]) -> None:
        # Token table first, then positions: the order the seeded recipe draws its numbers in.
        self.token_embedding = table(config.vocab_size)
        self.position_embedding = (
            table(config.context_length) if config.has_positional_table else None
        )

    def check_ids(self, ids: torch.Tensor) -> torch.Tensor:
        """Return ``ids`` as (B, T) int64, or raise a domain error naming what is wrong."""
        return check_token_ids(ids, self.config)

    def trace(self, ids: torch.Tensor, *, checked: bool = False) -> EmbeddingTrace:
        """Run the forward pass and keep every intermediate tensor.

        ``checked``: the caller already ran :func:`check_token_ids` on these (B, T) int64 ids, so
        they are not read a second time."""
        input_ids = ids if checked else self.check_ids(ids)
        input_ids = input_ids.to(self.token_embedding.weight.device)  # (B, T)
        looked_up = self.token_embedding(input_ids)  # (B, T, d)
        scaled = None
        if self.config.embed_scale != 1.0:
            # As Gemma does: the scale in the embeddings' own dtype, then one multiplication.
            scale = torch.tensor(self.config.embed_scale, dtype=looked_up.dtype)
            scaled = looked_up * scale.to(looked_up.device)  # (B, T, d)
        token_embeddings = looked_up if scaled is None else scaled
        family = self.config.positional
        if family == "none" or (family == "learned" and self.position_embedding is None):
            return EmbeddingTrace(
                input_ids, looked_up, None, None, token_embeddings, scaled_embeddings=scaled
            )
        position_ids = self.position_ids[: input_ids.shape[1]]  # (T,)
        if family == "rope":
            # Nothing is added: attention rotates queries and keys by these angles instead.
            dim = self.config.rope_dim or self.config.d_model
            angles = rope_angles(
                position_ids, dim, self.config.rope_theta, self.config.rope_scaling
            )  # (T, r/2)
            return EmbeddingTrace(
                input_ids, looked_up, position_ids, None, token_embeddings, angles, scaled
            )
        if family == "sinusoidal":
            position_embeddings = self.sinusoidal_table[: input_ids.shape[1]]  # (T, d), fixed
        else:
            position_embeddings = self.position_embedding(position_ids)  # (T, d), learned
        input_embeddings = token_embeddings + position_embeddings  # (B, T, d) + (T, d) -> (B, T, d)
        return EmbeddingTrace(
            input_ids,
            looked_up,
            position_ids,
            position_embeddings,
            input_embeddings,
            scaled_embeddings=scaled,
        )

    def forward(self, ids: torch.Tensor, *, checked: bool = False) -> torch.Tensor:
        """(B, T) or (T,) token ids -> (B, T, d) input embeddings."""
        return self.trace(ids, checked=checked).input_embeddings


def build_embedding(
    config: EmbedConfig,
    device: torch.device | str = "cpu",
    tables: tuple[torch.Tensor, torch.Tensor | None] | None = None,
) -> InputEmbedding:
    """Create the seeded tables (or take trained ``tables``) on the CPU, then move them to
    ``device`` and ``config.dtype``."""
    device = torch.device(device)
    if device.type == "meta" and tables is None:
        return InputEmbedding(config, meta=True).to(dtype=torch_dtype(config.dtype))
    module = InputEmbedding(config, tables=tables)
    return module.to(device=device, dtype=torch_dtype(config.dtype))
