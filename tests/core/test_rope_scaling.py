"""Every rope type of transformers' ``ROPE_INIT_FUNCTIONS`` against transformers itself: the
inverse frequencies embedcli computes (core/rope.py, without transformers) equal the ones
``ROPE_INIT_FUNCTIONS[type](config, device)`` returns, bit for bit, for at least two parameter
sets each, and so do the attention factors; dynamic scaling also against the rotary module's
own forward past the context, longrope against its long factors. Also ``--rope-scaling``'s
forms for each type."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from embedcli.core.positions import parse_rope_scaling
from embedcli.core.rope import (
    ROPE_TYPES,
    rope_angles,
    rope_attention_factor,
    rope_inverse_frequencies,
    rope_sequence_length,
)
from embedcli.models.config import parse_config

transformers = pytest.importorskip("transformers")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

SHORT = [1.0, 1.05, 1.1, 1.3, 1.7, 2.2, 3.1, 4.0]  # one per pair of a 16-wide head
LONG = [1.5, 2.0, 3.5, 5.0, 8.0, 12.0, 20.0, 31.0]

# (type, rope parameters beyond rope_type, config fields beyond the base's)
PARAMETER_SETS = [
    ("linear", {"factor": 2.0}, {}),
    ("linear", {"factor": 8, "rope_theta": 500000.0}, {}),
    ("dynamic", {"factor": 2.0}, {}),
    ("dynamic", {"factor": 4.5, "rope_theta": 1e6}, {"max_position_embeddings": 40}),
    ("yarn", {"factor": 4.0, "original_max_position_embeddings": 32}, {}),
    ("yarn", {"factor": 40, "original_max_position_embeddings": 24, "beta_fast": 16,
              "beta_slow": 2, "mscale": 0.707, "mscale_all_dim": 1.0, "truncate": False}, {}),
    ("yarn", {"factor": 32, "original_max_position_embeddings": 16, "mscale": 1.0,
              "mscale_all_dim": 1.0, "rope_theta": 150000.0}, {"partial_rotary_factor": 0.5}),
    ("yarn", {"factor": None, "original_max_position_embeddings": 16,
              "attention_factor": 1.25}, {}),
    ("longrope", {"short_factor": SHORT, "long_factor": LONG,
                  "original_max_position_embeddings": 32}, {}),
    ("longrope", {"short_factor": SHORT[:4], "long_factor": LONG[:4], "factor": 3.0,
                  "original_max_position_embeddings": 20, "attention_factor": 0.9},
     {"partial_rotary_factor": 0.5}),
    ("llama3", {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32}, {}),
    ("llama3", {"factor": 32, "low_freq_factor": 0.5, "high_freq_factor": 2.0,
                "original_max_position_embeddings": 16, "rope_theta": 500000.0}, {}),
    ("llama3", {"factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                "original_max_position_embeddings": 32}, {}),  # Llama 4 Scout's: equal factors
    ("proportional", {"factor": 1.0, "partial_rotary_factor": 0.25}, {}),
    ("proportional", {"factor": 2.0, "partial_rotary_factor": 0.5, "rope_theta": 1e6}, {}),
    ("proportional", {"factor": 1.5}, {}),
]  # fmt: skip
BASE = {"model_type": "llama", "vocab_size": 64, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 64}  # fmt: skip


def _configs(kind: str, params: dict, fields: dict) -> tuple[dict, object]:
    """config.json's dict, and transformers' LlamaConfig from it."""
    data = {**BASE, **fields, "rope_parameters": {"rope_type": kind, **params}}
    data["rope_parameters"].setdefault("rope_theta", 10000.0)
    return data, transformers.LlamaConfig(**copy.deepcopy(data))


def test_every_type_transformers_computes_is_here() -> None:
    assert set(ROPE_INIT_FUNCTIONS) | {"default"} == set(ROPE_TYPES)
    kinds = {kind for kind, _, _ in PARAMETER_SETS}
    assert kinds == set(ROPE_INIT_FUNCTIONS)
    for kind in kinds:
        assert sum(k == kind for k, _, _ in PARAMETER_SETS) >= 2, kind


@pytest.mark.parametrize(("kind", "params", "fields"), PARAMETER_SETS)
@pytest.mark.parametrize("seq_len", [None, 16, 200])
def test_inverse_frequencies_are_transformers(kind, params, fields, seq_len) -> None:
    """With ``seq_len``: as the model's forward passes it, a tensor (max position + 1), which
    dynamic's base then follows in float32 (an int would take Python floats instead)."""
    data, hf = _configs(kind, params, fields)
    length = {} if seq_len is None else {"seq_len": torch.tensor(seq_len)}
    wanted, factor = ROPE_INIT_FUNCTIONS[kind](hf, "cpu", **length)
    model = parse_config(copy.deepcopy(data), "config.json")
    got = rope_inverse_frequencies(
        model.rope_dim, model.rope_theta, model.rope_scaling_params, seq_len=seq_len
    )
    assert got.dtype == torch.float32
    assert torch.equal(got, wanted), (got, wanted)
    assert rope_attention_factor(model.rope_scaling_params) == pytest.approx(factor, rel=1e-15)


@pytest.mark.parametrize(
    ("kind", "params", "fields"), [s for s in PARAMETER_SETS if s[0] in ("dynamic", "longrope")]
)
def test_the_rotary_module_past_the_context_is_embedclis(kind, params, fields) -> None:
    """The model's own rotary embedding, run over more positions than its context: dynamic
    grows its base (in float32 tensors), longrope switches to its long factors."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    data, hf = _configs(kind, params, fields)
    rotary = LlamaRotaryEmbedding(hf)
    model = parse_config(copy.deepcopy(data), "config.json")
    for length in (8, 100, 257):
        positions = torch.arange(length)
        cos, _ = rotary(torch.zeros(1, length, 16), positions.unsqueeze(0))
        angles = rope_angles(positions, model.rope_dim, model.rope_theta, model.rope_scaling_params)
        assert torch.equal(rotary.inv_freq, angles[1]), length
        factor = rope_attention_factor(model.rope_scaling_params)
        want = torch.cat((angles, angles), dim=-1).cos() * factor
        assert torch.allclose(cos[0], want, atol=1e-6)
    if kind == "dynamic":
        assert rope_sequence_length(model.rope_scaling_params, 8) == data["max_position_embeddings"]
        assert rope_sequence_length(model.rope_scaling_params, 257) == 257


def test_the_attention_factors_are_the_papers() -> None:
    yarn = (("rope_type", "yarn"), ("factor", 4.0), ("original_max_position_embeddings", 32))
    assert rope_attention_factor(yarn) == pytest.approx(0.1 * math.log(4) + 1)
    deepseek = (*yarn, ("mscale", 1.0), ("mscale_all_dim", 1.0))
    assert rope_attention_factor(deepseek) == 1.0  # DeepSeek-V3: the ratio of two equal mscales
    longrope = (
        ("rope_type", "longrope"),
        ("factor", 32.0),
        ("original_max_position_embeddings", 4096),
    )
    assert rope_attention_factor(longrope) == pytest.approx(
        math.sqrt(1 + math.log(32) / math.log(4096))
    )
    assert rope_attention_factor((("rope_type", "llama3"), ("factor", 8.0))) == 1.0
    assert rope_attention_factor(None) == 1.0


# ---------------------------------------------------------------- --rope-scaling's forms


@pytest.mark.parametrize(
    ("spec", "pairs"),
    [
        ("linear:8", {"rope_type": "linear", "factor": 8.0}),
        ("llama3:8", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192.0}),
        ("dynamic:2:4096", {"rope_type": "dynamic", "factor": 2.0,
                            "max_position_embeddings": 4096.0}),
        ("yarn:4:32768", {"rope_type": "yarn", "factor": 4.0,
                          "original_max_position_embeddings": 32768.0}),
        ("yarn:40:4096:beta_fast=32:mscale=0.707:mscale_all_dim=1:truncate=false",
         {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096.0,
          "beta_fast": 32.0, "mscale": 0.707, "mscale_all_dim": 1.0, "truncate": False}),
        ("longrope:4:16:1,1.5:2,3:attention_factor=1.2",
         {"rope_type": "longrope", "factor": 4.0, "original_max_position_embeddings": 16.0,
          "short_factor": (1.0, 1.5), "long_factor": (2.0, 3.0), "attention_factor": 1.2}),
        ("proportional:1:0.25", {"rope_type": "proportional", "factor": 1.0,
                                 "partial_rotary_factor": 0.25}),
        ("proportional:2", {"rope_type": "proportional", "factor": 2.0,
                            "partial_rotary_factor": 1.0}),
    ],
)  # fmt: skip
def test_every_type_has_a_spec(spec: str, pairs: dict) -> None:
    assert dict(parse_rope_scaling(spec)) == pairs


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("ntk:4", "embedcli computes linear, llama3, dynamic, yarn, longrope, proportional"),
        ("dynamic:2", "write dynamic:FACTOR:CONTEXT"),
        ("dynamic:2:40.5", "CONTEXT is a context length"),
        ("yarn:4", "write yarn:FACTOR:ORIGINAL[:NAME=VALUE...]"),
        ("yarn:4:32:foo=1", "yarn takes no option 'foo'"),
        ("yarn:4:32:mscale=1:mscale=2", "mscale is given twice"),
        ("yarn:4:32:truncate=maybe", "truncate is true or false"),
        ("yarn:4:beta_fast=2:32", "NAME=VALUE options come after the positional fields"),
        ("yarn:0.5:32", "the factor must be at least 1"),
        ("longrope:4:16:1,2:3", "SHORT and LONG lists have one factor per pair each"),
        ("longrope:4:16:1,x:3,4", "'x' is not a number"),
        ("proportional:1:1.5", "PARTIAL is the share of the head turned, at most 1"),
        ("linear:2:beta_fast=3", "linear takes no option 'beta_fast' (its options: none)"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=None) as caught:
        parse_rope_scaling(spec)
    assert message in str(caught.value), str(caught.value)


# ---------------------------------------------------------------- positions --json


def test_positions_json_gives_the_attention_factor_and_dynamic_length() -> None:
    import json

    from support.helpers import make_runner

    from embedcli.cli import app

    runner = make_runner()
    base = ["positions", "--positional", "rope", "-d", "8", "--context-length", "20", "--json"]
    yarn = json.loads(runner.invoke(app, [*base, "--rope-scaling", "yarn:4:32"]).stdout)
    assert yarn["attention_factor"] == pytest.approx(0.1 * math.log(4) + 1)
    assert yarn["sequence_length"] is None
    dynamic = json.loads(runner.invoke(app, [*base, "--rope-scaling", "dynamic:2:16"]).stdout)
    assert dynamic["sequence_length"] == 20 and dynamic["attention_factor"] == 1.0
    scaling = tuple(dynamic["scaling"].items())
    wanted = rope_inverse_frequencies(8, 10000.0, scaling, seq_len=20)
    assert torch.equal(torch.tensor(dynamic["inverse_frequencies"], dtype=torch.float32), wanted)
    longrope = runner.invoke(app, [*base, "--rope-scaling", "longrope:4:16:1,2:3,4"])
    assert longrope.exit_code == 2
    assert "longrope's short_factor has 2 factors for 4 pairs" in longrope.stderr


def test_the_help_names_every_spec_form() -> None:
    """--rope-scaling's help lists every type the flag accepts (it named two of six)."""
    from support.helpers import make_runner

    from embedcli.cli import app
    from embedcli.core.positions import SCALING_FORMS

    shown = make_runner().invoke(app, ["positions", "--help"], env={"COLUMNS": "200"}).stdout
    flat = " ".join(shown.replace("│", " ").split())
    for kind in SCALING_FORMS:
        assert f"{kind}:FACTOR" in flat, kind
