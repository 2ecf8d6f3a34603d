"""The core module: token embeddings plus positional embeddings, and a trace of every step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from embedcli.core.broadcast import BroadcastPlan, explain
from embedcli.core.config import EmbedConfig
from embedcli.core.devices import torch_dtype
from embedcli.core.extras import make_extras, normalise, project, token_dropout, trigram
from embedcli.core.layouts import arrange
from embedcli.core.positions import rope_angles
from embedcli.core.shapeplan import TraceStep, with_operations
from embedcli.core.sinusoids import sinusoids
from embedcli.core.steps import STEP_ORDER
from embedcli.core.windowpad import pad_tensors
from embedcli.errors import TokenIdError

BUFFER_ROWS = 8192  # positions the module's position buffers hold; longer batches compute theirs


@dataclass(frozen=True)
class EmbeddingTrace:
    """Every intermediate tensor of one forward pass, in order."""

    input_ids: torch.Tensor  # (B, T)
    token_embeddings: torch.Tensor  # (B, T, w), as looked up
    position_ids: torch.Tensor | None  # (T,), or (B, T) where a model counts them per sequence
    position_embeddings: torch.Tensor | None  # (T, d), or (B, T, d) with per-sequence ids
    input_embeddings: torch.Tensor  # (B, T, d)
    rope_angles: torch.Tensor | None = None  # (T, r/2): rotary positions, applied in attention
    scaled_embeddings: torch.Tensor | None = None  # (B, T, w): times the model's embed_scale
    projected_embeddings: torch.Tensor | None = None  # (B, T, d): OPT's project_in
    token_type_embeddings: torch.Tensor | None = None  # (B, T, d): BERT's type 0, added
    row0_embeddings: torch.Tensor | None = None  # (B, T, d): the row-0 tables' sum, as shown
    embedding_layernorm: torch.Tensor | None = None  # (B, T, d): the norm of the sum
    projected_sum: torch.Tensor | None = None  # (B, T, d): DeBERTa's embed_proj, before the norm
    projected_output: torch.Tensor | None = None  # (B, T, d): ALBERT's Linear, after the norm
    masked_embeddings: torch.Tensor | None = None  # (B, T, d): times the attention mask
    trigram_embeddings: torch.Tensor | None = None  # (B, T, 3w): MobileBERT's three rows
    replaced_embeddings: torch.Tensor | None = None  # (B, T, w): one id's rows replaced
    concat_embeddings: torch.Tensor | None = None  # (B, T, w + Σw_i): RoCBERT's rows side by side
    token_dropout_embeddings: torch.Tensor | None = None  # (B, T, w): ESM's rescaled rows
    # the same numbers as block 0 takes them, where that is not (B, T, d) (core.layouts)
    block_input: torch.Tensor | None = None
    config: EmbedConfig | None = None  # the module's: each step's operation is said from it

    @property
    def steps(self) -> list[TraceStep]:
        """Name, shape, dtype, device and operation of each tensor that exists, in pipeline
        order."""
        present = [n for n in STEP_ORDER if getattr(self, n) is not None]
        steps = [TraceStep.of(n, getattr(self, n)) for n in present]
        return steps if self.config is None else with_operations(self.config, steps)

    @property
    def addition(self) -> BroadcastPlan | None:
        """How position embeddings broadcast onto token embeddings; None when nothing is added."""
        if self.position_embeddings is None:
            return None
        added = self.projected_embeddings
        added = self.scaled_embeddings if added is None else added
        added = self.token_embeddings if added is None else added
        return explain(tuple(added.shape), tuple(self.position_embeddings.shape))


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
        extras: dict[str, torch.Tensor] | None = None,
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
                lambda rows, width: nn.Embedding.from_pretrained(
                    torch.empty(rows, width, device="meta"), freeze=False
                ),
            )
        else:
            # fork_rng keeps the caller's global RNG state untouched. A family's other tensors
            # are drawn after the two tables, so the tables are those of the plain recipe.
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(config.seed)
                self._create_tables(config, nn.Embedding)
                self._add_extras(config, extras, meta, seeded=True)
        # Non-persistent buffers: follow .to(device), stay out of the state dict.
        # Both are made for at most BUFFER_ROWS positions: a model whose context is 10^9 (a config
        # can say so) costs no memory beyond the positions a batch reads (see position_rows).
        self.register_buffer(
            "position_ids",
            torch.arange(min(config.context_length, BUFFER_ROWS)).to("meta" if meta else "cpu"),
            persistent=False,
        )
        if config.positional == "sinusoidal":
            rows = min(config.position_rows, BUFFER_ROWS)
            if meta:
                table = torch.empty(rows, config.sum_width, device="meta")
            else:
                table = sinusoids(config.sinusoid, rows, config.sum_width, config.padding_idx)
            self.register_buffer("sinusoidal_table", table, persistent=False)
        if tables is not None or meta:
            self._add_extras(config, extras, meta)

    def _add_extras(
        self,
        config: EmbedConfig,
        extras: dict[str, torch.Tensor] | None,
        meta: bool,
        *,
        seeded: bool = False,
    ) -> None:
        """What a model family runs besides lookup and addition, as its trained tensors (on the
        meta device, shapes only): a projection (OPT's, DeBERTa's, ALBERT's), BERT's token types,
        an embedding norm. With ``seeded`` (no checkpoint), each is made as torch initialises it
        (core.extras.seeded_extra)."""
        found = make_extras(config, extras, meta, seeded)

        def held(value: torch.Tensor | None) -> nn.Parameter | None:
            return None if value is None else nn.Parameter(value, False)

        self.project_in = held(found.project_in)  # (d, w)
        self.project_bias = held(found.project_bias)  # (d,)
        self.token_type_embedding = None
        if found.token_type is not None:
            self.token_type_embedding = nn.Embedding.from_pretrained(found.token_type, freeze=True)
        self.replacement = held(found.replacement)  # (w,)
        self.altup = nn.ParameterList([nn.Parameter(t, False) for t in found.altup])
        self.concat_tables = nn.ParameterList([nn.Parameter(t, False) for t in found.concat])
        self.row0_tables = nn.ParameterList([nn.Parameter(t, False) for t in found.row0])
        self.norm_weight = held(found.norm_weight)
        self.norm_bias = held(found.norm_bias)

    def _create_tables(
        self, config: EmbedConfig, table: Callable[[int, int], nn.Embedding]
    ) -> None:
        # Token table first, then positions: the order the seeded recipe draws its numbers in.
        self.token_embedding = table(config.vocab_size, config.width)
        self.position_embedding = (
            table(config.position_rows, config.sum_width) if config.has_positional_table else None
        )

    def check_ids(self, ids: torch.Tensor) -> torch.Tensor:
        """Return ``ids`` as (B, T) int64, or raise a domain error naming what is wrong."""
        return check_token_ids(ids, self.config)

    def trace(
        self,
        ids: torch.Tensor,
        *,
        checked: bool = False,
        attention_mask: torch.Tensor | None = None,
    ) -> EmbeddingTrace:
        """Run the forward pass and keep every intermediate tensor.

        ``checked``: the caller already ran :func:`check_token_ids` on these (B, T) int64 ids, so
        they are not read a second time. ``attention_mask`` (B, T): 1 for a token, 0 for padding;
        only a family that counts its positions over the mask (OPT) or multiplies by it
        (DeBERTa) reads it."""
        config = self.config
        input_ids = ids if checked else self.check_ids(ids)
        if config.window is not None:  # Longformer, LED: pads to a multiple of the window
            input_ids, attention_mask = pad_tensors(input_ids, attention_mask, config)
        input_ids = input_ids.to(self.token_embedding.weight.device)  # (B, T)
        looked_up = self.token_embedding(input_ids)  # (B, T, w)
        steps: dict[str, torch.Tensor | None] = {"token_embeddings": looked_up}
        hidden = looked_up
        if config.embed_scale != 1.0:
            if config.scale_rounding == "dtype":
                # As Gemma does: the scale in the embeddings' own dtype, then one multiplication.
                scale = torch.tensor(config.embed_scale, dtype=hidden.dtype).to(hidden.device)
                hidden = hidden * scale  # (B, T, w)
            else:  # a Python float, as Granite's embedding_multiplier
                hidden = hidden * float(config.embed_scale)
            steps["scaled_embeddings"] = hidden
        if config.replaced_id is not None:  # T5Gemma 2: its EOI id's rows, a learned row
            hit = (input_ids == config.replaced_id).unsqueeze(-1)  # (B, T, 1)
            hidden = torch.where(hit, self.replacement.to(hidden.dtype), hidden)
            steps["replaced_embeddings"] = hidden
        if config.token_dropout_id is not None:  # ESM: (B, T, w), mask rows zeroed, rescaled
            mask = None if attention_mask is None else attention_mask.to(hidden.device)
            hidden = token_dropout(hidden, input_ids, config.token_dropout_id, mask)
            steps["token_dropout_embeddings"] = hidden
        if config.trigram:  # MobileBERT: (B, T, w) -> (B, T, 3w)
            hidden = trigram(hidden)
            steps["trigram_embeddings"] = hidden
        if config.concat_widths:  # RoCBERT: [row, shape row 0, pronunciation row 0]
            beside = [t[0].expand(*hidden.shape[:-1], t.shape[1]) for t in self.concat_tables]
            hidden = torch.cat([hidden, *beside], dim=-1)
            steps["concat_embeddings"] = hidden
        projection = config.projection if self.project_in is not None else None
        if projection == "lookup":  # OPT: (B, T, w) -> (B, T, d)
            hidden = project(hidden, self.project_in, self.project_bias)
            steps["projected_embeddings"] = hidden
        type_rows = None
        if self.token_type_embedding is not None:
            types = torch.zeros_like(input_ids)  # every token is of type 0 (segment A)
            type_rows = self.token_type_embedding(types)  # (B, T, s)
            steps["token_type_embeddings"] = type_rows
        if type_rows is not None and not config.positions_first:
            hidden = hidden + type_rows
        position_embeddings = self._positions(input_ids, attention_mask, steps)
        if position_embeddings is not None:
            hidden = hidden + position_embeddings  # (B, T, s) + (T, s) -> (B, T, s)
        if config.row0_tables:  # TAPAS, LayoutLM: row 0 of each table, added in turn
            shown = None
            for table in self.row0_tables:
                hidden = hidden + table[0]  # (B, T, s) + (s,)
                shown = table[0] if shown is None else shown + table[0]
            steps["row0_embeddings"] = shown.expand_as(hidden)
        if type_rows is not None and config.positions_first:  # DeBERTa adds types last
            hidden = hidden + type_rows
        if projection == "before_norm":  # DeBERTa's embed_proj: (B, T, w) -> (B, T, d)
            hidden = project(hidden, self.project_in, self.project_bias)
            steps["projected_sum"] = hidden
        if config.norm_eps is not None:  # (B, T, d): a norm, with a weight or without
            hidden = normalise(hidden, config, self.norm_weight, self.norm_bias)
            steps["embedding_layernorm"] = hidden
        if projection == "after_norm":  # ALBERT's, ELECTRA's: (B, T, w) -> (B, T, d)
            hidden = project(hidden, self.project_in, self.project_bias)
            steps["projected_output"] = hidden
        if config.mask_multiply:  # pads' rows zeroed, as DeBERTa, XLM and ESM do
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            mask = attention_mask.to(hidden.device).unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
            hidden = hidden * mask
            steps["masked_embeddings"] = hidden
        names = ("position_ids", "position_embeddings", "rope_angles", "scaled_embeddings")
        names += ("projected_embeddings", "token_type_embeddings", "embedding_layernorm")
        names += ("projected_sum", "projected_output", "masked_embeddings", "trigram_embeddings")
        names += ("token_dropout_embeddings", "block_input", "row0_embeddings", "concat_embeddings")
        names += ("replaced_embeddings",)
        if config.block_layout != "tokens":  # hyper-connection streams, time-major, ...
            steps["block_input"] = arrange(hidden, config, list(self.altup))
        return EmbeddingTrace(
            input_ids=input_ids,
            token_embeddings=looked_up,
            input_embeddings=hidden,
            config=config,
            **{name: steps.get(name) for name in names},
        )

    def _positions(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        steps: dict[str, torch.Tensor | None],
    ) -> torch.Tensor | None:
        """The position ids, and the rows added to the sum ((T, s) or (B, T, s)), or rope's
        angles (nothing added); None where nothing is added."""
        config = self.config
        family = config.positional
        if family == "learned" and self.position_embedding is None:
            family = "none"
        if family not in ("learned", "sinusoidal", "rope"):
            return None
        position_ids = self.position_rows(input_ids, attention_mask)  # (T,) or (B, T)
        steps["position_ids"] = position_ids
        if family == "rope":
            # Nothing is added: attention rotates queries and keys by these angles instead.
            dim = config.rope_dim or config.d_model
            scaling = config.rope_scaling
            if not scaling or dict(scaling).get("applied", True):
                steps["rope_angles"] = rope_angles(
                    position_ids, dim, config.rope_theta, scaling
                )  # (T, r/2)
            return None
        if family == "sinusoidal":
            position_embeddings = self._sinusoids(position_ids)  # fixed, no parameters
        else:
            position_embeddings = self.position_embedding(position_ids)  # learned
        steps["position_embeddings"] = position_embeddings
        return position_embeddings

    def position_rows(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The rows of the positional table each token reads: 0..T-1 after the family's offset
        (T,), or, where a family counts positions per sequence, (B, T): over the attention mask,
        pads one row before the first (OPT), or over the ids that are not padding (RoBERTa)."""
        config = self.config
        length = input_ids.shape[1]
        if config.position_ids == "mask":
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            mask = attention_mask.to(input_ids.device).long()
            counted = torch.cumsum(mask, dim=1) * mask - 1  # pads: -1
            return counted + config.position_offset  # (B, T)
        if config.position_ids == "padding":
            real = input_ids.ne(config.padding_idx).long()
            return torch.cumsum(real, dim=1) * real + config.padding_idx  # (B, T)
        if length > self.position_ids.shape[0]:  # past the buffer: counted for this batch
            return torch.arange(length, device=input_ids.device) + config.position_offset
        return self.position_ids[:length] + config.position_offset  # (T,)

    def _sinusoids(self, rows: torch.Tensor) -> torch.Tensor:
        """The fixed table's ``rows``; rows past the buffer computed by the same formula."""
        table = self.sinusoidal_table
        needed = int(rows.max()) + 1 if rows.numel() and rows.device.type != "meta" else 0
        if needed > table.shape[0]:
            config = self.config
            more = sinusoids(config.sinusoid, needed, config.sum_width, config.padding_idx)
            table = more.to(device=table.device, dtype=table.dtype)
        return table[rows]

    def forward(
        self,
        ids: torch.Tensor,
        *,
        checked: bool = False,
        attention_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(B, T) or (T,) token ids -> (B, T, d) input embeddings: the rows of the ids given
        (Longformer's pads to its attention window, which change none of them, are the
        trace's; where a family's first block takes the rows arranged otherwise,
        ``trace(...).block_input`` is that arrangement)."""
        trace = self.trace(ids, checked=checked, attention_mask=attention_mask)
        return trace.input_embeddings[..., : ids.shape[-1], :]


def build_embedding(
    config: EmbedConfig,
    device: torch.device | str = "cpu",
    tables: tuple[torch.Tensor, torch.Tensor | None] | None = None,
    extras: dict[str, torch.Tensor] | None = None,
) -> InputEmbedding:
    """Create the seeded tables (or take trained ``tables``) on the CPU, then move them to
    ``device`` and ``config.dtype``."""
    device = torch.device(device)
    if device.type == "meta" and tables is None:
        return InputEmbedding(config, meta=True).to(dtype=torch_dtype(config.dtype))
    module = InputEmbedding(config, tables=tables, extras=extras)
    return module.to(device=device, dtype=torch_dtype(config.dtype))
