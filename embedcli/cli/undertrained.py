"""`embedcli undertrained`: the tokens a model never learned, from its weights alone."""

from pathlib import Path
from typing import Annotated

import typer

from embedcli.analysis.projector import check_outputs
from embedcli.cli import options as o
from embedcli.cli.checks import hub_access
from embedcli.cli.output import emit, work_progress, write
from embedcli.cli.params import TOKEN_IDS, TokenIds
from embedcli.errors import UsageError
from embedcli.models.sources import classify
from embedcli.pipeline.undertrained import DEFAULT_TOP, undertrained_report
from embedcli.render.json import undertrained_json
from embedcli.render.png import undertrained_png

Top = Annotated[
    int,
    o.count(
        "--top",
        help="List the N tokens the indicator ranks highest (reference tokens left out).",
        metavar="N",
        rich_help_panel=o.DISPLAY,
    ),
]
ReferenceIds = Annotated[
    list[TokenIds] | None,
    typer.Option(
        "--reference-ids",
        help="Tokens known to be unused, e.g. 177,178,179 (repeat to add more): the direction "
        "compared with. [default: the tokenizer's unused or reserved tokens, else its tokens "
        "of bytes UTF-8 never holds]",
        click_type=TOKEN_IDS,
        show_default=False,
        rich_help_panel=o.INPUT,
    ),
]


def undertrained(
    weights: o.Weights = None,
    encoding: o.Encoding = None,
    reference_ids: ReferenceIds = None,
    top: Top = DEFAULT_TOP,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    token_key: o.TokenKey = None,
    png: o.Png = None,
    as_json: o.AsJson = False,
    quiet: o.Quiet = False,
) -> None:
    """Tokens the model (almost) never trained: each row's cosine to the known-unused rows.

    With the first principal component removed, rows that point where the unused tokens'
    rows point are candidates (Land and Bartolo 2024); each token's row norm and whether
    encode(decode(id)) gives it back are shown beside it.

    \b
      embedcli undertrained --weights sample:gemma-3-270m
      embedcli undertrained --weights model.gguf --top 50 --png undertrained.png
      embedcli undertrained --weights gpt2/ --json | jq '.candidates[0]'
    """
    if weights is None:
        raise UsageError(
            "undertrained reads a trained model: pass --weights SOURCE "
            "(e.g. --weights sample:gemma-3-270m)"
        )
    source = classify(weights)
    check_outputs(png, None, [source.path])  # before the work, not after it
    given = [token for ids in reference_ids or () for token in ids]
    with work_progress("reading the table", quiet) as progress:
        report, rows = undertrained_report(
            weights, encoding, given or None, top, token_key,
            hub_access(download, download_all), progress.rows,
        )  # fmt: skip
    written = None if png is None else undertrained_png(report, rows, Path(png))
    emit(as_json, undertrained_json, "undertrained_view", report)
    if written is not None and not as_json:
        write(f"wrote {written}")
