"""`embedcli count`: exact token counts of files, folders and corpora."""

import re
from typing import Annotated

import typer

from embedcli.cli import options as o
from embedcli.cli.checks import choices
from embedcli.errors import UsageError

SELECT = "Selection"
VIEW = "View"
sort_check, sort_complete = choices(("tokens", "path", "bytes"))
errors_check, errors_complete = choices(("skip", "replace", "strict"))
engine_check, engine_complete = choices(("local", "dask"))
_SIZE = re.compile(r"^\s*([0-9]{1,20}(?:\.[0-9]{1,20})?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def _size(value: str | None) -> int | None:
    """'10M', '512k', '2G', '1000' -> bytes (powers of 1024)."""
    if value is None:
        return None
    found = _SIZE.match(value)
    if not found:
        raise typer.BadParameter(f"{value!r} is not a size; write e.g. 500k, 10M or 2G")
    number, unit = float(found.group(1)), found.group(2).lower()
    size = number * 1024 ** "_kmgt".index(unit or "_")
    if not size <= 2**40:
        raise typer.BadParameter(f"{value!r} is over 2**40 bytes (1T)")
    return int(size)


def _share(value: str) -> float:
    """'0.01' or '1%' -> 0.01."""
    text = value.strip()
    try:
        share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a share; write 0.01 or 1%", param_hint="'--min-share'"
        ) from None
    if not 0 <= share <= 1:
        raise typer.BadParameter(
            f"{value!r} is not a share between 0 and 1 (0% and 100%)", param_hint="'--min-share'"
        )
    return share


def _option(*names: str, panel: str = SELECT, **kwargs: object) -> typer.models.OptionInfo:
    return typer.Option(*names, rich_help_panel=panel, show_default=False, **kwargs)


def count(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Files, folders (recursive), globs ('src/**/*.py'), - for stdin, or fsspec "
            "URLs (s3://, gs://, file://). \\[default: stdin]",
            metavar="PATH...",
            show_default=False,
        ),
    ] = None,
    encoding: o.Encodings = None,
    model: o.Models = None,
    download: o.Download = False,
    no_ignore: Annotated[
        bool, _option("--no-ignore", help="Do not read .gitignore files.")
    ] = False,
    ignore: Annotated[
        list[str] | None,
        _option(
            "--ignore",
            help="Leave out paths matching this gitignore pattern; repeatable.",
            metavar="PATTERN",
        ),
    ] = None,
    include: Annotated[
        list[str] | None,
        _option(
            "--include",
            help="Count only files matching this pattern; repeatable.",
            metavar="PATTERN",
        ),
    ] = None,
    hidden: Annotated[
        bool, _option("--hidden", help="Count dotfiles and dot-folders too.")
    ] = False,
    follow: Annotated[
        bool,
        _option(
            "--follow",
            "-L",
            help="Follow symlinks met while walking folders (a PATH named outright is always "
            "followed); each real file is counted once.",
        ),
    ] = False,
    max_file_size: Annotated[
        str | None,
        _option(
            "--max-file-size",
            help="Skip larger files (500k, 10M, 2G), with a note.",
            metavar="SIZE",
        ),
    ] = None,
    errors: Annotated[
        str,
        _option(
            "--errors",
            help="Text that is not UTF-8: skip the file (and say so), replace "
            "the bad bytes, or strict (an error). \\[default: skip]",
            callback=errors_check,
            autocompletion=errors_complete,
            metavar="MODE",
        ),
    ] = "skip",
    sort: Annotated[
        str,
        _option(
            "--sort",
            help="Order the table's and --json's files by tokens, path or bytes (--jsonl and "
            "--csv stream in walk order). \\[default: tokens]",
            panel=VIEW,
            callback=sort_check,
            autocompletion=sort_complete,
            metavar="KEY",
        ),
    ] = "tokens",
    top: Annotated[
        int,
        o.count("--top", help="Files listed.", metavar="N", rich_help_panel=VIEW),
    ] = 20,
    tree: Annotated[
        bool, _option("--tree", help="Tokens rolled up per folder.", panel=VIEW)
    ] = False,
    depth: Annotated[
        int,
        o.count(
            "--depth",
            help="Folder levels in --tree.",
            metavar="N",
            rich_help_panel=VIEW,
        ),
    ] = 3,
    min_share: Annotated[
        str,
        _option(
            "--min-share",
            help="Hide --tree branches under this share (0.01 or 1%).",
            panel=VIEW,
            metavar="SHARE",
        ),
    ] = "0",
    context: Annotated[
        str | None,
        _option(
            "--context",
            help="Show each total as a share of a context window: N tokens, or "
            "a model name (gpt-4o).",
            panel=VIEW,
            metavar="N|MODEL",
        ),
    ] = None,
    as_json: o.AsJson = False,
    as_jsonl: Annotated[
        bool, _option("--jsonl", help="One JSON line per file, in walk order.", panel=o.OUTPUT)
    ] = False,
    as_csv: Annotated[
        bool,
        _option("--csv", help="CSV: path, bytes, a column per encoding, skipped.", panel=o.OUTPUT),
    ] = False,
    quiet: o.Quiet = False,
    engine: Annotated[
        str,
        _option(
            "--engine",
            help="local (processes, one per core) or dask (a cluster). \\[default: local]",
            panel="Engine",
            callback=engine_check,
            autocompletion=engine_complete,
            metavar="NAME",
        ),
    ] = "local",
    scheduler: Annotated[
        str | None,
        _option(
            "--scheduler",
            help="Dask scheduler address. \\[default: DASK_SCHEDULER_ADDRESS, else a LocalCluster]",
            panel="Engine",
            metavar="ADDRESS",
        ),
    ] = None,
    workers: Annotated[
        int | None,
        o.count(
            "--workers",
            help="Processes (or LocalCluster workers). \\[default: one per core]",
            metavar="N",
            rich_help_panel="Engine",
        ),
    ] = None,
    engine_info: Annotated[
        bool,
        _option(
            "--engine-info",
            help="Say which tokenizer engine counts each encoding (tiktoken, or with "
            "embedcli\\[fast], fastokens where proven exact), from how much text, and why; counts "
            "nothing. EMBEDCLI_COUNT_ENGINE=tiktoken (or fastokens) chooses for every job.",
            panel="Engine",
        ),
    ] = False,
    list_models: o.ListModels = False,
) -> None:
    """Exact token counts of files, folders and whole corpora, per encoding.

    Exact: a file counts len(encode(text, disallowed_special=())) over its whole text.

    Symlinks as ripgrep has them: a PATH named outright is followed,
    links met while walking are not (they are listed as skipped) unless --follow.
    A real file reached by two names (links, overlapping PATHs) is counted once.

    \b
      embedcli count .                   # this repository, by tokens
      embedcli count src -e cl100k_base -m gpt-4o --top 10
      embedcli count 'docs/**/*.md' --tree --depth 2 --context gpt-4o
      embedcli count corpus/ --jsonl > counts.jsonl
      embedcli count s3://bucket/corpus/ --engine dask
    """

    from embedcli.cli.output import emit

    if list_models:
        extra = [f for f, on in (("PATH", paths), ("--jsonl", as_jsonl), ("--csv", as_csv),
                                 ("--tree", tree), ("--engine-info", engine_info))
                 if on]  # fmt: skip
        if extra:
            raise UsageError(f"--list-models prints the model table: drop {' and '.join(extra)}")
        return _list_models(as_json)
    if engine_info:
        extra = [f for f, on in (("PATH", paths), ("--jsonl", as_jsonl), ("--csv", as_csv),
                                 ("--tree", tree)) if on]  # fmt: skip
        if extra:
            raise UsageError(f"--engine-info counts nothing: drop {' and '.join(extra)}")
        remote = [f for f, on in (("--engine dask", engine == "dask"),
                                  ("--scheduler", scheduler is not None)) if on]  # fmt: skip
        if remote:
            raise UsageError(
                "--engine-info describes this machine's engines, not a Dask cluster's workers: "
                f"drop {' and '.join(remote)}"
            )
        window = _context(context)  # --context gpt-4o alone: gpt-4o's encoding, as count has it
        if window is not None and window[0] is not None and not encoding and not model:
            model = [window[0]]
        return _engine_info(encoding, model, as_json)
    from embedcli.tokenization.engines import mode

    mode()  # a bad EMBEDCLI_COUNT_ENGINE: a usage error here, not every file skipped on a worker
    outputs = [f for f, on in (("--json", as_json), ("--jsonl", as_jsonl), ("--csv", as_csv),
                               ("--tree", tree)) if on]  # fmt: skip
    if len(outputs) > 1:
        raise UsageError(f"{' and '.join(outputs)} cannot be combined; pick one")
    if engine != "dask" and scheduler is not None:
        raise UsageError("--scheduler needs --engine dask")
    if not tree and (depth != 3 or min_share != "0"):
        raise UsageError("--depth and --min-share shape --tree: add --tree")
    if not paths:
        from embedcli.cli.inputs import stdin as standard_input

        if standard_input().isatty():
            raise UsageError("count what? pass a PATH (. for this folder), or pipe text in")
    share = _share(min_share)  # checked before any file is read
    window = _context(context)
    if window is not None and window[0] is not None and not encoding and not model:
        model = [window[0]]  # --context gpt-4o alone counts in gpt-4o's encoding
    from embedcli.tokenization.encodings import resolve_encoding_names

    names = resolve_encoding_names(encoding, model)
    items = _run(paths or ["-"], names, no_ignore, ignore, include, hidden, follow,
                 max_file_size, errors, engine, workers, scheduler, quiet)  # fmt: skip
    if as_jsonl:
        return _stream_jsonl(items)
    if as_csv:
        return _csv(items, names)
    from embedcli.corpus.report import SKIPPED_SHOWN, Keep, collect
    from embedcli.render.json import count_json

    if as_json:
        keep = Keep(sort=sort)  # every file and skip
    elif tree:
        keep = Keep(files=0, skipped=SKIPPED_SHOWN, tree_depth=depth)
    else:
        keep = Keep(files=top, sort=sort, skipped=SKIPPED_SHOWN)
    report = collect(items, names, keep)
    if tree:
        emit(False, None, "tree_view", report, depth=depth, min_share=share, context=window)
        return None
    emit(as_json, lambda r: count_json(r, window, sort), "files_view", report, sort=sort, top=top,
         context=window)  # fmt: skip
    return None


def _context(value: str | None) -> tuple[str, int] | None:
    """--context N (200000, 200k, 1M) or MODEL -> (label, tokens); label None for a number."""
    if value is None:
        return None
    text = value.strip().replace("_", "").replace(",", "")
    number = re.match(r"^([0-9]{1,20}(?:\.[0-9]{1,20})?)([kKmM]?)$", text)
    if number is not None:
        size = int(
            float(number.group(1)) * {"": 1, "k": 1000, "m": 1000**2}[number.group(2).lower()]
        )
        if not 1 <= size <= 2**40:
            raise UsageError(f"--context must be 1 to 2**40 tokens, got {value}")
        return None, size
    if re.match(r"^-?[\d.]+$", text):
        raise UsageError(f"--context must be 1 to 2**40 tokens, got {value}")
    from embedcli.tokenization.modelnames import lookup

    found = lookup(value)
    return found.name, found.context


def _run(paths, names, no_ignore, ignore, include, hidden, follow, max_file_size, errors,
         engine, workers, scheduler, quiet):  # fmt: skip
    """The count, file by file as they finish, with a progress bar on a terminal's stderr."""
    from embedcli.cli.inputs import stdin
    from embedcli.corpus.count import count_paths
    from embedcli.corpus.selection import Selection

    selection = Selection(
        no_ignore=no_ignore,
        ignore=tuple(ignore or ()),
        include=tuple(include or ()),
        hidden=hidden,
        max_file_size=_size(max_file_size),
        follow=follow,
    )
    progress = _Progress(quiet)
    items = count_paths(
        paths, names, selection, errors=errors, engine=engine, workers=workers,
        scheduler=scheduler, stdin=stdin() if "-" in paths else None, on_plan=progress.plan,
    )  # fmt: skip
    return progress.follow(items)


class _Progress:
    """Files and bytes done, on stderr when it is a terminal (and not --quiet)."""

    def __init__(self, quiet: bool) -> None:
        from embedcli.cli.output import watched

        self.console = None
        self.on = not quiet and watched()
        if self.on:  # rich only when a person is watching
            from rich.console import Console

            self.console = Console(stderr=True)
        self.bar = None
        self.task = None

    def plan(self, files: int, size: int) -> None:
        """The files found so far (the walk goes on while they are counted)."""
        if not self.on or not files:
            return
        if self.bar is not None:
            self.bar.update(self.task, total=files)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.bar = Progress(
            "counting", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=self.console, transient=True,
        )  # fmt: skip
        self.bar.start()
        self.task = self.bar.add_task("count", total=files)

    def follow(self, items):
        try:
            for item in items:
                if self.bar is not None:
                    self.bar.advance(self.task)
                yield item
        finally:
            if self.bar is not None:
                self.bar.stop()


def _stream_jsonl(items) -> None:
    from embedcli.cli.output import write_json
    from embedcli.render.json import count_file_json

    for item in items:
        write_json(count_file_json(item))


def _csv(items, names: list[str]) -> None:
    import csv
    import io
    import itertools

    from embedcli.cli.output import write

    # The first file is asked for before the header is written: a path that is not there, or an
    # encoding that cannot be loaded, fails before anything reaches stdout.
    items = iter(items)
    first = next(items, None)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["path", "bytes", *names, "skipped"])
    write(buffer.getvalue(), newline=False)  # the header even when nothing is counted
    buffer.seek(0)
    buffer.truncate()
    # csv quotes a field holding its line terminator ("\n") but not a lone "\r", which CSV
    # readers take as a line end too: a row with one is written with every field quoted.
    quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
    for item in itertools.chain(() if first is None else (first,), items):
        if hasattr(item, "tokens"):
            row = [item.path, item.bytes, *(item.tokens[n] for n in names), ""]
        else:
            row = [item.path, "", *("" for _ in names), item.reason]
        (quoted if "\r" in item.path else writer).writerow(row)
        write(buffer.getvalue(), newline=False)
        buffer.seek(0)
        buffer.truncate()


def _list_models(as_json: bool) -> None:
    from dataclasses import asdict

    from embedcli.cli.output import emit
    from embedcli.tokenization.modelnames import MODELS

    emit(as_json, lambda models: {"models": [asdict(m) for m in models]}, "models_view", MODELS)


def _engine_info(encoding, model, as_json: bool) -> None:
    from dataclasses import asdict

    from embedcli.cli.output import emit
    from embedcli.tokenization.encodings import get_encoding, resolve_encoding_names
    from embedcli.tokenization.engines import describe

    infos = [describe(get_encoding(n)) for n in resolve_encoding_names(encoding, model)]
    emit(as_json, lambda rows: {"engines": [asdict(r) for r in rows]}, "engines_view", infos)
