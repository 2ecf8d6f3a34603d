"""`embedcli embed`: text to the (B, T, d) input embeddings, every step shown; also whole files
streamed window by window (--seq-len), and one record per line (--lines)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from embedcli.cli import options as o
from embedcli.cli.inputs import lazy_stdin, stdin
from embedcli.cli.output import models_listed
from embedcli.core.config import DEFAULT_BATCH_SIZE, DEFAULT_SEED, Overrides
from embedcli.errors import UsageError, os_reason
from embedcli.tokenization.display import visible_name

if TYPE_CHECKING:
    from embedcli.core.config import EmbedConfig
    from embedcli.models.tables import LoadedTables


def embed(
    ctx: typer.Context,
    texts: o.Texts = None,
    file: o.File = None,
    ids: o.Ids = None,
    encoding: o.Encoding = None,
    model: o.Model = None,
    allow_special: o.AllowSpecial = False,
    no_add_special: o.NoAddSpecial = False,
    truncate: o.Truncate = None,
    truncate_to_context: Annotated[
        bool,
        typer.Option(
            "--truncate-to-context",
            help="Cut each text to the context length instead of failing.",
            rich_help_panel=o.INPUT,
        ),
    ] = False,
    pad_id: Annotated[
        int | None,
        typer.Option(
            help="Id that pads shorter texts. \\[default: the end-of-text id]",
            show_default=False,
            metavar="ID",
            rich_help_panel=o.INPUT,
        ),
    ] = None,
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
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Recompute on the CPU and report the largest difference.",
            rich_help_panel=o.DEVICE,
        ),
    ] = False,
    show: Annotated[
        int,
        o.count(
            help="Dimensions of each vector to preview.",
            metavar="N",
            rich_help_panel=o.DISPLAY,
        ),
    ] = 4,
    max_positions: Annotated[
        int,
        o.count(
            help="Positions of each sequence shown in the tables (--json has all).",
            metavar="N",
            rich_help_panel=o.DISPLAY,
        ),
    ] = 64,
    similarity: Annotated[
        bool,
        typer.Option(
            "--similarity",
            help="Token-by-token cosine similarity heatmap.",
            rich_help_panel=o.DISPLAY,
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Write input_embeddings to .npy, .pt or .safetensors (streamed, with "
            "-t/--seq-len: .npy or .safetensors).",
            rich_help_panel=o.OUTPUT,
        ),
    ] = None,
    seq_len: Annotated[
        int | None,
        o.count(
            "-t",
            "--seq-len",
            help="Stream every window of T tokens of the text to --output.",
            metavar="T",
            show_default=False,
            rich_help_panel=o.OUTPUT,
        ),
    ] = None,
    stride: Annotated[
        int | None,
        o.count(
            help="Tokens between window starts. \\[default: --seq-len]",
            show_default=False,
            metavar="N",
            rich_help_panel=o.OUTPUT,
        ),
    ] = None,
    batch_size: Annotated[
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
    ] = None,
    lines: Annotated[
        bool,
        typer.Option(
            "--lines",
            help="One record per input line, as JSON Lines, each written when done: after an "
            "error the lines before it are out, and the exit code says not all were.",
            rich_help_panel=o.OUTPUT,
        ),
    ] = False,
    pool: o.Pool = "none",
    quiet: o.Quiet = False,
    as_json: o.AsJson = False,
    list_models: o.ListModels = False,
    window: Annotated[int | None, o.deprecated_alias("--window", "--seq-len")] = None,
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
    from embedcli.pipeline.sources import embed_source

    seq_len = o.renamed(seq_len, window, "--seq-len", "--window")
    _check_modes(
        texts, ids, file, output, seq_len, stride, lines, pool, truncate, truncate_to_context,
        batch_size,
    )  # fmt: skip
    if lines or seq_len is not None:
        _batch_only(lines, verify=verify, similarity=similarity, pad_id=pad_id)
    name = _encoding_name(encoding, model, weights, bool(ids))
    overrides = Overrides(vocab_size, d_model, context_length, positional, dtype, seed)
    config, tables = embed_source(name, overrides, weights, token_key, position_key)
    cut = {"truncate": truncate, "truncate_to_context": truncate_to_context}
    common = {
        "device": device,
        "allow_special": allow_special,
        "add_special": not no_add_special,
        "tables": tables,
    }
    if lines:
        return _lines(name, config, file, pool, **common, **cut)
    if seq_len is not None:
        step = {"window": seq_len, "stride": stride or seq_len}
        return _stream(name, config, file, output, batch_size, quiet, as_json, **step, **common)
    _embed_batch(
        name, config, texts, ids, file, output, common, cut,
        pad_id=pad_id, verify=verify, similarity=similarity, as_json=as_json,
        view={"show": show, "max_positions": max_positions},
    )  # fmt: skip


def _encoding_name(encoding: str | None, model: str | None, weights: str | None, ids: bool) -> str:
    """The encoding to use; with --ids and a model source that has no tokenizer files, none:
    ids need no tokenizer, and another's pieces would be untrue."""
    from embedcli.errors import EncodingError
    from embedcli.tokenization.encodings import NO_TOKENIZER, resolve_encoding_name

    own = ids and weights is not None and encoding is None and model is None
    try:
        name = resolve_encoding_name(encoding, model, weights)
        # The model's own tokenizer is loaded now, before any table is fetched: a repo without
        # one fails on its small files, not after a table's gigabyte (ids need it only if it
        # reads).
        if name == str(weights):
            from embedcli.tokenization.encodings import get_encoding

            get_encoding(name)
        return name
    except EncodingError:
        if own:  # no tokenizer, or one embedcli does not read (WordPiece): ids need none
            return NO_TOKENIZER
        raise


def _embed_batch(
    name: str,
    config: EmbedConfig,
    texts: list[str] | None,
    ids: list[str] | None,
    file: Path | None,
    output: Path | None,
    common: dict[str, Any],
    cut: dict[str, Any],
    *,
    pad_id: int | None,
    verify: bool,
    similarity: bool,
    as_json: bool,
    view: dict[str, int],
) -> None:
    """The main job: a batch of texts (or id lists) through the module, then tables or JSON."""
    from embedcli.cli.output import emit, prefetch
    from embedcli.io.outputs import check_output_path, write_tensor
    from embedcli.pipeline.embed import run_embed
    from embedcli.render.json import embed_json

    if output is not None:
        check_output_path(output, config.dtype, _inputs(file, common["tables"]))
    if not as_json:
        prefetch("embed_tables")
    result = run_embed(
        config, name, **_sources(texts, ids, file), **common, **cut,
        pad_id=pad_id, verify=verify, similarity=similarity,
    )  # fmt: skip
    verify = result.report.verify
    if verify is not None and not verify.ok:
        emit(as_json, embed_json, "embed_tables", result.report, **view)
        verify.ensure_ok()  # after rendering, so the numbers are on screen; no file written
    if output is not None:  # before the report: a file that cannot be written is the error
        write_tensor(output, result.input_embeddings)
    emit(as_json, embed_json, "embed_tables", result.report, **view)
    if output is not None and not as_json:
        from embedcli.cli.output import write
        from embedcli.core.broadcast import format_shape

        shape = format_shape(tuple(result.input_embeddings.shape))
        write(f"wrote {visible_name(str(output))}: input_embeddings {shape} {config.dtype}")


def _sources(
    texts: list[str] | None, ids: list[list[int]] | None, file: Path | None
) -> dict[str, list[Any]]:
    """{"texts": [...]} from TEXT, a file or stdin; or {"ids": [[...]]} from --ids."""
    from embedcli.corpus.textinput import read_joined_text, read_texts

    reader = lazy_stdin()
    if ids:
        return {"ids": [list(sequence) for sequence in ids]}
    if file is not None:
        return {"texts": [read_joined_text(None, file, reader, False)]}
    return {"texts": read_texts(texts, reader, reader.isatty())}


def _check_modes(
    texts: list[str] | None,
    ids: list[str] | None,
    file: Path | None,
    output: Path | None,
    seq_len: int | None,
    stride: int | None,
    lines: bool,
    pool: str,
    truncate: int | None,
    truncate_to_context: bool,
    batch_size: int | None,
) -> None:
    """Refuse option combinations that mean nothing, before any work."""
    text_given = bool(texts) and texts != ["-"]
    given = [f for f, on in (("TEXT", text_given), ("--ids", ids), ("--file", file)) if on]
    streaming = seq_len is not None
    refusals = (
        (len(given) > 1, f"pass only one of {' and '.join(given)}"),
        (lines and streaming, "--lines and --seq-len cannot be combined; pick one"),
        (
            (lines or streaming) and (ids or text_given),
            "--lines and --seq-len read -f FILE or standard input, not TEXT or --ids",
        ),
        (lines and output is not None, "--lines writes JSON Lines to standard output; drop -o"),
        (streaming and output is None, "--seq-len streams to a file: pass -o out.npy"),
        (stride is not None and not streaming, "--stride needs --seq-len"),
        (batch_size is not None and not streaming, "--batch-size needs --seq-len"),
        (pool != "none" and not lines, "--pool needs --lines"),
        (
            truncate is not None and truncate_to_context,
            "pass --truncate N or --truncate-to-context, not both",
        ),
        (
            streaming and (truncate is not None or truncate_to_context),
            "--seq-len cuts the text into windows: drop "
            + ("--truncate" if truncate is not None else "--truncate-to-context"),
        ),
        (truncate == 0, "--truncate 0 leaves nothing to embed; pass N of 1 or more"),
    )
    for refused, message in refusals:
        if refused:
            raise UsageError(message)


def _batch_only(lines: bool, **given: object) -> None:
    """Options of the batch view that a streaming mode would silently ignore are refused."""
    used = [f"--{name.replace('_', '-')}" for name, value in given.items() if value]
    if used:
        mode = "--lines" if lines else "--seq-len"
        verb = "works" if len(used) == 1 else "work"
        raise UsageError(f"{' and '.join(used)} {verb} on a batch of texts, not with {mode}")


def _lines(
    name: str,
    config: EmbedConfig,
    file: Path | None,
    pool: str,
    **options: Any,
) -> None:
    """--lines: one JSON record per input line, written as each line is done."""
    from embedcli.cli.output import write_json
    from embedcli.pipeline.stream import embed_lines
    from embedcli.tokenization.encodings import get_encoding

    with _input_stream(file) as (stream, source, _):
        for record in embed_lines(
            config, get_encoding(name), stream, source=source, pool=pool, **options
        ):
            write_json(record)


def _stream(
    name: str,
    config: EmbedConfig,
    file: Path | None,
    output: Path,
    batch_size: int | None,
    quiet: bool,
    as_json: bool,
    *,
    tables: LoadedTables | None,
    **options: Any,
) -> None:
    """--seq-len: every window of the text into --output, with a progress bar on a terminal."""
    from contextlib import ExitStack

    from embedcli.cli.output import watched, write, write_json
    from embedcli.io.outputs import check_output_path, check_stream_path
    from embedcli.pipeline.stream import NoProgress, stream_embed
    from embedcli.tokenization.encodings import get_encoding

    check_stream_path(output)
    check_output_path(output, config.dtype, _inputs(file, tables))
    with ExitStack() as stack:
        stream, source, size = stack.enter_context(_input_stream(file))
        progress: Any = NoProgress()
        if not quiet and watched():
            from rich.console import Console

            from embedcli.render.progress import StreamProgress

            progress = stack.enter_context(StreamProgress(size, Console(stderr=True)))
        summary = stream_embed(
            config, get_encoding(name), stream, output, source=source, tables=tables,
            batch_size=batch_size or DEFAULT_BATCH_SIZE, progress=progress, **options,
        )  # fmt: skip
    write_json(summary.json()) if as_json else write(summary.line())


def _inputs(file: Path | None, tables: LoadedTables | None) -> list[Path | int | None]:
    """Every file the command reads: the text (or stdin), and the checkpoint."""
    weights = [] if tables is None else [Path(f) for f in tables.files or [tables.path]]
    return [file, *weights, 0 if file is None else None]


@contextmanager
def _input_stream(file: Path | None) -> Iterator[tuple[BinaryIO, str, int | None]]:
    """(binary stream, its name, its size or None): the file, or stdin."""
    from embedcli.errors import InputTextError

    if file is None:
        yield stdin(), "standard input", None
        return
    try:
        handle = open(file, "rb")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise InputTextError(f"cannot read {file}: {os_reason(exc)}") from None
    with handle:
        yield handle, str(file), file.stat().st_size
