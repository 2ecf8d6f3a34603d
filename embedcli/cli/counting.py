"""`embedcli count`: exact token counts of files, folders and corpora."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from embedcli.cli import inputs
from embedcli.cli import options as o
from embedcli.cli.checks import choices, hub_access
from embedcli.cli.output import emit, watched, write, write_json
from embedcli.cli.params import CONTEXT_WINDOW, SHARE, SIZE, Share, Window
from embedcli.corpus.count import count_paths
from embedcli.corpus.listing import Selection
from embedcli.corpus.report import SKIPPED_SHOWN, Keep, collect
from embedcli.corpus.request import CountRequest
from embedcli.errors import UsageError
from embedcli.render.countcsv import count_csv
from embedcli.render.json import count_file_json, count_json
from embedcli.tokenization.encodings import get_encoding, resolve_encoding_names
from embedcli.tokenization.engines import describe
from embedcli.tokenization.modelnames import MODELS

if TYPE_CHECKING:
    from embedcli.corpus.report import FileCount
    from embedcli.corpus.selection import Skipped

SELECT = "Selection"
VIEW = "View"
ENGINE = "Engine"
sort_check, sort_complete = choices(("tokens", "path", "bytes"))
errors_check, errors_complete = choices(("skip", "replace", "strict"))
engine_check, engine_complete = choices(("local", "dask"))
NO_SHARE = Share(0.0, "0")  # --min-share's default


def _option(*names: str, panel: str = SELECT, **kwargs: object) -> typer.models.OptionInfo:
    return typer.Option(*names, rich_help_panel=panel, show_default=False, **kwargs)


# count's own options, each declared once.
Paths = Annotated[
    list[str] | None,
    typer.Argument(
        help="Files, folders (recursive), globs ('src/**/*.py'), - for stdin, or fsspec "
        "URLs (s3://, gs://, file://). \\[default: stdin]",
        metavar="PATH...",
        show_default=False,
    ),
]
NoIgnore = Annotated[bool, _option("--no-ignore", help="Do not read .gitignore files.")]
Ignore = Annotated[
    list[str] | None,
    _option(
        "--ignore",
        help="Leave out paths matching this gitignore pattern; repeatable.",
        metavar="PATTERN",
    ),
]
Include = Annotated[
    list[str] | None,
    _option(
        "--include",
        help="Count only files matching this pattern; repeatable.",
        metavar="PATTERN",
    ),
]
Hidden = Annotated[bool, _option("--hidden", help="Count dotfiles and dot-folders too.")]
Follow = Annotated[
    bool,
    _option(
        "--follow",
        "-L",
        help="Follow symlinks met while walking folders (a PATH named outright is always "
        "followed); each real file is counted once.",
    ),
]
MaxFileSize = Annotated[
    int | None,
    _option(
        "--max-file-size",
        help="Skip larger files (500k, 10M, 2G), with a note.",
        click_type=SIZE,
        metavar="SIZE",
    ),
]
Errors = Annotated[
    str,
    _option(
        "--errors",
        help="Text that is not UTF-8: skip the file (and say so), replace "
        "the bad bytes, or strict (an error). \\[default: skip]",
        callback=errors_check,
        autocompletion=errors_complete,
        metavar="MODE",
    ),
]
Sort = Annotated[
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
]
Top = Annotated[int, o.count("--top", help="Files listed.", metavar="N", rich_help_panel=VIEW)]
Tree = Annotated[bool, _option("--tree", help="Tokens rolled up per folder.", panel=VIEW)]
Depth = Annotated[
    int, o.count("--depth", help="Folder levels in --tree.", metavar="N", rich_help_panel=VIEW)
]
MinShare = Annotated[
    Share,
    _option(
        "--min-share",
        help="Hide --tree branches under this share (0.01 or 1%).",
        panel=VIEW,
        click_type=SHARE,
        metavar="SHARE",
    ),
]
Context = Annotated[
    Window | None,
    _option(
        "--share-of",
        help="Show each total as a share of a context window: N tokens, or a model name (gpt-4o).",
        panel=VIEW,
        click_type=CONTEXT_WINDOW,
        metavar="N|MODEL",
    ),
]
# --context was its name; --context-length means a table's rows everywhere else
OldContext = Annotated[
    Window | None, o.deprecated_alias("--context", "--share-of", VIEW, CONTEXT_WINDOW)
]
AsJsonl = Annotated[
    bool, _option("--jsonl", help="One JSON line per file, in walk order.", panel=o.OUTPUT)
]
AsCsv = Annotated[
    bool, _option("--csv", help="CSV: path, bytes, a column per encoding, skipped.", panel=o.OUTPUT)
]
Engine = Annotated[
    str,
    _option(
        "--engine",
        help="local (processes, one per core) or dask (a cluster). \\[default: local]",
        panel=ENGINE,
        callback=engine_check,
        autocompletion=engine_complete,
        metavar="NAME",
    ),
]
Scheduler = Annotated[
    str | None,
    _option(
        "--scheduler",
        help="Dask scheduler address. \\[default: DASK_SCHEDULER_ADDRESS, else a LocalCluster]",
        panel=ENGINE,
        metavar="ADDRESS",
    ),
]
Workers = Annotated[
    int | None,
    o.count(
        "--workers",
        help="Processes (or LocalCluster workers). \\[default: one per core]",
        metavar="N",
        rich_help_panel=ENGINE,
    ),
]
EngineInfo = Annotated[
    bool,
    _option(
        "--engine-info",
        help="Say which tokenizer engine counts each encoding (tiktoken, or with "
        "embedcli\\[fast], fastokens where proven exact), from how much text, and why; counts "
        "nothing. EMBEDCLI_COUNT_ENGINE=tiktoken (or fastokens) chooses for every job.",
        panel=ENGINE,
    ),
]


def count(
    paths: Paths = None,
    encoding: o.Encodings = None,
    model: o.Models = None,
    special_as_text: o.SpecialAsText = False,
    no_add_special: o.NoAddSpecial = False,
    download: o.Download = False,
    no_ignore: NoIgnore = False,
    ignore: Ignore = None,
    include: Include = None,
    hidden: Hidden = False,
    follow: Follow = False,
    max_file_size: MaxFileSize = None,
    errors: Errors = "skip",
    sort: Sort = "tokens",
    top: Top = 20,
    tree: Tree = False,
    depth: Depth = 3,
    min_share: MinShare = NO_SHARE,
    context: Context = None,
    old_context: OldContext = None,
    as_json: o.AsJson = False,
    as_jsonl: AsJsonl = False,
    as_csv: AsCsv = False,
    quiet: o.Quiet = False,
    engine: Engine = "local",
    scheduler: Scheduler = None,
    workers: Workers = None,
    engine_info: EngineInfo = False,
    list_models: o.ListModels = False,
) -> None:
    """Exact token counts of files, folders and whole corpora, per encoding.

    Exact: a file counts len(encode(text, disallowed_special=())) over its whole text:
    special-token text is counted as text, and the special tokens a model's tokenizer adds
    around a text (a bos) are not counted, so --special-as-text and --no-add-special are
    always on; tokenize --count gives the same number with those two flags.

    Symlinks as ripgrep has them: a PATH named outright is followed,
    links met while walking are not (they are listed as skipped) unless --follow.
    A real file reached by two names (links, overlapping PATHs) is counted once.

    \b
      embedcli count .                   # this repository, by tokens
      embedcli count src -e cl100k_base -m gpt-4o --top 10
      embedcli count 'docs/**/*.md' --tree --depth 2 --share-of gpt-4o
      embedcli count corpus/ --jsonl > counts.jsonl
      embedcli count s3://bucket/corpus/ --engine dask
    """
    del special_as_text, no_add_special  # count's fixed rules, accepted so flags match tokenize
    selection = Selection(no_ignore, tuple(ignore or ()), tuple(include or ()), hidden,
                          max_file_size, follow)  # fmt: skip
    _run(CountRequest(
        paths=tuple(paths or ()), encodings=tuple(encoding or ()), models=tuple(model or ()),
        access=hub_access(download, False), selection=selection, errors=errors, sort=sort,
        top=top, tree=tree, depth=depth, min_share=min_share, as_csv=as_csv, quiet=quiet,
        min_share_given=min_share.written != "0", as_json=as_json, as_jsonl=as_jsonl,
        context=o.renamed(context, old_context, "--share-of", "--context"), engine=engine,
        scheduler=scheduler, workers=workers, engine_info=engine_info, list_models=list_models,
    ))  # fmt: skip


def _run(request: CountRequest) -> None:
    """The model table, the engines, or the count, as the request asks."""

    if request.list_models:
        return _list_models(request.as_json)
    if request.engine_info:
        return _engine_info(request)
    if not request.paths and inputs.stdin().isatty():
        raise UsageError("count what? pass a PATH (. for this folder), or pipe text in")

    names = resolve_encoding_names(list(request.encodings), request.counted_models)
    items = _counted(request, names)
    if request.as_jsonl:
        return _stream_jsonl(items)
    if request.as_csv:
        return _write_csv(items, names)

    sort, top, depth, window = request.sort, request.top, request.depth, request.context
    if request.as_json:
        keep = Keep(sort=sort)  # every file and skip
    elif request.tree:
        keep = Keep(files=0, skipped=SKIPPED_SHOWN, tree_depth=depth)
    else:
        keep = Keep(files=top, sort=sort, skipped=SKIPPED_SHOWN)
    report = collect(items, names, keep)
    if request.tree:
        emit(False, None, "tree_view", report, depth=depth, min_share=request.min_share,
             context=window)  # fmt: skip
        return None
    emit(request.as_json, lambda r: count_json(r, window, sort), "files_view", report, sort=sort,
         top=top, context=window)  # fmt: skip
    return None


def _counted(request: CountRequest, names: list[str]) -> Iterator[FileCount | Skipped]:
    """The count, file by file as they finish, with a progress bar on a terminal's stderr."""
    paths = request.paths or ("-",)
    progress = None
    if not request.quiet and watched():  # rich only when a person is watching
        from rich.console import Console

        from embedcli.render.progress import CountProgress  # lazy: render.progress loads rich

        progress = CountProgress(Console(stderr=True))
    items = count_paths(
        paths, names, request.selection, errors=request.errors, engine=request.engine,
        workers=request.workers, scheduler=request.scheduler,
        stdin=inputs.stdin() if "-" in paths else None,
        on_plan=None if progress is None else progress.plan,
        on_done=None if progress is None else progress.done, access=request.access,
    )  # fmt: skip
    return items if progress is None else progress.follow(items)


def _stream_jsonl(items: Iterable[FileCount | Skipped]) -> None:

    for item in items:
        write_json(count_file_json(item))


def _write_csv(items: Iterable[FileCount | Skipped], names: list[str]) -> None:
    for text in count_csv(items, names):
        write(text, newline=False)


def _list_models(as_json: bool) -> None:
    from dataclasses import asdict

    emit(as_json, lambda models: {"models": [asdict(m) for m in models]}, "models_view", MODELS)


def _engine_info(request: CountRequest) -> None:
    from dataclasses import asdict

    names = resolve_encoding_names(list(request.encodings), request.counted_models)
    infos = [describe(get_encoding(n, request.access)) for n in names]
    emit(request.as_json, lambda rows: {"engines": [asdict(r) for r in rows]}, "engines_view",
         infos)  # fmt: skip
