"""`inspect-shapes` (every tensor and parameter, for any model size) and `broadcast`."""

from typing import Annotated

import typer

from embedcli.cli import options as o
from embedcli.cli.checks import hub_access
from embedcli.cli.output import emit
from embedcli.core.broadcast import explain, parse_shape
from embedcli.core.config import Overrides
from embedcli.errors import UsageError
from embedcli.models.presets import get_preset, preset_names
from embedcli.pipeline.shapes import inspect
from embedcli.pipeline.shapesrequest import ShapesRequest
from embedcli.render.json import broadcast_json, presets_json, shapes_json

ShapesDevice = Annotated[
    str,
    typer.Option(
        help="meta (shapes only, allocates nothing), auto, cpu, cuda, cuda:N or mps.",
        callback=o.check_shapes_device,
        autocompletion=o.complete_shapes_device,
        metavar="DEVICE",
        rich_help_panel=o.DEVICE,
    ),
]
Train = Annotated[
    bool,
    typer.Option(
        "--train",
        help="Add the memory of one training step: parameters, gradients, optimizer state, "
        "master weights and activations, per precision (float32, bf16, mixed).",
        rich_help_panel=o.TABLES,
    ),
]


def inspect_shapes(
    preset: o.Preset = None,
    listing: o.ListPresets = False,
    batch_size: o.BatchSize = None,
    seq_len: o.SeqLen = None,
    d_model: o.DModel = None,
    vocab_size: o.VocabSize = None,
    context_length: o.ContextLength = None,
    positional: o.Positional = None,
    dtype: o.DType = None,
    device: ShapesDevice = "meta",
    weights: o.Weights = None,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    token_key: o.TokenKey = None,
    position_key: o.PositionKey = None,
    train: Train = False,
    optimizer: o.Optimizer = None,
    as_json: o.AsJson = False,
    quiet: o.Quiet = False,
) -> None:
    """Every tensor of the forward pass, its parameters and memory, for any model size.

    \b
      embedcli inspect-shapes --preset book-ch2
      embedcli inspect-shapes --preset llama-3.1-8b
      embedcli inspect-shapes --preset mixtral-8x7b --train
      embedcli inspect-shapes --preset gpt3 --dtype bfloat16
      embedcli inspect-shapes -b 2 -t 16 -d 64 --device cpu --json | jq '.tensors'
      embedcli inspect-shapes --preset gpt2-xl -b 8 -t 1024 --train --optimizer sgd
    """
    overrides = Overrides(vocab_size, d_model, context_length, positional, dtype)
    request = ShapesRequest(
        preset, listing, batch_size, seq_len, overrides, device, weights,
        hub_access(download, download_all), token_key, position_key, train, optimizer,
    )  # fmt: skip
    if listing:
        return list_presets(as_json)
    emit(as_json, shapes_json, "shapes_tables", inspect(request))


def list_presets(as_json: bool) -> None:
    """Every preset, grouped by family (inspect-shapes and positions --list-presets)."""

    emit(as_json, presets_json, "presets_table", [get_preset(n) for n in preset_names()])


def broadcast(
    shapes: Annotated[
        list[str],
        typer.Argument(
            help="Two or more shapes: 8,4,256  (8,4,256)  8x4x256  () for a scalar.",
            show_default=False,
        ),
    ],
    as_json: o.AsJson = False,
    quiet: o.Quiet = False,
) -> None:
    """Explain NumPy/PyTorch broadcasting of two or more shapes, step by step.

    \b
      embedcli broadcast 8,4,256 4,256
      embedcli broadcast "(8,4,256)" "(3,256)"
      embedcli broadcast 8x1x6x1 7x1x5 --json | jq .result
    """

    if len(shapes) < 2:
        raise UsageError("give at least two shapes, e.g. embedcli broadcast 8,4,256 4,256")
    emit(as_json, broadcast_json, "broadcast_view", explain(*map(parse_shape, shapes)))
