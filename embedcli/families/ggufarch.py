"""How llama.cpp reads a GGUF architecture before its first block: one ``GGUFArch`` per
``general.architecture`` value, declared in its family's entry (``Family.gguf``).

The truth for a GGUF file is what llama.cpp computes, not what the transformers class it was
converted from would: its ``src/models/<arch>.cpp`` reads some keys, fixes some values in code
(BLOOM's ALiBi bias, MiniCPM 3's scale of 12, T5's relative distance of 128), and tells the
sliding layers from the full ones by its own rule (every Nth layer full, unless
``attention.sliding_window_pattern`` lists them). An entry states those facts; the reader
(``models.gguf.config``) turns a file's metadata into the config.json fields the family reads,
and refuses a file whose every such field it cannot state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

REQUIRED: Any = object()  # a key llama.cpp cannot load the model without
ANY: Any = object()  # any value of a key


@dataclass(frozen=True)
class Key:
    """A config.json field read from the key ``<arch>.<name>`` (``name`` with a dot in front:
    the whole key, as ``.tokenizer.ggml.token_type_count``)."""

    field: str  # the config.json field (``attn_config.alibi_bias_max``: inside an object)
    name: str  # the GGUF key, after the architecture's prefix
    default: Any = REQUIRED  # llama.cpp's value where the file has none
    zero: Any = None  # what llama.cpp reads a 0 as, where its code takes 0 for "unset"
    integer: bool = False  # a count: an integer of at least 1


@dataclass(frozen=True, kw_only=True)
class GGUFArch:
    """One ``general.architecture``: the model_type it is read as, and what llama.cpp's code
    for it reads, fixes and derives before the first block."""

    name: str  # general.architecture
    model_type: str | None = None  # the family's model_type it is read as (None: its first)
    keys: tuple[Key, ...] = ()  # config.json fields read from keys
    # config.json fields llama.cpp's code fixes for the architecture (dotted: inside an object)
    fixed: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # the epsilon key llama.cpp reads for this architecture, under attention.
    eps: Literal["layer_norm_epsilon", "layer_norm_rms_epsilon"] | None = None
    # llama.cpp's load_swa_pattern default N: layer i slides unless i % N == N - 1 (0: every
    # layer slides), where attention.sliding_window_pattern gives neither a list nor an N;
    # None: no layer slides
    swa: int | None = None
    swa_needs_window: bool = False  # layers slide only where attention.sliding_window > 0
    swa_window_zero_off: bool = False  # no layer slides where attention.sliding_window is 0
    swa_blocks: int | None = None  # layers slide only with this block_count (EXAONE 4 32B)
    swa_kind: str = "sliding_attention"  # the config's name of such a layer (Llama 4: chunked)
    swa_window: int | None = None  # the window its code sets where the file gives none
    swa_model_type: str | None = None  # read as this model_type when layers slide (OLMo 3)
    # a per-layer-type family's sliding base where rope.freq_base_swa is absent: llama.cpp's
    # hparams default (10,000) for Gemma 3; None: the full layers' base (OLMo 3)
    swa_base_default: float | None = 10000.0
    swa_rope_scaled: bool = False  # its sliding layers' rope scaled as the full layers'
    # llama.cpp's n_no_rope_layer_step: layer i has no rope where (i + 1) % N == 0, said in
    # the config list ``rope_free_field`` (1: rope, 0: none); only where layers slide, with
    # ``rope_free_needs_swa`` (Llama 4 without chunks turns rope in every layer)
    rope_free_every: int | None = None
    rope_free_field: str = "no_rope_layers"
    rope_free_needs_swa: bool = False
    # where rope.dimension_count goes: the share of a head rotated, or MLA's rope dimensions
    rope_dims: Literal["partial", "qk_rope"] = "partial"
    rope_switch: bool = False  # rope.scaling.finetuned false turns rope off (Granite's code)
    rope_freqs: bool = False  # its code loads rope_freqs.weight (a divisor per rotated pair)
    yarn_betas: bool = False  # its code reads rope.scaling.yarn_beta_fast and _slow
    # its code reads rope.scaling.yarn_log_multiplier: as stored ("raw"), or divided by 0.1
    # ("tenth": DeepSeek 2's converter multiplies mscale_all_dim by 0.1)
    yarn_log_mul: Literal["raw", "tenth"] | None = None
    context_field: str = "max_position_embeddings"  # the config field of context_length
    # (key, value, why): a file whose key holds that value (ANY: any value) is read another
    # way by llama.cpp's code, or by none embedcli has
    refused: tuple[tuple[str, Any, str], ...] = ()
    refused_tensors: tuple[tuple[str, str], ...] = ()  # (tensor, why), likewise


    def reading(self) -> str:
        """What embedcli reads from a file of this architecture beyond the common keys, in
        the manual's words (docs/gguf.md's table)."""
        said = [f"`{k.name.lstrip('.')}` as {k.field}" for k in self.keys]
        said += [f"{field} {value!r} (fixed)" for field, value in self.fixed.items()
                 if value is not None]  # fmt: skip
        if self.eps:
            said.append(f"`attention.{self.eps}`")
        if self.swa is not None:
            rule = {0: "every layer", 2: "every other layer"}.get(
                self.swa, f"{self.swa - 1} layers in {self.swa}"
            )
            when = []
            if self.swa_needs_window:
                when.append("with a window")
            if self.swa_window_zero_off:
                when.append("unless the window is 0")
            if self.swa_blocks:
                when.append(f"with {self.swa_blocks} blocks only")
            kind = "chunked" if self.swa_kind != "sliding_attention" else "sliding"
            said.append(f"{rule} {kind}" + (f" ({', '.join(when)})" if when else ""))
        if self.swa_model_type:
            said.append(f"read as {self.swa_model_type} where layers slide")
        if self.rope_free_every:
            said.append(f"no rope every {self.rope_free_every}th layer")
        if self.rope_freqs:
            said.append("`rope_freqs.weight`")
        if self.rope_dims == "qk_rope":
            said.append("`rope.dimension_count` as qk_rope_head_dim")
        if self.yarn_betas or self.yarn_log_mul:
            said.append("YaRN's betas and log multiplier")
        said += [f"refused where `{key}` is {_said(value)}" for key, value, _ in self.refused]
        said += [f"refused with `{tensor}`" for tensor, _ in self.refused_tensors]
        return "; ".join(said) or "the common keys"


def _said(value: Any) -> str:
    return "there" if value is ANY else "absent" if value is None else repr(value)


def archs(*names: str, **shared: Any) -> tuple[GGUFArch, ...]:
    """Several architectures read the same way (llama.cpp's LLaMA-shaped code)."""
    return tuple(GGUFArch(name=name, **shared) for name in names)
