"""A GGUF file's metadata read as a model config: ``general.architecture`` mapped onto the family
registry, the ``<arch>.*`` keys onto the config.json fields the family reads, as llama.cpp's
code for that architecture reads them (``Family.gguf``: a ``GGUFArch`` per architecture).

Only architectures a family's registry entry names are mapped; any other is refused with its
name, never read as a look-alike. Every field the family reads (its transformers defaults'
keys, families/defaults.json) is stated from the file or from llama.cpp's own code, never left
to the transformers class's default: a field the reading cannot state is refused, naming it.
The mapped config goes through ``parse_config``, the path a model folder's config.json takes,
so everything the family's entry knows applies. llama.cpp's activations are float32 whatever
the table's type (its get_rows gives float32 rows), so the config's dtype is float32.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from embedcli.errors import ConfigError
from embedcli.families.ggufarch import ANY, REQUIRED, GGUFArch
from embedcli.families.registry import Family, family_of, family_of_gguf, gguf_architectures
from embedcli.models.config import family_named, parse_config
from embedcli.models.gguf.metadata import INTEGERS, MAX_LAYERS, Metadata
from embedcli.models.gguf.rope import rope_fields, sliding_layers

if TYPE_CHECKING:
    from embedcli.models.config import ModelConfig
    from embedcli.models.gguf.file import GGUFFile

MAX_CONTEXT = 2**32 - 1  # llama.cpp's n_ctx_train is a uint32_t


def architecture(gguf: GGUFFile) -> tuple[str, Family, GGUFArch]:
    """(the GGUF architecture, the family it maps onto, how llama.cpp reads it), or refused."""
    meta = Metadata(gguf, "")
    arch = meta.required(meta.string(".general.architecture"), ".general.architecture")
    found = family_of_gguf(arch)
    if found is None:
        raise ConfigError(
            f"{gguf.path} is a {arch!r} model (general.architecture), an architecture "
            f"embedcli does not map onto its model families, so it will not guess its input "
            f"layer; it reads {', '.join(gguf_architectures())}"
        )
    return arch, *found


def _value(meta: Metadata, name: str, default: Any) -> Any:
    """A key's value (a number, a flag or a string, as the file types it), or ``default``."""
    found = meta.gguf.get(meta.key(name))
    if found is None:
        if default is REQUIRED:
            meta.required(None, name)
        return default
    if found.type == 7:
        return meta.boolean(name)
    if found.type == 8:
        return meta.string(name)
    if found.type in INTEGERS:
        return meta.integer(name, low=0)
    return meta.number(name)


def _put(text: dict[str, Any], field: str, value: Any) -> None:
    """``text[field] = value``; a dotted field inside its object (attn_config.alibi)."""
    outer, _, inner = field.rpartition(".")
    (text.setdefault(outer, {}) if outer else text)[inner] = value


def _heads_and_width(meta: Metadata, family: Family, text: dict[str, Any]) -> None:
    """hidden_size, the head count and head_dim, as far as the family reads them."""
    width = meta.required(meta.integer("embedding_length"), "embedding_length")
    text["hidden_size"] = width
    if family.positional == "none":
        return  # a recurrent model: no attention heads (Mamba's head_count is 0)
    heads = meta.required(meta.integer("attention.head_count"), "attention.head_count")
    if heads > width:
        raise ConfigError(f"{meta.where}: {heads:,} attention heads for a width of {width:,}")
    text["num_attention_heads"] = heads
    head_dim = meta.integer("attention.key_length")
    if head_dim is None and width % heads:
        raise ConfigError(
            f"{meta.where}: {meta.key('embedding_length')} {width} is not a multiple of {heads} "
            f"heads, and no {meta.key('attention.key_length')} is given"
        )
    # llama.cpp's default, whatever transformers' family default is (Gemma's 256)
    text["head_dim"] = head_dim if head_dim is not None else width // heads


def _blocks(meta: Metadata, arch: GGUFArch) -> tuple[int, list[bool] | None]:
    """block_count, and which blocks slide (None: none can)."""
    blocks = meta.required(meta.integer("block_count"), "block_count")
    if blocks > MAX_LAYERS:
        raise ConfigError(
            f"{meta.where}: {meta.key('block_count')} is {blocks:,}; llama.cpp loads at most "
            f"{MAX_LAYERS} blocks, so the file describes no model it runs"
        )
    return blocks, sliding_layers(meta, arch, blocks)


def _layers(
    meta: Metadata, family: Family, arch: GGUFArch, text: dict[str, Any], sliding: list[bool] | None
) -> None:
    """The layers' kinds (layer_types) and the rope-free layers, as llama.cpp tells them, and
    rope."""
    blocks = text["num_hidden_layers"]
    slides = bool(sliding) and any(sliding or ())
    if "layer_types" in family.defaults(text["model_type"]) or slides:
        kinds = sliding or [False] * blocks
        text["layer_types"] = [arch.swa_kind if s else "full_attention" for s in kinds]
    if slides and arch.swa_kind == "sliding_attention":
        window = meta.integer("attention.sliding_window", low=0)
        if window == 0:
            raise ConfigError(
                f"{meta.where}: {meta.key('attention.sliding_window')} is 0: llama.cpp's "
                "sliding layers would then attend to no token at all"
            )
        window = arch.swa_window if window is None else window
        text["sliding_window"] = meta.required(window, "attention.sliding_window")
    if arch.rope_free_every and (slides or not arch.rope_free_needs_swa):
        every = arch.rope_free_every
        text[arch.rope_free_field] = [int((i + 1) % every != 0) for i in range(blocks)]
    if family.positional == "rope":
        rope_fields(meta, family, arch, text, sliding)


def gguf_config_json(gguf: GGUFFile, token_rows: int) -> dict[str, Any]:
    """The config.json a transformers checkpoint of this GGUF model would carry, as far as the
    input layer goes, each field as llama.cpp reads it."""
    name, family, arch = architecture(gguf)
    meta = Metadata(gguf, name)
    for key, value, why in arch.refused:
        found = meta.has(key) if value is ANY else _value(meta, key, None) == value
        if found:
            said = "is there" if value is ANY else f"is {value!r}"
            raise ConfigError(f"{meta.where}: {meta.key(key)} {said}: {why}")
    names = {t.name for t in gguf.tensors}
    for tensor, why in arch.refused_tensors:
        if tensor in names:
            raise ConfigError(f"{meta.where} has {tensor}: {why}")
    blocks, sliding = _blocks(meta, arch)
    model_type = arch.model_type or family.model_type
    if arch.swa_model_type and any(sliding or ()):  # OLMo 2's architecture, sliding: OLMo 3
        model_type = arch.swa_model_type
        family = family_of(model_type) or family
    text: dict[str, Any] = {
        "model_type": model_type,
        "num_hidden_layers": blocks,
        "vocab_size": token_rows,
        "torch_dtype": "float32",  # llama.cpp's activations, whatever the table's type
        "tie_word_embeddings": "output.weight" not in names,
        "pad_token_id": meta.integer(".tokenizer.ggml.padding_token_id", low=0),
    }
    _heads_and_width(meta, family, text)
    context = meta.required(meta.integer("context_length"), "context_length")
    if context > MAX_CONTEXT:
        raise ConfigError(
            f"{meta.where}: {meta.key('context_length')} is {context:,}, more than llama.cpp "
            f"can read (it holds a model's training context in a uint32, {MAX_CONTEXT:,} at most)"
        )
    text[arch.context_field] = context
    if arch.eps is not None:  # into every epsilon field the family reads
        eps = meta.required(meta.number(f"attention.{arch.eps}"), f"attention.{arch.eps}")
        reads = family.defaults(text["model_type"])
        for field in {*family.norm_eps, *(k for k in reads if "eps" in k)}:
            text[field] = eps
    for key in arch.keys:  # numbers all: a flag or a string there is refused, as llama.cpp does
        value = meta.integer(key.name) if key.integer else meta.number(key.name)
        if value is None:
            value = meta.required(None, key.name) if key.default is REQUIRED else key.default
        _put(text, key.field, key.zero if value == 0 and key.zero is not None else value)
    for field, value in arch.fixed.items():
        _put(text, field, value)
    _layers(meta, family, arch, text, sliding)
    _check_stated(meta, family, text)
    return text


def _check_stated(meta: Metadata, family: Family, text: dict[str, Any]) -> None:
    """Refuse a mapping that leaves a field the family reads to its transformers default."""
    model_type = text["model_type"]
    named = family_named(text, family, model_type, meta.where)
    missing = sorted(set(family.defaults(model_type)) - set(named))
    if missing:
        raise ConfigError(
            f"{meta.where}: embedcli's reading of {meta.arch!r} GGUF files does not state "
            f"{', '.join(missing)}, which {family.name} reads; it does not take transformers' "
            "default for a GGUF model"
        )


def gguf_model_config(gguf: GGUFFile, token_rows: int) -> ModelConfig:
    """The model config of a GGUF file, read through its family's registry entry."""

    where = f"{gguf.path} (GGUF metadata)"  # a file named as given, as every error names it
    model = parse_config(gguf_config_json(gguf, token_rows), where, gguf=True)
    keys = dict(model.keys)
    arch = architecture(gguf)[0]
    keys["d_model"] = f"{arch}.embedding_length"
    keys["context_length"] = f"{arch}.context_length"
    return dataclasses.replace(model, file=f"{gguf.path.name} metadata", keys=keys)
