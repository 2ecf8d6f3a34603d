"""How many parameters a model has, from its ``config.json`` alone: one formula per architecture.

Each formula counts the parameters of the ``transformers`` class named in the registry below, as
that class builds them from the config: which Linear layers carry a bias, the norms of a layer
(an RMSNorm holds a weight, a LayerNorm a weight and a bias), grouped key/value heads, q/k norms,
a mixture of experts' router and experts, and the output head, counted once when it is tied to
the token table. A published figure can differ: a checkpoint that stores a tied head twice
counts it twice (Falcon 40B's hub page does).

The sizes that name a model (vocabulary, width, depth, heads, MLP width, a learned position
table's length, the experts) must be given; where a config leaves out any other field, its
transformers config class's default applies, and the comment beside it says which. A family, a
variant or a field the formulas do not cover is refused with a ``ConfigError``, never guessed.

Pure Python: no torch, no transformers (the CLI counts without importing either).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from embedcli.errors import ConfigError


@dataclass(frozen=True)
class ParameterCount:
    """A model's parameters; for a mixture of experts, also those one token runs through."""

    total: int  # every parameter once (tied tensors once), every expert counted
    active: (
        int | None
    )  # router, the k experts a token is sent to, and the shared parts; None: dense
    experts: int | None  # experts per MoE layer (Mixtral: 8); None: dense
    experts_per_token: int | None  # k (Mixtral: 2); None: dense


_REQUIRED = object()  # no default: the config must give the field
_REFUSE = object()  # a null is refused (the config class types the field int)
_DERIVE = object()  # the size follows from others (head_dim: the width over the heads)


class _Fields:
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

    def size(self, *names: str, default: Any = _REQUIRED, null: Any = _REFUSE) -> int:
        """A positive integer under any of ``names`` (the first is the canonical one, the rest
        the aliases transformers accepts); ``default`` when absent, ``null`` when null."""
        found = self._find(names)
        shown = " (or ".join(names) + ")" * (len(names) - 1)
        if found is None:
            if default is _REQUIRED:
                raise ConfigError(f"the {self.where} gives no {shown}, a positive integer")
            return default
        name, value = found
        if value is None and null is not _REFUSE:
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


def _dense(total: int) -> ParameterCount:
    return ParameterCount(total, None, None, None)


# Building blocks: the parameters of one module each.


def _linear(n_in: int, n_out: int, bias: bool = True) -> int:
    return n_in * n_out + (n_out if bias else 0)


def _layer_norm(width: int) -> int:
    return 2 * width  # weight and bias


def _rms_norm(width: int) -> int:
    return width  # weight only


def _attention(
    d: int, heads: int, kv_heads: int, head_dim: int, qkv_bias: bool, out_bias: bool
) -> int:
    """q, k, v (fused or apart, the count is one) and the output projection."""
    q, kv = heads * head_dim, kv_heads * head_dim
    return _linear(d, q, qkv_bias) + 2 * _linear(d, kv, qkv_bias) + _linear(q, d, out_bias)


def _mlp(d: int, inner: int, bias: bool = True) -> int:
    return _linear(d, inner, bias) + _linear(inner, d, bias)


def _gated_mlp(d: int, inner: int, bias: bool = False) -> int:
    return 2 * _linear(d, inner, bias) + _linear(inner, d, bias)  # gate, up (fused or not), down


def _head(vocab: int, d: int, tied: bool) -> int:
    return 0 if tied else vocab * d  # lm_head, no bias


# The Llama layout: RMSNorms, rotary positions, a gated MLP or experts.


@dataclass(frozen=True)
class _RopeDecoder:
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


def _bias(f: _Fields, setting: bool | str) -> bool:
    return setting if isinstance(setting, bool) else f.flag(setting, False)


def _rope_decoder(spec: _RopeDecoder, f: _Fields, tie: bool | None = None) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner = f.size("intermediate_size")
    kv_null = heads if "num_key_value_heads" in spec.nullable else _REFUSE
    kv = f.size("num_key_value_heads", default=spec.kv_heads or heads, null=kv_null)
    head_dim_null = _DERIVE if "head_dim" in spec.nullable else _REFUSE
    head_dim = f.size("head_dim", default=spec.head_dim or _DERIVE, null=head_dim_null)
    if head_dim is _DERIVE:
        head_dim = f.head_dim(d, heads)
    qkv_bias, out_bias = _bias(f, spec.qkv_bias), _bias(f, spec.out_bias)
    qk_norm = {None: 0, "head": 2 * head_dim, "width": (heads + kv) * head_dim}[spec.qk_norm]
    layer = _attention(d, heads, kv, head_dim, qkv_bias, out_bias)
    layer += qk_norm + spec.norms * _rms_norm(d)
    tied = f.flag("tie_word_embeddings", spec.tie) if tie is None else tie
    outside = vocab * d + _rms_norm(d) + _head(vocab, d, tied)
    if not spec.experts:
        return _dense(outside + layers * (layer + _gated_mlp(d, inner, _bias(f, spec.mlp_bias))))
    experts = f.size("num_local_experts", "num_experts")
    k = f.size("num_experts_per_tok")
    if k > experts:
        raise ConfigError(
            f"the {f.where}'s num_experts_per_tok {k} exceeds its {experts} num_local_experts"
        )
    expert = _gated_mlp(d, inner)
    router = _linear(d, experts, bias=False)
    total = outside + layers * (layer + router + experts * expert)
    return ParameterCount(total, total - layers * (experts - k) * expert, experts, k)


_ATTENTION_BIAS = {"qkv_bias": "attention_bias", "out_bias": "attention_bias"}  # q, k, v, o
# Gemma2Config: norms before and after attention and MLP, 4 key/value heads of 256, tied
_GEMMA = _RopeDecoder(
    "Gemma2ForCausalLM", norms=4, kv_heads=4, head_dim=256, tie=True, **_ATTENTION_BIAS
)
_NULL_KV = ("num_key_value_heads",)  # None: as many as the attention heads

_ROPE_DECODERS = {
    "llama": _RopeDecoder(
        "LlamaForCausalLM", mlp_bias="mlp_bias", nullable=(*_NULL_KV, "head_dim"), **_ATTENTION_BIAS
    ),
    # MistralConfig and MixtralConfig: 8 key/value heads
    "mistral": _RopeDecoder("MistralForCausalLM", kv_heads=8, nullable=("head_dim",)),
    "mixtral": _RopeDecoder("MixtralForCausalLM", kv_heads=8, nullable=("head_dim",), experts=True),
    # Qwen2Config: 32 key/value heads when absent, as many as the heads when null
    "qwen2": _RopeDecoder("Qwen2ForCausalLM", qkv_bias=True, kv_heads=32, nullable=_NULL_KV),
    "phi3": _RopeDecoder("Phi3ForCausalLM", nullable=_NULL_KV),  # fused qkv_proj, gate_up_proj
    # norms after attention and after the MLP, none before
    "olmo2": _RopeDecoder(
        "Olmo2ForCausalLM", qk_norm="width", nullable=_NULL_KV, **_ATTENTION_BIAS
    ),
    "gemma2": _GEMMA,
    "gemma3_text": replace(_GEMMA, model_class="Gemma3ForCausalLM", qk_norm="head"),  # as Gemma 2
}


# The other families, one formula each.


def _gpt2(f: _Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("n_embd", "hidden_size")
    layers, heads = f.size("n_layer", "num_hidden_layers"), f.size("n_head", "num_attention_heads")
    positions = f.size("n_positions", "max_position_embeddings")
    inner = f.size("n_inner", default=4 * d, null=4 * d)  # GPT2Config: n_inner None, 4 × n_embd
    f.head_dim(d, heads)
    f.choice("add_cross_attention", False, (False,), "cross-attention blocks are not counted")
    layer = 2 * _layer_norm(d) + _linear(d, 3 * d) + _linear(d, d) + _mlp(d, inner)
    tied = f.flag("tie_word_embeddings", True)  # GPT2Config: tied
    return _dense((vocab + positions) * d + layers * layer + _layer_norm(d) + _head(vocab, d, tied))


def _gpt_neox(f: _Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner = f.size("intermediate_size")
    f.head_dim(d, heads)
    bias = f.flag("attention_bias", True)  # GPTNeoXConfig: attention_bias True
    layer = 2 * _layer_norm(d) + _linear(d, 3 * d, bias) + _linear(d, d, bias) + _mlp(d, inner)
    tied = f.flag("tie_word_embeddings", False)  # GPTNeoXConfig: untied (embed_out)
    return _dense(vocab * d + layers * layer + _layer_norm(d) + _head(vocab, d, tied))


def _bloom(f: _Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size", "n_embed")
    layers, heads = f.size("n_layer", "num_hidden_layers"), f.size("n_head", "num_attention_heads")
    f.head_dim(d, heads)
    layer = 2 * _layer_norm(d) + _linear(d, 3 * d) + _linear(d, d) + _mlp(d, 4 * d)
    tied = f.flag("tie_word_embeddings", True)  # BloomConfig: tied
    # the word embeddings' own LayerNorm, then the blocks, then ln_f
    return _dense(vocab * d + 2 * _layer_norm(d) + layers * layer + _head(vocab, d, tied))


def _opt(f: _Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner, positions = f.size("ffn_dim"), f.size("max_position_embeddings")
    f.head_dim(d, heads)
    proj = f.size("word_embed_proj_dim", default=d, null=d)  # OPTConfig: None, the width
    bias = f.flag("enable_bias", True)  # OPTConfig: biases on
    norm = _layer_norm(d) if f.flag("layer_norm_elementwise_affine", True) else 0
    final = f.flag("do_layer_norm_before", True) and not f.flag("_remove_final_layer_norm", False)
    layer = 4 * _linear(d, d, bias) + _mlp(d, inner, bias) + 2 * norm
    projections = 2 * proj * d if proj != d else 0  # project_in and project_out, no bias
    tied = f.flag("tie_word_embeddings", True)  # OPTConfig: tied
    total = vocab * proj + (positions + 2) * d + projections + layers * layer  # 2 offset rows
    return _dense(total + (norm if final else 0) + _head(vocab, proj, tied))


def _falcon(f: _Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size", "n_embed")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    f.choice(
        "new_decoder_architecture",
        False,
        (True,),  # FalconConfig: False
        "only Falcon's new decoder architecture (40B, 180B) is counted",
    )
    kv = f.size("num_kv_heads", default=heads, null=heads)  # FalconConfig: None, as many as heads
    inner = f.size("ffn_hidden_size", default=4 * d, null=4 * d)  # FalconConfig: None, 4 × width
    bias = f.flag("bias", False)  # FalconConfig: no biases
    parallel = f.flag("parallel_attn", True)  # FalconConfig: parallel attention and MLP
    # ln_attn and ln_mlp, or one input_layernorm when num_ln_in_parallel_attn is 1
    norms = f.choice("num_ln_in_parallel_attn", None, (None, 1, 2), "it must be 1 or 2") or 2
    head_dim = f.head_dim(d, heads)
    attention = _linear(d, (heads + 2 * kv) * head_dim, bias) + _linear(d, d, bias)
    layer = attention + _mlp(d, inner, bias) + (norms if parallel else 2) * _layer_norm(d)
    tied = f.flag("tie_word_embeddings", True)  # FalconConfig: tied
    return _dense(vocab * d + layers * layer + _layer_norm(d) + _head(vocab, d, tied))


def _bert(f: _Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner, positions = f.size("intermediate_size"), f.size("max_position_embeddings")
    types = f.size("type_vocab_size", default=2)  # BertConfig: 2 token types
    f.head_dim(d, heads)
    f.choice(
        "position_embedding_type",
        "absolute",
        ("absolute",),
        "relative position embeddings are not counted",
    )
    f.choice("add_cross_attention", False, (False,), "cross-attention blocks are not counted")
    layer = 4 * _linear(d, d) + _mlp(d, inner) + 2 * _layer_norm(d)
    embeddings = (vocab + positions + types) * d + _layer_norm(d)
    return _dense(embeddings + layers * layer + _linear(d, d))  # the pooler last


def _t5(f: _Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("d_model", "hidden_size")
    heads = f.size("num_heads", "num_attention_heads")
    inner = f.size("d_ff")
    encoder_layers = f.size("num_layers", "num_hidden_layers")
    # T5Config: num_decoder_layers None, as many as the encoder's
    decoder_layers = f.size("num_decoder_layers", default=encoder_layers, null=encoder_layers)
    head_dim = f.size("d_kv", "head_dim", default=64)  # T5Config: d_kv 64
    buckets = f.size("relative_attention_num_buckets", default=32)  # T5Config: 32
    proj = f.config.get("feed_forward_proj", "relu")  # T5Config: "relu", one wi
    parts = proj.split("-") if isinstance(proj, str) else ()
    if len(parts) not in (1, 2) or (len(parts) == 2 and parts[0] != "gated") or not all(parts):
        raise ConfigError(f"the {f.where}'s feed_forward_proj must be ACT or gated-ACT: {proj!r}")
    wi = len(parts)  # gated: wi_0 and wi_1
    ff = wi * _linear(d, inner, False) + _linear(inner, d, False)
    attention = _attention(d, heads, heads, head_dim, False, False) + _rms_norm(d)
    encoder = encoder_layers * (attention + ff + _rms_norm(d))
    decoder = decoder_layers * (2 * attention + ff + _rms_norm(d))
    stacks = encoder + decoder + 2 * (buckets * heads + _rms_norm(d))  # first-layer bias, final
    # T5ForConditionalGeneration ties by default; a config saying false (T5 v1.1) has its own
    # lm_head in the checkpoint, and transformers keeps the two apart when it loads them
    tied = f.flag("tie_word_embeddings", True)
    return _dense(vocab * d + stacks + _head(vocab, d, tied))


def _siglip_vision(f: _Fields) -> int:
    d, inner = f.size("hidden_size"), f.size("intermediate_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    image, patch = f.size("image_size"), f.size("patch_size")
    channels = f.size("num_channels", default=3)  # SiglipVisionConfig: 3 channels
    f.head_dim(d, heads)
    embeddings = _linear(channels * patch * patch, d) + (image // patch) ** 2 * d  # conv, table
    layer = 2 * _layer_norm(d) + 4 * _linear(d, d) + _mlp(d, inner)
    total = embeddings + layers * layer + _layer_norm(d)  # post_layernorm
    if f.flag("vision_use_head", True):  # SiglipVisionConfig: the attention-pooling head
        total += d + 4 * _linear(d, d) + _layer_norm(d) + _mlp(d, inner)  # probe, attention
    return total


def _gemma3(f: _Fields) -> ParameterCount:
    """Gemma3ForConditionalGeneration: language model, SigLIP vision tower, and projector."""
    text = _Fields(f.config.get("text_config"), "gemma3 config's text_config")
    vision = _Fields(f.config.get("vision_config"), "gemma3 config's vision_config")
    text.choice("model_type", "gemma3_text", ("gemma3_text",), "a gemma3 language model is one")
    vision.choice(
        "model_type",
        "siglip_vision_model",
        ("siglip_vision_model",),
        "the formula counts a SigLIP vision tower",
    )
    # the wrapper's own tie_word_embeddings decides (Gemma3Config: tied), not its text_config's
    tied = f.flag("tie_word_embeddings", True)
    language = _rope_decoder(_ROPE_DECODERS["gemma3_text"], text, tie=tied).total
    vision_d, text_d = vision.size("hidden_size"), text.size("hidden_size")
    projector = vision_d * text_d + _rms_norm(vision_d)  # mm_input_projection, mm_soft_emb_norm
    return _dense(language + _siglip_vision(vision) + projector)


_Formula = Callable[[_Fields], ParameterCount]

# model_type -> (the transformers class whose parameters are counted, its formula)
FORMULAS: dict[str, tuple[str, _Formula]] = {
    **{
        model_type: (spec.model_class, partial(_rope_decoder, spec))
        for model_type, spec in _ROPE_DECODERS.items()
    },
    "gemma3": ("Gemma3ForConditionalGeneration", _gemma3),
    "gpt2": ("GPT2LMHeadModel", _gpt2),
    "gpt_neox": ("GPTNeoXForCausalLM", _gpt_neox),
    "bloom": ("BloomForCausalLM", _bloom),
    "opt": ("OPTForCausalLM", _opt),
    "falcon": ("FalconForCausalLM", _falcon),
    "bert": ("BertModel", _bert),  # the encoder with its pooler, whatever head a checkpoint has
    "t5": ("T5ForConditionalGeneration", _t5),
}


def count_parameters(config: Mapping[str, Any]) -> ParameterCount:
    """The parameters of the model a ``config.json`` describes (its registry class's)."""
    if not isinstance(config, Mapping):
        raise ConfigError("the config is not a JSON object")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in FORMULAS:
        named = "names no model_type" if model_type is None else f"names model_type {model_type!r}"
        raise ConfigError(
            f"the config {named}, a family whose parameters embedcli cannot count; "
            f"it counts {', '.join(sorted(FORMULAS))}"
        )
    return FORMULAS[model_type][1](_Fields(config, f"{model_type} config"))
