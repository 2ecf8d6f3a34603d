"""`embedcli positions`: a positional encoding as a picture (or its cosine similarities):
learned and sinusoidal tables, rope's rotation angles, ALiBi's biases."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from embedcli.cli import options as o
from embedcli.cli.checks import hub_access
from embedcli.cli.output import emit, write
from embedcli.cli.shapes import list_presets as listed
from embedcli.core.config import DEFAULT_SEED, PICTURE_D_MODEL, PICTURE_POSITIONS
from embedcli.core.positions import parse_rope_scaling
from embedcli.errors import UsageError
from embedcli.io.outputs import check_not_an_input, check_png
from embedcli.pipeline.positions import positions_report
from embedcli.pipeline.positionsource import PositionsRequest
from embedcli.pipeline.shapesrequest import refuse_beside_listing
from embedcli.render.png import positions_png
from embedcli.render.positionsjson import positions_json
from embedcli.tokenization.display import visible_name

if TYPE_CHECKING:
    from embedcli.pipeline.positionsource import PositionsRequest

_FAMILY_CHECK, _FAMILY_COMPLETE = o.choices(("learned", "sinusoidal", "rope", "alibi"))
ROPE = "RoPE and ALiBi"  # their options' help panel


def _check_theta(value: float | None) -> float | None:
    """rope's base: a finite number above 1."""
    import math

    if value is not None and not (math.isfinite(value) and value > 1):
        raise typer.BadParameter(f"rope's base must be a finite number above 1, got {value!r}")
    return value


def _parse_scaling(value: str | None) -> tuple | None:
    """--rope-scaling's spec as core.positions reads it; a bad one is a usage error."""

    if value is None:
        return None
    try:
        return parse_rope_scaling(value)
    except ValueError as exc:
        raise UsageError(f"--rope-scaling {exc}") from None


# positions' own options, each declared once.
Family = Annotated[
    str | None,
    typer.Option(
        "--positional",
        help="learned (the seeded table, or --weights), sinusoidal, rope (the rotation "
        "angles) or alibi (the bias of each head). \\[default: sinusoidal; the model's own "
        "with --weights or --preset]",
        callback=_FAMILY_CHECK,
        autocompletion=_FAMILY_COMPLETE,
        metavar="FAMILY",
        show_default=False,
        rich_help_panel=o.TABLES,
    ),
]
ModelPreset = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="Draw a real model's own positions (see --list-presets): rope's theta, "
        "scaling and head dimension, ALiBi's heads and slopes, or a learned table at its "
        "width (seeded); not with --weights.",
        callback=o.checks.preset_check,
        autocompletion=o.checks.preset_complete,
        metavar="NAME",
        show_default=False,
        rich_help_panel=o.TABLES,
    ),
]
Rows = Annotated[
    int | None,
    o.count(
        "--context-length",
        help="Positions (rows; ALiBi: queries and keys); fewer than embed's 1024, so the "
        f"picture fits a terminal. \\[default: {PICTURE_POSITIONS}; with a learned "
        "--weights, the checkpoint's whole table (fewer: its first rows)]",
        metavar="ROWS",
        show_default=False,
        rich_help_panel=o.TABLES,
    ),
]
Columns = Annotated[
    int | None,
    o.count(
        "-d",
        "--d-model",
        help="Dimensions (columns); for rope, the rotated dimensions of one head "
        "(head_dim), drawn as d/2 pairs. "
        f"\\[default: {PICTURE_D_MODEL}; the model's with --weights or --preset]",
        metavar="D",
        show_default=False,
        rich_help_panel=o.TABLES,
    ),
]
RopeTheta = Annotated[
    float | None,
    typer.Option(
        "--rope-theta",
        help="rope's base theta (Llama 3: 500000). \\[default: 10000]",
        callback=_check_theta,
        metavar="THETA",
        show_default=False,
        rich_help_panel=ROPE,
    ),
]
RopeScaling = Annotated[
    str | None,
    typer.Option(
        "--rope-scaling",
        help="rope's frequency scaling, any type transformers computes: linear:FACTOR, "
        "llama3:FACTOR[:LOW:HIGH:ORIGINAL] (Llama 3.1's 1, 4, 8192), dynamic:FACTOR:CONTEXT, "
        "yarn:FACTOR:ORIGINAL[:NAME=VALUE...], "
        "longrope:FACTOR:ORIGINAL:SHORT:LONG (comma lists, a factor per pair), "
        "proportional:FACTOR[:PARTIAL]. \\[default: none]",
        metavar="SPEC",
        show_default=False,
        rich_help_panel=ROPE,
    ),
]
Heads = Annotated[
    int | None,
    typer.Option(
        "--heads",
        help="ALiBi's attention heads (their slopes: Press et al.'s). \\[default: 8, the "
        "paper's; the model's with --weights or --preset]",
        min=1,
        max=1024,
        metavar="N",
        show_default=False,
        rich_help_panel=ROPE,
    ),
]
Head = Annotated[
    int | None,
    typer.Option(
        "--head",
        help="ALiBi: draw this one head large, numbered from 0 (the first) to heads - 1. "
        "\\[default: every head, small]",
        min=0,
        callback=o.bounded,
        metavar="H",
        show_default=False,
        rich_help_panel=ROPE,
    ),
]
Similarity = Annotated[
    bool,
    typer.Option(
        "--similarity",
        help="Position-by-position cosine similarity instead (rope: that of rotated "
        "copies of one vector, by distance).",
        rich_help_panel=o.DISPLAY,
    ),
]


def positions(
    positional: Family = None,
    preset: ModelPreset = None,
    list_presets: o.ListPresets = False,
    context_length: Rows = None,
    d_model: Columns = None,
    rope_theta: RopeTheta = None,
    rope_scaling: RopeScaling = None,
    heads: Heads = None,
    head: Head = None,
    seed: o.Seed = DEFAULT_SEED,
    weights: o.Weights = None,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    position_key: o.PositionKey = None,
    similarity: Similarity = False,
    png: o.Png = None,
    as_json: o.AsJson = False,
    quiet: o.Quiet = False,
) -> None:
    """A positional encoding as a picture: positions (rows) by dimensions (columns).

    \b
      embedcli positions                  # sinusoids: stripes, slower to the right
      embedcli positions --similarity     # the bands of sinusoids
      embedcli positions --positional learned --similarity    # untrained: noise
      embedcli positions --positional rope --rope-scaling llama3:8 -d 64
      embedcli positions --preset llama-3.1-8b --similarity   # by distance
      embedcli positions --positional alibi --heads 12        # every head's bias
      embedcli positions --preset bloom-176b --head 0          # one head, large
      embedcli positions --png sinusoidal.png
    """
    if list_presets:
        return _list_presets(
            as_json, preset, positional, weights, context_length, d_model, rope_theta,
            rope_scaling, heads, head, position_key, similarity, png,
        )  # fmt: skip
    check_png(png)

    _draw(PositionsRequest(
        positional, context_length, d_model, seed, weights, position_key, preset, rope_theta,
        _parse_scaling(rope_scaling), heads, head, similarity, png is not None, as_json,
        hub_access(download, download_all),
    ), png)  # fmt: skip  # PositionsRequest's fields, in their order


def _list_presets(as_json: bool, *given: object) -> None:
    """--list-presets: the presets; any other option of the drawing beside it is refused."""

    refuse_beside_listing(zip(_DRAWING_FLAGS, given, strict=True))
    listed(as_json)


# The options of the drawing, in the order --list-presets names them when given beside it.
_DRAWING_FLAGS = (
    "--preset", "--positional", "--weights", "--context-length", "-d", "--rope-theta",
    "--rope-scaling", "--heads", "--head", "--position-key", "--similarity", "--png",
)  # fmt: skip


def _draw(request: PositionsRequest, png: Path | None) -> None:
    """The picture, on the terminal (or as JSON), and in --png when asked for."""

    report = positions_report(request)
    if png is not None:
        check_not_an_input(png, [request.weights], "--png")
        positions_png(report, png)
    emit(request.as_json, positions_json, "positions_view", report)
    if png is not None and not request.as_json:
        write(f"wrote {visible_name(str(png))}")
