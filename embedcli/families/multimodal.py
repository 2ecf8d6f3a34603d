"""Multimodal wrappers whose language model is a family embedcli already reads: speech and
document models built on Qwen2, Qwen3, Llama, Granite and Persimmon (their language model in
``text_config``), Mllama, Llama 4, Phi-4 multimodal and Moshi's text decoder.

For token ids alone (no image, no audio), the first block of the language model reads what the
language model's own input layer computes: the wrapper adds nothing. Image and audio towers are
not shown; ``embed`` names them from the config's sub-configs.
"""

from __future__ import annotations

from dataclasses import replace

from embedcli.families.registry import Family, family_of, register, rope_family

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
        gguf_global_every=None,
        parameters=(),
        presets=(),
        layouts=(),
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
        name="Dots 3 Note",  # its text model's embed_tokens; rope per layer type
        model_types=("dots3_note_text", "dots3_note"),
        architectures=("Dots3NoteTextModel", "Dots3NoteForCausalLM"),
        prefixes=("model", *_LANGUAGE),
        text_config=("dots3_note",),
    ),
    rope_family("Moshi (text decoder)", "moshi", arch="Moshi", extra_rows=1),  # vocab_size + 1
)
