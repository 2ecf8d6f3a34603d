"""Offline presets of real model families: each one a published ``config.json`` that its family's
module holds (``families/``), read through its registry entry exactly as a model folder's is,
with its parameter count worked out from the config by the family's formula.

The GPT-2 sizes, GPT-3 and the book's chapter 2 stay in embedcli.core.config (no registry
needed); every name is looked up here.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from embedcli.core.config import DEFAULT_PRESET, PRESETS, EmbedConfig, Overrides, Preset
from embedcli.errors import ConfigError, UsageError
from embedcli.families.registry import Published, count_parameters, presets
from embedcli.models.config import ModelConfig, parse_config
from embedcli.models.tables import position_rows_before, tables_config


@cache
def _entries() -> dict[str, Published]:
    return {entry.name: entry for entry in presets()}


def preset_names() -> tuple[str, ...]:
    """Every preset's name: GPT-2's sizes, GPT-3 and the book's first, then the real families."""
    return (*PRESETS, *_entries())


def preset_entry(name: str) -> Published | None:
    """A real family's published config (name, description, hub_id, published, config)."""
    return _entries().get(name)


def preset_model(name: str) -> ModelConfig | None:
    """The preset's config.json read through its family's registry entry (None for the
    presets of embedcli.core.config, which have no config.json)."""
    entry = preset_entry(name)
    if entry is None:
        return None
    return _model(name)


@cache
def _model(name: str) -> ModelConfig:
    return parse_config(_entries()[name].config, f"preset {name}")


def get_preset(name: str | None) -> Preset:
    """The preset called ``name`` (default gpt2), or a ConfigError listing them."""
    name = name or DEFAULT_PRESET
    if name in PRESETS:
        return PRESETS[name]
    if name not in _entries():
        raise ConfigError(f"unknown preset {name!r}; see embedcli inspect-shapes --list-presets")
    return _real_preset(name)


@cache
def _real_preset(name: str) -> Preset:
    entry = _entries()[name]
    counted = count_parameters(entry.config)
    return Preset(
        name,
        entry.description,
        preset_embed_config(_model(name)),
        parameters=counted.total,
        family=_model(name).family.name,  # type: ignore[union-attr]
        source=entry.hub_id,
        active_parameters=counted.active,
        experts=counted.experts,
        experts_per_token=counted.experts_per_token,
        tied=bool(_model(name).tie_word_embeddings),
        heads=_model(name).heads,
        published=entry.published,
        published_note=entry.published_note,
        head_width=_head_width(entry.config),
    )


def _head_width(config: dict) -> int | None:
    """A query head's width as the config states it: head_dim, or multi-head latent
    attention's qk_nope_head_dim + qk_rope_head_dim (DeepSeek); None where it states none."""
    text = config.get("text_config", config)
    if isinstance(text.get("head_dim"), int):
        return text["head_dim"]
    nope, rope = text.get("qk_nope_head_dim"), text.get("qk_rope_head_dim")
    return nope + rope if isinstance(nope, int) and isinstance(rope, int) else None


def preset_embed_config(model: ModelConfig) -> EmbedConfig:
    """The input layer a folder of this model would give: its tables' shapes as the config
    states them, through the same reading of the family (models/tables.tables_config)."""
    if model.vocab_size is None or model.d_model is None:
        raise ConfigError(f"{model.file}: the preset gives no vocab_size or width")
    width = model.token_width or model.d_model
    position = None
    if model.positional == "learned":
        assert model.context_length is not None
        position = (model.context_length + position_rows_before(model), model.d_model)
    return tables_config(
        (model.vocab_size, width), position, Overrides(), model=model, table_dtype=model.dtype
    )


def preset_config(name: str | None, overrides: Overrides) -> tuple[Preset, EmbedConfig]:
    """A preset by name (default gpt2) and its config with the flags applied; a flag that
    leaves the preset's model incomplete (a positional table for a model with no context
    limit, a width narrower than one rotated head) is refused, never filled in."""
    preset = get_preset(name)
    base = preset.config
    table = overrides.positional in ("learned", "sinusoidal")
    if not base.context_limit and overrides.context_length is None and table:
        raise UsageError(
            f"{preset.name} has no context limit (its {base.positional} positions act inside "
            f"attention): a {overrides.positional} table needs its rows, pass --context-length"
        )
    if overrides.context_length is not None and not base.context_limit:
        base = replace(base, context_limit=True)  # the flag sets one
    rotated = base.rope_dim if base.positional == "rope" else None
    if overrides.positional == "rope" and base.positional != "rope":
        rotated = _head_to_rotate(preset)
        base = replace(base, rope_dim=rotated)
    width = overrides.d_model
    if rotated and width is not None and width < rotated and overrides.positional in (None, "rope"):
        raise UsageError(
            f"{preset.name} rotates {rotated} dimensions in each attention head, more than "
            f"--d-model {width}; pass a width of at least {rotated}"
        )
    return preset, overrides.apply(base)


def _head_to_rotate(preset: Preset) -> int:
    """What --positional rope rotates in a preset that has other positions: one attention
    head of its own model (d / heads), as a rope model of that shape would."""
    head = preset.head_dim
    if head is None or head % 2:
        why = "gives no attention head count" if head is None else f"has heads {head} wide, odd"
        raise UsageError(
            f"{preset.name} {why}, so the dimensions rope would rotate in one head are "
            "unknown; --positional rope needs a preset with heads (gpt2, gpt3) or a rope preset"
        )
    return head
