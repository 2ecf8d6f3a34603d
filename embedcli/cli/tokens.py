"""`embedcli tokenize`: what are my tokens? Show them, count, encode, decode, or cut."""

from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from embedcli.cli.checks import hub_access
from embedcli.cli.inputs import joined_ids, read_text
from embedcli.cli.options import (
    DISPLAY,
    AllowSpecial,
    AsJson,
    Download,
    DownloadAll,
    Encodings,
    File,
    JoinedIds,
    JoinedText,
    ListModels,
    Models,
    NoAddSpecial,
    Quiet,
    SpecialAsText,
    Truncate,
)
from embedcli.cli.output import emit, models_listed, text_progress, write, write_json, write_text
from embedcli.tokenization.encodings import (
    added_specials,
    encoding_name_for_model,
    get_encoding,
    resolve_encoding_names,
)
from embedcli.tokenization.explain import EXPLAIN_CHUNKS, explain
from embedcli.tokenization.idtext import parse_ids as parse_text_ids
from embedcli.tokenization.request import TokenizeRequest
from embedcli.tokenization.specialtext import Specials, specials_of
from embedcli.tokenization.tokens import (
    TOKEN_TABLE_LIMIT,
    Parallel,
    tokenize_ids,
    tokenize_text,
)


def _mode(flag: str, help_text: str) -> typer.models.OptionInfo:
    return typer.Option(flag, help=help_text, rich_help_panel=DISPLAY)


Count = Annotated[bool, _mode("--count", "Print only the number of tokens.")]
Encode = Annotated[bool, _mode("--encode", "Print only the ids, space-separated.")]
Decode = Annotated[
    bool, _mode("--decode", "Print the text of ids (given as --ids, TEXT or stdin).")
]
Explain = Annotated[
    bool,
    _mode(
        "--explain",
        "Why the text split where it did: its pre-tokenized chunks, then each byte-pair "
        "merge with its rank, in order.",
    ),
]
Offsets = Annotated[
    bool,
    _mode("--offsets", "Where each token sits in the text: character start and end."),
]


def tokenize(
    ctx: typer.Context,
    texts: JoinedText = None,
    file: File = None,
    ids: JoinedIds = None,
    encoding: Encodings = None,
    model: Models = None,
    allow_special: AllowSpecial = False,
    special_as_text: SpecialAsText = False,
    no_add_special: NoAddSpecial = False,
    download: Download = False,
    download_all: DownloadAll = False,
    count: Count = False,
    encode: Encode = False,
    decode: Decode = False,
    truncate: Truncate = None,
    explain: Explain = False,
    offsets: Offsets = False,
    as_json: AsJson = False,
    list_models: ListModels = False,
    quiet: Quiet = False,
) -> None:
    """Show the tokens of a text (pieces, ids, bytes), or count, encode, decode, cut or explain.

    The byte-pair merges step by step with --explain; character offsets with --offsets.

    \b
      embedcli tokenize "Hello, world!"
      embedcli tokenize -f notes.txt --count -e gpt2 -e o200k_base
      embedcli tokenize "Hello" --encode | embedcli tokenize --decode
      embedcli tokenize --ids 15496,11,995
      embedcli tokenize - --truncate 100 < notes.txt
      embedcli tokenize "unbelievable" --explain
      embedcli tokenize "naïve 😀" --offsets --json | jq .offsets
    """
    if models_listed(ctx, list_models, as_json):
        return
    request = TokenizeRequest(count, encode, decode, truncate, explain, offsets, bool(ids), as_json)
    specials = specials_of(allow_special, special_as_text)
    names = resolve_encoding_names(encoding, model)
    request.check_encodings(len(names))
    access = hub_access(download, download_all)
    encodings = [get_encoding(name, access) for name in names]
    if explain:
        text = read_text(texts, file)
        return _explain(encodings[0], text, specials, not no_add_special, as_json)
    if ids or decode:
        token_ids = _input_ids(ids, texts, file)
        results = [tokenize_ids(enc, token_ids) for enc in encodings]
    else:
        text, add = read_text(texts, file), not no_add_special
        results = _tokenized(encodings, text, specials, count, add, quiet)
    _show(request, results, model or [])


def _tokenized(encodings: list, text: str, specials, count: bool, add: bool, quiet: bool) -> list:
    """Each encoding's tokens (or count) of ``text``; a long text's progress on a terminal's
    stderr, in characters done (a short one is done before a bar could say anything)."""
    with text_progress(text, quiet) as progress:
        return [
            tokenize_text(enc, text, specials, count_only=count, add_special=add,
                          parallel=Parallel(on_chars=progress.rows(_doing(count, enc))))
            for enc in encodings
        ]  # fmt: skip


def _doing(count: bool, enc: Any) -> str:
    return f"{'counting' if count else 'encoding'} {getattr(enc, 'name', 'the text')}"


def _show(request: TokenizeRequest, results: list, models: list[str]) -> None:
    """The mode's output: decoded text, the cut, counts, ids, or the token table."""
    as_json = request.as_json
    if request.decode:
        _decoded(results[0], as_json)
    elif request.truncate is not None:
        _cut(results[0], request.truncate, as_json)
    elif request.count:
        _counts(results, as_json, models)
    elif request.encode:
        found = results[0].encoded()
        write_json(asdict(found)) if as_json else write(" ".join(map(str, found.ids)))
    else:
        _tables(results, as_json, request.offsets)


def _input_ids(ids: list[str] | None, texts: list[str] | None, file: Path | None) -> list[int]:
    """--ids, or (with --decode) ids written as TEXT, in a file, or on stdin."""

    return joined_ids(ids, texts, file) if ids else parse_text_ids(read_text(texts, file))


def _decoded(result: object, as_json: bool) -> None:
    decoded = result.decoded()
    if decoded.partial:
        typer.echo(
            "Warning: these ids start or end inside a character; its bytes are shown as U+FFFD",
            err=True,
        )
    write_json(asdict(decoded)) if as_json else write_text(decoded.text)


def _cut(result: object, limit: int, as_json: bool) -> None:
    cut = result.cut(limit)
    if cut.partial:
        typer.echo(
            f"Warning: token {limit} ends inside a character, so the cut is after token "
            f"{cut.count}, the last one before that character",
            err=True,
        )
    write_json(asdict(cut)) if as_json else write_text(cut.text)


def _counts(results: list, as_json: bool, models: list[str]) -> None:
    if as_json:
        from embedcli.render.json import tokenize_jsons  # late: see _tables

        found = tokenize_jsons([r.report() for r in results])
        if models:  # each encoding names the -m models it was asked for by
            for one in found.get("encodings", [found]):
                one["models"] = [m for m in models if encoding_name_for_model(m) == one["encoding"]]
        write_json(found)
    elif len(results) == 1:
        write(str(results[0].count))
    else:
        write("\n".join(f"{r.enc.name}\t{r.count}" for r in results))


def _explain(enc: object, text: str, allow_special: Specials, add: bool, as_json: bool) -> None:
    from embedcli.render.json import explain_json  # late: see _tables

    found = explain(enc, text, allow_special=allow_special, limit=EXPLAIN_CHUNKS)
    before, after = added_specials(enc, add)
    found = replace(found, added_before=list(before), added_after=list(after))
    emit(as_json, explain_json, "explain_view", found)


def _tables(results: list, as_json: bool, offsets: bool = False) -> None:
    # late: tokenize --count of a short text never loads the JSON views (16 ms of start-up)
    from embedcli.render.json import tokenize_jsons

    limit = None if as_json else TOKEN_TABLE_LIMIT
    reports = [r.report(limit=limit, offsets=offsets) for r in results]
    view = "tokenize_view" if len(reports) == 1 else "compare_view"
    emit(as_json, tokenize_jsons, view, reports[0] if len(reports) == 1 else reports)
