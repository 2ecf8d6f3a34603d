"""The Typer app: one thin function per command (parse -> core -> render).

torch is imported only inside the commands that need tensors, so ``embedcli --help`` starts fast.
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from embedcli import __version__
from embedcli.errors import EmbedCLIError, UsageError

if TYPE_CHECKING:
    import tiktoken


class _Group(TyperGroup):
    """The one error handler: a domain error is one ``Error:`` line on stderr, never a traceback."""

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EmbedCLIError as exc:
            typer.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)


app = typer.Typer(
    cls=_Group,
    name="embedcli",
    help=(
        "See the input layer of a GPT-style transformer: text -> BPE tokens -> token ids -> "
        "token embeddings (B, T, d) + positional embeddings (T, d) -> the tensor the first "
        "block reads.\n\n"
        'Examples:  embedcli embed "Hello, world!"    embedcli tokenize "Hello" --ids    '
        'embedcli tokenize -f notes.txt --count    embedcli embed "hi" --json | jq .config'
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# Options that several commands share, declared once.
JoinedText = Annotated[
    list[str] | None,
    typer.Argument(
        help="Text (arguments are joined with single spaces); '-' or none reads stdin.",
        show_default=False,
    ),
]
TextFile = Annotated[Path | None, typer.Option("-f", "--file", help="Read the text from a file.")]
EncodingName = Annotated[
    str | None,
    typer.Option("-e", "--encoding", help="tiktoken encoding. Default: gpt2.", show_default=False),
]
WeightsPath = Annotated[
    Path | None,
    typer.Option(
        "--weights",
        help="Checkpoint (.safetensors, .pt/.pth/.bin, .npz) to take the "
        "tables from, instead of seeded random ones.",
        show_default=False,
    ),
]
TokenKey = Annotated[
    str | None, typer.Option(help="Checkpoint key of the token table (when not detected).")
]
PositionKey = Annotated[
    str | None,
    typer.Option(help="Checkpoint key of the positional table; 'none' for no table."),
]
AsJson = Annotated[bool, typer.Option("--json", help="JSON on stdout, and nothing else.")]
AllowSpecial = Annotated[
    bool, typer.Option("--allow-special", help="Encode <|endoftext|> etc. as special ids.")
]


class Positional(str, Enum):
    learned = "learned"
    sinusoidal = "sinusoidal"
    rope = "rope"
    none = "none"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"embedcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    pass


def _parse_ids(values: list[str]) -> list[list[int]]:
    """'2,3,5,1' (or '2 3 5 1') per --ids -> one sequence each."""
    sequences = []
    for value in values:
        parts = value.replace(",", " ").split()
        try:
            sequences.append([int(p) for p in parts])
        except ValueError:
            raise UsageError(f"--ids {value!r} is not a list of integers like 2,3,5,1") from None
        if not parts:
            raise UsageError("--ids was given an empty list; pass ids like 2,3,5,1")
    return sequences


def _emit_json(data: dict[str, Any]) -> None:
    _write(json.dumps(data, ensure_ascii=False))


@app.command()
def embed(
    texts: Annotated[
        list[str] | None,
        typer.Argument(
            help="Texts, one sequence each (B = number of texts); '-' or none reads stdin.",
            show_default=False,
        ),
    ] = None,
    ids: Annotated[
        list[str] | None,
        typer.Option(
            "--ids",
            help="Token ids instead of text, e.g. 2,3,5,1; repeat for a batch.",
            show_default=False,
        ),
    ] = None,
    encoding: EncodingName = None,
    model: Annotated[
        str | None,
        typer.Option("-m", "--model", help="Model name mapped to its encoding (gpt-4o, gpt2)."),
    ] = None,
    vocab_size: Annotated[
        int | None,
        typer.Option(
            help="Rows of the token table. Default: the encoding's size.", show_default=False
        ),
    ] = None,
    d_model: Annotated[
        int | None, typer.Option("-d", "--d-model", help="Embedding width. Default: 768.")
    ] = None,
    context_length: Annotated[
        int | None, typer.Option(help="Rows of the positional table. Default: 1024.")
    ] = None,
    positional: Annotated[
        Positional | None, typer.Option(help="Positional embeddings. Default: learned.")
    ] = None,
    seed: Annotated[int, typer.Option(help="torch.manual_seed before the tables are made.")] = 123,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N or mps.")] = "auto",
    dtype: Annotated[str, typer.Option(help="float32, float16 or bfloat16.")] = "float32",
    truncate: Annotated[
        bool, typer.Option("--truncate", help="Cut to the context length instead of failing.")
    ] = False,
    allow_special: AllowSpecial = False,
    pad_id: Annotated[
        int | None,
        typer.Option(
            help="Id that pads shorter texts. Default: the end-of-text id.", show_default=False
        ),
    ] = None,
    show: Annotated[int, typer.Option(help="Dimensions of each vector to preview.", min=1)] = 4,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Recompute on the CPU and report the largest difference."),
    ] = False,
    weights: WeightsPath = None,
    token_key: TokenKey = None,
    position_key: PositionKey = None,
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="Write input_embeddings to .npy, .pt or .safetensors."),
    ] = None,
    file: TextFile = None,
    window: Annotated[
        int | None,
        typer.Option(
            help="Stream every window of L tokens of the text to --output.",
            min=1,
            metavar="L",
            show_default=False,
        ),
    ] = None,
    stride: Annotated[
        int | None,
        typer.Option(
            help="Tokens between window starts. Default: the window.", min=1, show_default=False
        ),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("-b", "--batch-size", help="Windows embedded at a time.", min=1)
    ] = 32,
    lines: Annotated[
        bool, typer.Option("--lines", help="One record per input line, as JSON Lines.")
    ] = False,
    pool: Annotated[
        str, typer.Option(help="With --lines: none (T×d), mean or last (one vector a line).")
    ] = "none",
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar.")] = False,
    similarity: Annotated[
        bool, typer.Option("--similarity", help="Token-by-token cosine similarity heatmap.")
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Turn text into the (B, T, d) input embeddings, showing every step.

    \b
      embedcli embed "Hello, world!"
      embedcli embed "a cat" "the dog sat" --device cuda --verify
      embedcli embed --ids 15496,11,995,0 -d 8 --json | jq '.steps'
      embedcli embed -f book.txt --window 256 -d 64 --output book.npy
      embedcli embed --lines --pool mean -f sentences.txt > vectors.jsonl
    """
    from embedcli.devices import canonical_dtype
    from embedcli.jsonout import embed_json
    from embedcli.outputs import check_output_path, write_tensor
    from embedcli.pipeline import run_embed
    from embedcli.render import embed_tables
    from embedcli.textinput import read_texts

    _check_embed_modes(texts, ids, file, output, window, stride, lines, pool)
    name, config, tables = _embed_config(
        encoding,
        model,
        weights,
        token_key,
        position_key,
        vocab_size,
        d_model,
        context_length,
        positional,
        seed,
        canonical_dtype(dtype),
    )
    if lines or window is not None:
        return _embed_stream_or_lines(
            name,
            config,
            tables,
            file,
            output,
            window,
            stride,
            batch_size,
            lines,
            pool,
            device,
            allow_special,
            truncate,
            quiet,
            as_json,
        )
    if output is not None:
        check_output_path(output, config.dtype)
    stdin = typer.get_binary_stream("stdin")
    if file is not None:
        from embedcli.textinput import read_joined_text

        sources = {"texts": [read_joined_text(None, file, stdin, False)]}
    elif ids:
        sources = {"ids": _parse_ids(ids)}
    else:
        sources = {"texts": read_texts(texts, stdin, stdin.isatty())}
    result = run_embed(
        config,
        name,
        device=device,
        allow_special=allow_special,
        truncate=truncate,
        pad_id=pad_id,
        verify=verify,
        tables=tables,
        similarity=similarity,
        **sources,
    )
    if as_json:
        _emit_json(embed_json(result.report))
    else:
        from rich.console import Console

        console = Console()
        plain = console.no_color or console.color_system is None
        console.print(embed_tables(result.report, show=show, width=console.width, plain=plain))
    if result.report.verify is not None:
        result.report.verify.ensure_ok()  # after rendering, so the numbers are on screen
    if output is not None:
        write_tensor(output, result.input_embeddings)


def _check_embed_modes(
    texts: list[str] | None,
    ids: list[str] | None,
    file: Path | None,
    output: Path | None,
    window: int | None,
    stride: int | None,
    lines: bool,
    pool: str,
) -> None:
    """Refuse option combinations that mean nothing, before any work."""
    from embedcli.stream import POOLS

    given = [
        flag
        for flag, on in (
            ("TEXT", bool(texts) and texts != ["-"]),
            ("--ids", bool(ids)),
            ("--file", file is not None),
        )
        if on
    ]
    if len(given) > 1:
        raise UsageError(f"pass only one of {' and '.join(given)}")
    if pool not in POOLS:
        raise UsageError(f"unknown --pool {pool!r}; choose one of: {', '.join(POOLS)}")
    if lines and window is not None:
        raise UsageError("--lines and --window cannot be combined; pick one")
    if (lines or window is not None) and (ids or (texts and texts != ["-"])):
        raise UsageError("--lines and --window read -f FILE or standard input, not TEXT or --ids")
    if lines and output is not None:
        raise UsageError("--lines writes JSON Lines to standard output; drop --output")
    if window is not None and output is None:
        raise UsageError("--window streams to a file: pass --output out.npy (or .safetensors)")
    if stride is not None and window is None:
        raise UsageError("--stride needs --window")
    if pool != "none" and not lines:
        raise UsageError("--pool needs --lines")


def _embed_config(
    encoding: str | None,
    model: str | None,
    weights: Path | None,
    token_key: str | None,
    position_key: str | None,
    vocab_size: int | None,
    d_model: int | None,
    context_length: int | None,
    positional: Positional | None,
    seed: int,
    dtype: str,
) -> tuple[str, Any, Any]:
    """(encoding name, EmbedConfig, loaded tables or None): from flags, or from a checkpoint."""
    from embedcli.config import EmbedConfig
    from embedcli.encodings import get_encoding, resolve_encoding_name

    name = resolve_encoding_name(encoding, model)
    family = positional.value if positional else None
    if weights is None:
        config = EmbedConfig(
            vocab_size=get_encoding(name).n_vocab if vocab_size is None else vocab_size,
            d_model=768 if d_model is None else d_model,
            context_length=1024 if context_length is None else context_length,
            positional=family or "learned",
            seed=seed,
            dtype=dtype,
        )
        return name, config, None
    from embedcli.weights import load_tables, tables_config

    tables = load_tables(weights, token_key, position_key)
    config = tables_config(
        tuple(tables.token.shape),
        None if tables.position is None else tuple(tables.position.shape),
        dtype=dtype,
        positional=family,
        vocab_size=vocab_size,
        d_model=d_model,
        context_length=context_length,
    )
    return name, config, tables


class _RichProgress:
    """A progress bar on stderr: bytes read, tokens, windows, tokens/s and time left."""

    def __init__(self, total_bytes: int | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("embedding"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TextColumn(
                "{task.fields[tokens]:,} tokens · {task.fields[rate]:,.0f} tokens/s · "
                "{task.fields[windows]:,} windows"
            ),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=Console(stderr=True),
        )
        # The clock starts with the first bytes read, not while the tables are being built.
        self.task = self.bar.add_task(
            "embed", total=total_bytes, tokens=0, windows=0, rate=0.0, start=False
        )
        self.started = False

    def advance(self, nbytes: int) -> None:
        if not self.started:
            self.bar.start_task(self.task)
            self.started = True
        self.bar.advance(self.task, nbytes)

    def update(self, tokens: int, windows: int) -> None:
        elapsed = self.bar.tasks[0].elapsed or 0.0
        self.bar.update(
            self.task, tokens=tokens, windows=windows, rate=tokens / elapsed if elapsed else 0.0
        )


def _embed_stream_or_lines(
    name: str,
    config: Any,
    tables: Any,
    file: Path | None,
    output: Path | None,
    window: int | None,
    stride: int | None,
    batch_size: int,
    lines: bool,
    pool: str,
    device: str,
    allow_special: bool,
    truncate: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    from contextlib import ExitStack

    from embedcli.encodings import get_encoding
    from embedcli.stream import NoProgress, embed_lines, stream_embed

    enc = get_encoding(name)
    with ExitStack() as stack:
        if file is not None:
            try:
                stream = stack.enter_context(open(file, "rb"))
            except OSError as exc:
                from embedcli.errors import InputTextError

                raise InputTextError(f"cannot read {file}: {exc.strerror or exc}") from None
            source, size = str(file), file.stat().st_size
        else:
            stream, source, size = typer.get_binary_stream("stdin"), "standard input", None
        if lines:
            for record in embed_lines(
                config,
                enc,
                stream,
                source=source,
                pool=pool,
                device=device,
                tables=tables,
                allow_special=allow_special,
                truncate=truncate,
            ):
                _emit_json(record)
            return
        from embedcli.outputs import check_output_path

        check_output_path(output, config.dtype)
        from rich.console import Console

        show = not quiet and Console(stderr=True).is_terminal
        progress = _RichProgress(size) if show else NoProgress()
        if show:
            stack.enter_context(progress.bar)
        summary = stream_embed(
            config,
            enc,
            stream,
            output,
            source=source,
            window=window,
            stride=stride or window,
            batch_size=batch_size,
            device=device,
            tables=tables,
            allow_special=allow_special,
            progress=progress,
        )
    if as_json:
        from dataclasses import asdict

        _emit_json(
            {
                **asdict(summary),
                "shape": [summary.num_windows, summary.window, summary.d_model],
                "tokens_per_second": summary.tokens_per_second,
            }
        )
    else:
        typer.echo(
            f"wrote {summary.output}: ({summary.num_windows}, {summary.window}, "
            f"{summary.d_model}) {summary.dtype}, {summary.num_windows:,} windows of "
            f"{summary.num_tokens:,} tokens in {summary.seconds:.1f} s "
            f"({summary.tokens_per_second:,.0f} tokens/s on {summary.device})"
        )


@app.command()
def tokenize(
    texts: JoinedText = None,
    file: TextFile = None,
    encoding: Annotated[
        list[str] | None,
        typer.Option(
            "-e",
            "--encoding",
            help="tiktoken encoding; repeat to compare. Default: gpt2.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("-m", "--model", help="Model name mapped to its encoding; repeatable."),
    ] = None,
    allow_special: AllowSpecial = False,
    count: Annotated[
        bool, typer.Option("--count", help="Print only the number of tokens.")
    ] = False,
    ids: Annotated[
        bool, typer.Option("--ids", help="Print only the ids, space-separated.")
    ] = False,
    decode: Annotated[
        bool, typer.Option("--decode", help="TEXT is token ids: print the decoded text.")
    ] = False,
    truncate: Annotated[
        int | None,
        typer.Option(
            help="Print the text cut to its first N tokens.", min=0, metavar="N", show_default=False
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Show the tokens of a text: coloured pieces, ids and bytes; or count, cut, decode.

    \b
      embedcli tokenize "Hello, world!"
      embedcli tokenize -f notes.txt --count -e gpt2 -e o200k_base
      embedcli tokenize "Hello" --ids | embedcli tokenize --decode
      embedcli tokenize - --truncate 100 < notes.txt
    """
    from embedcli.encodings import get_encoding, resolve_encoding_names
    from embedcli.textinput import read_joined_text

    modes = [
        flag
        for flag, on in (
            ("--count", count),
            ("--ids", ids),
            ("--decode", decode),
            ("--truncate", truncate is not None),
        )
        if on
    ]
    if len(modes) > 1:
        raise UsageError(f"{' and '.join(modes)} cannot be combined; pick one")
    names = resolve_encoding_names(encoding, model)
    if len(names) > 1 and modes and modes[0] != "--count":
        raise UsageError(f"{modes[0]} works with one encoding, but {len(names)} were given")
    stdin = typer.get_binary_stream("stdin")
    text = read_joined_text(texts, file, stdin, stdin.isatty())
    encodings = [get_encoding(name) for name in names]
    if decode:
        return _tokenize_decode(encodings[0], text, as_json)
    if count:
        return _tokenize_count(encodings, text, allow_special, as_json)
    from embedcli.tokens import encode_text

    token_ids = [encode_text(enc, text, allow_special=allow_special) for enc in encodings]
    if ids:
        return _tokenize_ids(encodings[0], token_ids[0], as_json)
    if truncate is not None:
        return _tokenize_truncate(encodings[0], token_ids[0], truncate, as_json)
    return _tokenize_show(encodings, text, token_ids, as_json)


def _write(text: str, *, newline: bool = True) -> None:
    """UTF-8 bytes on stdout, whatever the locale (so text passes through unchanged)."""
    out = typer.get_binary_stream("stdout")
    out.write(text.encode("utf-8") + (b"\n" if newline else b""))
    out.flush()


def _write_text(text: str) -> None:
    """Decoded or cut text, byte for byte; a final newline only when a person is reading."""
    _write(text, newline=typer.get_binary_stream("stdout").isatty())


def _tokenize_decode(enc: tiktoken.Encoding, text: str, as_json: bool) -> None:
    from embedcli.tokens import decode_ids, parse_ids

    token_ids = parse_ids(text)
    data = decode_ids(enc, token_ids)
    decoded = data.decode("utf-8", errors="replace")
    if decoded.encode("utf-8") != data:
        typer.echo(
            "Warning: these ids start or end inside a character; its bytes are shown as U+FFFD",
            err=True,
        )
    if as_json:
        _emit_json({"encoding": enc.name, "ids": token_ids, "text": decoded})
    else:
        _write_text(decoded)


def _tokenize_count(
    encodings: list[tiktoken.Encoding], text: str, allow_special: bool, as_json: bool
) -> None:
    from embedcli.jsonout import tokenize_json
    from embedcli.tokens import count_tokens, tokenize_report

    reports = [
        tokenize_report(enc, text, count=count_tokens(enc, text, allow_special=allow_special))
        for enc in encodings
    ]
    if as_json:
        objects = [tokenize_json(report) for report in reports]
        _emit_json(objects[0] if len(objects) == 1 else {"encodings": objects})
    elif len(reports) == 1:
        _write(str(reports[0].count))
    else:
        _write("\n".join(f"{r.encoding}\t{r.count}" for r in reports))


def _tokenize_ids(enc: tiktoken.Encoding, token_ids: list[int], as_json: bool) -> None:
    if as_json:
        _emit_json(
            {
                "encoding": enc.name,
                "n_vocab": enc.n_vocab,
                "count": len(token_ids),
                "ids": token_ids,
            }
        )
    else:
        _write(" ".join(map(str, token_ids)))


def _tokenize_truncate(
    enc: tiktoken.Encoding, token_ids: list[int], limit: int, as_json: bool
) -> None:
    from embedcli.tokens import truncate_text

    kept = token_ids[:limit]
    text = truncate_text(enc, kept)
    if as_json:
        _emit_json({"encoding": enc.name, "n_vocab": enc.n_vocab, "count": len(kept), "text": text})
    else:
        _write_text(text)


def _tokenize_show(
    encodings: list[tiktoken.Encoding], texts: str, token_ids: list[list[int]], as_json: bool
) -> None:
    from rich.console import Console

    from embedcli.jsonout import tokenize_json
    from embedcli.render import TOKEN_TABLE_LIMIT, compare_view, tokenize_view
    from embedcli.tokens import tokenize_report

    limit = None if as_json else TOKEN_TABLE_LIMIT
    reports = [
        tokenize_report(enc, texts, found, limit=limit)
        for enc, found in zip(encodings, token_ids, strict=True)
    ]
    if as_json:
        objects = [tokenize_json(report) for report in reports]
        _emit_json(objects[0] if len(objects) == 1 else {"encodings": objects})
        return
    console = Console()
    plain = console.no_color or console.color_system is None
    if len(reports) == 1:
        console.print(tokenize_view(reports[0], plain=plain))
    else:
        console.print(compare_view(reports, plain=plain))


@app.command("inspect-shapes")
def inspect_shapes(
    preset: Annotated[
        str | None,
        typer.Option(
            help="Named configuration (see --list-presets). Default: gpt2.", show_default=False
        ),
    ] = None,
    list_presets: Annotated[
        bool, typer.Option("--list-presets", help="List the presets and exit.")
    ] = False,
    batch_size: Annotated[
        int | None,
        typer.Option("-b", "--batch-size", help="B. Default: 8.", min=1, show_default=False),
    ] = None,
    seq_len: Annotated[
        int | None,
        typer.Option("-t", "--seq-len", help="T. Default: 4.", min=1, show_default=False),
    ] = None,
    d_model: Annotated[int | None, typer.Option("-d", "--d-model", help="Embedding width.")] = None,
    vocab_size: Annotated[int | None, typer.Option(help="Rows of the token table.")] = None,
    context_length: Annotated[
        int | None, typer.Option(help="Rows of the positional table.")
    ] = None,
    positional: Annotated[Positional | None, typer.Option(help="Positional embeddings.")] = None,
    dtype: Annotated[str | None, typer.Option(help="float32, float16 or bfloat16.")] = None,
    device: Annotated[
        str, typer.Option(help="meta (shapes only, allocates nothing), cpu, cuda, cuda:N, mps.")
    ] = "meta",
    weights: WeightsPath = None,
    token_key: TokenKey = None,
    position_key: PositionKey = None,
    as_json: AsJson = False,
) -> None:
    """Every tensor of the forward pass, its parameters and memory, for any model size.

    \b
      embedcli inspect-shapes --preset book-ch2
      embedcli inspect-shapes --preset gpt3 --dtype bfloat16
      embedcli inspect-shapes -b 2 -t 16 -d 64 --device cpu --json | jq '.tensors'
    """
    from dataclasses import replace

    from embedcli.config import DEFAULT_PRESET, PRESETS
    from embedcli.devices import canonical_dtype
    from embedcli.errors import ConfigError

    if list_presets:
        return _show_presets(list(PRESETS.values()), as_json)
    from embedcli.shapes import checkpoint_preset, run_inspect

    if weights is not None:
        if preset is not None:
            raise UsageError("pass --preset or --weights, not both")
        base, tables = checkpoint_preset(
            weights,
            token_key,
            position_key,
            load=device.strip().lower() != "meta",
            dtype=canonical_dtype(dtype or "float32"),
            positional=positional.value if positional else None,
            vocab_size=vocab_size,
            d_model=d_model,
            context_length=context_length,
        )
        config = base.config
    else:
        name = preset or DEFAULT_PRESET
        if name not in PRESETS:
            raise ConfigError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
        base, tables = PRESETS[name], None
        overrides = {
            "d_model": d_model,
            "vocab_size": vocab_size,
            "context_length": context_length,
            "positional": positional.value if positional else None,
            "dtype": canonical_dtype(dtype) if dtype else None,
        }
        config = replace(base.config, **{k: v for k, v in overrides.items() if v is not None})
    report = run_inspect(
        config,
        base,
        batch_size=batch_size or base.batch_size,
        seq_len=seq_len or base.seq_len,
        device=device,
        tables=tables,
    )
    if as_json:
        from embedcli.jsonout import shapes_json

        return _emit_json(shapes_json(report))
    from rich.console import Console

    from embedcli.render import shapes_tables

    Console().print(shapes_tables(report))


def _show_presets(presets: list[Any], as_json: bool) -> None:
    if as_json:
        from embedcli.jsonout import presets_json

        return _emit_json({"presets": presets_json(presets)})
    from rich.console import Console

    from embedcli.render import presets_table

    Console().print(presets_table(presets))


@app.command()
def broadcast(
    shapes: Annotated[
        list[str],
        typer.Argument(
            help="Two or more shapes: 8,4,256  (8,4,256)  8x4x256  () for a scalar.",
            show_default=False,
        ),
    ],
    as_json: AsJson = False,
) -> None:
    """Explain NumPy/PyTorch broadcasting of two or more shapes, step by step.

    \b
      embedcli broadcast 8,4,256 4,256
      embedcli broadcast "(8,4,256)" "(3,256)"
      embedcli broadcast 8x1x6x1 7x1x5 --json | jq .result
    """
    from embedcli.broadcast import explain, parse_shape

    if len(shapes) < 2:
        raise UsageError("give at least two shapes, e.g. embedcli broadcast 8,4,256 4,256")
    plan = explain(*(parse_shape(shape) for shape in shapes))
    if as_json:
        from embedcli.jsonout import broadcast_json

        return _emit_json(broadcast_json(plan))
    from rich.console import Console

    from embedcli.render import broadcast_view

    Console().print(broadcast_view(plan))


@app.command()
def weights(
    path: Annotated[Path, typer.Argument(help="Checkpoint: .safetensors, .pt/.pth/.bin or .npz.")],
    token_key: TokenKey = None,
    position_key: PositionKey = None,
    as_json: AsJson = False,
) -> None:
    """Every tensor of a checkpoint, its layout, its tables, and whether the head is tied.

    \b
      embedcli weights model.safetensors
      embedcli weights ckpt.pt --json | jq .head_tied
    """
    from embedcli.analysis import inspect_weights

    report = inspect_weights(path, token_key, position_key)
    if as_json:
        from embedcli.jsonout import weights_json

        return _emit_json(weights_json(report))
    from rich.console import Console

    from embedcli.render import weights_view

    Console().print(weights_view(report))


@app.command()
def neighbors(
    texts: Annotated[
        list[str] | None,
        typer.Argument(
            help="Text whose tokens to look up; '-' or none reads stdin.", show_default=False
        ),
    ] = None,
    weights: WeightsPath = None,
    token_key: TokenKey = None,
    k: Annotated[int, typer.Option("-k", help="Neighbours per token.", min=1)] = 10,
    encoding: EncodingName = None,
    model: Annotated[str | None, typer.Option("-m", "--model", help="Model name.")] = None,
    d_model: Annotated[
        int | None, typer.Option("-d", "--d-model", help="Width of seeded tables. Default: 768.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the seeded tables.")] = 123,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N or mps.")] = "auto",
    allow_special: AllowSpecial = False,
    as_json: AsJson = False,
) -> None:
    """The nearest tokens to each token of a text in the token table, by cosine similarity.

    \b
      embedcli neighbors " king" --weights gpt2.safetensors -k 5
      embedcli neighbors "Paris" --weights ckpt.pt --json | jq '.tokens[0].neighbors'
    """
    from embedcli.analysis import neighbors_report
    from embedcli.encodings import encode, get_encoding, resolve_encoding_name
    from embedcli.textinput import read_joined_text

    enc = get_encoding(resolve_encoding_name(encoding, model))
    stdin = typer.get_binary_stream("stdin")
    text = read_joined_text(texts, None, stdin, stdin.isatty())
    ids = encode(enc, text, allow_special=allow_special)
    from embedcli.analysis import source_tables
    from embedcli.config import EmbedConfig

    token, _, source = source_tables(
        EmbedConfig(vocab_size=enc.n_vocab, d_model=d_model or 768, seed=seed), weights, token_key
    )
    outside = [t for t in ids if t >= token.shape[0]]
    if outside:
        from embedcli.errors import TokenIdError

        raise TokenIdError(
            f"token id {outside[0]} is out of range for a token table of {token.shape[0]} rows; "
            "use the encoding the model was trained with"
        )
    from embedcli.devices import resolve_device

    rows = neighbors_report(enc, ids, token, k, resolve_device(device, allow_meta=False))
    if as_json:
        from embedcli.jsonout import neighbors_json

        return _emit_json(neighbors_json(source, rows))
    from rich.console import Console

    from embedcli.render import neighbors_view

    Console().print(neighbors_view(source, rows))


@app.command()
def stats(
    weights: WeightsPath = None,
    token_key: TokenKey = None,
    position_key: PositionKey = None,
    encoding: Annotated[
        str | None,
        typer.Option(
            "-e",
            "--encoding",
            help="Sets the seeded vocabulary. Default: gpt2.",
            show_default=False,
        ),
    ] = None,
    d_model: Annotated[
        int | None, typer.Option("-d", "--d-model", help="Width of seeded tables. Default: 768.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the seeded tables.")] = 123,
    as_json: AsJson = False,
) -> None:
    """Mean, std, min, max and row-norm percentiles of the token and positional tables.

    \b
      embedcli stats                       # the seeded tables: nn.Embedding's N(0, 1)
      embedcli stats --weights model.safetensors --json
    """
    from embedcli.analysis import source_tables, table_stats
    from embedcli.config import EmbedConfig
    from embedcli.encodings import get_encoding, resolve_encoding_name

    vocab = get_encoding(resolve_encoding_name(encoding, None)).n_vocab
    token, position, source = source_tables(
        EmbedConfig(vocab_size=vocab, d_model=d_model or 768, seed=seed),
        weights,
        token_key,
        position_key,
    )
    found = [table_stats("token_embeddings", token)]
    if position is not None:
        found.append(table_stats("position_embeddings", position))
    if as_json:
        from embedcli.jsonout import stats_json

        return _emit_json(stats_json(source, found))
    from rich.console import Console

    from embedcli.render import stats_view

    Console().print(stats_view(source, found, seeded=weights is None))


@app.command("windows")
def windows_command(
    texts: JoinedText = None,
    file: TextFile = None,
    max_length: Annotated[int, typer.Option(help="Tokens per input window.")] = 4,
    stride: Annotated[
        int | None,
        typer.Option(
            help="Tokens between window starts. Default: --max-length.", show_default=False
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option("-b", "--batch-size", help="Windows a batch.")] = 8,
    keep_last: Annotated[
        bool, typer.Option("--keep-last", help="Keep a last batch shorter than --batch-size.")
    ] = False,
    encoding: EncodingName = None,
    limit: Annotated[int, typer.Option(help="Batches shown (tables and --json).", min=1)] = 1,
    as_json: AsJson = False,
    as_jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Every window as one JSON line, streamed.")
    ] = False,
) -> None:
    """The sliding-window data loader: inputs and their targets, shifted by one token.

    \b
      embedcli windows -f the-verdict.txt --max-length 4 --stride 1
      embedcli windows -f corpus.txt --max-length 256 --jsonl > windows.jsonl
    """
    from embedcli.encodings import encode, get_encoding, resolve_encoding_name
    from embedcli.textinput import read_joined_text
    from embedcli.windows import batches, plan_windows, window_pairs

    if as_json and as_jsonl:
        raise UsageError("--json and --jsonl cannot be combined; pick one")
    enc = get_encoding(resolve_encoding_name(encoding, None))
    stdin = typer.get_binary_stream("stdin")
    ids = encode(enc, read_joined_text(texts, file, stdin, stdin.isatty()), allow_special=True)
    plan = plan_windows(len(ids), max_length, stride, batch_size, keep_last)
    if as_jsonl:
        for index, (start, inputs, targets) in enumerate(window_pairs(ids, plan)):
            _emit_json({"index": index, "start": start, "input_ids": inputs, "target_ids": targets})
        return
    shown = batches(ids, plan, limit)
    if as_json:
        from embedcli.jsonout import windows_json

        return _emit_json(windows_json(enc.name, plan, shown))
    from rich.console import Console

    from embedcli.render import windows_view

    Console().print(windows_view(enc, plan, shown))


class PositionFamily(str, Enum):
    learned = "learned"
    sinusoidal = "sinusoidal"


@app.command()
def positions(
    positional: Annotated[
        PositionFamily, typer.Option(help="learned (the seeded table, or --weights) or sinusoidal.")
    ] = PositionFamily.sinusoidal,
    context_length: Annotated[int, typer.Option(help="Positions (rows).", min=1)] = 64,
    d_model: Annotated[int, typer.Option("-d", "--d-model", help="Dimensions.", min=1)] = 128,
    seed: Annotated[int, typer.Option(help="Seed of the learned table.")] = 123,
    weights: WeightsPath = None,
    position_key: PositionKey = None,
    similarity: Annotated[
        bool, typer.Option("--similarity", help="Position-by-position cosine similarity instead.")
    ] = False,
    png: Annotated[
        Path | None, typer.Option(help="Also write the figure as a PNG (needs embedcli[plot]).")
    ] = None,
    as_json: AsJson = False,
) -> None:
    """A positional encoding as a picture: positions (rows) by dimensions (columns).

    \b
      embedcli positions                          # sinusoids: stripes, slower to the right
      embedcli positions --similarity             # the banded structure of sinusoids
      embedcli positions --positional learned --similarity   # an untrained table: noise
      embedcli positions --png sinusoidal.png
    """
    from embedcli.positions import position_table, positions_heatmap, save_png

    if weights is not None and positional != PositionFamily.learned:
        raise UsageError("--weights shows a learned table: add --positional learned")
    table, source = position_table(
        positional.value, context_length, d_model, seed, weights, position_key
    )
    heatmap = positions_heatmap(table, source, similarity)
    if png is not None:
        save_png(heatmap, png)
    if as_json:
        return _emit_json(
            {
                "positional": positional.value,
                "kind": heatmap.kind,
                "source": source,
                "shape": [len(heatmap.matrix), len(heatmap.matrix[0])],
                "matrix": heatmap.matrix,
            }
        )
    _print_heatmap(heatmap)


def _print_heatmap(heatmap: Any) -> None:
    from rich.console import Console

    from embedcli.render import heatmap_view

    console = Console()
    plain = console.no_color or console.color_system is None
    console.print(heatmap_view(heatmap, width=console.width, plain=plain))


@app.command()
def devices(
    as_json: AsJson = False,
) -> None:
    """List cpu, cuda:N and mps: availability, names, memory, and what --device auto picks.

    \b
      embedcli devices
      embedcli devices --json | jq -r .auto
    """
    import torch

    from embedcli.devices import auto_device, list_devices
    from embedcli.jsonout import devices_json
    from embedcli.render import devices_table

    args = (list_devices(), torch.__version__, torch.version.cuda, auto_device())
    if as_json:
        _emit_json(devices_json(*args))
    else:
        from rich.console import Console

        Console().print(devices_table(*args))


def main() -> None:
    """Console-script entry point."""
    app(prog_name="embedcli")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
