"""The vocabulary of the parameter formulas: a config's fields read as its transformers config
class reads them, the parameters of each building block (a Linear with or without a bias, an
RMSNorm's weight, a LayerNorm's weight and bias, grouped key/value heads, a gated MLP, experts),
and the Llama-shaped decoder whose knobs most rope families differ on. Each family's own formula
lives in its module; ``registry.count_parameters`` picks it by model_type.

The sizes that name a model (vocabulary, width, depth, heads, MLP width, a learned position
table's length, the experts) must be given; where a config leaves out any other field, its
transformers config class's default applies, and the comment beside it says which. A variant or
a field the formulas do not cover is refused with a ``ConfigError``, never guessed. A published
figure can differ: a checkpoint that stores a tied head twice counts it twice (Falcon 40B's hub
page does).

Pure Python: no torch, no transformers (the CLI counts without importing either).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from embedcli.errors import ConfigError


@dataclass(frozen=True)
class ParameterCount:
    """A model's parameters; for a mixture of experts, also those one token runs through."""

    total: int  # every parameter once (tied tensors once), every expert counted
    active: int | None  # router, the k experts a token runs, the shared parts; None: dense
    experts: int | None  # experts per MoE layer (Mixtral: 8); None: dense
    experts_per_token: int | None  # k (Mixtral: 2); None: dense


@dataclass(frozen=True)
class Formula:
    """How many parameters one ``model_type`` has, from its config.json alone."""

    model_type: str  # the config's model_type it counts
    model_class: str  # the transformers class whose parameters it counts
    count: Callable[[Fields], ParameterCount]  # the config's fields -> the count


REQUIRED = object()  # no default: the config must give the field
REFUSE = object()  # a null is refused (the config class types the field int)
DERIVE = object()  # the size follows from others (head_dim: the width over the heads)


class Fields:
    """One config's fields, read as its transformers config class reads them."""

    def __init__(self, config: Any, where: str) -> None:
        if not isinstance(config, Mapping):
            raise ConfigError(f"the {where} is not a JSON object")
        self.config, self.where = config, where

    def _find(self, names: tuple[str, ...]) -> tuple[str, Any] | None:
        found = [(name, self.config[name]) for name in names if name in self.config]
        if len({repr(value) for _, value in found}) > 1:
            given = " and ".join(f"{name} {value!r}" for name, value in found)
            raise ConfigError(f"the {self.where} gives {given}, names of one field that disagree")
        return found[0] if found else None

    def size(self, *names: str, default: Any = REQUIRED, null: Any = REFUSE) -> int:
        """A positive integer under any of ``names`` (the first is the canonical one, the rest
        the aliases transformers accepts); ``default`` when absent, ``null`` when null."""
        found = self._find(names)
        shown = " (or ".join(names) + ")" * (len(names) - 1)
        if found is None:
            if default is REQUIRED:
                raise ConfigError(f"the {self.where} gives no {shown}, a positive integer")
            return default
        name, value = found
        if value is None and null is not REFUSE:
            return null
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"the {self.where}'s {name} must be a positive integer, got {repr(value)[:40]}"
            )
        return value

    def flag(self, name: str, default: bool) -> bool:
        """A true/false field; ``default`` (the config class's) when absent."""
        value = self.config.get(name, default)
        if not isinstance(value, bool):
            raise ConfigError(f"the {self.where}'s {name} must be true or false, got {value!r}")
        return value

    def choice(self, name: str, default: Any, allowed: tuple[Any, ...], why: str) -> Any:
        """A field whose other values these formulas do not cover (``why`` says what)."""
        value = self.config.get(name, default)
        if value not in allowed:
            raise ConfigError(f"the {self.where}'s {name} is {value!r}: {why}")
        return value

    def head_dim(self, width: int, heads: int) -> int:
        """``width // heads``, refused where the heads do not split the width evenly."""
        if width % heads:
            raise ConfigError(
                f"the {self.where}'s {heads} attention heads do not divide its width {width}"
            )
        return width // heads


def dense(total: int) -> ParameterCount:
    return ParameterCount(total, None, None, None)


# Building blocks: the parameters of one module each.


def linear(n_in: int, n_out: int, bias: bool = True) -> int:
    return n_in * n_out + (n_out if bias else 0)


def layer_norm(width: int) -> int:
    return 2 * width  # weight and bias


def rms_norm(width: int) -> int:
    return width  # weight only


def attention(
    d: int, heads: int, kv_heads: int, head_dim: int, qkv_bias: bool, out_bias: bool
) -> int:
    """q, k, v (fused or apart, the count is one) and the output projection."""
    q, kv = heads * head_dim, kv_heads * head_dim
    return linear(d, q, qkv_bias) + 2 * linear(d, kv, qkv_bias) + linear(q, d, out_bias)


def mlp(d: int, inner: int, bias: bool = True) -> int:
    return linear(d, inner, bias) + linear(inner, d, bias)


def gated_mlp(d: int, inner: int, bias: bool = False) -> int:
    return 2 * linear(d, inner, bias) + linear(inner, d, bias)  # gate, up (fused or not), down


def head(vocab: int, d: int, tied: bool) -> int:
    return 0 if tied else vocab * d  # lm_head, no bias


# The Llama layout: RMSNorms, rotary positions, a gated MLP or experts.


@dataclass(frozen=True)
class RopeDecoder:
    """The knobs on which the rotary decoders of one layout differ."""

    model_class: str  # the transformers class counted
    norms: int = 2  # RMSNorms per layer
    qkv_bias: bool | str = False  # or the config flag that decides (absent: False, every class)
    out_bias: bool | str = False
    mlp_bias: bool | str = False
    qk_norm: str | None = None  # "head": a head_dim vector each (Gemma 3); "width": full (OLMo 2)
    kv_heads: int | None = None  # the class default; None: as many as the attention heads
    head_dim: int | None = None  # the class default; None: hidden_size // num_attention_heads
    nullable: tuple[str, ...] = ()  # the fields whose null means "derive it" (the others: int)
    tie: bool = False  # the class's tie_word_embeddings default
    experts: bool = False  # Mixtral's sparse MLP: a router and num_local_experts gated MLPs


def _bias(f: Fields, setting: bool | str) -> bool:
    return setting if isinstance(setting, bool) else f.flag(setting, False)


def rope_decoder(spec: RopeDecoder, f: Fields, tie: bool | None = None) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner = f.size("intermediate_size")
    kv_null = heads if "num_key_value_heads" in spec.nullable else REFUSE
    kv = f.size("num_key_value_heads", default=spec.kv_heads or heads, null=kv_null)
    head_dim_null = DERIVE if "head_dim" in spec.nullable else REFUSE
    head_dim = f.size("head_dim", default=spec.head_dim or DERIVE, null=head_dim_null)
    if head_dim is DERIVE:
        head_dim = f.head_dim(d, heads)
    qkv_bias, out_bias = _bias(f, spec.qkv_bias), _bias(f, spec.out_bias)
    qk_norm = {None: 0, "head": 2 * head_dim, "width": (heads + kv) * head_dim}[spec.qk_norm]
    layer = attention(d, heads, kv, head_dim, qkv_bias, out_bias)
    layer += qk_norm + spec.norms * rms_norm(d)
    tied = f.flag("tie_word_embeddings", spec.tie) if tie is None else tie
    outside = vocab * d + rms_norm(d) + head(vocab, d, tied)
    if not spec.experts:
        return dense(outside + layers * (layer + gated_mlp(d, inner, _bias(f, spec.mlp_bias))))
    experts = f.size("num_local_experts", "num_experts")
    k = f.size("num_experts_per_tok")
    if k > experts:
        raise ConfigError(
            f"the {f.where}'s num_experts_per_tok {k} exceeds its {experts} num_local_experts"
        )
    expert = gated_mlp(d, inner)
    router = linear(d, experts, bias=False)
    total = outside + layers * (layer + router + experts * expert)
    return ParameterCount(total, total - layers * (experts - k) * expert, experts, k)


ATTENTION_BIAS = {"qkv_bias": "attention_bias", "out_bias": "attention_bias"}  # q, k, v, o
NULL_KV = ("num_key_value_heads",)  # None: as many as the attention heads


def decoder(model_type: str, spec: RopeDecoder) -> Formula:
    """The formula of a Llama-shaped decoder."""
    return Formula(model_type, spec.model_class, partial(rope_decoder, spec))
