"""A GGUF file's metadata read as a model config: ``general.architecture`` mapped onto the family
registry, the ``<arch>.*`` hyperparameters onto the config.json fields the family reads.

Only architectures a family's registry entry names (``Family.gguf``) are mapped; any other is
refused with its name, never read as a look-alike. The mapped config goes through
``parse_config``, the same path a model folder's config.json takes, so everything the family's
entry knows applies (the input scale, the positions, the rope bases per layer type).

Where a GGUF writer stores what the config would say in a tensor instead (Llama 3.1's rope
scaling becomes ``rope_freqs.weight``, divisors of rope's frequencies), the config says that rope
is scaled by those factors, which embedcli does not draw: the angles are refused, never drawn
unscaled.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from embedcli.errors import ConfigError
from embedcli.families.registry import Family, family_of_gguf, gguf_architectures
from embedcli.models.config import parse_config

if TYPE_CHECKING:
    from embedcli.models.config import ModelConfig
    from embedcli.models.gguf.file import GGUFFile

_INTEGERS = (0, 1, 2, 3, 4, 5, 10, 11)  # GGUF's integer value types
_NUMBERS = (*_INTEGERS, 6, 12)
MAX_CONTEXT = 2**32 - 1  # llama.cpp's n_ctx_train is a uint32_t


def _where(gguf: GGUFFile) -> str:
    return str(gguf.path)


def metadata_string(gguf: GGUFFile, key: str, required: bool = True) -> str | None:
    """A string key, or None when absent and not required; any other type is refused."""
    found = gguf.get(key)
    if found is None:
        if required:
            raise ConfigError(f"{_where(gguf)} has no {key}, so its model cannot be told")
        return None
    if found.type != 8:
        raise ConfigError(f"{_where(gguf)}: {key} must be a string, it is {found.type_name}")
    return str(found.value)


def metadata_int(gguf: GGUFFile, key: str, required: bool = False) -> int | None:
    """A positive integer key (an array of equal values counts as that value)."""
    found = gguf.get(key)
    if found is None:
        if required:
            raise ConfigError(f"{_where(gguf)} has no {key}, which its architecture needs")
        return None
    value = found.value
    if found.type == 9 and found.element in _INTEGERS and len(value):
        distinct = {int(v) for v in value}
        if len(distinct) != 1:
            raise ConfigError(
                f"{_where(gguf)}: {key} differs from layer to layer ({sorted(distinct)[:4]}), "
                "which embedcli does not read"
            )
        value = distinct.pop()
    elif found.type not in _INTEGERS or isinstance(value, bool):
        raise ConfigError(f"{_where(gguf)}: {key} must be an integer, it is {found.type_name}")
    if int(value) < 1:
        raise ConfigError(f"{_where(gguf)}: {key} must be a positive integer, got {value}")
    return int(value)


def metadata_float(gguf: GGUFFile, key: str) -> float | None:
    """A number key, or None when absent."""
    found = gguf.get(key)
    if found is None:
        return None
    if found.type not in _NUMBERS:
        raise ConfigError(f"{_where(gguf)}: {key} must be a number, it is {found.type_name}")
    return float(found.value)


def architecture(gguf: GGUFFile) -> tuple[str, Family]:
    """(the GGUF architecture, the family it maps onto), or refused."""
    arch = metadata_string(gguf, "general.architecture")
    assert arch is not None
    family = family_of_gguf(arch)
    if family is None:
        raise ConfigError(
            f"{_where(gguf)} is a {arch!r} model (general.architecture), an architecture "
            f"embedcli does not map onto its model families, so it will not guess its input "
            f"layer; it reads {', '.join(gguf_architectures())}"
        )
    return arch, family


def _base(gguf: GGUFFile, key: str) -> float:
    """A rope base as llama.cpp reads it: 10000 when the key is absent. A value the file gives
    must be above 1 (0 too is refused, never read as absent)."""
    theta = metadata_float(gguf, key)
    if theta is None:
        return 10000.0
    if not (math.isfinite(theta) and theta > 1):
        raise ConfigError(f"{_where(gguf)}: {key} must be a number above 1, got {theta!r}")
    return theta


def _head_source(gguf: GGUFFile, arch: str) -> str:
    if gguf.get(f"{arch}.attention.key_length") is not None:
        return f"{arch}.attention.key_length"
    return f"{arch}.embedding_length / {arch}.attention.head_count"


def _rope(gguf: GGUFFile, arch: str, family: Family, text: dict[str, Any]) -> None:
    """Rope's base, rotated dimensions and scaling, into ``text`` as config.json has them."""
    theta = _base(gguf, f"{arch}.rope.freq_base")
    params: dict[str, Any] = {"rope_type": "default", "rope_theta": theta}
    head_dim = text.get("head_dim") or text["hidden_size"] // text["num_attention_heads"]
    rotated = metadata_int(gguf, f"{arch}.rope.dimension_count")
    if rotated is not None and rotated != head_dim:
        if rotated > head_dim:
            raise ConfigError(
                f"{_where(gguf)}: {arch}.rope.dimension_count {rotated} is more than a head's "
                f"{head_dim} dimensions"
            )
        params["partial_rotary_factor"] = rotated / head_dim
    if (head_dim if rotated is None else rotated) % 2:
        head = f"{head_dim:,} dimension{'s' * (head_dim != 1)}"
        said = (
            f"{arch}.rope.dimension_count is {rotated}, an odd number (a head has {head})"
            if rotated is not None
            else f"a head has {head} ({_head_source(gguf, arch)}), an odd number, and "
            f"{arch}.rope.dimension_count says no other"
        )
        raise ConfigError(
            f"{_where(gguf)}: {said}: rope turns pairs of dimensions, so it cannot rotate an "
            "odd number"
        )
    # as llama.cpp reads them: the type defaults to linear; the factor's older key is
    # rope.scale_linear; a factor of 0 or 1 scales nothing
    kind = metadata_string(gguf, f"{arch}.rope.scaling.type", required=False) or "linear"
    factor = metadata_float(gguf, f"{arch}.rope.scaling.factor")
    if factor is None:
        factor = metadata_float(gguf, f"{arch}.rope.scale_linear")
    if kind != "none" and factor not in (None, 0.0, 1.0):
        params["rope_type"] = kind
        params["factor"] = factor
        original = metadata_int(gguf, f"{arch}.rope.scaling.original_context_length")
        if original is not None:
            params["original_max_position_embeddings"] = original
    if "rope_freqs.weight" in {t.name for t in gguf.tensors}:
        if params["rope_type"] != "default":
            raise ConfigError(
                f"{_where(gguf)} scales rope twice: {kind} scaling and rope_freqs.weight"
            )
        params = {"rope_type": "rope_freqs.weight", "rope_theta": params["rope_theta"]}
    if family.gguf_global_every is not None:
        local = _base(gguf, f"{arch}.rope.freq_base_swa")
        metadata_int(gguf, f"{arch}.block_count", required=True)  # checked, never listed
        # the pattern, as the family's config.json gives it, not a layer type per block: the
        # input layer needs the first block's, and a list as long as block_count would cost
        # memory in proportion to a number the file merely states
        text["sliding_window_pattern"] = family.gguf_global_every
        text["rope_parameters"] = {
            "full_attention": params,
            "sliding_attention": {"rope_type": "default", "rope_theta": local},
        }
    else:
        text["rope_parameters"] = params


def gguf_config_json(gguf: GGUFFile, token_rows: int, token_dtype: str) -> dict[str, Any]:
    """The config.json a transformers checkpoint of this GGUF model would carry, as far as the
    input layer goes."""
    arch, family = architecture(gguf)
    width = metadata_int(gguf, f"{arch}.embedding_length", required=True)
    heads = metadata_int(gguf, f"{arch}.attention.head_count", required=True)
    context = metadata_int(gguf, f"{arch}.context_length", required=True)
    if context is not None and context > MAX_CONTEXT:
        raise ConfigError(
            f"{_where(gguf)}: {arch}.context_length is {context:,}, more than llama.cpp can "
            f"read (it holds a model's training context in a uint32, {MAX_CONTEXT:,} at most)"
        )
    names = {t.name for t in gguf.tensors}
    text: dict[str, Any] = {
        "model_type": family.model_type,
        "vocab_size": token_rows,
        "torch_dtype": token_dtype,
        "tie_word_embeddings": "output.weight" not in names,
    }
    # the canonical names: a config class that stores them otherwise says so in its aliases
    # (GPT-2's n_embd, n_head, n_positions), and parse_config reads them through those
    text |= {"hidden_size": width, "num_attention_heads": heads}
    text["max_position_embeddings"] = context
    if family.positional != "rope":
        return text  # a learned table (GPT-2): no head dimension or rope to state
    head_dim = metadata_int(gguf, f"{arch}.attention.key_length")
    if head_dim is None and width % heads:
        raise ConfigError(
            f"{_where(gguf)}: {arch}.embedding_length {width} is not a multiple of "
            f"{heads} heads, and no {arch}.attention.key_length is given"
        )
    # llama.cpp's default, whatever transformers' family default is (Gemma's 256)
    text["head_dim"] = head_dim if head_dim is not None else width // heads
    _rope(gguf, arch, family, text)
    return text


def gguf_model_config(gguf: GGUFFile, token_rows: int, token_dtype: str) -> ModelConfig:
    """The model config of a GGUF file, read through its family's registry entry."""

    where = f"{gguf.path} (GGUF metadata)"  # a file named as given, as every error names it
    model = parse_config(gguf_config_json(gguf, token_rows, token_dtype), where)
    keys = dict(model.keys)
    arch = architecture(gguf)[0]
    keys["d_model"] = f"{arch}.embedding_length"
    keys["context_length"] = f"{arch}.context_length"
    return dataclasses.replace(model, file=f"{gguf.path.name} metadata", keys=keys)
