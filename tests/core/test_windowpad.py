"""Longformer's and LED's padding to the attention window (core.windowpad): the ids padded
with the model's pad id to a multiple of the window, the mask with zeros; the module pads what
it is given; the planned shapes hold the padded T; a bad window, pad id or an LED sequence
whose pads pass the context is refused."""

from __future__ import annotations

import pytest
import torch

from embedcli import EmbedConfig, build_embedding
from embedcli.core.shapeplan import planned_trace
from embedcli.core.windowpad import pad_tensors, padded_length, window_padded
from embedcli.errors import ConfigError, SequenceTooLongError
from embedcli.models.config import parse_config


def _config(window: int | None = 4, pad: int = 1, context: int = 16) -> EmbedConfig:
    return EmbedConfig(vocab_size=32, d_model=8, context_length=context, positional="learned",
                       window=window, window_pad_id=pad)  # fmt: skip


@pytest.mark.parametrize(("length", "padded"), [(1, 4), (4, 4), (5, 8), (7, 8), (8, 8)])
def test_lengths_round_up_to_the_window(length: int, padded: int) -> None:
    assert padded_length(length, _config()) == padded
    assert padded_length(length, _config(window=None)) == length


def test_the_lists_are_padded_with_the_models_pad_id_and_masked() -> None:
    ids, mask = window_padded([[5, 6, 7], [8, 0, 0]], [[1, 1, 1], [1, 0, 0]], _config(pad=3))
    assert ids == [[5, 6, 7, 3], [8, 0, 0, 3]]
    assert mask == [[1, 1, 1, 0], [1, 0, 0, 0]]


def test_the_module_pads_what_it_is_given() -> None:
    config = _config(pad=2)
    module = build_embedding(config)
    trace = module.trace(torch.tensor([[5, 6, 7, 9, 10]]))
    assert trace.input_ids.tolist() == [[5, 6, 7, 9, 10, 2, 2, 2]]
    assert tuple(trace.input_embeddings.shape) == (1, 8, 8)
    same = module.trace(torch.tensor([[5, 6, 7, 9, 10, 2, 2, 2]]))
    assert torch.equal(trace.input_embeddings, same.input_embeddings)
    planned, _ = planned_trace(config, 1, 5)
    assert [(s.name, s.shape) for s in planned] == [(s.name, s.shape) for s in trace.steps]
    ids, mask = pad_tensors(torch.tensor([[1, 2]]), None, config)
    assert ids.tolist() == [[1, 2, 2, 2]] and mask.tolist() == [[1, 1, 0, 0]]


def test_an_arange_model_must_hold_the_pads_positions() -> None:
    with pytest.raises(SequenceTooLongError, match="attention_window 4"):
        window_padded([[1] * 9], [[1] * 9], _config(context=10))


@pytest.mark.parametrize(("window", "pad"), [(0, 1), (-4, 1), (True, 1), (4, 32), (4, -1)])
def test_a_bad_window_or_pad_id_is_refused(window: object, pad: object) -> None:
    with pytest.raises(ConfigError):
        _config(window=window, pad=pad)  # type: ignore[arg-type]


_LED = {"model_type": "led", "vocab_size": 64, "d_model": 16,
        "max_encoder_position_embeddings": 64, "pad_token_id": 1}  # fmt: skip


def test_the_largest_window_of_the_layers_is_read() -> None:
    model = parse_config({**_LED, "attention_window": [4, 8, 6]}, "config.json")
    assert model.window == (8, 1)
    fields = model.embed_fields()
    assert fields["window"] == 8 and fields["window_pad_id"] == 1


@pytest.mark.parametrize("bad", [3, 0, [4, 5], "512", [], None])
def test_a_window_it_cannot_read_is_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="attention_window"):
        parse_config({**_LED, "attention_window": bad}, "config.json")


def test_a_missing_pad_id_is_refused() -> None:
    with pytest.raises(ConfigError, match="pad_token_id"):
        parse_config({**_LED, "attention_window": 4, "pad_token_id": None}, "config.json")


def test_forward_gives_the_rows_of_the_ids_given() -> None:
    """Streaming and per-line output call the module: the pads change no row of the ids
    given (positions count them after the tokens), so those rows, and only those, come back."""
    config = _config(pad=2)
    module = build_embedding(config)
    ids = torch.tensor([[5, 6, 7, 9, 10]])
    out = module(ids)
    assert tuple(out.shape) == (1, 5, 8)
    assert torch.equal(out, module.trace(ids).input_embeddings[:, :5])


def test_pads_past_an_arange_context_are_refused_with_a_length_that_fits() -> None:
    """LED's pads take positions 0..T-1 too: with a window of 10 and a context of 96, the
    longest input is 90 tokens; streaming's module path says so too, never an IndexError."""
    config = EmbedConfig(vocab_size=32, d_model=8, context_length=96, positional="learned",
                         window=10, window_pad_id=1)  # fmt: skip
    window_padded([[2] * 90], [[1] * 90], config)  # 90 fits
    with pytest.raises(SequenceTooLongError, match="--truncate 90"):
        window_padded([[2] * 91], [[1] * 91], config)
    with pytest.raises(SequenceTooLongError, match="attention_window 10"):
        build_embedding(config)(torch.full((1, 91), 2))


def test_longformer_pads_take_no_position_so_a_full_context_fits(tmp_path) -> None:
    """Longformer numbers positions over the non-pad ids: 96 ids padded to 100 still fit its
    96 positions, as in transformers."""
    import json

    from support.checkpointfiles import write_safetensors
    from support.helpers import make_runner

    from embedcli.cli import app

    config = {"model_type": "longformer", "vocab_size": 64, "hidden_size": 8,
              "num_attention_heads": 2, "max_position_embeddings": 98, "pad_token_id": 1,
              "attention_window": [10, 10], "num_hidden_layers": 2}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    e = "longformer.embeddings."
    write_safetensors(tmp_path / "model.safetensors", {
        e + "word_embeddings.weight": torch.randn(64, 8),
        e + "position_embeddings.weight": torch.randn(98, 8),
        e + "token_type_embeddings.weight": torch.randn(1, 8),
        e + "LayerNorm.weight": torch.ones(8), e + "LayerNorm.bias": torch.zeros(8),
    })  # fmt: skip
    ids = ",".join(["5"] * 96)
    result = make_runner().invoke(app, ["embed", "--weights", str(tmp_path), "--ids", ids,
                                        "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert len(report["input_ids"][0]) == 100 and report["attention_mask"][0][96:] == [0] * 4


def test_a_window_list_must_have_one_entry_a_layer() -> None:
    with pytest.raises(ConfigError, match="3 windows for 2 layers"):
        parse_config({**_LED, "attention_window": [4, 4, 4], "encoder_layers": 2}, "config.json")


def test_a_stream_window_whose_pads_pass_the_context_is_refused_first(tmp_path) -> None:
    """Streaming checks -t against the padded length before it opens its output."""
    import io

    from embedcli.pipeline.stream import stream_embed

    config = EmbedConfig(vocab_size=32, d_model=8, context_length=96, positional="learned",
                         window=10, window_pad_id=1)  # fmt: skip
    with pytest.raises(SequenceTooLongError, match="--seq-len padded to attention_window 10"):
        stream_embed(config, None, io.BytesIO(b"x"), tmp_path / "out.npy", source="x",  # type: ignore[arg-type]
                     window=91, stride=91, batch_size=1)  # fmt: skip
    assert not (tmp_path / "out.npy").exists()
