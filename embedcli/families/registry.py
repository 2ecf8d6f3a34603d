"""The registry of model families: ``Family`` (one declarative entry, keyword fields only),
``register``, the lookups by ``model_type`` and by GGUF architecture, and the refusal of a
``model_type`` with no entry.

An entry says what a family computes before its first block, as its ``transformers`` classes do:
where the token table lives (in the base model, and behind the LM-head class's prefix), the
position family (a learned table and its offset, sinusoids, rope, ALiBi, T5's relative buckets,
or none), the input scale and the dtype it is applied in, what runs between the lookup and the
first block (OPT's projection, BERT's token types, a LayerNorm), the config field that bounds
the context, and the tied head; and everything else embedcli knows of the family: its parameter
formula, the GGUF architectures llama.cpp writes for it, its published presets, the key layouts
of its bare checkpoints. Nothing outside this package asks which family a model is: code reads
the entry's fields.

Each field's transformers defaults and aliases (``defaults.json``) are generated from the
config classes by ``tests/support/update_family_defaults.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from embedcli.core.kinds import (
    WEIGHTLESS_NORMS,
    BlockLayout,
    NormKind,
    Positional,
    PositionIds,
    Projection,
    ScaleRounding,
)
from embedcli.core.sinusoids import Sinusoid
from embedcli.core.steps import NORM_NAMES, STEP_LABELS, STEP_ORDER
from embedcli.errors import ConfigError
from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import Fields, Formula, ParameterCount

LIST_URL = "https://embedcli.github.io/embedcli/families/"

# the manual's words for a block layout other than (B, T, d)
_LAYOUT_LABELS = {
    "streams": "n streams (B, T, n, d)",
    "streams_flat": "n streams side by side (B, T, n·d)",
    "time_major": "read as (T, B, d)",
    "channels_first": "read as (B, d, T)",
    "altup": "AltUp stack (n, B, T, d)",
}

RopeDim = Literal["head", "rotary_dim", "qk_rope"]  # head x partial factor; GPT-J's; MLA's
AlibiSlopes = Literal["press", "mpt"]  # Press et al.'s (BLOOM, Falcon), or MPT's bias_max


@dataclass(frozen=True, kw_only=True)
class Published:
    """A real model's published config.json: an offline preset of inspect-shapes and positions."""

    name: str  # the preset's name (--preset)
    description: str  # as the preset table shows it
    hub_id: str  # where the values come from
    published: str  # the parameter count the hub's model page shows
    config: Mapping[str, Any]  # the fields embedcli reads, and what counting needs
    published_note: str | None = None  # why the published count is not the model's own


@dataclass(frozen=True, kw_only=True)
class Layout:
    """A known way of naming the tables of a bare checkpoint (no config.json), after wrapper
    prefixes are removed."""

    name: str  # as reports name the layout
    token: str  # the token table's key
    position: str | None  # the learned positional table's key; None: the layout has none
    head: str | None = None  # the output head's key
    head_transposed: bool = False  # TransformerLens stores W_U as (d, vocab)


@dataclass(frozen=True, kw_only=True)
class Family:
    """What one model family does before its first block (keys relative to the base model),
    and what else embedcli knows of it."""

    name: str  # as people call it
    model_types: tuple[str, ...]  # the config.json model_type values it reads
    architectures: tuple[str, ...]  # the transformers classes: base model, then LM head
    token: tuple[str, ...] = ("embed_tokens.weight",)  # token-table keys, the first found wins
    prefixes: tuple[str, ...] = ("model",)  # where the LM-head class keeps the base model
    positional: Positional = "rope"  # the position family
    position: str | None = None  # the learned positional table's key
    offset: int = 0  # rows before position 0 (OPT: 2); RoBERTa's comes from padding_idx
    offset_in_context: bool = False  # the offset rows count in the context field (ProphetNet)
    position_ids: PositionIds = "arange"  # arange, mask (OPT), padding (RoBERTa)
    sinusoid: Sinusoid = "interleaved"  # or halves: fairseq's sines, then cosines (XGLM)
    # "sqrt_d", "sqrt_d_bfloat16" (rounded to bfloat16 whatever the tables' dtype:
    # RecurrentGemma), or the config field holding the multiplier
    scale: str | None = None
    scale_when: str | None = None  # a config flag that switches the sqrt_d scale on
    scale_rounding: ScaleRounding = "float"  # "dtype": rounded to the tables' dtype (Gemma)
    token_type: str | None = None  # the token-type table's key (type 0 is added)
    # tables whose row 0 is added after the positions, in turn: keys, a key may repeat
    # (LayoutLM's x and y tables, read twice for an all-zero box); with ``row0_count``, one
    # key with {i}, for i below the length of that config list (TAPAS's type_vocab_sizes)
    row0_tables: tuple[str, ...] = ()
    # tables whose row 0 is put beside each token's row before the projection: (key, the
    # config field of its width, the config flag that switches it on) (RoCBERT's shape and
    # pronunciation tables)
    concat_tables: tuple[tuple[str, str, str], ...] = ()
    # (the config field of an id, the key of a learned row, the field's class default): that
    # id's rows are replaced by the row after the scale (T5Gemma 2: eoi_token_index,
    # embed_tokens.eoi_embedding, 256000), the field read from the encoder's sub-config
    replaced_row: tuple[str, str, int] | None = None
    row0_count: str | None = None
    # an embedding norm's key prefix (weight and bias); a weightless norm_kind needs none
    norm: str | None = None
    norm_eps: tuple[str, ...] = ("layer_norm_eps",)  # its eps fields; (): norm_eps_default
    norm_eps_default: float = 1e-5  # the eps where no field gives one (DistilBERT's is 1e-12)
    project_in: str | None = None  # a projection's weight key: from a narrower table (OPT)
    # where the projection runs: "lookup" (OPT), "before_norm" (DeBERTa's embed_proj, after
    # the sum), "after_norm" (ALBERT's embedding_hidden_mapping_in, ELECTRA's embeddings_project)
    projection: Projection = "lookup"
    project_bias: bool = False  # the projection has a bias (project_in's key, .bias for .weight)
    # "narrower": only where the table's width differs from hidden_size (OPT, ELECTRA);
    # "always": the Linear exists whatever the widths (ALBERT, RemBERT, FNet)
    project_when: Literal["narrower", "always"] = "narrower"
    width: tuple[str, ...] = ("word_embed_proj_dim",)  # the table-width fields; none: d_model
    # the embedding norm's formula: rmsnorm, nonorm; weightless_rmsnorm runs without a norm key
    norm_kind: NormKind = "layernorm"
    norm_bias: bool = True  # the embedding norm has a bias (norm + ".bias")
    positions_first: bool = False  # positions added before token types (DeBERTa's order)
    mask_multiply: bool = False  # the result times the attention mask (DeBERTa, XLM, ESM)
    trigram: bool = False  # MobileBERT's [next, this, previous] rows before its projection
    token_dropout: str | None = None  # ESM's flag: its mask token's rows dropped and rescaled
    # relative positions read from T5's bucket fields; False: computed inside attention from
    # fields that change nothing before the first block (DeBERTa's relative embeddings)
    relative_buckets: bool = True
    context: tuple[str, ...] = ("max_position_embeddings",)  # the context fields; (): no limit
    rope_dim: RopeDim = "head"  # the rule for the dimensions rope rotates
    alibi: AlibiSlopes | None = None  # ALiBi's slopes, where the family has them
    alibi_flag: str | None = None  # a config flag that turns rope into ALiBi (Falcon's)
    # (field, value): rope only where the config's field holds value, else no positions at all
    # (Granite 4 hybrids: position_embedding_type "rope", not None or "nope"; Zamba2:
    # use_mem_rope true)
    rope_when: tuple[str, object] | None = None
    # a config field of per-layer overrides keyed by layer index (Gemma 4's per_layer_config):
    # layer 0's head_dim is the first block's; another field overridden there is refused
    layer_overrides: str | None = None
    # (layer type, field, default): where config.json has no such overrides, transformers
    # derives that type's head_dim from the field (Gemma 4: full_attention, global_head_dim, 512)
    derived_overrides: tuple[str, str, int] | None = None
    # why embedcli refuses every model of the family: what its first block reads that embedcli
    # does not compute (Gemma 3n's stack of AltUp streams)
    refusal: str | None = None
    head: str | None = "lm_head.weight"  # the output head's key (absent: tied)
    requires: tuple[tuple[str, object], ...] = ()  # config fields that must hold these values
    # an encoder-decoder's stacks, in the order they run: the first one the checkpoint has
    # holds the input layer (its positions and norm); the token table may be shared above them
    stacks: tuple[str, ...] = ()
    text_config: tuple[str, ...] = ()  # model_types whose language model is in text_config
    # where those model_types keep it: text_config, or the encoder's sub-config (T5Gemma)
    text_path: tuple[str, ...] = ("text_config",)
    # a composition of other families' models: the sub-config (at text_path) whose own family's
    # input layer runs first, its keys under this name (EncoderDecoderModel: "encoder")
    composes: str | None = None
    # how its first block takes the input embeddings, where not as (B, T, d) (core.layouts):
    # streams / streams_flat (hyper-connections: copies, their count in the config field
    # ``streams``), time_major (T, B, d), channels_first (B, d, T)
    block_layout: BlockLayout = "tokens"
    streams: str | None = None  # the config field of the stream count (hc_mult)
    # the key of AltUp's projection i (with {i}), for the altup layout (Gemma 3n's)
    altup: str | None = None
    # the config field of the window the ids are padded to a multiple of, with pad_token_id,
    # before the lookup (Longformer's, LED's attention_window)
    window: str | None = None
    # inputs its first block reads beside the hidden states, which embedcli does not show:
    # (name, what it is) (NeoMME's value_embeddings, a second token table added to values)
    side_inputs: tuple[tuple[str, str], ...] = ()
    vocab: str = "vocab_size"  # the field of the token table's rows (FSMT's: src_vocab_size)
    extra_rows: int = 0  # token-table rows past vocab_size (Mllama's 8, Moshi's 1)
    # multimodal rope (Qwen2-VL's): transformers' default (temporal, height, width) sections,
    # where config.json gives no mrope_section; None: one position stream
    mrope_section: tuple[int, ...] | None = None
    # the config list saying per layer whether it uses rope (1) or not (0), where some layers
    # have none (Llama 4's no_rope_layers); without it, a rope-free layer every Nth: N from the
    # second field, else the third (the config class's default)
    rope_layers: tuple[str, str, int] | None = None
    # the config list of each layer's own rope base, 0 for a layer without rope (Granite SWA's
    # layer_rope_theta): it replaces rope_theta layer by layer, one rotary module per base
    layer_thetas: str | None = None
    # (layer type, rope set) where rope_parameters is keyed by set, not by layer type, the
    # first match wins, "*" for any type (DeepSeek V4: sliding_attention -> main, * -> compress)
    rope_set_for: tuple[tuple[str, str], ...] = ()
    gguf: tuple[GGUFArch, ...] = ()  # the general.architecture values llama.cpp writes for it
    # read from GGUF files only: why its config.json is not read (remote code, no transformers
    # class to hold embedcli's reading to)
    gguf_only: str | None = None
    # its code reads rope_parameters[layer_type] though its defaults keep no nested sets
    # (Cohere Compass: {}); otherwise told by the defaults (models.positions.per_layer_rope)
    rope_per_layer: bool = False
    own_encoding: tuple[str, int] | None = None  # a tiktoken encoding that is its tokenizer
    parameters: tuple[Formula, ...] = ()  # parameter formulas, per model_type
    presets: tuple[Published, ...] = ()  # published configs, offline
    layouts: tuple[Layout, ...] = ()  # bare checkpoints of the family, by key

    @property
    def normed(self) -> bool:
        """Whether a norm runs before the first block: one with tensors under ``norm``, or one
        without any (nanochat's weightless RMSNorm)."""
        return self.norm is not None or self.norm_kind in WEIGHTLESS_NORMS

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps before the first block, in order, named as the trace names the tensors
        they make (core.steps.STEP_ORDER): what `embed` shows for a model of this family (the
        scale only where ``scale_when`` is on, OPT's projection only where the token table is
        narrower than d_model)."""
        projected = bool(self.project_in)
        taken = {
            "token_embeddings": True,
            "scaled_embeddings": bool(self.scale),
            "token_dropout_embeddings": bool(self.token_dropout),
            "trigram_embeddings": self.trigram,
            "concat_embeddings": bool(self.concat_tables),
            "replaced_embeddings": bool(self.replaced_row),
            "projected_embeddings": projected and self.projection == "lookup",
            "token_type_embeddings": bool(self.token_type),
            "row0_embeddings": bool(self.row0_tables),
            "position_embeddings": self.positional in ("learned", "sinusoidal"),
            "projected_sum": projected and self.projection == "before_norm",
            "embedding_layernorm": self.normed,
            "projected_output": projected and self.projection == "after_norm",
            "masked_embeddings": self.mask_multiply,
            "block_input": self.block_layout != "tokens",
        }
        return tuple(name for name in STEP_ORDER if taken.get(name))

    @property
    def step_labels(self) -> tuple[str, ...]:
        """``steps`` in the words of the manual's table: STEP_LABELS, with this family's
        factor, position family, offset and position numbering."""
        said = dict(STEP_LABELS)
        said["embedding_layernorm"] = NORM_NAMES[self.norm_kind]
        if self.project_when == "narrower":
            for name in ("projected_sum", "projected_output"):
                said[name] += " (if narrower)"
        if self.scale:
            factor = {"sqrt_d": "× √d", "sqrt_d_bfloat16": "× √d in bfloat16"}.get(
                self.scale, f"× {self.scale}"
            )
            said["scaled_embeddings"] = (
                f"{factor} (if {self.scale_when})" if self.scale_when else factor
            )
        if self.positional in ("learned", "sinusoidal"):
            offset = f" (offset {self.offset})" if self.offset else ""
            padding = (
                " → (positions from padding_idx + 1)" if self.position_ids == "padding" else ""
            )
            said["position_embeddings"] = f"+ {self.positional}{offset}{padding}"
        said["block_input"] = _LAYOUT_LABELS.get(self.block_layout, "")
        if self.window:  # Longformer, LED: the ids padded before the lookup
            said["token_embeddings"] = "ids padded to attention_window → lookup"
        return tuple(said[name] for name in self.steps)

    @property
    def model_type(self) -> str:
        """The family's own model_type: the one a GGUF file or a preset is read as."""
        return self.model_types[0]

    def defaults(self, model_type: str | None = None) -> dict[str, Any]:
        """transformers' defaults of the fields embedcli reads (defaults.json)."""
        return dict(_defaults()["defaults"].get(model_type or self.model_type, {}))

    def aliases(self, model_type: str) -> dict[str, str]:
        """{name: the field the config class stores it as} (GPT-2's hidden_size is n_embd)."""
        return dict(_defaults()["aliases"].get(model_type, {}))

    def derived(self, model_type: str) -> dict[str, list[str]]:
        """{field: the fields its default follows} (OPT's word_embed_proj_dim: hidden_size)."""
        return dict(_defaults()["derived"].get(model_type, {}))

    def formula(self, model_type: str) -> Formula | None:
        """The parameter formula of ``model_type``, where the family has one."""
        return next((f for f in self.parameters if f.model_type == model_type), None)


FAMILIES: list[Family] = []  # in the order registered: the compatibility table's order
_BY_MODEL_TYPE: dict[str, Family] = {}
_BY_GGUF: dict[str, tuple[Family, GGUFArch]] = {}


def register(*families: Family) -> None:
    """Add entries to the registry; a model_type or GGUF architecture named twice is a bug."""
    for family in families:
        for model_type in family.model_types:
            if model_type in _BY_MODEL_TYPE:
                raise ValueError(f"model_type {model_type!r} is registered twice")
            _BY_MODEL_TYPE[model_type] = family
        for arch in family.gguf:
            if arch.name in _BY_GGUF:
                raise ValueError(f"GGUF architecture {arch.name!r} is registered twice")
            if (arch.model_type or family.model_type) not in family.model_types:
                raise ValueError(f"GGUF architecture {arch.name!r}: not a {family.name} type")
            _BY_GGUF[arch.name] = (family, arch)
        FAMILIES.append(family)


def family_of(model_type: object) -> Family | None:
    """The entry for a ``model_type``, or None when embedcli does not know it."""
    return _BY_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None


def family_of_gguf(arch: str) -> tuple[Family, GGUFArch] | None:
    """The entry a GGUF ``general.architecture`` maps onto, and how llama.cpp reads it; or
    None."""
    return _BY_GGUF.get(arch)


def gguf_architectures() -> list[str]:
    """Every GGUF architecture embedcli reads, sorted."""
    return sorted(_BY_GGUF)


def unknown_family(model_type: Any, where: str) -> ConfigError:
    """The refusal of a model_type the registry has no entry for."""
    if model_type is None:
        return ConfigError(
            f"{where} names no model_type, so embedcli cannot tell which family the model is, "
            f"and it will not guess its input layer from key names; the families it knows: "
            f"{LIST_URL}"
        )
    return ConfigError(
        f"{where} names model_type {model_type!r}, a family embedcli does not know, so it will "
        f"not guess its input layer from key names; the families it knows: {LIST_URL}"
    )


def rope_family(name: str, *model_types: str, arch: str, **more: Any) -> Family:
    """A Llama-shaped family: ``model.embed_tokens``, rope, nothing else before block 0;
    ``arch`` names its classes (``{arch}Model``, ``{arch}ForCausalLM``)."""
    return Family(
        name=name,
        model_types=model_types,
        architectures=(f"{arch}Model", f"{arch}ForCausalLM"),
        **more,
    )


def presets() -> list[Published]:
    """Every family's published configs, in the registry's order."""
    return [preset for family in FAMILIES for preset in family.presets]


def layouts() -> list[Layout]:
    """Every family's bare-checkpoint layouts, in the registry's order."""
    return [layout for family in FAMILIES for layout in family.layouts]


def count_parameters(config: Mapping[str, Any]) -> ParameterCount:
    """The parameters of the model a ``config.json`` describes (its family formula's class)."""
    if not isinstance(config, Mapping):
        raise ConfigError("the config is not a JSON object")
    model_type = config.get("model_type")
    family = family_of(model_type)
    formula = None if family is None else family.formula(str(model_type))
    if formula is None:
        named = "names no model_type" if model_type is None else f"names model_type {model_type!r}"
        counted = sorted(f.model_type for family in FAMILIES for f in family.parameters)
        raise ConfigError(
            f"the config {named}, a family whose parameters embedcli cannot count; "
            f"it counts {', '.join(counted)}"
        )
    return formula.count(Fields(config, f"{model_type} config"))


def compatibility_table() -> str:
    """The Markdown table of every family (the manual's families page holds it verbatim)."""
    lines = [
        "| Family | model_type | Positions | Before the first block | Context field |",
        "| --- | --- | --- | --- | --- |",
    ]
    for family in FAMILIES:
        types = ", ".join(f"`{t}`" for t in family.model_types)
        positions = family.positional
        if family.alibi_flag:
            positions = f"rope, or alibi with `{family.alibi_flag}: true`"
        context = ", ".join(f"`{c}`" for c in family.context) or "none (no limit)"
        steps = " → ".join(family.step_labels)
        if family.rope_when:
            field, value = family.rope_when
            positions = f"rope with `{field}: {json.dumps(value)}`, else none"
        if family.composes:  # EncoderDecoderModel: whatever its encoder's family does
            positions = steps = context = f"its {family.composes}'s family's"
        if family.refusal:
            positions, steps = "refused", f"refused: {family.refusal}"
        lines.append(f"| {family.name} | {types} | {positions} | {steps} | {context} |")
    return "\n".join(lines) + "\n"


def gguf_table() -> str:
    """The Markdown table of every GGUF architecture (docs/gguf.md holds it verbatim)."""
    lines = [
        "| GGUF architecture | family (model_type) | before the first block | what llama.cpp's "
        "code reads or fixes |",
        "| --- | --- | --- | --- |",
    ]
    for arch in sorted(_BY_GGUF):
        family, found = _BY_GGUF[arch]
        steps = " → ".join(family.step_labels)
        model_type = found.model_type or family.model_type
        only = " (GGUF files only)" if family.gguf_only else ""
        lines.append(
            f"| `{arch}` | {family.name} (`{model_type}`){only} | {steps}; {family.positional}"
            f" | {found.reading()} |"
        )
    return "\n".join(lines) + "\n"


@cache
def _defaults() -> dict[str, dict[str, Any]]:
    from importlib.resources import files

    return json.loads(files("embedcli.families").joinpath("defaults.json").read_text())
