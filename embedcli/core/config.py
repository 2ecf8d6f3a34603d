"""The embedding configuration: one frozen dataclass, validated once, passed down whole."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from embedcli.core.kinds import (
    BLOCK_LAYOUTS,
    POSITION_IDS,
    POSITIONAL_FAMILIES,
    TABLE_DTYPE_SINUSOIDS,
    BlockLayout,
    NormKind,
    Positional,
    PositionIds,
    Projection,
    ScaleRounding,
)
from embedcli.core.sinusoids import Sinusoid
from embedcli.errors import ConfigError, InputTextError, SequenceTooLongError

DType = Literal["float32", "float16", "bfloat16"]
DTYPES: tuple[DType, ...] = get_args(DType)

# The defaults, once: GPT-2 small's input layer, and the book's (8, 4) example batch.
DEFAULT_VOCAB_SIZE = 50257
DEFAULT_D_MODEL = 768
DEFAULT_CONTEXT_LENGTH = 1024
DEFAULT_SEED = 123
DEFAULT_ROPE_THETA = 10000.0  # rope's base in the RoFormer paper, and most models' own
DEFAULT_BATCH_SIZE = 8  # B, for every command that batches (windows, inspect-shapes, streaming)
DEFAULT_SEQ_LEN = 4  # T, for windows and inspect-shapes (the book's max_length=4)
PICTURE_POSITIONS = 64  # `positions` draws fewer rows and columns than embed's tables hold,
PICTURE_D_MODEL = 128  # so that the picture fits a terminal


@dataclass(frozen=True)
class EmbedConfig:
    """Sizes and initialisation of the input layer (GPT-2 small by default)."""

    vocab_size: int = DEFAULT_VOCAB_SIZE  # rows of the token table; must exceed every id in use
    d_model: int = DEFAULT_D_MODEL  # width of every embedding vector
    context_length: int = DEFAULT_CONTEXT_LENGTH  # rows of the positional table: longest sequence
    positional: Positional = "learned"  # learned (GPT-2's table), sinusoidal (fixed), rope, or none
    seed: int = DEFAULT_SEED  # torch.manual_seed before the tables are created, on the CPU
    dtype: DType = "float32"  # dtype of the tables after creation: float32, float16, bfloat16
    rope_theta: float = (
        DEFAULT_ROPE_THETA  # rope's base: a model's own (Llama 3: 500000) replaces 10000
    )
    rope_dim: int | None = None  # dimensions rope rotates (a model's head_dim); None: d_model
    embed_scale: float = 1.0  # token embeddings are multiplied by this (Gemma: sqrt(d_model))
    # a model's rope scaling applied to the angles: (("rope_type", "llama3"), ("factor", 8.0), ...)
    rope_scaling: tuple[tuple[str, Any], ...] | None = None
    # What a real model family does besides lookup and addition (families/ says which):
    # "dtype": the scale is rounded to the tables' dtype first (Gemma's buffer); "float": a
    # Python float multiplies (Granite's embedding_multiplier, BioGPT's sqrt(d))
    scale_rounding: ScaleRounding = "dtype"
    position_offset: int = 0  # rows of the positional table before position 0 (OPT: 2)
    # "arange": 0..T-1; "mask": counted over the attention mask, pads at -1 (OPT, BioGPT);
    # "padding": counted over the ids that are not padding_idx, pads at padding_idx (RoBERTa)
    position_ids: PositionIds = "arange"
    padding_idx: int | None = None
    sinusoid: Sinusoid = "interleaved"  # or "halves": sines then cosines (fairseq's, XGLM's)
    token_types: bool = False  # BERT: token_type_embeddings(0) is added
    # tables whose row 0 is added after the positions, in turn (TAPAS's seven token-type
    # tables, LayoutLM's box coordinates of an all-zero box): how many
    row0_tables: int = 0
    replaced_id: int | None = None  # T5Gemma 2: this id's rows become a learned row (its EOI)
    norm_eps: float | None = None  # a LayerNorm before the first block (BLOOM, BERT), its eps
    token_width: int | None = None  # the token table's width when a projection follows (OPT)
    projection: Projection = "lookup"  # where the projection from token_width runs
    norm_kind: NormKind = "layernorm"  # the embedding norm's formula (with norm_eps)
    positions_first: bool = False  # positions added before token types (DeBERTa's order)
    mask_multiply: bool = False  # the result times the attention mask (DeBERTa, XLM, ESM)
    # MobileBERT: the rows of the next, this and the previous token concatenated (zeros past
    # the ends), 3 x token_width wide, then the projection (which then always runs)
    trigram: bool = False
    # RoCBERT: row 0 of tables this wide put beside each token's row (its shape and
    # pronunciation tables, with no ids given), before the projection
    concat_widths: tuple[int, ...] = ()
    # ESM's token dropout: rows of this (mask) token id zeroed, every row then × (1 - 0.15 × 0.8)
    # / (1 - the share of mask tokens among the sequence's unpadded tokens)
    token_dropout_id: int | None = None
    # False where the family has no length limit (ALiBi, T5, Mamba): context_length is then
    # not a limit, and reports say null rather than invent one
    context_limit: bool = True
    block_layout: BlockLayout = "tokens"  # how block 0 takes input_embeddings (core.layouts)
    # Longformer, LED: ids padded with window_pad_id to a multiple of this before the lookup
    window: int | None = None
    window_pad_id: int = 0
    streams: int = 1  # the copies of each row block 0 reads (hyper-connections' hc_mult)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "context_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{name} must be a positive integer, got {value!r} ({flag})")
        # the largest table: the token table, or a learned position table (rope, ALiBi and the
        # others have none of context_length rows)
        learned = self.positional == "learned"
        rows = max(self.vocab_size, self.context_length if learned else 0)
        if rows * self.d_model * 8 >= 2**63:  # torch counts a tensor's bytes in an int64
            raise ConfigError(
                f"a ({rows:,}, {self.d_model:,}) table has more bytes than torch can count; "
                "lower --d-model, --vocab-size or --context-length"
            )
        if self.positional not in POSITIONAL_FAMILIES:
            raise ConfigError(
                f"unknown positional family {self.positional!r}; "
                f"choose one of: {', '.join(POSITIONAL_FAMILIES)}"
            )
        odd = self.d_model % 2 and not (self.positional == "rope" and self.rope_dim)
        if self.positional in ("sinusoidal", "rope") and odd:
            raise ConfigError(
                f"{self.positional} positions work on pairs of dimensions (sin and cos), so "
                f"--d-model must be even, got {self.d_model}"
            )
        self._check_model_fields()
        self._check_family_fields()
        if self.dtype not in DTYPES:
            raise ConfigError(f"unknown dtype {self.dtype!r}; choose one of: {', '.join(DTYPES)}")
        in_table_dtype = self.sinusoid in TABLE_DTYPE_SINUSOIDS
        if self.positional == "sinusoidal" and in_table_dtype and self.dtype != "float32":
            raise ConfigError(
                f"this family computes its sinusoids in the embeddings' own dtype "
                f"({self.dtype} here), which embedcli does not reproduce: only float32 is "
                "exact; use --dtype float32"
            )
        if (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not 0 <= self.seed < 2**64  # torch.manual_seed's range
        ):
            raise ConfigError(f"seed must be an integer from 0 to 2**64 - 1, got {self.seed!r}")

    def _check_model_fields(self) -> None:
        import math

        if isinstance(self.rope_theta, int | float) and not self.rope_theta > 1:
            raise ConfigError(f"rope_theta must be above 1, got {self.rope_theta!r}")
        for name in ("rope_theta", "embed_scale"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not (math.isfinite(value) and value > 0)
            ):
                raise ConfigError(f"{name} must be a positive finite number, got {value!r}")
        rope_dim = self.rope_dim
        if rope_dim is not None and (
            isinstance(rope_dim, bool)
            or not isinstance(rope_dim, int)
            or not 2 <= rope_dim <= self.d_model
            or rope_dim % 2
        ):
            raise ConfigError(
                f"rope_dim must be an even number from 2 to d_model ({self.d_model}), "
                f"got {rope_dim!r}"
            )

    def _check_family_fields(self) -> None:
        checks = (
            (self.scale_rounding in get_args(ScaleRounding), "scale_rounding", self.scale_rounding),
            (self.position_ids in POSITION_IDS, "position_ids", self.position_ids),
            (self.sinusoid in get_args(Sinusoid), "sinusoid", self.sinusoid),
            (self.projection in get_args(Projection), "projection", self.projection),
            (self.norm_kind in get_args(NormKind), "norm_kind", self.norm_kind),
            (_whole(self.position_offset, 0), "position_offset", self.position_offset),
            (
                self.padding_idx is None or _whole(self.padding_idx, 0),
                "padding_idx",
                self.padding_idx,
            ),
            (
                self.token_width is None or _whole(self.token_width, 1),
                "token_width",
                self.token_width,
            ),
            (self.block_layout in BLOCK_LAYOUTS, "block_layout", self.block_layout),
            (_whole(self.streams, 1), "streams", self.streams),
            (self.window is None or _whole(self.window, 1), "the attention window", self.window),
            (
                _whole(self.window_pad_id, 0) and self.window_pad_id < self.vocab_size,
                "the window's pad id",
                self.window_pad_id,
            ),
            (all(_whole(w, 1) for w in self.concat_widths), "concat_widths", self.concat_widths),
            (_whole(self.row0_tables, 0), "row0_tables", self.row0_tables),
            (
                self.replaced_id is None or _whole(self.replaced_id, 0),
                "replaced_id",
                self.replaced_id,
            ),
        )
        for good, name, value in checks:
            if not good:
                raise ConfigError(f"{name} cannot be {value!r}")
        if self.position_ids == "padding" and self.padding_idx is None:
            raise ConfigError("position_ids 'padding' needs a padding_idx")
        if self.norm_eps is not None and not (
            isinstance(self.norm_eps, float | int) and 0 < self.norm_eps < 1
        ):
            raise ConfigError(f"norm_eps must be between 0 and 1, got {self.norm_eps!r}")

    @property
    def width(self) -> int:
        """Columns of the token table: d_model, or the narrower width a projection widens."""
        return self.token_width or self.d_model

    @property
    def projects(self) -> bool:
        """Whether a projection runs: from a narrower table (OPT, ELECTRA), or always where it
        is placed around the norm (ALBERT, FNet: a Linear even between equal widths)."""
        if self.token_width is None:
            return False
        if self.trigram or self.concat_widths:
            return True
        return self.token_width != self.d_model or self.projection != "lookup"

    @property
    def projected_width(self) -> int:
        """Width of what the projection reads: the table's, three tables' with trigram."""
        return (3 * self.width if self.trigram else self.width) + sum(self.concat_widths)

    @property
    def sum_width(self) -> int:
        """Width of the summed embeddings (types, positions): the table's where the projection
        runs after the sum (DeBERTa, ALBERT), else d_model."""
        return self.width if self.projects and self.projection != "lookup" else self.d_model

    @property
    def norm_width(self) -> int:
        """Width the embedding norm runs over: the table's where the projection follows it."""
        return self.width if self.projects and self.projection == "after_norm" else self.d_model

    @property
    def position_rows(self) -> int:
        """Rows of the positional table: the context, and the rows before position 0."""
        before = self.position_offset
        if self.position_ids == "padding" and self.padding_idx is not None:
            before = self.padding_idx + 1
        return self.context_length + before

    @property
    def has_positional_table(self) -> bool:
        """Whether the module owns a learned positional table."""
        return self.positional == "learned"

    @property
    def num_parameters(self) -> int:
        """Parameters in the token table plus the positional table (if any)."""
        position = self.position_rows if self.has_positional_table else 0
        return self.vocab_size * self.width + position * self.sum_width

    def check_length(self, length: int, what: str = "sequence length", fix: str = "") -> None:
        """The one context-length check: raise SequenceTooLongError when ``length`` exceeds it.

        ``what`` names the thing measured (``line 3 has``, ``--seq-len``); ``fix`` says what to do
        (default: truncate or raise the context length)."""
        if self.context_limit and length > self.context_length:
            fix = fix or "pass --truncate-to-context (or --truncate N), or raise --context-length"
            raise SequenceTooLongError(
                f"{what} ({length}) exceeds the context length ({self.context_length}); {fix}"
            )

    def cut_length(self, truncate: int | None, to_context: bool = False) -> int | None:
        """How many tokens a text keeps: ``truncate`` (--truncate N, checked against the context
        length), the context length (--truncate-to-context), or None (no cut)."""
        if truncate is None:
            if to_context and not self.context_limit:
                raise InputTextError(
                    "--truncate-to-context: this model has no context limit (its positions "
                    "act inside attention); pass --truncate N"
                )
            return self.context_length if to_context else None
        if truncate < 1:
            raise InputTextError(f"--truncate must be at least 1 token, got {truncate}")
        self.check_length(truncate, "--truncate", "lower --truncate or raise --context-length")
        return truncate

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy; the rope fields only for rope positions, the input scaling only
        where a model has one."""
        data = asdict(self)
        if self.positional != "rope":
            del data["rope_theta"], data["rope_dim"]
        if self.positional != "rope" or self.rope_scaling is None:
            del data["rope_scaling"]
        else:
            data["rope_scaling"] = dict(self.rope_scaling)
        if self.embed_scale == 1.0:
            del data["embed_scale"]
        if self.embed_scale == 1.0:
            del data["scale_rounding"]
        if not self.context_limit:
            data["context_length"] = None
        del data["context_limit"]
        defaults = {
            "position_offset": 0,
            "position_ids": "arange",
            "padding_idx": None,
            "sinusoid": "interleaved",
            "token_types": False,
            "row0_tables": 0,
            "replaced_id": None,
            "norm_eps": None,
            "token_width": None,
            "projection": "lookup",
            "norm_kind": "layernorm",
            "positions_first": False,
            "mask_multiply": False,
            "trigram": False,
            "concat_widths": (),
            "token_dropout_id": None,
            "block_layout": "tokens",
            "window": None,
            "window_pad_id": 0,
            "streams": 1,
        }
        for name, default in defaults.items():  # said only where a family does something
            if data[name] == default:
                del data[name]
        return data


def _whole(value: Any, low: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= low


@dataclass(frozen=True)
class Preset:
    """A named model configuration for ``inspect-shapes``."""

    name: str
    description: str
    config: EmbedConfig
    batch_size: int = DEFAULT_BATCH_SIZE
    seq_len: int = DEFAULT_SEQ_LEN
    n_layers: int | None = None  # transformer blocks of the full GPT-2-style model, when known
    parameters: int | None = None  # the whole model's parameters, when counted (a checkpoint)
    # a real family's preset (embedcli.models.presets): its registry family, the hub id its
    # values come from, and for a mixture of experts the parameters one token runs through
    family: str | None = None
    source: str | None = None
    active_parameters: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    tied: bool = True  # the output head is the token table (GPT-2's); False: a separate head
    heads: int | None = None  # attention heads per block, where known: a head is d / heads wide
    published: str | None = None  # the parameter count a real model's hub page shows
    published_note: str | None = None  # why that count is not the model's own, where it is not
    head_width: int | None = None  # a query head's width where the config gives it (head_dim)
    # a checkpoint's tables as the file holds them: (table, its type there, bytes there)
    stored: tuple[tuple[str, str, int], ...] = ()

    @property
    def head_dim(self) -> int | None:
        """The width of one attention head of the preset's own model (None: unknown): the
        config's head_dim where it gives one (Gemma, Qwen 3, gpt-oss), else d / heads."""
        if self.head_width is not None:
            return self.head_width
        d, heads = self.config.d_model, self.heads
        return d // heads if heads and d % heads == 0 else None

    @property
    def model_parameters(self) -> int | None:
        """Parameters of the whole GPT-2-style model (output head tied to the token table).

        Per block: two LayerNorms (4d), attention qkv (3d² + 3d) and projection (d² + d), MLP
        (4d² + 4d and 4d² + d): 12d² + 13d. Plus the two tables and the final LayerNorm (2d).
        GPT-2 small gives 124,439,808; GPT-3 gives 174.6 billion ("175B").
        """
        if self.parameters is not None:
            return self.parameters
        if self.n_layers is None:
            return None
        d = self.config.d_model
        per_block = 12 * d * d + 13 * d
        return self.config.num_parameters + self.n_layers * per_block + 2 * d


def _gpt(d_model: int, context_length: int = DEFAULT_CONTEXT_LENGTH) -> EmbedConfig:
    return EmbedConfig(d_model=d_model, context_length=context_length)


_GPT2 = {"family": "GPT-2"}
PRESETS = {
    p.name: p
    for p in (
        Preset("gpt2", "GPT-2 small, 124M", _gpt(768), n_layers=12, source="openai-community/gpt2",
               heads=12, **_GPT2),
        Preset("gpt2-medium", "GPT-2 medium, 355M", _gpt(1024), n_layers=24,
               source="openai-community/gpt2-medium", heads=16, **_GPT2),
        Preset("gpt2-large", "GPT-2 large, 774M", _gpt(1280), n_layers=36,
               source="openai-community/gpt2-large", heads=20, **_GPT2),
        Preset("gpt2-xl", "GPT-2 XL, 1.5B", _gpt(1600), n_layers=48,
               source="openai-community/gpt2-xl", heads=25, **_GPT2),
        Preset("gpt3", "GPT-3, 175B", _gpt(12288, 2048), n_layers=96, heads=96,
               family="GPT-3",
               source="Brown et al. 2020, table 2.1"),
        Preset("book-ch2", "LLM-from-scratch ch. 2: input (8,4,256)",
               EmbedConfig(d_model=256, context_length=4), family="LLM from scratch",
               source="Raschka 2024, chapter 2"),
    )
}  # fmt: skip
DEFAULT_PRESET = "gpt2"


@dataclass(frozen=True)
class Overrides:
    """What the flags say about the input layer; None where a flag was not given."""

    vocab_size: int | None = None
    d_model: int | None = None
    context_length: int | None = None
    positional: str | None = None
    dtype: str | None = None
    seed: int | None = None

    def given(self) -> dict[str, Any]:
        """The fields that were set."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def apply(self, base: EmbedConfig) -> EmbedConfig:
        """``base`` with every given field replaced (preset merging, seeded defaults)."""
        from dataclasses import replace

        return replace(base, **self.given())


def changes(preset: Preset, config: EmbedConfig) -> dict[str, Any]:
    """The sizes and position family the flags changed from the preset's own: {field: new
    value} (the dtype changes no count, and every report names it anyway)."""
    fields = ("vocab_size", "d_model", "context_length", "positional")
    return {
        name: getattr(config, name)
        for name in fields
        if getattr(config, name) != getattr(preset.config, name)
    }
