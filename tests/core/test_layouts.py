"""How a family's first block takes the input embeddings (core.layouts): the same numbers,
arranged; the planned shapes equal the traced ones; a bad layout or stream count is refused."""

from __future__ import annotations

import pytest
import torch

from embedcli import EmbedConfig, build_embedding
from embedcli.core.shapeplan import planned_trace
from embedcli.errors import ConfigError
from embedcli.pipeline.reference import reference_embeddings

IDS = torch.tensor([[1, 5, 9], [2, 3, 4]])  # (B, T) = (2, 3)


def _config(layout: str, streams: int = 1) -> EmbedConfig:
    return EmbedConfig(vocab_size=16, d_model=8, context_length=8, positional="learned",
                       block_layout=layout, streams=streams)  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "streams", "shape"),
    [
        ("streams", 3, (2, 3, 3, 8)),
        ("streams_flat", 2, (2, 3, 16)),
        ("time_major", 1, (3, 2, 8)),
        ("channels_first", 1, (2, 8, 3)),
    ],
)
def test_the_block_input_is_the_input_embeddings_arranged(
    layout: str, streams: int, shape: tuple[int, ...]
) -> None:
    config = _config(layout, streams)
    trace = build_embedding(config).trace(IDS)
    x = trace.input_embeddings  # (2, 3, 8)
    got = trace.block_input
    assert got is not None and tuple(got.shape) == shape
    if layout == "streams":
        for n in range(streams):
            assert torch.equal(got[:, :, n], x)
    elif layout == "streams_flat":
        assert torch.equal(got[..., :8], x) and torch.equal(got[..., 8:], x)
    elif layout == "time_major":
        assert torch.equal(got[1, 0], x[0, 1])
    else:
        assert torch.equal(got[1, :, 2], x[1, 2])
    planned, _ = planned_trace(config, 2, 3)
    assert [(s.name, s.shape) for s in planned] == [(s.name, s.shape) for s in trace.steps]
    assert trace.steps[-1].name == "block_input"
    assert "what block 0 reads" in trace.steps[-1].operation
    expected, _ = reference_embeddings(config, IDS)  # written out again from the formula
    assert torch.equal(expected.float(), got)


def test_tokens_is_the_default_and_adds_no_step() -> None:
    trace = build_embedding(_config("tokens")).trace(IDS)
    assert trace.block_input is None
    assert "block_input" not in [s.name for s in trace.steps]
    assert "block_layout" not in _config("tokens").to_dict()
    assert _config("streams", 4).to_dict()["streams"] == 4


@pytest.mark.parametrize(("layout", "streams"), [("diagonal", 1), ("streams", 0),
                                                 ("streams", True), ("streams", 2.0)])  # fmt: skip
def test_a_bad_layout_or_stream_count_is_refused(layout: str, streams: object) -> None:
    with pytest.raises(ConfigError):
        _config(layout, streams)  # type: ignore[arg-type]
