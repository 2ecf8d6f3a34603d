"""Every rope type end to end: a tiny Llama per type (its ``rope_parameters``), saved by
transformers, and ``embed --weights FOLDER --json``: the angles at position 1 are the model's
own ``inv_freq``, and the attention factor and dynamic scaling's sequence length are reported
beside them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from support.familycases.case import Case
from support.familymodels import build, load, rotary_inverse_frequencies
from support.helpers import make_runner

from embedcli.cli import app

runner = make_runner()

SHORT = [1.0, 1.05, 1.1, 1.3, 1.7, 2.2, 3.1, 4.0]  # one per pair of SMALL's 16-wide head
LONG = [1.5, 2.0, 3.5, 5.0, 8.0, 12.0, 20.0, 31.0]
TYPES = {
    "linear": {"factor": 4.0},
    "dynamic": {"factor": 2.0},
    "yarn": {"factor": 8.0, "original_max_position_embeddings": 24, "beta_fast": 16,
             "mscale": 0.707, "mscale_all_dim": 1.0},
    "longrope": {"short_factor": SHORT, "long_factor": LONG,
                 "original_max_position_embeddings": 24},
    "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 32},
    "proportional": {"factor": 2.0, "partial_rotary_factor": 0.5},
}  # fmt: skip
CASES = [
    Case(f"llama-rope-{kind}", "llama",
         {"rope_parameters": {"rope_type": kind, "rope_theta": 10000.0, **params}})
    for kind, params in TYPES.items()
] + [  # the scalings as the families that publish them configure them
    Case("deepseek_v3-yarn", "deepseek_v3", {"head_dim": 8, "rope_parameters": {
        "rope_type": "yarn", "factor": 40, "original_max_position_embeddings": 32,
        "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.707,
        "rope_theta": 10000.0}}),
    Case("gpt_oss-yarn", "gpt_oss", {"rope_parameters": {
        "rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 24,
        "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False, "rope_theta": 150000.0}}),
    Case("qwen2-yarn", "qwen2", {"rope_parameters": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32,
        "rope_theta": 10000.0}}),
    Case("phi3-longrope", "phi3", {"original_max_position_embeddings": 24, "rope_parameters": {
        "rope_type": "longrope", "short_factor": SHORT[:4], "long_factor": LONG[:4],
        "partial_rotary_factor": 0.5, "rope_theta": 10000.0}}),
    Case("mistral-dynamic", "mistral", {"rope_parameters": {
        "rope_type": "dynamic", "factor": 3.0, "rope_theta": 1e6}}),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_rope_types_angles_are_the_models(case: Case, tmp_path: Path) -> None:
    folder = tmp_path / case.name
    build(case, folder)
    model = load(folder, case)
    (frequencies,) = rotary_inverse_frequencies(model).values()
    result = runner.invoke(
        app, ["embed", "--weights", str(folder), "--ids", "5,17,200,42", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    angles = torch.tensor(report["rope_angles"])  # (T, r/2)
    assert torch.equal(angles[1], frequencies), (angles[1], frequencies)
    (rotary,) = [m for m in model.modules() if hasattr(m, "attention_scaling")]
    assert report["rope_attention_factor"] == pytest.approx(rotary.attention_scaling, rel=1e-15)
    kind = case.fields["rope_parameters"]["rope_type"]
    assert report["config"]["model"]["rope_scaling"] == kind
    assert report["config"]["rope_scaling"]["rope_type"] == kind
    if kind == "dynamic":  # 4 positions, fewer than the context: the angles are the context's
        assert report["rope_sequence_length"] == model.config.max_position_embeddings
    else:
        assert report["rope_sequence_length"] is None
    shown = runner.invoke(app, ["embed", "--weights", str(folder), "--ids", "5,17,200,42"])
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.stdout.split())
    assert f"{kind} scaling" in text
    if report["rope_attention_factor"] != 1.0:
        assert f"attention multiplies cos and sin by {report['rope_attention_factor']:.6g}" in text
    if kind == "dynamic":
        assert f"dynamic scaling for a sequence of {report['rope_sequence_length']}" in text


LAYER_BASES = [
    Case(f"granite_swa-rope-{kind}", "granite_swa", {"layer_rope_theta": [5e4, 1e4],
         "rope_parameters": {"rope_type": kind, "rope_theta": 10000.0, **TYPES[kind]}})
    for kind in ("linear", "dynamic", "yarn", "longrope", "llama3")
]  # fmt: skip


@pytest.mark.parametrize("case", LAYER_BASES, ids=lambda c: c.name)
def test_a_layers_own_base_is_scaled_as_its_rotary_module(case: Case, tmp_path: Path) -> None:
    """Granite SWA builds each base's rotary module from rope_parameters with that base put
    in: the scaling acts on layer 0's own base (50000), never on rope_theta's 10000."""
    folder = tmp_path / case.name
    build(case, folder)
    model = load(folder, case)
    first = next(iter(rotary_inverse_frequencies(model).values()))  # block 0's module
    result = runner.invoke(
        app, ["embed", "--weights", str(folder), "--ids", "5,17,200,42", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["config"]["rope_theta"] == 5e4
    assert torch.equal(torch.tensor(report["rope_angles"])[1], first)
    (rotary,) = [
        m for m in model.model.rotary_embs if m.config.rope_parameters["rope_theta"] == 5e4
    ]
    assert report["rope_attention_factor"] == pytest.approx(rotary.attention_scaling, rel=1e-15)


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("lfm2", "block 0 (conv) has no rope: the first rope layers' base, 1,000,000, is drawn"),
        ("granite_swa-nope0", "block 0 (layer_rope_theta 0) has no rope: the first rope layers' "
         "base, 20,000, is drawn"),
        ("granite_swa", "the first block's, 50,000, is drawn"),
    ],
)  # fmt: skip
def test_positions_says_which_layers_angles_it_draws(name: str, words: str, tmp_path) -> None:
    """Where block 0 has no rope (a hybrid's convolution, a layer whose base is 0), the
    picture says the angles are the first rope layers', not the first block's."""
    from support.familycases import CASES as ALL

    case = next(c for c in ALL if c.name == name)
    folder = build(case, tmp_path / name)
    shown = make_runner().invoke(
        app,
        ["positions", "--weights", str(folder), "--context-length", "4"],
        env={"COLUMNS": "400"},
    )
    assert shown.exit_code == 0, shown.output
    assert words in " ".join(shown.stdout.split()), shown.stdout
