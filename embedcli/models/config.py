"""A model's ``config.json``: what it says about the input layer (sizes, positional family, rope
base and scaling, tying, input scaling), read once and checked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from embedcli.core.config import DTYPES
from embedcli.errors import ConfigError, WeightsError
from embedcli.families.registry import Family, family_of, unknown_family
from embedcli.models import familyfields
from embedcli.models.familyfields import first_key
from embedcli.models.positions import count, read_positions

CONFIG_FILE = "config.json"
MAX_JSON_BYTES = 64 << 20  # a config or an index; the largest published index is a few MB


@dataclass(frozen=True)
class ModelConfig:
    """What a model's ``config.json`` says about its input layer, read through its family."""

    model_type: str | None
    vocab_size: int | None
    d_model: int | None  # n_embd / hidden_size / d_model
    context_length: int | None  # the family's context field; None where it has no limit
    positional: str | None  # learned, sinusoidal, rope, alibi, relative, none
    rope_theta: float | None  # the first block's rope base
    rope_dim: int | None  # dimensions the rotation covers
    rope_scaling: str | None  # a rope_type other than default (llama3, yarn, ...), named
    rope_scaling_params: tuple[tuple[str, Any], ...] | None  # every type, resolved
    tie_word_embeddings: bool | None
    embed_scale: float  # what the model multiplies token embeddings by
    file: str = CONFIG_FILE
    keys: dict[str, str] = field(default_factory=dict)  # field -> the key the file names it by
    family: Family | None = None
    scale_rounding: str = "float"
    position_offset: int = 0
    padding_idx: int | None = None
    token_width: int | None = None  # OPT's word_embed_proj_dim, where it differs
    norm_eps: float | None = None
    dtype: str | None = None  # the checkpoint's dtype, as config.json names it
    unknown_dtype: str | None = None  # a dtype it names that embedcli does not know: refused
    rope_bases: dict[str, float] | None = None  # per layer type, where there are several
    alibi_slopes: tuple[float, ...] | None = None
    relative: dict[str, int] | None = None  # T5: buckets and max distance
    heads: int | None = None
    token_dropout_id: int | None = None  # ESM's mask token id, where its token dropout is on
    stack: str | None = None  # an encoder-decoder's stack whose first block is shown
    # a wrapper's other sub-configs (image and audio towers): {config key: model_type}; their
    # outputs never reach the first block for token ids alone, and embedcli does not show them
    not_shown: dict[str, str] | None = None
    mrope_section: tuple[int, ...] | None = None  # multimodal rope's (temporal, height, width)
    rope_free_layers: tuple[int, ...] | None = None  # layers without rope (Llama 4's NoPE)
    rope_layer_type: str | None = None  # the first block's layer type, where rope names one
    rope_layer_types: dict[str, str] | None = None  # rope_type per layer type, where several
    rope_not_in_first_block: str | None = None  # layer 0's type, where it has no rope (conv)
    sliding_window: int | None = None  # sliding layers' attention window
    streams: int = 1  # copies of each row block 0 reads (hyper-connections), by its family
    row0_keys: tuple[str, ...] = ()  # tables whose row 0 is added after the positions
    concat: tuple[tuple[str, int], ...] = ()  # (key, width): row 0 beside each token's row
    replaced: tuple[int, str] | None = None  # (id, key of the row its rows become)
    window: tuple[int | None, int] = (None, 0)  # (attention window, pad id): Longformer's

    def summary(self) -> dict[str, Any]:
        """The fields a report shows, without the empty ones."""
        fields = {
            "model_type": self.model_type,
            "family": None if self.family is None else self.family.name,
            "stack": self.stack,
            "block_input": familyfields.layout_summary(self.family, self.streams),
            "not_shown": self.not_shown,
            "mrope": familyfields.mrope_summary(self.mrope_section),
            **familyfields.rope_free_summary(self.rope_free_layers),
            "positional": self.positional,
            "rope_theta": self.rope_theta,
            "rope_bases": self.rope_bases,
            "rope_scaling": self.rope_scaling,
            "rope_attention_factor": dict(self.rope_scaling_params or ()).get("attention_factor"),
            "rope_layer_type": self.rope_layer_type,
            "rope_layer_types": self.rope_layer_types,
            "rope_not_in_first_block": self.rope_not_in_first_block,
            "sliding_window": self.sliding_window,
            "alibi_slopes": None if self.alibi_slopes is None else list(self.alibi_slopes),
            "relative_attention": self.relative,
            "tie_word_embeddings": self.tie_word_embeddings,
            "embed_scale": self.embed_scale if self.embed_scale != 1.0 else None,
            "dtype": self.dtype,
        }
        return {k: v for k, v in fields.items() if v is not None}

    def embed_fields(self) -> dict[str, Any]:
        """The EmbedConfig fields this model's family sets (beyond the table sizes)."""
        family = self.family
        fields: dict[str, Any] = {"embed_scale": self.embed_scale}
        if family is None:
            return fields
        if self.embed_scale != 1.0:
            fields["scale_rounding"] = self.scale_rounding
        fields.update(
            position_offset=self.position_offset,
            position_ids=family.position_ids,
            padding_idx=self.padding_idx,
            sinusoid=family.sinusoid,
            token_types=family.token_type is not None,
            norm_eps=self.norm_eps,
            token_width=self.token_width,
            projection=family.projection,
            norm_kind=family.norm_kind,
            positions_first=family.positions_first,
            mask_multiply=family.mask_multiply,
            trigram=family.trigram,
            token_dropout_id=self.token_dropout_id,
            context_limit=self.context_length is not None,
            block_layout=family.block_layout,
            streams=self.streams,
            row0_tables=len(self.row0_keys),
            concat_widths=tuple(width for _, width in self.concat),
            replaced_id=None if self.replaced is None else self.replaced[0],
            window=self.window[0],
            window_pad_id=self.window[1],
        )
        return fields


def _first(data: dict[str, Any], *names: str) -> Any:
    return data.get(first_key(data, *names) or "")


def parse_config(data: Any, where: str, gguf: bool = False) -> ModelConfig:
    """The input-layer fields of a ``config.json`` (a multimodal model's ``text_config``), as
    the family's registry entry reads them; an unknown family is refused. ``gguf``: the
    fields come from a GGUF file's metadata (a family read from GGUF files only is read)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} is not a JSON object")
    model_type = data.get("model_type")
    family = family_of(model_type)
    if family is None:  # known by its own model_type only: never through a text_config
        raise unknown_family(model_type, where)
    if family.refusal is not None:
        raise ConfigError(f"{where} is a {family.name} model: {family.refusal}")
    if family.gguf_only is not None and not gguf:
        raise ConfigError(
            f"{where} names model_type {model_type!r} ({family.name}), which embedcli reads "
            f"from GGUF files only: {family.gguf_only}"
        )
    text = data
    if model_type in family.text_config:  # a wrapper whose language model has its own config
        for key in family.text_path:  # text_config, or encoder (T5Gemma)
            text = text.get(key) if isinstance(text, dict) else None
        if not isinstance(text, dict):
            path = ".".join(family.text_path)
            raise ConfigError(f"{where}: a {model_type} config keeps its {path} as an object")
    outer = family
    if family.composes is not None:  # EncoderDecoderModel: its encoder's own family, below it
        family, model_type = familyfields.composed(family, text, where)
    named = family_named(text, family, model_type, where)
    text = with_defaults(named, family_defaults(family, model_type, text))
    _check_types(text, where)
    text = familyfields.layer_zero(family, text, named, where)
    if family.stacks and family.stacks[0] == "encoder":  # the stack embed shows
        empty = [k for k in ("encoder_layers", "num_layers") if text.get(k) == 0]
        if empty:
            raise ConfigError(
                f"{where}: {empty[0]} is 0: the model's first block is its decoder's, which "
                "embedcli does not show"
            )
    for name, wanted in family.requires:
        if text.get(name) not in (None, wanted):
            raise ConfigError(
                f"{where}: embedcli reads {family.name} only with {name} {wanted!r} (its "
                f"input layer is computed another way with {name} {text[name]!r})"
            )
    d_key = first_key(text, "n_embd", "hidden_size", "d_model") or "hidden_size"
    d_model = count(text.get(d_key), d_key, where)
    context_key = first_key(text, *family.context) if family.context else None
    context = count(text.get(context_key), context_key, where) if context_key else None
    positional = family.positional
    if family.rope_when and text.get(family.rope_when[0]) != family.rope_when[1]:
        positional = "none"  # the attention layers have no rotary module
    thetas = familyfields.layer_thetas(family, text, where)
    if thetas is not None and not any(thetas):
        positional = "none"  # every layer's own base is 0: no layer has rope
    position = read_positions(replace(family, positional=positional), text, where)
    if thetas and positional == "rope":  # each layer's own base (Granite SWA)
        position.update(familyfields.layer_rope(str(family.layer_thetas), thetas))
    if position.get("alibi") and family.positional == "rope":
        positional, context = "alibi", None  # Falcon with alibi: true: no length limit
    padding_idx = None
    offset = family.offset
    if family.offset_in_context and context is not None:
        context -= offset  # ProphetNet: max_position_embeddings rows, pads on row 0
    if family.position_ids == "padding":
        padding_idx = text.get("pad_token_id")
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, int) or padding_idx < 0:
            raise ConfigError(
                f"{where}: {family.name} numbers positions from pad_token_id, "
                f"which must be a non-negative integer, got {padding_idx!r}"
            )
        vocab = text.get(family.vocab)
        if isinstance(vocab, int) and padding_idx >= vocab:
            raise ConfigError(
                f"{where}: pad_token_id {padding_idx} is outside the vocabulary of {vocab}"
            )
        if context is not None and family.positional == "learned":
            # a table's rows up to padding_idx are never a position (sinusoids, computed for
            # any row, keep max_position_embeddings: FSMT, M2M100)
            context -= padding_idx + 1
            if context < 1:
                raise ConfigError(
                    f"{where}: max_position_embeddings leaves no position "
                    f"after padding_idx {padding_idx}"
                )
    elif family.sinusoid == "halves":
        padding_idx = (
            text.get("pad_token_id") if isinstance(text.get("pad_token_id"), int) else None
        )
    tied = _first(text, "tie_word_embeddings")
    if tied is None:
        tied = data.get("tie_word_embeddings")
    dtype = _dtype(data, text)
    return ModelConfig(
        model_type=model_type if isinstance(model_type, str) else None,
        vocab_size=familyfields.vocab_rows(family, text, where),
        d_model=d_model,
        context_length=context,
        positional=positional,
        rope_theta=position.get("rope_theta"),
        rope_dim=position.get("rope_dim"),
        rope_scaling=position.get("rope_scaling"),
        rope_scaling_params=position.get("rope_scaling_params"),
        tie_word_embeddings=tied if isinstance(tied, bool) else None,
        embed_scale=familyfields.input_scale(family, text, d_model, where),
        keys={
            "d_model": d_key,
            "context_length": (context_key or "max_position_embeddings")
            + (
                " - padding_idx - 1"
                if family.position_ids == "padding" and family.positional == "learned"
                else ""
            ),
        },
        family=family,
        scale_rounding=family.scale_rounding,
        position_offset=offset,
        padding_idx=padding_idx,
        token_width=familyfields.token_width(family, text, d_model, where),
        norm_eps=familyfields.norm_eps(family, text, where),
        token_dropout_id=familyfields.token_dropout_id(family, text, where),
        dtype=dtype if dtype in DTYPES else None,
        unknown_dtype=None if dtype is None or dtype in DTYPES else dtype,
        rope_bases=position.get("rope_bases"),
        alibi_slopes=position.get("alibi_slopes"),
        relative=position.get("relative"),
        heads=position.get("heads"),
        rope_layer_type=position.get("rope_layer_type"),
        rope_layer_types=position.get("rope_layer_types"),
        rope_not_in_first_block=position.get("rope_not_in_first_block"),
        sliding_window=position.get("sliding_window"),
        stack=outer.composes or familyfields.stack_shown(family, data),
        not_shown=familyfields.towers_not_shown(data, outer),
        mrope_section=familyfields.mrope_section(family, text),
        rope_free_layers=familyfields.rope_free_layers(family, text, where),
        streams=familyfields.streams(family, text, where),
        row0_keys=familyfields.row0_keys(family, text, where),
        concat=familyfields.concat_tables(family, text, where),
        replaced=familyfields.replaced_row(family, data, text, where),
        window=familyfields.attention_window(family, text, where),
    )


_TYPES = {  # fields that must have this JSON type when present
    "layer_types": list,
    "rope_parameters": dict,
    "rope_scaling": dict,
    "attn_config": dict,
    "alibi": bool,
    "scale_embedding": bool,
    "tie_word_embeddings": bool,
}


def _check_types(text: dict[str, Any], where: str) -> None:
    for name, kind in _TYPES.items():
        value = text.get(name)
        if value is not None and not isinstance(value, kind):
            shown = {list: "a list", dict: "an object", bool: "true or false"}[kind]
            raise ConfigError(f"{where}: {name} must be {shown}, got {repr(value)[:40]}")
    types = text.get("layer_types")
    if types is not None and not (types and all(isinstance(t, str) for t in types)):
        raise ConfigError(f"{where}: layer_types must be a list of names")


def family_defaults(
    family: Family, model_type: str, text: dict[str, Any] | None = None
) -> dict[str, Any]:
    """transformers' defaults of the fields embedcli reads, for ``model_type``; without those
    whose default follows a field ``text`` gives (OPT's word_embed_proj_dim: the width)."""
    derived = family.derived(model_type)
    given = text or {}
    return {
        key: value
        for key, value in family.defaults(model_type).items()
        if not any(source in given for source in derived.get(key, ()))
    }


def family_named(
    text: dict[str, Any], family: Family, model_type: str, where: str
) -> dict[str, Any]:
    """``text`` with each field its config class knows under another name (GPT-2's
    hidden_size is n_embd, BLOOM's legacy n_embed is hidden_size) also under the name
    embedcli reads; the two names disagreeing is refused."""
    named = dict(text)
    for alias, stored in family.aliases(model_type).items():
        if text.get(alias) is None:
            continue
        if text.get(stored) is not None and text[stored] != text[alias]:
            raise ConfigError(
                f"{where}: {alias} ({text[alias]!r}) and {stored} ({text[stored]!r}) name the "
                f"same field of a {model_type} model and disagree"
            )
        named[stored] = text[alias]
    return named


_V4_ROPE = ("rope_theta", "rotary_emb_base", "partial_rotary_factor", "rotary_pct")


def _untyped(default: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The defaults' rope set without its rope_type where config.json names the type by the
    older ``type`` key: transformers reads ``type`` when ``rope_type`` is absent."""
    if "type" in given and "rope_type" not in given:
        return {k: v for k, v in default.items() if k != "rope_type"}
    return default


def with_defaults(text: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    """``text`` with each field it leaves out taken from its family's defaults, as transformers
    fills them; rope's parameters merged key by key, and a transformers 4 config's top-level
    rope fields kept above the defaults' ``rope_parameters``."""
    merged = {**defaults, **text}
    default_rope, given = defaults.get("rope_parameters"), text.get("rope_parameters")
    if not isinstance(default_rope, dict):
        return merged
    per_type = bool(default_rope) and all(isinstance(v, dict) for v in default_rope.values())
    if isinstance(given, dict):
        if per_type and given and all(isinstance(v, dict) for v in given.values()):
            merged["rope_parameters"] = {
                k: {**_untyped(default_rope.get(k, {}), v), **v} for k, v in given.items()
            }
        elif not per_type:
            merged["rope_parameters"] = {**_untyped(default_rope, given), **given}
        return merged
    if given is not None:
        return merged  # not an object: refused by _check_types
    legacy = ("rope_theta", "rope_local_base_freq", "rope_scaling")
    if per_type and given is None and not any(k in text for k in legacy):
        return merged  # nothing said: the per-type defaults whole (Gemma 4's proportional)
    del merged["rope_parameters"]  # transformers 4's layout, or nothing: defaults fill the rest
    if per_type:
        full = default_rope.get("full_attention", {})
        local = default_rope.get("sliding_attention")
        if "rope_theta" not in text and "rope_theta" in full:
            merged["rope_theta"] = full["rope_theta"]
        if local and "rope_local_base_freq" not in text:
            merged["rope_local_base_freq"] = local.get("rope_theta")
        return merged
    for key in ("rope_theta", "partial_rotary_factor"):
        twin = "rotary_emb_base" if key == "rope_theta" else "rotary_pct"
        if key in default_rope and key not in text and twin not in text:
            merged[key] = default_rope[key]
    kind = default_rope.get("rope_type", "default")
    if kind != "default" and not text.get("rope_scaling"):  # gpt-oss's yarn, by default
        kept = ("rope_theta", "partial_rotary_factor")  # filled from the top level above
        merged["rope_parameters"] = {k: v for k, v in default_rope.items() if k not in kept}
    return merged


def _dtype(data: dict[str, Any], text: dict[str, Any]) -> str | None:
    """The dtype config.json names (``dtype``, or ``torch_dtype`` before it): the top level's
    first, as transformers loads a wrapper (its text config's only where the top names none);
    a value embedcli does not know comes back as it is written ('torch_dtype "banana"'), for
    the refusal. None where none is named, or "auto" (the weights' own, as transformers reads
    it): the checkpoint's dtype is the default."""
    for source in (data, text):
        for key in ("dtype", "torch_dtype"):
            value = source.get(key)
            if value is None or value == "auto":
                continue
            return str(value) if value in DTYPES else f"{key} {json.dumps(value)}"
    return None


def read_json(path: Path, what: str) -> Any:
    """A JSON file of a model (bounded in size), or one clear error."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_JSON_BYTES:
            raise WeightsError(
                f"{path} is not {what} (not a regular file of at most "
                f"{MAX_JSON_BYTES // 2**20} MiB)"
            )
        with path.open("rb") as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
        return json.loads(data)
    except OSError as exc:
        raise WeightsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsError(f"{path} is not valid JSON ({what}): {exc}") from None
    except (ValueError, RecursionError) as exc:  # nesting or integers past Python's limits
        raise WeightsError(f"{path} is not usable as {what} ({type(exc).__name__})") from None


def folder_config(folder: Path) -> ModelConfig | None:
    """A folder's config.json, parsed, or None when it has none."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        if path.exists() or path.is_symlink():  # a folder, a device, a dangling link
            raise WeightsError(f"{path} is not a regular file: a model's config cannot be read")
        return None
    return parse_config(read_json(path, "a model config"), str(path))
