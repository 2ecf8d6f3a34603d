"""inspect-shapes' fast path (embedcli.core.shapeplan) against the real module on the meta device.

The fast path works the tensors out from the config; the oracle is the core module itself,
built on torch's meta device and traced, as inspect-shapes did before. They must agree on every
field the report shows, for every positional family, dtype, scale, rope setting and size.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.helpers import assert_cli_leaves_unimported

from embedcli.core.config import DTYPES, PRESETS, EmbedConfig, Preset
from embedcli.core.shapeplan import TraceStep, planned_trace
from embedcli.pipeline.shapes import run_inspect
from embedcli.render.json import shapes_json

FAMILIES = ("learned", "sinusoidal", "rope", "alibi", "relative", "none")
SCALINGS = (
    None,
    (("rope_type", "linear"), ("factor", 4.0)),
    (
        ("rope_type", "llama3"),
        ("factor", 8.0),
        ("low_freq_factor", 1.0),
        ("high_freq_factor", 4.0),
        ("original_max_position_embeddings", 8192),
    ),
)


@st.composite
def configs(draw: st.DrawFn) -> tuple[EmbedConfig, int, int]:
    """A valid config and a (batch, seq_len) batch; sizes up to GPT-3's and far past memory."""
    family = draw(st.sampled_from(FAMILIES))  # alibi and relative included: nothing added
    pairs = family in ("sinusoidal", "rope")
    d_model = draw(st.integers(1, 16_384))
    if pairs:
        d_model += d_model % 2
    context = draw(st.integers(1, 4096))  # the module's position ids are a real CPU arange
    rope_dim = None
    if family == "rope" and draw(st.booleans()):
        rope_dim = 2 * draw(st.integers(1, d_model // 2))
    fields = dict(
        vocab_size=draw(st.integers(1, 300_000)),
        d_model=d_model,
        context_length=context,
        positional=family,
        dtype=draw(st.sampled_from(DTYPES)),
        embed_scale=draw(st.sampled_from([1.0, 2.0, math.sqrt(d_model), 0.5])),
        rope_dim=rope_dim,
        rope_theta=draw(st.sampled_from([10_000.0, 500_000.0, 1e6])),
        rope_scaling=draw(st.sampled_from(SCALINGS)) if family == "rope" else None,
    )
    config = EmbedConfig(**{**fields, **draw(_family_steps(d_model, family))})
    return config, draw(st.integers(1, 2**20)), draw(st.integers(1, context))


@st.composite
def _family_steps(draw: st.DrawFn, d_model: int, family: str) -> dict:
    """What a real model family adds (embedcli/families/): a projection, token types, a
    LayerNorm, offset or counted positions, fairseq's sinusoids, a scaling not computed."""
    if not draw(st.booleans()):
        return {}
    ids = draw(st.sampled_from(["arange", "mask", "padding"]))
    steps = {
        "token_width": draw(st.sampled_from([None, max(1, d_model // 2)])),
        "token_types": draw(st.booleans()),
        "norm_eps": draw(st.sampled_from([None, 1e-5])),
        "norm_kind": draw(st.sampled_from(["layernorm", "weightless_rmsnorm"])),
        "position_offset": draw(st.integers(1, 3)) if ids == "mask" else draw(st.integers(0, 3)),
        "position_ids": ids if family in ("learned", "sinusoidal") else "arange",
        "padding_idx": 1,
        "sinusoid": draw(st.sampled_from(["interleaved", "halves"])),
        "scale_rounding": draw(st.sampled_from(["dtype", "float"])),
    }
    if family == "rope" and draw(st.booleans()):
        steps["rope_scaling"] = (("rope_type", "yarn"), ("applied", False))
    return steps


def _traced(config: EmbedConfig, batch: int, seq: int) -> tuple[list[TraceStep], object]:
    """The oracle: the real module built on the meta device and traced."""
    report = run_inspect(config, _preset(config), batch_size=batch, seq_len=seq, planned=False)
    return report.tensors, report.broadcast


def _preset(config: EmbedConfig) -> Preset:
    return replace(PRESETS["gpt2"], config=config)


GPT3 = PRESETS["gpt3"].config


@settings(max_examples=150, deadline=None)
@given(configs())
@example((GPT3, 2**20, 2048))  # a (1M, 2048, 12288) float32 batch: 2**46 * 3 * 4 bytes
@example((replace(GPT3, positional="rope", rope_dim=128), 4096, 2048))
@example((replace(GPT3, positional="sinusoidal", dtype="bfloat16"), 1, 1))
@example((EmbedConfig(vocab_size=1, d_model=1, context_length=1, positional="none"), 1, 1))
def test_planned_trace_is_the_meta_trace(case: tuple[EmbedConfig, int, int]) -> None:
    config, batch, seq = case
    steps, addition = _traced(config, batch, seq)
    planned_steps, planned_addition = planned_trace(config, batch, seq)
    assert [asdict(s) for s in planned_steps] == [asdict(s) for s in steps]
    assert planned_addition == addition
    for step in planned_steps:  # exact Python integers, whatever the size
        assert step.numel == math.prod(step.shape)


@settings(max_examples=40, deadline=None)
@given(configs())
def test_the_whole_report_is_the_same(case: tuple[EmbedConfig, int, int]) -> None:
    """Every field inspect-shapes prints or writes as JSON, fast path against the meta device."""
    config, batch, seq = case
    preset = _preset(config)
    fast = run_inspect(config, preset, batch_size=batch, seq_len=seq)
    meta = run_inspect(config, preset, batch_size=batch, seq_len=seq, planned=False)
    assert json.dumps(shapes_json(fast)) == json.dumps(shapes_json(meta))
    assert fast.device == "meta"


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_agrees(name: str) -> None:
    preset = PRESETS[name]
    fast = run_inspect(preset.config, preset)
    meta = run_inspect(preset.config, preset, planned=False)
    assert shapes_json(fast) == shapes_json(meta)


def test_a_planned_step_is_described_as_torch_describes_the_tensor() -> None:
    """The other direction: TraceStep.planned against TraceStep.of on real meta tensors."""
    import torch

    for dtype in (*DTYPES, "int64", "float64"):
        tensor = torch.empty(3, 5, 7, dtype=getattr(torch, dtype), device="meta")
        assert TraceStep.planned("t", (3, 5, 7), dtype) == TraceStep.of("t", tensor)


@pytest.mark.parametrize(
    "args",
    [
        ["inspect-shapes"],
        ["inspect-shapes", "--preset", "gpt3", "-b", "1048576", "--dtype", "bfloat16"],
        ["inspect-shapes", "--positional", "rope", "--json"],
    ],
)
def test_the_fast_path_imports_no_torch(args: list[str]) -> None:
    assert_cli_leaves_unimported(args)
