"""Tiny models of the multimodal group: see tests/support/familycases/__init__.py.

A wrapper's language model is in ``text_config``; its image and audio towers keep their real
sizes by default (gigabytes), so ``small`` makes every sub-config small: the text model at
SMALL's sizes, each tower a layer or two of width 32. Only the text model's input layer is
compared; the towers are built only because the wrapper's class builds them.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Any

from support.familycases.case import VOCAB, Case

# a tower's sizes, under every name the vision and audio configs use
TOWER: dict[str, Any] = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_layers=1,
    encoder_layers=1,
    depth=1,
    num_attention_heads=2,
    num_heads=2,
    encoder_attention_heads=2,
    num_key_value_heads=2,
    encoder_ffn_dim=64,
    d_model=32,
    embed_dim=32,
    head_dim=16,
    image_size=28,
    patch_size=14,
    num_mel_bins=16,
    max_source_positions=64,
    vision_output_dim=32,
    projection_dim=32,
    num_global_layers=1,
    out_hidden_size=64,  # the text model's width (Qwen's merger projects onto it)
    audio_hidden_size=32,  # Nemotron 3.5 Transcribe's head reads the audio tower's width
    num_filters=4,  # VibeVoice's acoustic tokenizers: 4 channels, doubled at each stage
)


def _set(config: Any, sizes: dict[str, Any]) -> None:
    known = config.to_dict()
    for name, value in sizes.items():
        if name in known:
            with contextlib.suppress(AttributeError, ValueError, TypeError):
                setattr(config, name, value)


def _sub_configs(config: Any) -> list[tuple[str, Any]]:
    from transformers import PretrainedConfig

    return [(k, v) for k, v in vars(config).items() if isinstance(v, PretrainedConfig)]


def small(config: Any, text: dict[str, Any] | None = None) -> Any:
    """``config`` with its text model at SMALL's sizes (and ``text``'s fields) and every other
    sub-config a tower of TOWER's sizes (a sub-config's own sub-configs too)."""
    from support.familymodels import SMALL

    for name, sub in _sub_configs(config):
        if name == "text_config":
            _set(sub, SMALL)
            for field, value in (text or {}).items():
                setattr(sub, field, value)
            for token in ("pad_token_id", "bos_token_id", "eos_token_id"):
                value = getattr(sub, token, None)
                if isinstance(value, int) and value >= VOCAB:
                    setattr(sub, token, 1)
            layer_types = getattr(sub, "layer_types", None)
            if isinstance(layer_types, list):
                sub.layer_types = layer_types[: sub.num_hidden_layers]
            _with_attention(sub)
        else:
            _set(sub, TOWER)
            if isinstance(getattr(sub, "depths", None), list):  # blocks per stage: one each
                sub.depths = [1] * len(sub.depths)
            small(sub)
    _with_attention(config)
    return config


def _with_attention(config: Any) -> None:
    """Every per-layer list cut to the layers built (MiniMax M3's mlp_layer_types); Qwen 3.5's
    layers after the cut: linear attention only, which its mask code cannot take; the last one
    made full attention, as every fourth layer is."""
    layers = getattr(config, "num_hidden_layers", None)
    for name, value in vars(config).items():
        per_layer = name.endswith("layer_types") or name == "no_rope_layers"  # Llama 4's
        if per_layer and isinstance(value, list) and layers:
            setattr(config, name, value[:layers])
    types = getattr(config, "layer_types", None)
    linear_only = isinstance(types, list) and "full_attention" not in types
    if linear_only and "linear_attention" in types:
        config.layer_types = [*types[:-1], "full_attention"]


def _emu3(config: Any) -> Any:
    """Emu3 made small, with the two entries its vocabulary map must hold (the image token and
    the end of an image row) inside the tiny vocabulary."""
    config.vocabulary_map = {"<image>": VOCAB - 1, "<|extra_200|>": VOCAB - 2}
    return small(config)


# Dots 3 Note at the sizes of transformers' own tests (tests/models/dots3_note: get_tiny_config):
# SMALL's cut leaves its per-layer attention and vision-adapter settings inconsistent
_DOTS3_TEXT: dict[str, Any] = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=4, max_position_embeddings=128, q_lora_rank=16, kv_lora_rank=16,
    qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8, head_dim=16,
    layer_types=["full_attention", "sliding_attention"], sliding_window_size=4,
    swa_num_attention_heads=4, swa_num_key_value_heads=4, swa_q_lora_rank=16,
    swa_kv_lora_rank=16, swa_head_dim=16, swa_qk_nope_head_dim=8, swa_qk_rope_head_dim=8,
    swa_v_head_dim=8, index_n_heads=2, index_head_dim=128, index_topk=4, use_dsa=False,
    n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=16,
    shared_experts_intermediate_size=16, moe_shared_expert_intermediate_size=16,
    first_k_dense_replace=1, vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=2,
)  # fmt: skip
_DOTS3_VISION: dict[str, Any] = dict(
    embed_dim=32, hidden_size=32, intermediate_size=64, moe_intermediate_size=32,
    num_hidden_layers=2, num_attention_heads=4, num_channels=3, patch_size=2,
    spatial_merge_size=2, temporal_patch_size=1, pyramid_num_routed=[-1, 2], capacity_factor=2,
    adapter_in_dim=32, adapter_out_dim=32, adapter_merge_size=2,
)  # fmt: skip
_DOTS3_AUDIO: dict[str, Any] = dict(
    whisper_config=dict(d_model=32, encoder_attention_heads=4, encoder_ffn_dim=64,
                        encoder_layers=2, num_mel_bins=8, max_source_positions=32,
                        activation_function="swiglu"),
    feature_size=8, n_fft=16, hop_length=4, chunk_seconds=1, downsample_hidden_size=4,
    conv_bucket_step=None, conv_bucket_max_elements=None, adapter_input_size=32,
    adapter_output_size=32,
)  # fmt: skip


def _dots3_note(config: Any) -> Any:
    """Dots 3 Note (with its vision and audio towers), as transformers' tests build it."""
    from transformers import AutoConfig

    tokens = dict(image_token_id=VOCAB - 4, image_start_token_id=VOCAB - 8,
                  image_end_token_id=VOCAB - 7, video_token_id=VOCAB - 2,
                  audio_start_token_id=VOCAB - 6, audio_end_token_id=VOCAB - 5,
                  audio_token_id=VOCAB - 3)  # fmt: skip
    if config.model_type == "dots3_note_text":
        return AutoConfig.for_model("dots3_note_text", **_DOTS3_TEXT)
    return AutoConfig.for_model("dots3_note", **_DOTS3_TEXT, **tokens,
                                vision_config=_DOTS3_VISION, audio_config=_DOTS3_AUDIO)  # fmt: skip


# Qwen 4 Exp: a linear-attention first block, then an indexed one with its QSA indexer small
_QWEN4_EXP: dict[str, Any] = dict(
    layer_types=["linear_attention", "indexed_attention"], indexer_n_heads=2,
    indexer_kv_heads=1, indexer_head_dim=16, indexer_budget=4, indexer_compress_ratio=2,
    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
    shared_expert_intermediate_size=32, hc_lowrank=16,
)  # fmt: skip


def wrapper(
    model_type: str,
    kind: str = "causal",
    text: dict[str, Any] | None = None,
    positional: str = "rope",
    **fields: Any,
) -> Case:
    """A multimodal wrapper's case: its sub-configs made small, ``text`` set on its text
    model, ``fields`` on the config itself."""
    configure = partial(small, text=text)
    return Case(model_type, model_type, fields, kind, positional, configure=configure)


CASES: tuple[Case, ...] = (
    Case("dots3_note", "dots3_note", kind="image_text", configure=_dots3_note),
    Case("dots3_note_text", "dots3_note_text", configure=_dots3_note),
    wrapper("audioflamingo3", "seq2seq"),
    Case("emu3", "emu3", kind="image_text", configure=_emu3),
    wrapper("fuyu"),
    wrapper("git", positional="learned"),
    wrapper("glmasr", "seq2seq"),
    wrapper("got_ocr2"),
    wrapper("granite_speech", "seq2seq", text={"embedding_multiplier": 12.0}),
    wrapper("granite_speech_plus", "seq2seq", text={"embedding_multiplier": 12.0}),
    wrapper("llama4", "image_text"),
    wrapper("llama4_text"),
    wrapper("minimax_m3_vl_text"),
    wrapper("mllama", "image_text"),
    wrapper("modernvbert", "masked"),
    wrapper("moshi"),
    wrapper("moss_transcribe_diarize"),
    wrapper("musicflamingo", "seq2seq"),
    wrapper("nemo_speechlm", "seq2seq", positional="none"),
    wrapper("omniasr", "seq2seq"),
    wrapper("phi4_multimodal"),
    wrapper("qwen2_audio", "seq2seq"),
    wrapper("qwen3_5", "image_text"),
    wrapper("qwen3_5_moe", "image_text"),
    wrapper("qwen3_5_moe_text"),
    wrapper("qwen3_5_text"),
    wrapper("qwen3_asr", "seq2seq"),
    Case("qwen4_exp_text", "qwen4_exp_text", dict(_QWEN4_EXP)),
    wrapper("qwen4_exp", "image_text", text=_QWEN4_EXP),
    wrapper("ultravbert", "masked"),
    wrapper("vibevoice_asr", "seq2seq"),
    wrapper("voxtral", "seq2seq"),
)


# the group's types of transformers' mappings that no case builds: {model_type: why}
LEFT_OUT: dict[str, str] = {
    "musicgen": "its ids are audio codebook codes, shaped (batch x num_codebooks, T): the first "
    "block reads the sum of num_codebooks lookups (one table per codebook) plus sinusoids, not "
    "one lookup of the token ids embedcli takes",
    "musicgen_melody": "as musicgen: the sum of one lookup per audio codebook, not one lookup of "
    "token ids",
    "voxtral_realtime": "its first block reads the token embeddings plus the audio encoder's "
    "output at every position: VoxtralRealtimeForConditionalGeneration's forward requires "
    "input_features, so no first block reads token ids alone",
}
