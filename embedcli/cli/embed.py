"""`embedcli embed`: text to the (B, T, d) input embeddings, every step shown; also whole files
streamed window by window (--seq-len), and one record per line (--lines)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from embedcli.cli import options as o
from embedcli.cli.checks import hub_access
from embedcli.cli.inputs import lazy_stdin, stdin
from embedcli.cli.output import emit, models_listed, prefetch, watched, write, write_json
from embedcli.cli.params import OUTPUT_PATH
from embedcli.core.broadcast import format_shape
from embedcli.core.config import DEFAULT_BATCH_SIZE, DEFAULT_SEED, Overrides
from embedcli.corpus.textinput import read_joined_text, read_texts
from embedcli.errors import EncodingError, InputTextError, os_reason
from embedcli.io.outputs import check_output_path, check_stream_path, write_tensor
from embedcli.pipeline import sources
from embedcli.pipeline.embed import run_embed
from embedcli.pipeline.embedrequest import EmbedRequest
from embedcli.pipeline.stream import NoProgress, embed_lines, stream_embed
from embedcli.render.json import embed_json
from embedcli.tokenization.display import visible_name
from embedcli.tokenization.encodings import NO_TOKENIZER, get_encoding, resolve_encoding_name
from embedcli.tokenization.specialtext import specials_of

if TYPE_CHECKING:
    from embedcli.core.config import EmbedConfig
    from embedcli.models.tables import LoadedTables

# embed's own options, each declared once.
TruncateToContext = Annotated[
    bool,
    typer.Option(
        "--truncate-to-context",
        help="Cut each text to the context length instead of failing.",
        rich_help_panel=o.INPUT,
    ),
]
PadId = Annotated[
    int | None,
    typer.Option(
        help="Id that pads shorter texts. \\[default: the end-of-text id]",
        show_default=False,
        metavar="ID",
        rich_help_panel=o.INPUT,
    ),
]
Verify = Annotated[
    bool,
    typer.Option(
        "--verify",
        help="Recompute on the CPU and report the largest difference.",
        rich_help_panel=o.DEVICE,
    ),
]
Show = Annotated[
    int,
    o.count(help="Dimensions of each vector to preview.", metavar="N", rich_help_panel=o.DISPLAY),
]
MaxPositions = Annotated[
    int,
    o.count(
        help="Positions of each sequence shown in the tables (--json has all).",
        metavar="N",
        rich_help_panel=o.DISPLAY,
    ),
]
Similarity = Annotated[
    bool,
    typer.Option(
        "--similarity",
        help="Token-by-token cosine similarity heatmap.",
        rich_help_panel=o.DISPLAY,
    ),
]
Output = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--output",
        help="Write input_embeddings to .npy, .pt or .safetensors (streamed, with "
        "-t/--seq-len: .npy or .safetensors).",
        click_type=OUTPUT_PATH,
        rich_help_panel=o.OUTPUT,
    ),
]
StreamSeqLen = Annotated[
    int | None,
    o.count(
        "-t",
        "--seq-len",
        help="Stream every window of T tokens of the text (one TEXT, -f or stdin) to --output.",
        metavar="T",
        show_default=False,
        rich_help_panel=o.OUTPUT,
    ),
]
Stride = Annotated[
    int | None,
    o.count(
        help="Tokens between window starts. \\[default: --seq-len]",
        show_default=False,
        metavar="N",
        rich_help_panel=o.OUTPUT,
    ),
]
StreamBatchSize = Annotated[
    int | None,
    o.count(
        "-b",
        "--batch-size",
        help="Windows embedded at a time (speed only: the output is the same). "
        f"\\[default: {DEFAULT_BATCH_SIZE}]",
        show_default=False,
        metavar="B",
        rich_help_panel=o.OUTPUT,
    ),
]
Lines = Annotated[
    bool,
    typer.Option(
        "--lines",
        help="One record per input line, as JSON Lines, each written when done: after an "
        "error the lines before it are out, and the exit code says not all were.",
        rich_help_panel=o.OUTPUT,
    ),
]
OldWindow = Annotated[int | None, o.deprecated_alias("--window", "--seq-len")]


def embed(
    ctx: typer.Context,
    texts: o.Texts = None,
    file: o.File = None,
    ids: o.Ids = None,
    encoding: o.Encoding = None,
    model: o.Model = None,
    allow_special: o.AllowSpecial = False,
    special_as_text: o.SpecialAsText = False,
    no_add_special: o.NoAddSpecial = False,
    truncate: o.Truncate = None,
    truncate_to_context: TruncateToContext = False,
    pad_id: PadId = None,
    vocab_size: o.VocabSize = None,
    d_model: o.DModel = None,
    context_length: o.ContextLength = None,
    positional: o.Positional = None,
    seed: o.Seed = DEFAULT_SEED,
    dtype: o.DType = None,
    weights: o.Weights = None,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    token_key: o.TokenKey = None,
    position_key: o.PositionKey = None,
    device: o.Device = "auto",
    verify: Verify = False,
    show: Show = 4,
    max_positions: MaxPositions = 64,
    similarity: Similarity = False,
    output: Output = None,
    seq_len: StreamSeqLen = None,
    stride: Stride = None,
    batch_size: StreamBatchSize = None,
    lines: Lines = False,
    pool: o.Pool = "none",
    quiet: o.Quiet = False,
    as_json: o.AsJson = False,
    list_models: o.ListModels = False,
    window: OldWindow = None,
) -> None:
    """Turn text into the (B, T, d) input embeddings, showing every step.

    \b
      embedcli embed "Hello, world!"
      embedcli embed "a cat" "the dog sat" --device cuda --verify
      embedcli embed --ids 15496,11,995,0 -d 8 --json | jq '.steps'
      embedcli embed -f book.txt -t 256 -d 64 -o book.npy
      embedcli embed --lines --pool mean -f sentences.txt > vectors.jsonl
    """
    if models_listed(ctx, list_models, as_json):
        return
    _run(EmbedRequest(
        tuple(texts or ()), file, tuple(map(tuple, ids or ())), encoding, model,
        specials_of(allow_special, special_as_text), not no_add_special, truncate,
        truncate_to_context, pad_id,
        Overrides(vocab_size, d_model, context_length, positional, dtype, seed), weights,
        hub_access(download, download_all), token_key, position_key, device, verify, show,
        max_positions, similarity, output, o.renamed(seq_len, window, "--seq-len", "--window"),
        stride, batch_size, lines, pool, quiet, as_json,
    ))  # fmt: skip  # EmbedRequest's fields, in their order


def _run(request: EmbedRequest) -> None:
    """The tables, then the job the request asks for: one record a line, windows streamed to a
    file, or a batch shown (or written)."""
    name = _encoding_name(request)
    config, tables = sources.embed_source(
        name, request.overrides, request.weights, request.token_key, request.position_key,
        access=request.access,
    )  # fmt: skip
    if request.lines:
        return _lines(request, name, config, tables)
    if request.streaming:
        return _stream(request, name, config, tables)
    return _embed_batch(request, name, config, tables)


def _encoding_name(request: EmbedRequest) -> str:
    """The encoding to use; with --ids and a model source that has no tokenizer files, none:
    ids need no tokenizer, and another's pieces would be untrue."""

    encoding, model, weights = request.encoding, request.model, request.weights
    own = bool(request.ids) and weights is not None and encoding is None and model is None
    try:
        name = resolve_encoding_name(encoding, model, weights)
        # The model's own tokenizer is loaded now, before any table is fetched: a repo without
        # one fails on its small files, not after a table's gigabyte (ids need it only if it
        # reads).
        if name == str(weights):
            get_encoding(name, request.access)
        return name
    except EncodingError:
        if own:  # no tokenizer, or one embedcli does not read (WordPiece): ids need none
            return NO_TOKENIZER
        raise


def _embed_batch(
    request: EmbedRequest, name: str, config: EmbedConfig, tables: LoadedTables | None
) -> None:
    """The main job: a batch of texts (or id lists) through the module, then tables or JSON."""

    output, as_json = request.output, request.as_json
    if output is not None:
        check_output_path(output, config.dtype, _inputs(request.file, tables))
    if not as_json:
        prefetch("embed_tables")
    texts, ids = _sources(request)
    result = run_embed(
        config, name, texts=texts, ids=ids, device=request.device,
        allow_special=request.allow_special, add_special=request.add_special, tables=tables,
        truncate=request.truncate, truncate_to_context=request.truncate_to_context,
        pad_id=request.pad_id, verify=request.verify, similarity=request.similarity,
        access=request.access,
    )  # fmt: skip
    verify = result.report.verify
    if verify is not None and not verify.ok:
        _show(request, result.report)
        verify.ensure_ok()  # after rendering, so the numbers are on screen; no file written
    if output is not None:  # before the report: a file that cannot be written is the error
        write_tensor(output, result.input_embeddings, result.name)
    _show(request, result.report)
    if output is not None and not as_json:
        shape = format_shape(tuple(result.input_embeddings.shape))
        write(f"wrote {visible_name(str(output))}: {result.name} {shape} {config.dtype}")


def _show(request: EmbedRequest, report: object) -> None:
    """The report, as tables or JSON."""

    emit(request.as_json, embed_json, "embed_tables", report, show=request.show,
         max_positions=request.max_positions)  # fmt: skip


def _sources(request: EmbedRequest) -> tuple[list[str] | None, list[list[int]] | None]:
    """(texts, None) from TEXT, a file or stdin; or (None, id lists) from --ids."""

    reader = lazy_stdin()
    if request.ids:
        return None, [list(sequence) for sequence in request.ids]
    if request.file is not None:
        return [read_joined_text(None, request.file, reader, False)], None
    return read_texts(list(request.texts) or None, reader, reader.isatty()), None


def _lines(
    request: EmbedRequest, name: str, config: EmbedConfig, tables: LoadedTables | None
) -> None:
    """--lines: one JSON record per input line, written as each line is done."""

    with _input_stream(request.file) as (stream, source, _):
        for record in embed_lines(
            config, get_encoding(name, request.access), stream, source=source, pool=request.pool,
            device=request.device, tables=tables, allow_special=request.allow_special,
            truncate=request.truncate, truncate_to_context=request.truncate_to_context,
            add_special=request.add_special,
        ):  # fmt: skip
            write_json(record)


def _stream(
    request: EmbedRequest, name: str, config: EmbedConfig, tables: LoadedTables | None
) -> None:
    """--seq-len: every window of the text into --output, with a progress bar on a terminal."""
    from contextlib import ExitStack

    output, window = request.output, request.seq_len
    assert output is not None and window is not None  # the request refuses --seq-len without -o
    check_stream_path(output)
    text = request.texts[0] if request.texts and request.texts != ("-",) else None
    check_output_path(output, config.dtype, _inputs(request.file, tables, text is not None))
    with ExitStack() as stack:
        stream, source, size = stack.enter_context(_input_stream(request.file, text))
        progress: Any = NoProgress()
        if not request.quiet and watched():
            from rich.console import Console

            from embedcli.render.progress import StreamProgress  # lazy: render.progress loads rich

            progress = stack.enter_context(StreamProgress(size, Console(stderr=True)))
        summary = stream_embed(
            config, get_encoding(name, request.access), stream, output, source=source,
            window=window, stride=request.stride or window,
            batch_size=request.batch_size or DEFAULT_BATCH_SIZE,
            device=request.device, tables=tables, allow_special=request.allow_special,
            progress=progress, add_special=request.add_special,
        )  # fmt: skip
    write_json(summary.json()) if request.as_json else write(summary.line())


def _inputs(
    file: Path | None, tables: LoadedTables | None, text: bool = False
) -> list[Path | int | None]:
    """Every file the command reads: the text's file (or stdin, unless TEXT), the checkpoint."""
    weights = [] if tables is None else [Path(f) for f in tables.files or [tables.path]]
    return [file, *weights, 0 if file is None and not text else None]


@contextmanager
def _input_stream(
    file: Path | None, text: str | None = None
) -> Iterator[tuple[BinaryIO, str, int | None]]:
    """(binary stream, its name, its size or None): TEXT, the file, or stdin."""

    if text is not None:
        import io

        from embedcli.corpus.textinput import check_argument  # late: streaming only

        data = check_argument(text, 1).encode("utf-8")  # refused as TEXT is without -t
        yield io.BytesIO(data), "TEXT", len(data)
        return
    if file is None:
        yield stdin(), "standard input", None
        return
    try:
        handle = open(file, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise InputTextError(f"cannot read {file}: {os_reason(exc)}") from None
    with handle:
        yield handle, str(file), file.stat().st_size
