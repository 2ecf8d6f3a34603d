"""Rope's parameters read from config.json as transformers reads them: ``rope_parameters`` and
the older ``rope_scaling`` (``type`` or ``rope_type``), each type's fields resolved (the
original context, yarn's and longrope's factor and attention factor), one set per layer type
where the family keeps several (which one layer 0 uses), sliding windows; and every malformed
or unknown field refused by name."""

from __future__ import annotations

import copy

import pytest

from embedcli.core.steps import positions_phrase
from embedcli.errors import ConfigError
from embedcli.models.config import parse_config

LLAMA = {"model_type": "llama", "vocab_size": 64, "hidden_size": 64, "num_attention_heads": 4,
         "head_dim": 16, "max_position_embeddings": 64, "rope_theta": 10000.0}  # fmt: skip
YARN = {"factor": 4.0, "original_max_position_embeddings": 32}


def read(**fields):
    return parse_config(copy.deepcopy({**LLAMA, **fields}), "config.json")


@pytest.mark.parametrize("key", ["rope_parameters", "rope_scaling"])
@pytest.mark.parametrize("name", ["rope_type", "type"])
def test_both_layouts_and_both_type_names_are_read(key: str, name: str) -> None:
    model = read(**{key: {name: "yarn", **YARN}})
    assert model.rope_scaling == "yarn"
    params = dict(model.rope_scaling_params)
    assert params["factor"] == 4.0 and params["original_max_position_embeddings"] == 32
    assert params["attention_factor"] == pytest.approx(1.1386294361)
    assert model.summary()["rope_attention_factor"] == params["attention_factor"]


def test_rope_type_wins_over_type() -> None:
    model = read(rope_scaling={"type": "linear", "rope_type": "dynamic", "factor": 2.0})
    assert model.rope_scaling == "dynamic"
    assert dict(model.rope_scaling_params)["max_position_embeddings"] == 64


def test_the_contexts_are_resolved_as_transformers_resolves_them() -> None:
    # yarn without a factor: max_position_embeddings / original (DeepSeek-V3's reading)
    model = read(rope_parameters={"rope_type": "yarn", "factor": None,
                                  "original_max_position_embeddings": 16})  # fmt: skip
    assert dict(model.rope_scaling_params)["factor"] == 4.0
    # no original context: max_position_embeddings
    model = read(rope_parameters={"rope_type": "yarn", "factor": 2.0})
    assert dict(model.rope_scaling_params)["original_max_position_embeddings"] == 64
    # a top-level original context comes first (Phi-3's transformers 4 configs)
    model = read(original_max_position_embeddings=8, rope_scaling={
        "type": "longrope", "short_factor": [1.0] * 8, "long_factor": [2.0] * 8,
        "original_max_position_embeddings": 32})  # fmt: skip
    params = dict(model.rope_scaling_params)
    assert params["original_max_position_embeddings"] == 8 and params["factor"] == 8.0


def test_proportional_rope_covers_the_whole_head() -> None:
    model = read(rope_parameters={"rope_type": "proportional", "partial_rotary_factor": 0.25})
    assert model.rope_dim == 16
    assert dict(model.rope_scaling_params)["partial_rotary_factor"] == 0.25


GEMMA3 = {  # a Gemma 3 text model's sizes; each test gives its own rope_parameters
    "model_type": "gemma3_text",
    "vocab_size": 64,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "head_dim": 16,
    "num_hidden_layers": 2,
    "layer_types": ["sliding_attention", "full_attention"],
}


def test_layer_types_say_which_layer_zero_uses_and_sliding_windows_are_reported() -> None:
    gemma3 = {
        **GEMMA3,
        "sliding_window": 16,
        "rope_parameters": {
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        },
    }
    model = parse_config(gemma3, "config.json")
    assert model.rope_theta == 10000.0 and model.rope_scaling is None
    assert model.rope_layer_type == "sliding_attention"
    assert model.rope_layer_types == {"full_attention": "linear", "sliding_attention": "default"}
    summary = model.summary()
    assert summary["sliding_window"] == 16
    assert summary["rope_bases"] == {"full_attention": 1e6, "sliding_attention": 10000.0}
    phrase = positions_phrase(type("C", (), {"positional": "rope"})(), summary)
    assert "layer 0: sliding_attention" in phrase and "sliding window 16" in phrase
    # transformers 4's layout: rope_local_base_freq for the sliding layers
    legacy = {k: v for k, v in gemma3.items() if k != "rope_parameters"}
    model = parse_config(
        {
            **legacy,
            "rope_theta": 1e6,
            "rope_local_base_freq": 10000.0,
            "rope_scaling": {"rope_type": "linear", "factor": 8.0},
        },
        "config.json",
    )
    assert model.rope_theta == 10000.0 and model.rope_layer_type == "sliding_attention"
    assert model.rope_bases == {"full_attention": 1e6, "sliding_attention": 10000.0}


def test_attention_sliding_window_is_read_too() -> None:
    assert read(attention={"sliding_window": 128}).sliding_window == 128
    assert read(sliding_window=None).sliding_window is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rope_scaling": {"type": "su", "factor": 2.0}},
         "rope_type 'su' is not one embedcli computes"),
        ({"rope_parameters": {"rope_type": "ntk", "factor": 2.0}},
         "rope_type 'ntk' is not one embedcli computes"),
        ({"rope_parameters": {"rope_type": "linear"}},
         "rope_scaling linear needs factor, which config.json does not give"),
        ({"rope_parameters": {"rope_type": "yarn", "original_max_position_embeddings": 8}},
         "rope_scaling yarn needs factor"),
        ({"rope_parameters": {"rope_type": "yarn", **YARN, "beta_fast": "fast"}},
         "rope_scaling yarn beta_fast must be a number above 0"),
        ({"rope_parameters": {"rope_type": "yarn", **YARN, "truncate": "no"}},
         "rope_scaling yarn truncate must be true or false"),
        ({"rope_parameters": {"rope_type": "yarn", **YARN, "short_factor": [1.0] * 8}},
         "rope_type 'yarn' with short_factor/long_factor"),
        ({"rope_parameters": {"rope_type": "longrope", "short_factor": [1.0] * 8}},
         "rope_scaling longrope needs long_factor"),
        ({"rope_parameters": {"rope_type": "longrope", "short_factor": [1.0] * 3,
                              "long_factor": [1.0] * 3}},
         "longrope's short_factor has 3 factors for 8 pairs"),
        ({"rope_parameters": {"rope_type": "longrope", "short_factor": "1",
                              "long_factor": [1.0] * 8}},
         "short_factor must be a list of numbers"),
        ({"rope_parameters": {"rope_type": "dynamic", "factor": 0.5}},
         "rope_scaling factor must be at least 1"),
        ({"rope_parameters": {"rope_type": "yarn", "factor": 2.0,
                              "original_max_position_embeddings": 10.5}},
         "original_max_position_embeddings is a context length"),
        ({"sliding_window": -4}, "sliding_window must be a positive integer"),
    ],
)  # fmt: skip
def test_what_embedcli_cannot_be_sure_of_is_refused_by_name(fields: dict, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        read(**fields)
    assert message in str(caught.value), str(caught.value)


def test_a_nested_yarn_truncate_is_refused() -> None:
    gemma3 = {
        **GEMMA3,
        "rope_parameters": {
            "full_attention": {"rope_type": "yarn", **YARN, "truncate": False},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        },
    }
    with pytest.raises(ConfigError, match="truncate False in a per-layer-type rope_parameters"):
        parse_config(gemma3, "config.json")


def _default_rope_reads_partial(model_type: str) -> bool | None:
    """Whether the model's own rotary class reads partial_rotary_factor in its default rope
    (None: no such class in its modeling module, or no module)."""
    import importlib
    import inspect

    from transformers.models.auto.configuration_auto import model_type_to_module_name

    name = model_type_to_module_name(model_type)
    try:
        module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    except ImportError:
        return None
    found = [
        "partial_rotary_factor" in inspect.getsource(vars(obj)["compute_default_rope_parameters"])
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and "compute_default_rope_parameters" in vars(obj)
    ]
    return any(found) if found else None


def test_the_partial_default_rope_set_is_transformers_own() -> None:
    """PARTIAL_DEFAULT_ROPE holds exactly the registry's rope types whose default rope reads
    partial_rotary_factor, read from transformers' source today."""
    pytest.importorskip("transformers")
    from embedcli.families.registry import FAMILIES
    from embedcli.models.ropekinds import PARTIAL_DEFAULT_ROPE

    types = [t for f in FAMILIES if f.positional == "rope" for t in f.model_types]
    reads = {t for t in types if _default_rope_reads_partial(t)}
    assert reads == PARTIAL_DEFAULT_ROPE & set(types) and reads


@pytest.mark.parametrize("where", ["rope_parameters", "top"])
def test_a_partial_factor_that_llamas_default_rope_ignores_is_refused(where: str) -> None:
    """Llama's default rope turns the whole head, whatever partial_rotary_factor says
    (embedcli drew half the head, exit 0); with linear scaling the shared formula reads it."""
    fields = (
        {
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1e4,
                "partial_rotary_factor": 0.5,
            }
        }
        if where == "rope_parameters"
        else {"partial_rotary_factor": 0.5}
    )
    with pytest.raises(ConfigError, match=r"partial_rotary_factor 0\.5 is given"):
        read(**fields)
    linear = {"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.5}
    assert read(rope_parameters=linear).rope_dim == 8


# The hostile trial's rope cases, each once exit 0 with other angles than transformers'.
_OSS = {"model_type": "gpt_oss", "vocab_size": 64, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": 2, "intermediate_size": 32,
        "num_local_experts": 2, "num_experts_per_tok": 1}  # fmt: skip
_LLAMA = {**LLAMA, "num_hidden_layers": 1, "intermediate_size": 32}
AGREED = {
    "rope_scaling replaces rope_parameters": {**_LLAMA, "rope_parameters": {
        "rope_type": "default", "rope_theta": 50000.0}, "rope_scaling": {"type": "linear",
        "factor": 2.0}},
    "rope_scaling's type wins": {**_LLAMA, "rope_parameters": {"rope_type": "linear",
        "factor": 4.0}, "rope_scaling": {"rope_type": "linear", "factor": 2.0}},
    "gpt-oss without rope_parameters": _OSS,
    "gpt-oss with null rope_parameters": {**_OSS, "rope_parameters": None},
    "gpt-oss with a top-level rope_theta": {**_OSS, "rope_theta": 500000.0},
}  # fmt: skip


@pytest.mark.parametrize("name", list(AGREED))
def test_the_rope_transformers_builds_is_the_one_read(name: str) -> None:
    transformers = pytest.importorskip("transformers")
    import torch

    from embedcli.core.rope import rope_inverse_frequencies

    data = AGREED[name]
    config = transformers.AutoConfig.for_model(**copy.deepcopy(data))
    model = transformers.AutoModelForCausalLM.from_config(config)
    buffers = dict(model.model.rotary_emb.named_buffers())
    layer_types = getattr(config, "layer_types", None)
    theirs = buffers.get("inv_freq", buffers.get(f"{(layer_types or [''])[0]}_inv_freq"))
    ours = parse_config(copy.deepcopy(data), "config.json")
    mine = rope_inverse_frequencies(ours.rope_dim, ours.rope_theta, ours.rope_scaling_params)
    assert torch.equal(mine, theirs), (mine, theirs)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"layer_types": None}, "layer_types is null"),
        ({"rope_parameters": {"rope_type": "default", "rope_theta": 12345.0}},
         "rope_parameters is one set, but Gemma 3 keeps one per layer type"),
        ({"rope_parameters": {"full_attention": {"rope_theta": 1e6}, "sliding_attention": None}},
         "sets sliding_attention to null"),
    ],
)  # fmt: skip
def test_a_gemma_3_rope_transformers_would_fill_itself_is_refused(fields, message) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({**GEMMA3, **fields}, "config.json")


def test_a_null_rope_type_is_refused_not_read_as_default() -> None:
    """transformers looks the type up and fails on None; embedcli drew default rope."""
    with pytest.raises(ConfigError, match="rope_type is null"):
        read(rope_parameters={"rope_type": None, "rope_theta": 1e4})
    assert read(rope_parameters={"type": "linear", "rope_type": None, "factor": 2.0}).rope_scaling


def test_layer_types_of_another_length_than_the_layers_are_refused() -> None:
    """transformers' validate_layer_type refuses them; embedcli read the first entry."""
    config = {**GEMMA3, "layer_types": ["sliding_attention"] * 3}
    with pytest.raises(ConfigError, match="layer_types lists 3 layers, but num_hidden_layers is 2"):
        parse_config(config, "config.json")
    assert parse_config({**GEMMA3}, "config.json").rope_layer_type == "sliding_attention"


@pytest.mark.parametrize(
    ("first", "theta", "named"),
    [
        ("sliding_attention", 10000.0, "main"),
        ("compressed_sparse_attention", 160000.0, "compress"),
        ("heavily_compressed_attention", 160000.0, "compress"),
    ],
)
def test_rope_sets_keyed_by_kind_are_matched_to_the_first_layer(
    first: str, theta: float, named: str
) -> None:
    """DeepSeek V4 keys rope_parameters main and compress: its sliding layers read main, the
    compressed ones compress (DeepseekV4Attention.rope_layer_type)."""
    config = {
        "model_type": "deepseek_v4", "vocab_size": 384, "hidden_size": 64,
        "num_attention_heads": 4, "head_dim": 64, "max_position_embeddings": 96,
        "num_hidden_layers": 2, "layer_types": [first, "sliding_attention"],
        "rope_parameters": {
            "main": {"rope_type": "default", "rope_theta": 10000.0,
                     "partial_rotary_factor": 0.125},
            "compress": {"rope_type": "default", "rope_theta": 160000.0,
                         "partial_rotary_factor": 0.125},
        },
    }  # fmt: skip
    model = parse_config(config, "config.json")
    assert model.rope_theta == theta
    assert model.rope_layer_type == named
    assert model.rope_dim == 8  # 64 x 0.125
