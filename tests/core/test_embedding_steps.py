"""The encoders' steps of the core module (a projection before or after the norm, the norm's
kinds, DeBERTa's order, the attention mask), each against the same computation written out
with torch's modules, and the shape plan against the module on the meta device."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch import nn

from embedcli.core.config import EmbedConfig
from embedcli.core.embedding import InputEmbedding
from embedcli.core.shapeplan import planned_trace
from embedcli.pipeline.reference import reference_embeddings

D, W, VOCAB, CONTEXT = 16, 8, 50, 12
IDS = torch.tensor([[3, 7, 1, 44], [9, 2, 0, 0]])
MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])


def _module(config: EmbedConfig, extras: dict[str, torch.Tensor]) -> InputEmbedding:
    torch.manual_seed(1)
    token = torch.randn(VOCAB, config.width)
    position = torch.randn(CONTEXT, config.sum_width)
    return InputEmbedding(config, tables=(token, position), extras=extras)


def _extras(config: EmbedConfig, bias: bool = True) -> dict[str, torch.Tensor]:
    torch.manual_seed(2)
    found = {
        "token_type": torch.randn(2, config.sum_width),
        "norm_weight": torch.randn(config.norm_width),
        "norm_bias": torch.randn(config.norm_width),
    }
    if config.projects:
        found["project_in"] = torch.randn(config.d_model, config.projected_width)
        if bias:
            found["project_bias"] = torch.randn(config.d_model)
    return found


def _config(**fields: object) -> EmbedConfig:
    base = {"vocab_size": VOCAB, "d_model": D, "context_length": CONTEXT, "token_types": True}
    return EmbedConfig(**{**base, "norm_eps": 1e-12, **fields})


def test_a_projection_after_the_norm_is_albert_s_linear() -> None:
    config = _config(token_width=W, projection="after_norm")
    extras = _extras(config)
    module = _module(config, extras)
    trace = module.trace(IDS)
    summed = (
        module.token_embedding(IDS) + extras["token_type"][0] + module.position_embedding.weight[:4]
    )
    norm = nn.LayerNorm(W, eps=1e-12)
    norm.weight.data, norm.bias.data = extras["norm_weight"], extras["norm_bias"]
    linear = nn.Linear(W, D)
    linear.weight.data, linear.bias.data = extras["project_in"], extras["project_bias"]
    assert torch.equal(trace.input_embeddings, linear(norm(summed)))
    assert trace.projected_output is not None and trace.projected_embeddings is None
    names = [s.name for s in trace.steps]
    assert names.index("embedding_layernorm") < names.index("projected_output")


def test_equal_widths_still_project_where_the_family_always_does() -> None:
    config = _config(token_width=D, projection="after_norm")  # FNet: a Linear(d, d)
    assert config.projects
    assert not _config(token_width=D).projects  # OPT: only a narrower table is projected


def test_deberta_adds_positions_then_types_then_projects_before_the_norm() -> None:
    config = _config(token_width=W, projection="before_norm", positions_first=True)
    extras = _extras(config, bias=False)
    module = _module(config, extras)
    got = module.trace(IDS).input_embeddings
    summed = module.token_embedding(IDS) + module.position_embedding.weight[:4]
    summed = summed + extras["token_type"][0]
    projected = summed @ extras["project_in"].T
    expected = nn.functional.layer_norm(
        projected, (D,), extras["norm_weight"], extras["norm_bias"], 1e-12
    )
    assert torch.equal(got, expected)


def test_the_attention_mask_zeroes_the_pads_rows() -> None:
    config = _config(mask_multiply=True)
    module = _module(config, _extras(config))
    trace = module.trace(IDS, attention_mask=MASK)
    assert torch.equal(trace.input_embeddings[1, 2:], torch.zeros(2, D))
    assert torch.equal(trace.input_embeddings[0], trace.embedding_layernorm[0])
    assert trace.steps[-2].name == "masked_embeddings"


def test_rmsnorm_is_llama_s() -> None:
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    config = _config(norm_kind="rmsnorm", norm_eps=1e-6, token_types=False)
    extras = {"norm_weight": torch.randn(D)}
    module = _module(config, extras)
    norm = LlamaRMSNorm(D, eps=1e-6)
    norm.weight.data = extras["norm_weight"]
    trace = module.trace(IDS)
    assert torch.equal(
        trace.input_embeddings, norm(trace.token_embeddings + trace.position_embeddings)
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_a_weightless_rmsnorm_is_nanochat_s(dtype: torch.dtype) -> None:
    """No tensor at all: the rows in float32, x * rsqrt(mean(x²) + eps), cast back, bit for bit
    as NanoChatRMSNorm and as the plain formula, in every dtype; a checkpoint needs no norm."""
    from transformers.models.nanochat.modeling_nanochat import NanoChatRMSNorm

    config = _config(norm_kind="weightless_rmsnorm", norm_eps=1e-6, token_types=False)
    module = _module(config, {}).to(dtype)  # no extras given: none is needed
    assert module.norm_weight is None and module.norm_bias is None
    trace = module.trace(IDS)
    summed = trace.token_embeddings + trace.position_embeddings
    wide = summed.float()
    formula = (wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dtype)
    assert trace.input_embeddings.dtype == dtype
    assert torch.equal(trace.input_embeddings, NanoChatRMSNorm(eps=1e-6)(summed))
    assert torch.equal(trace.input_embeddings, formula)
    assert not torch.equal(trace.input_embeddings, summed)  # the norm ran
    assert trace.embedding_layernorm is trace.input_embeddings


def test_nonorm_is_mobilebert_s() -> None:
    from transformers.models.mobilebert.modeling_mobilebert import NoNorm

    config = _config(norm_kind="nonorm", token_types=False)
    extras = _extras(config)
    norm = NoNorm(D)
    norm.weight.data, norm.bias.data = extras["norm_weight"], extras["norm_bias"]
    trace = _module(config, extras).trace(IDS)
    assert torch.equal(
        trace.input_embeddings, norm(trace.token_embeddings + trace.position_embeddings)
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"token_width": W, "projection": "after_norm"},
        {"token_width": W, "projection": "before_norm", "positions_first": True},
        {"mask_multiply": True, "norm_kind": "nonorm"},
        {"norm_kind": "rmsnorm", "token_types": False},
        {"norm_kind": "weightless_rmsnorm", "token_types": False},
        {"token_width": W, "projection": "after_norm", "positional": "sinusoidal"},
        {"token_width": W, "trigram": True, "norm_kind": "nonorm", "positions_first": True},
    ],
)
def test_the_reference_and_the_shape_plan_agree_with_the_module(fields: dict) -> None:
    config = _config(**fields)
    extras = _extras(config)
    if config.norm_kind == "rmsnorm":
        del extras["norm_bias"], extras["token_type"]
    if config.norm_kind == "weightless_rmsnorm":  # nanochat's: no tensor to read
        extras = {}
    module = _module(config, extras)
    trace = module.trace(IDS, attention_mask=MASK)

    class Tables:  # the reference's view of loaded tables: read from memory, not files
        path = folder = None

    import embedcli.pipeline.reference as reference

    tables = (module.token_embedding.weight, None if module.position_embedding is None
              else module.position_embedding.weight)  # fmt: skip
    original = reference.reread_tables, reference.reread_extras, reference.by_rows
    try:
        reference.by_rows = lambda _: False
        reference.reread_tables = lambda _: (*tables, "memory")
        reference.reread_extras = lambda _: extras
        expected, _ = reference_embeddings(config, IDS, Tables(), MASK)
    finally:
        reference.reread_tables, reference.reread_extras, reference.by_rows = original
    assert torch.equal(trace.input_embeddings.double(), expected)
    planned, _ = planned_trace(config, *IDS.shape)
    meta = InputEmbedding(config, meta=True).trace(
        torch.zeros(2, 4, dtype=torch.long, device="meta")
    )
    assert [(s.name, s.shape) for s in planned] == [(s.name, s.shape) for s in meta.steps]
    assert [s.operation for s in planned] == [s.operation for s in trace.steps]
    assert replace(config) == config
