"""What transformers' rope code does by family and layer type, as embedcli reads a config:
the layer kinds without rotary attention, the attention kinds that need a rope set, and the
families whose own default rope reads partial_rotary_factor."""

from __future__ import annotations


def rope_free_kind(layer_type: str) -> bool:
    """A hybrid's layer type without rotary attention: a convolution, a state-space or
    recurrent layer, linear attention (LFM2's conv, Jamba's mamba, Qwen3-Next's
    linear_attention)."""
    return "attention" not in layer_type or layer_type == "linear_attention"


# The model types whose own default rope (their rotary class's compute_default_rope_parameters)
# reads partial_rotary_factor; the others' rotates the whole head whatever the config says
# (Llama's, Mistral's, Qwen 2's...). tests/models/test_rope_config.py derives this set from
# transformers' source.
PARTIAL_DEFAULT_ROPE = frozenset({
    "bamba", "deepseek_v4", "dots3_note", "dots3_note_text", "glm", "glm4", "glm4_moe",
    "glm4_moe_lite",
    "glmasr", "gpt_neox", "gpt_neox_japanese", "laguna", "mellum", "mimo_v2_flash", "minimax_m2",
    "minimax_m3_vl_text", "musicflamingo", "nemotron", "neomme", "persimmon", "phi", "phi3",
    "phi4_multimodal", "qwen3_5", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_5_text",
    "qwen3_next", "qwen4_exp", "qwen4_exp_text", "recurrent_gemma", "solar_open", "stablelm",
    "zaya",
})  # fmt: skip

# Layer types whose attention rotates queries and keys unless rope_parameters says None for them
# (Cohere 2's global layers): a config that gives no set for the first block's is refused
# (transformers may fill its own default; embedcli does not guess it).
ROPE_ATTENTION = frozenset({"full_attention", "sliding_attention", "chunked_attention"})
