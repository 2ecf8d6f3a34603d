"""Multimodal wrappers whose language model is a family embedcli already reads: speech and
document models built on Qwen2, Qwen3, Llama, Granite and Persimmon (their language model in
``text_config``), Mllama, Llama 4, Phi-4 multimodal and Moshi's text decoder.

For token ids alone (no image, no audio), the first block of the language model reads what the
language model's own input layer computes: the wrapper adds nothing. Image and audio towers are
not shown; ``embed`` names them from the config's sub-configs.

Llama 4's parameter formula (its text model: routed experts beside a shared one in the MoE
layers, a dense MLP of intermediate_size_mlp in the others) and Maverick's published text
config, whose count leaves out the vision tower and its projector.
"""

from __future__ import annotations

from dataclasses import replace

from embedcli.errors import ConfigError
from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import (
    Fields,
    Formula,
    ParameterCount,
    attention,
    gated_mlp,
    linear,
    rms_norm,
)
from embedcli.families.params import head as lm_head  # _wrapping's head is a name
from embedcli.families.registry import Family, Published, family_of, register, rope_family

# where a wrapper keeps its language model: transformers 5's layout, then the older one
_LANGUAGE = ("model.language_model", "language_model.model")
_TEXT = ("model.text_model",)  # Emu3's and the VBERT encoders' name for it


def _wrapping(
    name: str, model_type: str, arch: str, text: str, head: str = "", prefixes=_LANGUAGE
) -> Family:
    """A wrapper of the registered family of ``text`` (its text_config's model_type, which
    the wrapper's config must hold): the language model's input layer, under the wrapper's
    prefixes; ``arch`` names its classes (``{arch}Model``, ``{arch}{head}``)."""
    inner = family_of(text)
    assert inner is not None, f"{text} is registered before its wrappers"
    return replace(
        inner,
        name=name,
        model_types=(model_type,),
        architectures=(f"{arch}Model", f"{arch}{head or 'ForConditionalGeneration'}"),
        prefixes=prefixes,
        text_config=(model_type,),
        requires=(*inner.requires, ("model_type", text)),  # the text model read is this one
        gguf=(),
        parameters=(),
        presets=(),
        layouts=(),
    )


def _moe_layers(f: Fields, layers: int) -> int:
    """How many layers hold experts: those moe_layers lists, else every
    interleave_moe_layer_step-th (Llama4TextConfig's rule; its default step: 1, every layer)."""
    listed = f.config.get("moe_layers")
    if listed is None:
        step = f.size("interleave_moe_layer_step", default=1)
        return len(range(step - 1, layers, step))
    if not isinstance(listed, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in listed
    ):
        raise ConfigError(f"the {f.where}'s moe_layers must be a list of layer numbers")
    return sum(1 for i in range(layers) if i in listed)


def _llama4_text(f: Fields) -> ParameterCount:
    """Llama4ForCausalLM: Llama's attention (its qk norm has no weight), and in each MoE layer a
    router, num_local_experts gated MLPs of intermediate_size and a shared one as wide; the
    other layers keep a gated MLP of intermediate_size_mlp. Defaults: Llama4TextConfig's."""
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner, experts = f.size("intermediate_size"), f.size("num_local_experts")
    dense_inner = f.size("intermediate_size_mlp", default=16384)  # Llama4TextConfig: 16384
    k = f.size("num_experts_per_tok", default=1)  # Llama4TextConfig: 1
    kv = f.size("num_key_value_heads", default=8)  # Llama4TextConfig: 8 (its int: no null)
    head_dim = f.size("head_dim", default=128)  # Llama4TextConfig: 128 (its int: no null)
    if k > experts:
        raise ConfigError(
            f"the {f.where}'s num_experts_per_tok {k} exceeds its {experts} num_local_experts"
        )
    sparse = _moe_layers(f, layers)
    bias = f.flag("attention_bias", False)  # on q, k, v and o alike
    layer = attention(d, heads, kv, head_dim, bias, bias) + 2 * rms_norm(d)
    expert = gated_mlp(d, inner)
    moe = linear(d, experts, bias=False) + experts * expert + expert  # router, routed, shared
    tied = f.flag("tie_word_embeddings", False)  # Llama4TextConfig: untied
    outside = vocab * d + rms_norm(d) + lm_head(vocab, d, tied)
    total = outside + layers * layer + sparse * moe + (layers - sparse) * gated_mlp(d, dense_inner)
    return ParameterCount(total, total - sparse * (experts - k) * expert, experts, k)


# The text model both Llama 4 checkpoints share (Llama4ForConditionalGeneration's text_config,
# a Llama4ForCausalLM); each preset's count leaves out the vision tower and its projector
_LLAMA_4_TEXT = {
    "model_type": "llama4_text",
    "architectures": ["Llama4ForCausalLM"],
    "vocab_size": 202048,
    "hidden_size": 5120,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_experts_per_tok": 1,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "attention_chunk_size": 8192,
    "no_rope_layers": [1, 1, 1, 0] * 12,  # no rope in every 4th layer, as Llama4TextConfig
    "attention_bias": False,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

_LLAMA_4_MAVERICK = Published(
    name="llama-4-maverick",
    description="Llama 4 Maverick 17B-128E (its text model)",
    hub_id="meta-llama/Llama-4-Maverick-17B-128E",
    published="400B",  # the vision tower and projector are under 1B of it
    config={
        **_LLAMA_4_TEXT,
        "num_local_experts": 128,
        "interleave_moe_layer_step": 2,  # experts in every second layer, from layer 1
        "max_position_embeddings": 1048576,
        "rope_scaling": None,  # only Scout scales its rope (llama_models' Llama 4 ModelArgs)
        "use_qk_norm": False,  # weightless: no parameters either way
    },
)

_LLAMA_4_SCOUT = Published(
    name="llama-4-scout",
    description="Llama 4 Scout 17B-16E (its text model)",
    hub_id="meta-llama/Llama-4-Scout-17B-16E",
    published="109B",
    published_note=(
        "the hub's 109B counts the vision tower and its projector beside the 107.8B text "
        "model that transformers' Llama4ForCausalLM builds and embedcli counts"
    ),
    config={
        **_LLAMA_4_TEXT,
        "num_local_experts": 16,
        "interleave_moe_layer_step": 1,  # experts in every layer
        "max_position_embeddings": 10485760,
        "rope_scaling": {  # Scout's alone (llama_models' Llama 4 ModelArgs): no middle band
            "rope_type": "llama3",
            "factor": 16.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 1.0,
            "original_max_position_embeddings": 8192,
        },
        "use_qk_norm": True,  # weightless: no parameters either way
    },
)

register(
    _wrapping("Qwen2-Audio", "qwen2_audio", "Qwen2Audio", "qwen2"),
    _wrapping("Audio Flamingo 3", "audioflamingo3", "AudioFlamingo3", "qwen2"),
    _wrapping("Music Flamingo", "musicflamingo", "MusicFlamingo", "qwen2"),
    _wrapping("GOT-OCR 2", "got_ocr2", "GotOcr2", "qwen2"),
    _wrapping("VibeVoice ASR", "vibevoice_asr", "VibeVoiceAsr", "qwen2"),
    _wrapping("Qwen3-ASR", "qwen3_asr", "Qwen3ASR", "qwen3"),
    _wrapping(
        "MOSS Transcribe Diarize", "moss_transcribe_diarize", "MossTranscribeDiarize", "qwen3"
    ),
    _wrapping("GLM-ASR", "glmasr", "GlmAsr", "llama"),
    _wrapping("Omnilingual ASR", "omniasr", "OmniASR", "llama"),
    _wrapping("Voxtral", "voxtral", "Voxtral", "llama"),
    _wrapping("Granite Speech", "granite_speech", "GraniteSpeech", "granite"),
    _wrapping("Granite Speech Plus", "granite_speech_plus", "GraniteSpeechPlus", "granite"),
    _wrapping("Fuyu", "fuyu", "Fuyu", "persimmon", head="ForCausalLM"),
    replace(  # saved in NeMo's names: the language model under llm.model, its table embed_tokens
        _wrapping(
            "Nemotron 3.5 Transcribe", "nemo_speechlm", "Nemotron3_5Transcribe", "nemotron_h"
        ),
        token=("embed_tokens.weight", "embeddings.weight"),
        prefixes=("llm.model", *_LANGUAGE),
    ),
    _wrapping("ModernVBERT", "modernvbert", "ModernVBert", "modernbert", "ForMaskedLM", _TEXT),
    _wrapping("UltraVBERT", "ultravbert", "UltraVBert", "ultrabert", "ForMaskedLM", _TEXT),
    Family(
        name="Emu3",
        model_types=("emu3",),
        architectures=("Emu3Model", "Emu3ForConditionalGeneration"),
        prefixes=(*_TEXT, "text_model.model"),  # the second: as save_pretrained writes it
        text_config=("emu3",),
    ),
    rope_family("MiniMax M3 VL (text)", "minimax_m3_vl_text", arch="MiniMaxM3VL"),
    Family(
        name="GIT",  # GitEmbeddings: word + learned position rows, LayerNorm (no token types)
        model_types=("git",),
        architectures=("GitModel", "GitForCausalLM"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("git",),
        positional="learned",
        position="embeddings.position_embeddings.weight",
        norm="embeddings.LayerNorm",
        head="output.weight",
        requires=(("position_embedding_type", "absolute"),),
    ),
    Family(
        # Llama 3.2 Vision: its cross-attention layers read the image; for token ids alone
        # they are skipped, and layer 0 reads the text embeddings
        name="Mllama",
        model_types=("mllama",),  # its text model alone is no type transformers can load
        architectures=("MllamaTextModel", "MllamaForCausalLM"),
        prefixes=("model", *_LANGUAGE),
        text_config=("mllama",),
        extra_rows=8,  # MllamaTextModel's table: vocab_size + 8 rows
    ),
    Family(
        name="Llama 4",  # no_rope_layers: the layers with rope (1) and without (0)
        model_types=("llama4_text", "llama4"),
        architectures=("Llama4TextModel", "Llama4ForCausalLM"),
        prefixes=("model", *_LANGUAGE),
        text_config=("llama4",),
        rope_layers=("no_rope_layers", "no_rope_layer_interval", 4),  # Llama4TextConfig: 4
        # llama4.cpp: 3 layers in 4 attend in chunks and turn rope, every 4th neither; with
        # sliding_window 0 every layer is full and turns rope
        gguf=(
            GGUFArch(
                name="llama4",
                model_type="llama4_text",
                swa=4,
                swa_kind="chunked_attention",
                swa_window_zero_off=True,
                rope_free_every=4,
                rope_free_needs_swa=True,
                rope_freqs=True,
            ),
        ),
        parameters=(Formula("llama4_text", "Llama4ForCausalLM", _llama4_text),),
        presets=(_LLAMA_4_SCOUT, _LLAMA_4_MAVERICK),
    ),
    replace(
        family_of("phi3"),  # Phi-3's text model; its image and audio embedders read no text
        name="Phi-4 multimodal",
        model_types=("phi4_multimodal",),
        architectures=("Phi4MultimodalModel", "Phi4MultimodalForCausalLM"),
        gguf=(),
        parameters=(),
        presets=(),
    ),
    Family(
        name="Qwen 3.5",  # rope over 3 streams (mrope_section); for text alone all are arange
        model_types=("qwen3_5_text", "qwen3_5"),
        architectures=("Qwen3_5TextModel", "Qwen3_5ForCausalLM"),
        prefixes=("model", *_LANGUAGE),
        text_config=("qwen3_5",),
        mrope_section=(11, 11, 10),  # Qwen3_5TextRotaryEmbedding's default
    ),
    Family(
        name="Qwen 3.5 MoE",
        model_types=("qwen3_5_moe_text", "qwen3_5_moe"),
        architectures=("Qwen3_5MoeTextModel", "Qwen3_5MoeForCausalLM"),
        prefixes=("model", *_LANGUAGE),
        text_config=("qwen3_5_moe",),
        mrope_section=(11, 11, 10),  # Qwen3_5TextRotaryEmbedding's default
    ),
    Family(
        name="Qwen 4 Exp",  # Qwen 3.5's rope; hc_count hyper-connection streams side by side
        model_types=("qwen4_exp_text", "qwen4_exp"),
        architectures=("Qwen4ExpTextModel", "Qwen4ExpForCausalLM"),
        prefixes=("model", *_LANGUAGE),
        text_config=("qwen4_exp",),
        mrope_section=(11, 11, 10),  # Qwen4ExpTextRotaryEmbedding's default
        block_layout="streams_flat",  # hidden_states.repeat(1, 1, hc_count)
        streams="hc_count",
        side_inputs=(
            (
                "ple_input_ids",
                "the ids again: the blocks ple_layer_ids lists, if any, hash their n-grams "
                "into rows of their own",
            ),
        ),
    ),
    Family(
        name="Dots 3 Note",  # its text model's embed_tokens; rope per layer type
        model_types=("dots3_note_text", "dots3_note"),
        architectures=("Dots3NoteTextModel", "Dots3NoteForCausalLM"),
        prefixes=("model", *_LANGUAGE),
        text_config=("dots3_note",),
    ),
    rope_family("Moshi (text decoder)", "moshi", arch="Moshi", extra_rows=1),  # vocab_size + 1
)
