"""What a table holds: `weights` (a checkpoint's tensors), `neighbors`, `stats`."""

from typing import Annotated

import typer

from embedcli.analysis.neighbors import neighbors_report, token_ids_for
from embedcli.analysis.stats import table_stats
from embedcli.cli import options as o
from embedcli.cli.checks import hub_access
from embedcli.cli.inputs import ids_or_text
from embedcli.cli.output import emit, models_listed, work_progress
from embedcli.core.config import DEFAULT_SEED, Overrides
from embedcli.pipeline import sources
from embedcli.pipeline.weights import weights_report
from embedcli.render.json import neighbors_json, stats_json, weights_json
from embedcli.tokenization.encodings import get_encoding, resolve_encoding_name
from embedcli.tokenization.specialtext import specials_of


def weights(
    path: Annotated[
        str,
        typer.Argument(
            help="Checkpoint (.safetensors, .pt/.pth/.bin, .npz, .gguf), model folder, "
            "hf:ORG/NAME, ollama:NAME[:TAG], or sample:gemma-3-270m.",
            metavar="SOURCE",
            show_default=False,
        ),
    ],
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    token_key: o.TokenKey = None,
    position_key: o.PositionKey = None,
    as_json: o.AsJson = False,
    quiet: o.Quiet = False,
) -> None:
    """Every tensor of a checkpoint, its layout, its tables, and whether the head is tied.

    \b
      embedcli weights model.safetensors
      embedcli weights ckpt.pt --json | jq .head_tied
      embedcli weights hf:meta-llama/Llama-3.1-8B --download  # headers only
      embedcli weights model.gguf  # GGML types, bytes, the architecture's fields
    """

    report = weights_report(path, token_key, position_key, hub_access(download, download_all))
    emit(as_json, weights_json, "weights_view", report)


def neighbors(
    ctx: typer.Context,
    texts: o.JoinedText = None,
    file: o.File = None,
    ids: o.JoinedIds = None,
    encoding: o.Encoding = None,
    model: o.Model = None,
    allow_special: o.AllowSpecial = False,
    special_as_text: o.SpecialAsText = False,
    k: Annotated[
        int,
        o.count(
            "-k",
            help="Neighbors per token.",
            metavar="K",
            rich_help_panel=o.DISPLAY,
        ),
    ] = 10,
    weights: o.Weights = None,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    token_key: o.TokenKey = None,
    d_model: o.DModel = None,
    seed: o.Seed = DEFAULT_SEED,
    device: o.Device = "auto",
    as_json: o.AsJson = False,
    list_models: o.ListModels = False,
    quiet: o.Quiet = False,
) -> None:
    """The nearest tokens to each token of a text in the token table, by cosine similarity.

    \b
      embedcli neighbors " king" --weights gpt2.safetensors -k 5
      embedcli neighbors --ids 6342 --weights ckpt.pt --json | jq .tokens
    """
    if models_listed(ctx, list_models, as_json):
        return
    name = resolve_encoding_name(encoding, model, weights)
    access = hub_access(download, download_all)
    enc = get_encoding(name, access)
    token_ids = ids_or_text(enc, texts, file, ids, specials_of(allow_special, special_as_text))
    given = Overrides(d_model=d_model, seed=seed)
    with work_progress("reading the table", quiet) as progress:
        seeded, _ = (
            sources.embed_source(name, given, access=access) if weights is None else (None, None)
        )
        token, _, source = sources.source_tables(
            seeded, weights, token_key, given=given, access=access
        )
        ids = token_ids_for(token_ids, token)
        rows = neighbors_report(enc, ids, token, k, device, progress.rows("neighbors"))
    emit(as_json, neighbors_json, "neighbors_view", source, rows, seeded=weights is None)


def stats(
    ctx: typer.Context,
    weights: o.Weights = None,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    token_key: o.TokenKey = None,
    position_key: o.PositionKey = None,
    encoding: o.Encoding = None,
    model: o.Model = None,
    d_model: o.DModel = None,
    seed: o.Seed = DEFAULT_SEED,
    as_json: o.AsJson = False,
    list_models: o.ListModels = False,
    quiet: o.Quiet = False,
) -> None:
    """Mean, std, min, max and row-norm percentiles of the token and positional tables.

    \b
      embedcli stats                 # seeded tables: nn.Embedding's N(0, 1)
      embedcli stats --weights model.safetensors --json
    """
    if models_listed(ctx, list_models, as_json):
        return
    given, access = Overrides(d_model=d_model, seed=seed), hub_access(download, download_all)
    seeded = None  # the tables of --weights need no tokenizer: only seeded ones are sized by one
    with work_progress("reading the tables", quiet) as progress:
        if weights is None:
            name = resolve_encoding_name(encoding, model, None)
            seeded, _ = sources.embed_source(name, given, access=access)
        token, position, source = sources.source_tables(
            seeded, weights, token_key, position_key, given, access=access
        )
        found = [
            table_stats(name, table, progress.rows(f"{name.split('_')[0]} table"))
            for name, table in (("token_embeddings", token), ("position_embeddings", position))
            if table is not None
        ]
    emit(as_json, stats_json, "stats_view", source, found, seeded=weights is None)
