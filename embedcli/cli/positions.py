"""`embedcli positions`: a positional encoding as a picture (or its cosine similarities)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from embedcli.cli import options as o
from embedcli.cli.output import emit
from embedcli.config import DEFAULT_SEED
from embedcli.errors import UsageError

_FAMILY_CHECK, _FAMILY_COMPLETE = o.choices(("learned", "sinusoidal"))


def positions(
    positional: Annotated[
        str,
        typer.Option(
            help="learned (the seeded table, or --weights) or sinusoidal.",
            callback=_FAMILY_CHECK,
            autocompletion=_FAMILY_COMPLETE,
            metavar="FAMILY",
            rich_help_panel=o.TABLES,
        ),
    ] = "sinusoidal",
    context_length: Annotated[
        int,
        typer.Option(
            help="Positions (rows); fewer than embed's 1024, so the picture fits a terminal.",
            min=1,
            metavar="ROWS",
            rich_help_panel=o.TABLES,
        ),
    ] = 64,
    d_model: Annotated[
        int,
        typer.Option(
            "-d",
            "--d-model",
            help="Dimensions (columns); fewer than embed's 768, to fit a terminal.",
            min=1,
            metavar="D",
            rich_help_panel=o.TABLES,
        ),
    ] = 128,
    seed: o.Seed = DEFAULT_SEED,
    weights: o.Weights = None,
    position_key: o.PositionKey = None,
    similarity: Annotated[
        bool,
        typer.Option(
            "--similarity",
            help="Position-by-position cosine similarity instead.",
            rich_help_panel=o.DISPLAY,
        ),
    ] = False,
    png: Annotated[
        Path | None,
        typer.Option(
            help="Also write the figure as a PNG (needs the plot extra: "
            "pip install 'embedcli\\[plot]').",
            rich_help_panel=o.OUTPUT,
        ),
    ] = None,
    as_json: o.AsJson = False,
) -> None:
    """A positional encoding as a picture: positions (rows) by dimensions (columns).

    \b
      embedcli positions                  # sinusoids: stripes, slower to the right
      embedcli positions --similarity     # the bands of sinusoids
      embedcli positions --positional learned --similarity    # untrained: noise
      embedcli positions --png sinusoidal.png
    """
    from embedcli.jsonout import heatmap_json
    from embedcli.positions import position_table, positions_heatmap, save_png

    if weights is not None and positional != "learned":
        raise UsageError("--weights shows a learned table: add --positional learned")
    table, source = position_table(positional, context_length, d_model, seed, weights, position_key)
    heatmap = positions_heatmap(table, source, similarity)
    if png is not None:
        save_png(heatmap, png)
    emit(as_json, lambda h: heatmap_json(positional, h), "heatmap_view", heatmap)
