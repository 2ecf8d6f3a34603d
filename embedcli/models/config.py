"""A model's ``config.json``: what it says about the input layer (sizes, positional family, rope
base and scaling, tying, input scaling), read once and checked.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedcli.errors import ConfigError, WeightsError

CONFIG_FILE = "config.json"
MAX_JSON_BYTES = 64 << 20  # a config or an index; the largest published index is a few MB
# model_type values with a learned positional table; a config that names a rope base (or is a
# llama, mistral or qwen2 one) is taken to rotate; of any other, nothing is said (None)
_LEARNED = ("gpt2", "gpt_neo", "opt", "biogpt", "gpt_bigcode", "xglm", "codegen_learned")
# model_type values whose token embeddings are multiplied by sqrt(d_model) before the first block
_SCALED = ("gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text")


# the rope scaling types embedcli applies, and the fields each needs
_SCALING_KEYS = {
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}


@dataclass(frozen=True)
class ModelConfig:
    """What a model's ``config.json`` says about its input layer."""

    model_type: str | None
    vocab_size: int | None
    d_model: int | None  # n_embd / hidden_size / d_model
    context_length: int | None  # n_positions / max_position_embeddings
    positional: str | None  # learned, rope, or None when the config does not tell
    rope_theta: float | None  # the rope base (10000 unless the model says otherwise)
    rope_dim: int | None  # dimensions the rotation covers: one attention head's
    rope_scaling: str | None  # a rope_type other than default (llama3, yarn, ...), named
    rope_scaling_params: (
        tuple[tuple[str, Any], ...] | None
    )  # those embedcli applies: linear, llama3
    tie_word_embeddings: bool | None
    embed_scale: float  # what the model multiplies token embeddings by (Gemma: sqrt(d_model))
    file: str = CONFIG_FILE
    keys: dict[str, str] = field(default_factory=dict)  # field -> the key the file names it by

    def summary(self) -> dict[str, Any]:
        """The fields a report shows, without the empty ones."""
        fields = {
            "model_type": self.model_type,
            "positional": self.positional,
            "rope_theta": self.rope_theta,
            "rope_scaling": self.rope_scaling,
            "tie_word_embeddings": self.tie_word_embeddings,
            "embed_scale": self.embed_scale if self.embed_scale != 1.0 else None,
        }
        return {k: v for k, v in fields.items() if v is not None}


def _first(data: dict[str, Any], *names: str) -> Any:
    return data.get(_first_key(data, *names) or "")


def _first_key(data: dict[str, Any], *names: str) -> str | None:
    for name in names:
        if data.get(name) is not None:
            return name
    return None


def _int(value: Any, name: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: {name} must be a positive integer, got {value!r}")
    return value


def parse_config(data: Any, where: str) -> ModelConfig:
    """The input-layer fields of a ``config.json`` (a multimodal model's ``text_config``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} is not a JSON object")
    text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
    model_type = _first(text, "model_type") or data.get("model_type")
    d_model = _int(_first(text, "n_embd", "hidden_size", "d_model"), "hidden_size", where)
    rope = text.get("rope_parameters") if isinstance(text.get("rope_parameters"), dict) else {}
    scaling = text.get("rope_scaling") if isinstance(text.get("rope_scaling"), dict) else {}
    theta = _first(text, "rope_theta")
    theta = rope.get("rope_theta") if theta is None else theta
    rope_type = scaling.get("rope_type") or scaling.get("type") or rope.get("rope_type")
    if rope_type is not None and not isinstance(rope_type, str):
        raise ConfigError(f"{where}: rope_scaling's rope_type must be a name, got {rope_type!r}")
    if theta is not None:
        try:
            usable = not isinstance(theta, bool) and math.isfinite(float(theta)) and theta > 1
        except (TypeError, ValueError, OverflowError):
            usable = False
        if not usable:
            shown = repr(theta)[:40]
            raise ConfigError(f"{where}: rope_theta must be a number above 1, got {shown}")
    if model_type in _LEARNED:
        positional: str | None = "learned"
    elif theta is not None or rope or scaling or model_type in ("llama", "mistral", "qwen2"):
        positional = "rope"
        theta = float(theta if theta is not None else 10000.0)
    else:
        positional = None
    heads = _int(text.get("num_attention_heads"), "num_attention_heads", where)
    head_dim = _int(text.get("head_dim"), "head_dim", where)
    if head_dim is None and heads and d_model and d_model % heads == 0:
        head_dim = d_model // heads
    partial = _first(text, "partial_rotary_factor")
    partial = rope.get("partial_rotary_factor") if partial is None else partial
    if head_dim and isinstance(partial, int | float) and 0 < partial < 1:
        head_dim = int(head_dim * partial)  # only part of each head rotates (Phi, GPT-NeoX)
    tied = _first(text, "tie_word_embeddings")
    if tied is None:
        tied = data.get("tie_word_embeddings")
    scale = math.sqrt(d_model) if model_type in _SCALED and d_model else 1.0
    return ModelConfig(
        model_type=model_type if isinstance(model_type, str) else None,
        vocab_size=_int(text.get("vocab_size"), "vocab_size", where),
        d_model=d_model,
        context_length=_int(
            _first(text, "n_positions", "max_position_embeddings", "n_ctx"),
            "max_position_embeddings",
            where,
        ),
        positional=positional,
        rope_theta=float(theta) if positional == "rope" else None,
        rope_dim=head_dim if positional == "rope" else None,
        rope_scaling=str(rope_type) if rope_type not in (None, "default") else None,
        rope_scaling_params=_rope_scaling(rope_type, {**rope, **scaling}, where),
        tie_word_embeddings=tied if isinstance(tied, bool) else None,
        embed_scale=scale,
        keys={
            "d_model": _first_key(text, "n_embd", "hidden_size", "d_model") or "hidden_size",
            "context_length": _first_key(text, "n_positions", "max_position_embeddings", "n_ctx")
            or "max_position_embeddings",
        },
    )


def _rope_scaling(rope_type: Any, params: dict[str, Any], where: str) -> Any:
    """The scaling parameters embedcli applies (linear, llama3), checked; None otherwise."""
    if rope_type not in _SCALING_KEYS:
        return None
    values = {}
    for key in _SCALING_KEYS[rope_type]:
        value = params.get(key)
        try:
            good = not isinstance(value, bool) and math.isfinite(float(value)) and value > 0
        except (TypeError, ValueError, OverflowError):
            good = False
        if not good:
            raise ConfigError(f"{where}: rope_scaling {key} must be a positive number")
        values[key] = value
    if rope_type == "llama3" and values["high_freq_factor"] <= values["low_freq_factor"]:
        raise ConfigError(f"{where}: rope_scaling high_freq_factor must exceed low_freq_factor")
    return (("rope_type", rope_type), *values.items())


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
        return None
    return parse_config(read_json(path, "a model config"), str(path))
