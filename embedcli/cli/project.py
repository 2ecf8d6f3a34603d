"""`embedcli project`: where tokens sit in the token table, on its first two principal axes."""

import contextlib
from pathlib import Path
from typing import Annotated, Any

import typer

from embedcli.analysis import projection
from embedcli.analysis.neighbors import token_ids_for
from embedcli.analysis.projector import check_outputs, write_projector
from embedcli.cli import options as o
from embedcli.cli.checks import hub_access
from embedcli.cli.inputs import ids_from_file, ids_or_text
from embedcli.cli.output import emit, models_listed, work_progress, write
from embedcli.cli.params import NAMED_PATH
from embedcli.core.config import DEFAULT_SEED, Overrides
from embedcli.errors import OutputError, UsageError, os_reason
from embedcli.io.outputs import staged
from embedcli.pipeline import sources
from embedcli.pipeline.projectrequest import ProjectRequest
from embedcli.render.json import project_json
from embedcli.render.png import projection_png
from embedcli.render.workprogress import WorkProgress
from embedcli.tokenization.encodings import get_encoding, resolve_encoding_name
from embedcli.tokenization.specialtext import specials_of


def _named_folder(value: str | None) -> Path | None:
    """An empty --export-projector (an unset shell variable) would write into the current
    folder: a folder must be named (``.`` for this one)."""
    if value is None:
        return None
    if not value.strip():
        empty = "an empty name" if not value else f"a blank name ({value!r})"
        raise typer.BadParameter(f"name a folder (. for this one), not {empty}")
    return Path(value)


Top = Annotated[
    int | None,
    o.count(
        "--first-ids",
        help="Also the table's first N ids (a BPE vocabulary lists its bytes, then its merges "
        "most frequent first); with --first-ids or --ids-file, TEXT is optional.",
        metavar="N",
        show_default=False,
        rich_help_panel=o.INPUT,
    ),
]
# --top was its name; in count (and listings everywhere) --top N is the N largest
OldTop = Annotated[int | None, o.deprecated_alias("--top", "--first-ids", o.INPUT)]
IdsFile = Annotated[
    Path | None,
    typer.Option(
        help="Also the token ids in this file (commas, spaces or newlines; '-': stdin).",
        metavar="PATH",
        click_type=NAMED_PATH,
        show_default=False,
        rich_help_panel=o.INPUT,
    ),
]
ExportProjector = Annotated[
    str | None,
    typer.Option(
        help="Also write tensors.tsv, metadata.tsv and projector_config.pbtxt into this "
        "folder, for TensorBoard's Embedding Projector.",
        callback=_named_folder,
        metavar="DIR",
        show_default=False,
        rich_help_panel=o.OUTPUT,
    ),
]


def project(
    ctx: typer.Context,
    texts: o.JoinedText = None,
    file: o.File = None,
    ids: o.JoinedIds = None,
    encoding: o.Encoding = None,
    model: o.Model = None,
    allow_special: o.AllowSpecial = False,
    special_as_text: o.SpecialAsText = False,
    top: Top = None,
    old_top: OldTop = None,
    ids_file: IdsFile = None,
    weights: o.Weights = None,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    token_key: o.TokenKey = None,
    d_model: o.DModel = None,
    seed: o.Seed = DEFAULT_SEED,
    device: o.Device = "auto",
    png: o.Png = None,
    export_projector: ExportProjector = None,
    as_json: o.AsJson = False,
    list_models: o.ListModels = False,
    quiet: o.Quiet = False,
) -> None:
    """A map of the token table on its first two principal components, the text's tokens on it.

    The axes come from torch.pca_lowrank (centred) over the whole table.
    The output says whether the table is an isotropic cloud (seeded, untrained) or has structure.

    \b
      embedcli project "king queen man woman"      # seeded: an isotropic cloud
      embedcli project " cat dog" --first-ids 300 --weights gpt2.safetensors
      embedcli project "hello" --json | jq .explained_variance_ratio
      embedcli project --first-ids 500 --weights ckpt.pt --export-projector proj/
    """
    if models_listed(ctx, list_models, as_json):
        return

    request = ProjectRequest(
        tuple(texts or ()), file, tuple(map(tuple, ids or ())), encoding, model,
        specials_of(allow_special, special_as_text),
        o.renamed(top, old_top, "--first-ids", "--top"), ids_file, weights,
        hub_access(download, download_all), token_key,
        Overrides(d_model=d_model, seed=seed), device,
    )  # fmt: skip  # ProjectRequest's fields, in their order
    inputs = request.inputs()
    check_outputs(png, export_projector, inputs)  # before the work, not after it
    with work_progress(None, quiet) as progress:  # drawn once the text is read
        report, table = _projected(request, progress)
    written = _write_outputs(report, table, png, export_projector)
    emit(as_json, project_json, "project_view", report)
    if written and not as_json:
        write("wrote " + ", ".join(str(path) for path in written))


def _projected(request: ProjectRequest, progress: WorkProgress) -> tuple[Any, Any]:
    """The projection of the ids asked for (the text's, --first-ids', --ids-file's) on the table
    (``--weights``', or the encoding's seeded one), and the table; ``progress`` shows it."""
    weights, given, access = request.weights, request.given, request.access
    name = resolve_encoding_name(request.encoding, request.model, weights)
    enc = get_encoding(name, access)
    texts = list(request.texts) or None
    listed = None if request.ids_file is None else ids_from_file(request.ids_file, texts)
    text_ids = _text_ids(enc, request, alone=request.top or listed)
    progress.stage("reading the table")
    seeded, _ = (
        sources.embed_source(name, given, access=access) if weights is None else (None, None)
    )
    table, _, source = sources.source_tables(
        seeded, weights, request.token_key, given=given, access=access
    )
    if text_ids is not None:
        token_ids_for(text_ids, table)  # a text without tokens, or the wrong encoding
    chosen = projection.chosen_ids(text_ids or [], request.top, listed, table.shape[0])
    projected = projection.project(
        enc, table, chosen, source, seeded=weights is None, device=request.device,
        on_rows=progress.rows("principal axes"),
    )  # fmt: skip
    return projected, table


def _text_ids(enc: object, request: ProjectRequest, alone: object) -> list[int] | None:
    """The text's token ids (--ids, TEXT, -f or stdin), or None where --first-ids or --ids-file
    (``alone``) give the points and no text was asked for."""

    if alone and not request.text_asked:
        return None
    texts, ids = list(request.texts) or None, [list(i) for i in request.ids] or None
    try:
        return ids_or_text(enc, texts, request.file, ids, request.allow_special)
    except UsageError as exc:
        if not str(exc).startswith("no text given"):
            raise
        raise UsageError(
            "no text given: pass TEXT, -f PATH, '-' (standard input) or --ids, or place "
            "the table's ids alone with --first-ids N or --ids-file PATH"
        ) from None


def _write_outputs(
    report: object, table: object, png: Path | None, folder: Path | None
) -> list[Path]:
    """The PNG and the projector files, replaced together once all are whole, or none (a
    folder made for them is removed again)."""

    made = folder is not None and not folder.exists()
    written: list[Path] = []
    try:
        with staged() as stage:
            if png is not None:
                written.append(projection_png(report, png, stage.open(png)))
            if folder is not None:
                try:
                    folder.mkdir(exist_ok=True)
                except OSError as exc:
                    raise OutputError(f"cannot make {folder}: {os_reason(exc)}") from None
                written.extend(write_projector(folder, table, report, stage))
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return written
