"""`embedcli positions`: a positional encoding as a picture (or its cosine similarities)."""

from typing import Annotated

import typer

from embedcli.cli import options as o
from embedcli.cli.output import emit
from embedcli.core.config import DEFAULT_SEED, PICTURE_D_MODEL, PICTURE_POSITIONS
from embedcli.tokenization.display import visible_name

_FAMILY_CHECK, _FAMILY_COMPLETE = o.choices(("learned", "sinusoidal"))


def positions(
    positional: Annotated[
        str | None,
        typer.Option(
            help="learned (the seeded table, or --weights) or sinusoidal. "
            "\\[default: sinusoidal; learned with --weights]",
            callback=_FAMILY_CHECK,
            autocompletion=_FAMILY_COMPLETE,
            metavar="FAMILY",
            show_default=False,
            rich_help_panel=o.TABLES,
        ),
    ] = None,
    context_length: Annotated[
        int | None,
        o.count(
            help="Positions (rows); fewer than embed's 1024, so the picture fits a terminal. "
            f"\\[default: {PICTURE_POSITIONS}; the checkpoint's with --weights]",
            metavar="ROWS",
            show_default=False,
            rich_help_panel=o.TABLES,
        ),
    ] = None,
    d_model: Annotated[
        int | None,
        o.count(
            "-d",
            "--d-model",
            help="Dimensions (columns); fewer than embed's 768, to fit a terminal. "
            f"\\[default: {PICTURE_D_MODEL}; the checkpoint's with --weights]",
            metavar="D",
            show_default=False,
            rich_help_panel=o.TABLES,
        ),
    ] = None,
    seed: o.Seed = DEFAULT_SEED,
    weights: o.Weights = None,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    position_key: o.PositionKey = None,
    similarity: Annotated[
        bool,
        typer.Option(
            "--similarity",
            help="Position-by-position cosine similarity instead.",
            rich_help_panel=o.DISPLAY,
        ),
    ] = False,
    png: o.Png = None,
    as_json: o.AsJson = False,
    quiet: o.Quiet = False,
) -> None:
    """A positional encoding as a picture: positions (rows) by dimensions (columns).

    \b
      embedcli positions                  # sinusoids: stripes, slower to the right
      embedcli positions --similarity     # the bands of sinusoids
      embedcli positions --positional learned --similarity    # untrained: noise
      embedcli positions --png sinusoidal.png
    """
    from embedcli.io.outputs import check_png
    from embedcli.render.png import heatmap_png

    check_png(png)
    from embedcli.pipeline.positions import position_table, positions_heatmap
    from embedcli.render.json import heatmap_json

    table, source, family = position_table(
        positional, context_length, d_model, seed, weights, position_key
    )
    heatmap = positions_heatmap(table, source, similarity)
    if png is not None:
        from embedcli.io.outputs import check_not_an_input

        check_not_an_input(png, [weights], "--png")
        heatmap_png(heatmap, png)
    emit(as_json, lambda h: heatmap_json(family, h), "heatmap_view", heatmap)
    if png is not None and not as_json:
        from embedcli.cli.output import write

        write(f"wrote {visible_name(str(png))}")
