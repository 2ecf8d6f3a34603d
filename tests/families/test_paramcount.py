"""Parameter counts from a config alone agree with transformers, parameter for parameter.

The oracle is the model transformers builds from the same config on the meta device (shapes, no
memory), of the class the config's "architectures" names; the published figures of the presets
are checked at the digits they show.
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict
from decimal import Decimal
from functools import cache

import pytest
import torch
import transformers
from support.helpers import assert_python_ok

from embedcli.errors import ConfigError
from embedcli.families.params import ParameterCount
from embedcli.families.registry import FAMILIES, count_parameters, presets

PRESETS = {p.name: {k: v for k, v in asdict(p).items() if v is not None} for p in presets()}
# model_type -> (the transformers class its formula counts, the formula)
FORMULAS = {f.model_type: (f.model_class, f.count) for fam in FAMILIES for f in fam.parameters}


class _Drop:
    def __repr__(self) -> str:
        return "DROP"  # readable, stable test ids


DROP = _Drop()  # an edit that removes the field


def build(config: dict) -> torch.nn.Module:
    """The model transformers builds from ``config``, on the meta device."""
    config = copy.deepcopy(config)  # transformers may fill the nested dicts in
    model_class = getattr(transformers, config["architectures"][0])
    with torch.device("meta"):
        return model_class(transformers.AutoConfig.for_model(**config))


@cache
def preset_model(name: str) -> torch.nn.Module:
    return build(PRESETS[name]["config"])


def numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # a tied tensor is listed once


def edited(name: str, edits: dict[str, object]) -> dict:
    """A preset's config with ``edits``; a dotted key reaches into a sub-config."""
    config = copy.deepcopy(PRESETS[name]["config"])
    for key, value in edits.items():
        *path, field = key.split(".")
        place = config
        for part in path:
            place = place[part]
        if value is DROP:
            place.pop(field, None)
        else:
            place[field] = value
    return config


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_total_is_transformers_count(name: str) -> None:
    assert count_parameters(PRESETS[name]["config"]).total == numel(preset_model(name))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_registry_counts_the_class_the_preset_names(name: str) -> None:
    config = PRESETS[name]["config"]
    assert FORMULAS[config["model_type"]][0] == config["architectures"][0]


@pytest.mark.parametrize(
    ("width", "layers", "heads", "published"),
    [
        (768, 12, 12, 124_439_808),  # gpt2
        (1024, 24, 16, 354_823_168),  # gpt2-medium
        (1280, 36, 20, 774_030_080),  # gpt2-large
        (1600, 48, 25, 1_557_611_200),  # gpt2-xl
    ],
)
def test_gpt2_sizes(width: int, layers: int, heads: int, published: int) -> None:
    config = {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": 50257,
        "n_positions": 1024,
        "n_embd": width,
        "n_layer": layers,
        "n_head": heads,
    }
    assert count_parameters(config).total == numel(build(config)) == published


def test_gemma3_language_model_alone() -> None:
    config = copy.deepcopy(PRESETS["gemma-3-27b"]["config"]["text_config"])
    config["architectures"] = [FORMULAS["gemma3_text"][0]]
    assert count_parameters(config).total == numel(build(config))


def test_mixtral_active_parameters() -> None:
    config, model = PRESETS["mixtral-8x7b"]["config"], preset_model("mixtral-8x7b")
    counted = count_parameters(config)
    assert (counted.experts, counted.experts_per_token) == (8, 2)
    # the experts of one layer, whatever transformers calls them (fused 3-D tensors in v5)
    blocks = [m for m in model.model.layers[0].modules() if type(m).__name__.endswith("Experts")]
    assert len(blocks) == 1
    per_expert, left = divmod(numel(blocks[0]), 8)
    assert left == 0
    layers = config["num_hidden_layers"]
    expected = numel(model) - (8 - 2) * per_expert * layers
    assert counted.active == expected == 12_879_925_248
    assert counted.total == 46_702_792_704


# Llama 4 Scout's text model, from Maverick's: 16 experts in every layer (its rope scaling,
# llama3 with high_freq_factor equal to low_freq_factor, counts nothing)
SCOUT = {"num_local_experts": 16, "interleave_moe_layer_step": 1}


@pytest.mark.parametrize(
    ("edits", "experts", "moe_layers"), [({}, 128, 24), (SCOUT, 16, 48)], ids=["maverick", "scout"]
)
def test_llama4_active_parameters(edits: dict, experts: int, moe_layers: int) -> None:
    """Llama 4's MoE layers run 1 routed expert beside the shared one; Maverick has them in
    every second layer (the others dense), Scout in every layer. Meta's "17B active" counts
    the token table, unlike gpt-oss's and DeepSeek-V3's cards."""
    config = edited("llama-4-maverick", edits)
    model, counted = build(config), count_parameters(config)
    sparse = [layer.feed_forward for layer in model.model.layers if layer.is_moe_layer]
    assert len(sparse) == moe_layers
    per_expert, left = divmod(numel(sparse[0].experts), experts)
    assert left == 0
    assert (counted.experts, counted.experts_per_token) == (experts, 1)
    assert counted.total == numel(model)
    assert counted.active == numel(model) - moe_layers * (experts - 1) * per_expert
    assert f"{counted.active / 1e9:.0f}B" == "17B"


MIXTURES = {  # the presets with experts
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "deepseek-v3",
    "llama-4-scout",
    "llama-4-maverick",
}


@pytest.mark.parametrize("name", sorted(set(PRESETS) - MIXTURES))
def test_dense_models_have_no_experts(name: str) -> None:
    counted = count_parameters(PRESETS[name]["config"])
    assert counted == ParameterCount(counted.total, None, None, None)


def published_range(text: str) -> tuple[int, int]:
    """A published figure as (value, half the unit of its last significant digit)."""
    if re.fullmatch(r"\d{1,3}(,\d{3})*", text):
        return int(text.replace(",", "")), 0
    match = re.fullmatch(r"(\d+)(?:\.(\d+))?([MB])", text)
    assert match, f"unreadable published figure {text!r}"
    whole, decimals, unit = match.groups()
    scale = {"M": 10**6, "B": 10**9}[unit]
    if decimals:
        step = scale // 10 ** len(decimals)
    else:  # trailing zeros of an integer part are not significant: "110M" is 110 ± 5 M
        step = scale * 10 ** (len(whole) - len(whole.rstrip("0")))
    return int(Decimal(text[:-1]) * scale), step // 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20,554,567,680", (20_554_567_680, 0)),
        ("8.03B", (8_030_000_000, 5_000_000)),
        ("7.3B", (7_300_000_000, 50_000_000)),
        ("406B", (406_000_000_000, 500_000_000)),
        ("110M", (110_000_000, 5_000_000)),
        ("223M", (223_000_000, 500_000)),
    ],
)
def test_published_range(text: str, expected: tuple[int, int]) -> None:
    assert published_range(text) == expected


def matches(total: int, published: str) -> bool:
    value, half = published_range(published)
    return abs(total - value) <= half


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_published_figure(name: str) -> None:
    preset = PRESETS[name]
    total = count_parameters(preset["config"]).total
    assert matches(total, preset["published"]) != ("published_note" in preset), (
        f"{name}: {total:,} against the published {preset['published']}"
    )


def test_falcon_note_holds() -> None:
    preset = PRESETS["falcon-40b"]
    config, total = preset["config"], count_parameters(preset["config"]).total
    stored_bytes, stored_values, fewer = (
        int(n.replace(",", "")) for n in re.findall(r"\d{1,3}(?:,\d{3})+", preset["published_note"])
    )
    assert config["torch_dtype"] == "bfloat16" and stored_bytes == 2 * stored_values
    assert fewer == config["vocab_size"] * config["hidden_size"] == 532_676_608  # lm_head
    assert stored_values - fewer == total == numel(preset_model("falcon-40b"))
    assert matches(stored_values, preset["published"])


# Fields left out (the config class's default) or set otherwise, each against transformers.
VARIANTS = [
    ("gemma-3n-e4b", {"intermediate_size": 8192, "num_kv_shared_layers": 0}),
    ("gemma-3n-e4b", {"tie_word_embeddings": False, "altup_num_inputs": 2, "laurel_rank": 32}),
    ("gemma-3n-e4b", {"num_kv_shared_layers": DROP, "hidden_size_per_layer_input": DROP}),
    ("llama-2-7b", {"num_key_value_heads": DROP, "tie_word_embeddings": DROP}),
    ("llama-2-7b", {"attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True}),
    ("llama-3.1-8b", {"head_dim": DROP}),
    ("llama-3.1-8b", {"head_dim": None, "num_key_value_heads": None}),
    ("llama-3.1-8b", {"head_dim": 64}),
    ("mistral-7b", {"num_key_value_heads": DROP, "tie_word_embeddings": DROP}),
    ("mistral-7b", {"head_dim": 96}),
    ("mistral-7b", {"head_dim": None}),
    ("mixtral-8x7b", {"num_key_value_heads": DROP, "num_local_experts": 4}),
    ("mixtral-8x7b", {"head_dim": None, "num_experts_per_tok": 1}),
    ("qwen2.5-7b", {"num_key_value_heads": DROP}),  # Qwen2Config: 32, not the 28 heads
    ("qwen2.5-7b", {"num_key_value_heads": None}),  # null: as many as the heads
    ("qwen2.5-7b", {"head_dim": 64, "tie_word_embeddings": True}),
    ("gemma-2-9b", {"num_key_value_heads": DROP, "head_dim": DROP, "tie_word_embeddings": DROP}),
    ("gemma-2-9b", {"attention_bias": True, "tie_word_embeddings": False}),
    ("gemma-3-27b", {"tie_word_embeddings": False}),
    ("gemma-3-27b", {"text_config.tie_word_embeddings": False}),  # the wrapper's flag decides
    ("gemma-3-27b", {"vision_config.vision_use_head": DROP}),  # SigLIP's pooling head
    ("gemma-3-27b", {"vision_config.num_channels": 1, "text_config.num_key_value_heads": DROP}),
    ("gemma-3-27b", {"text_config.head_dim": DROP, "text_config.attention_bias": True}),
    ("phi-3-mini", {"num_key_value_heads": 8, "tie_word_embeddings": True}),
    ("olmo-2-7b", {"num_key_value_heads": 8, "attention_bias": True}),
    ("olmo-2-7b", {"num_key_value_heads": DROP, "tie_word_embeddings": DROP}),
    ("gpt-neox-20b", {"attention_bias": False, "tie_word_embeddings": True}),
    ("bloom-176b", {"tie_word_embeddings": False}),
    ("opt-6.7b", {"word_embed_proj_dim": 1024, "tie_word_embeddings": False}),
    ("opt-6.7b", {"word_embed_proj_dim": DROP, "enable_bias": False}),
    ("opt-6.7b", {"word_embed_proj_dim": None}),
    ("opt-6.7b", {"layer_norm_elementwise_affine": False, "do_layer_norm_before": False}),
    ("llama-4-maverick", SCOUT),
    ("llama-4-maverick", {"moe_layers": [0, 5, 47, 60], "intermediate_size_mlp": DROP}),
    ("llama-4-maverick", {"moe_layers": [], "interleave_moe_layer_step": 3}),  # the list wins
    ("llama-4-maverick", {"attention_bias": True, "tie_word_embeddings": True}),
    ("llama-4-maverick", {"num_experts_per_tok": 4, "intermediate_size_mlp": 4096, "head_dim": 64}),
    ("llama-4-maverick", {"num_key_value_heads": DROP, "head_dim": DROP}),
    ("llama-4-maverick", {"num_experts_per_tok": DROP, "interleave_moe_layer_step": DROP}),
    ("falcon-40b", {"num_kv_heads": DROP, "bias": True, "tie_word_embeddings": False}),
    ("falcon-40b", {"parallel_attn": False, "ffn_hidden_size": 20000}),
    ("falcon-40b", {"num_kv_heads": None, "ffn_hidden_size": None}),
    ("falcon-40b", {"num_ln_in_parallel_attn": 1, "n_embed": 8192, "hidden_size": DROP}),
    ("bert-base", {"type_vocab_size": DROP}),
    ("bert-base", {"type_vocab_size": 4, "position_embedding_type": DROP}),
    ("t5-base", {"num_decoder_layers": DROP, "d_kv": DROP, "relative_attention_num_buckets": 8}),
    ("t5-base", {"num_decoder_layers": 6, "feed_forward_proj": "gated-gelu"}),
    ("t5-base", {"feed_forward_proj": DROP, "tie_word_embeddings": DROP}),
    ("t5-base", {"num_decoder_layers": None}),
]


@pytest.mark.parametrize(("name", "edits"), VARIANTS, ids=[f"{n}-{e}" for n, e in VARIANTS])
def test_variant_is_transformers_count(name: str, edits: dict[str, object]) -> None:
    config = edited(name, edits)
    assert count_parameters(config).total == numel(build(config))


def test_defaults_mattered() -> None:
    qwen = PRESETS["qwen2.5-7b"]["config"]
    dropped = count_parameters(edited("qwen2.5-7b", {"num_key_value_heads": DROP})).total
    # 4 key/value heads given; 32 (Qwen2Config's) when left out: 28 more heads of 128 on k, v
    extra = qwen["num_hidden_layers"] * 2 * (32 - 4) * 128 * (qwen["hidden_size"] + 1)
    assert dropped == count_parameters(qwen).total + extra


def test_t5_untied_head_is_counted_apart() -> None:
    # transformers 5 ties T5's head whatever the config says when it builds from a config; a
    # checkpoint saved with tie_word_embeddings false (T5 v1.1) holds its own lm_head, which
    # transformers keeps apart when it loads, so the count holds it too
    config = PRESETS["t5-base"]["config"]
    untied = count_parameters(edited("t5-base", {"tie_word_embeddings": False})).total
    assert untied == count_parameters(config).total + config["vocab_size"] * config["d_model"]


ALIASES = [
    (
        "bloom-176b",
        {"n_embed": DROP, "hidden_size": 14336, "n_layer": DROP, "num_hidden_layers": 70},
    ),
    ("bloom-176b", {"num_attention_heads": DROP, "n_head": 112}),
    ("mixtral-8x7b", {"num_local_experts": DROP, "num_experts": 8}),
    ("t5-base", {"d_model": DROP, "hidden_size": 768, "num_layers": DROP, "num_hidden_layers": 12}),
    ("t5-base", {"num_heads": DROP, "num_attention_heads": 12, "d_kv": DROP, "head_dim": 64}),
    ("falcon-40b", {"hidden_size": DROP, "n_embed": 8192}),
]


@pytest.mark.parametrize(("name", "edits"), ALIASES, ids=[f"{n}-{e}" for n, e in ALIASES])
def test_legacy_names_count_the_same(name: str, edits: dict[str, object]) -> None:
    config = edited(name, edits)
    assert count_parameters(config) == count_parameters(PRESETS[name]["config"])
    assert count_parameters(config).total == numel(build(config))


def test_gpt2_inner_width() -> None:
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 50257}
    config |= {"n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12}
    for inner in (None, 1000):  # GPT2Config: None, 4 × n_embd
        config["n_inner"] = inner
        assert count_parameters(config).total == numel(build(config))


def test_gpt2_accepts_the_common_names() -> None:
    legacy = {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024}
    legacy |= {"n_embd": 768, "n_layer": 12, "n_head": 12}
    common = {"model_type": "gpt2", "vocab_size": 50257, "max_position_embeddings": 1024}
    common |= {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12}
    assert count_parameters(common) == count_parameters(legacy)


HOSTILE = [
    ("llama-2-7b", {"model_type": "mamba"}, "mamba"),
    ("llama-2-7b", {"model_type": DROP}, "no model_type"),
    ("llama-2-7b", {"model_type": 7}, "model_type 7"),
    ("llama-2-7b", {"num_hidden_layers": DROP}, "num_hidden_layers"),
    ("llama-2-7b", {"num_hidden_layers": None}, "num_hidden_layers"),
    ("llama-2-7b", {"hidden_size": -4096}, "hidden_size"),
    ("llama-2-7b", {"hidden_size": 0}, "hidden_size"),
    ("llama-2-7b", {"hidden_size": True}, "hidden_size"),
    ("llama-2-7b", {"hidden_size": "4096"}, "hidden_size"),
    ("llama-2-7b", {"hidden_size": 4096.0}, "hidden_size"),
    ("llama-2-7b", {"vocab_size": False}, "vocab_size"),
    ("llama-2-7b", {"intermediate_size": [11008]}, "intermediate_size"),
    ("llama-2-7b", {"num_key_value_heads": -8}, "num_key_value_heads"),
    ("llama-2-7b", {"num_attention_heads": 30}, "attention heads"),  # 4096 / 30: no head_dim
    ("llama-2-7b", {"attention_bias": "yes"}, "attention_bias"),
    ("llama-2-7b", {"tie_word_embeddings": 1}, "tie_word_embeddings"),
    ("gemma-2-9b", {"num_key_value_heads": None}, "num_key_value_heads"),
    ("gemma-2-9b", {"head_dim": None}, "head_dim"),
    ("mistral-7b", {"num_key_value_heads": None}, "num_key_value_heads"),  # MistralConfig: int
    ("mixtral-8x7b", {"num_key_value_heads": None}, "num_key_value_heads"),
    ("qwen2.5-7b", {"head_dim": None}, "head_dim"),  # no such field: transformers fails on it
    ("mixtral-8x7b", {"num_local_experts": DROP}, "num_local_experts"),
    ("mixtral-8x7b", {"num_experts_per_tok": 9}, "num_experts_per_tok"),
    ("llama-4-maverick", {"num_experts_per_tok": 129}, "num_experts_per_tok"),
    ("llama-4-maverick", {"num_local_experts": DROP}, "num_local_experts"),
    ("llama-4-maverick", {"num_key_value_heads": None}, "num_key_value_heads"),  # an int
    ("llama-4-maverick", {"head_dim": None}, "head_dim"),  # Llama4TextConfig: an int
    ("llama-4-maverick", {"moe_layers": "odd"}, "moe_layers"),
    ("llama-4-maverick", {"moe_layers": [1, True]}, "moe_layers"),
    ("falcon-40b", {"new_decoder_architecture": False}, "new_decoder_architecture"),
    ("falcon-40b", {"new_decoder_architecture": DROP}, "new_decoder_architecture"),
    ("falcon-40b", {"num_ln_in_parallel_attn": 3}, "num_ln_in_parallel_attn"),
    ("bloom-176b", {"hidden_size": 4096}, "n_embed"),  # two names of one field, disagreeing
    ("bloom-176b", {"n_layer": DROP}, "n_layer"),
    ("bert-base", {"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ("bert-base", {"add_cross_attention": True}, "add_cross_attention"),
    ("t5-base", {"feed_forward_proj": "gelu-new-x"}, "feed_forward_proj"),
    ("t5-base", {"feed_forward_proj": 3}, "feed_forward_proj"),
    ("gemma-3-27b", {"vision_config": DROP}, "vision_config"),
    ("gemma-3-27b", {"text_config": ["gemma3_text"]}, "text_config"),
    ("gemma-3-27b", {"text_config.hidden_size": "5376"}, "hidden_size"),
    ("gemma-3-27b", {"vision_config.model_type": "clip_vision_model"}, "model_type"),
    ("gemma-3-27b", {"vision_config.patch_size": [14, 14]}, "patch_size"),
]


@pytest.mark.parametrize(
    ("name", "edits", "named"), HOSTILE, ids=[f"{h[0]}-{h[1]}" for h in HOSTILE]
)
def test_hostile_config_is_refused(name: str, edits: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(named)):
        count_parameters(edited(name, edits))


def test_refusals_read_as_one_sentence() -> None:
    with pytest.raises(ConfigError) as info:
        count_parameters(edited("llama-2-7b", {"num_hidden_layers": DROP}))
    assert str(info.value) == "the llama config gives no num_hidden_layers, a positive integer"
    with pytest.raises(ConfigError) as info:
        count_parameters(edited("bloom-176b", {"n_embed": -1}))
    assert str(info.value) == "the bloom config's n_embed must be a positive integer, got -1"
    with pytest.raises(ConfigError) as info:
        count_parameters(["not", "a", "config"])
    assert str(info.value) == "the config is not a JSON object"


def test_gpt2_cross_attention_is_refused() -> None:
    config = {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768}
    config |= {"n_layer": 12, "n_head": 12, "add_cross_attention": True}
    with pytest.raises(ConfigError, match="add_cross_attention"):
        count_parameters(config)


def test_counting_imports_neither_torch_nor_transformers() -> None:
    assert_python_ok(
        "import sys\n"
        "from embedcli.families.registry import count_parameters, presets\n"
        "[count_parameters(p.config) for p in presets()]\n"
        "loaded = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
