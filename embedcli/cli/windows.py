"""`embedcli windows`: the sliding-window data loader of LLM-from-scratch, chapter 2."""

from typing import Annotated, Any

import typer

from embedcli.cli import options as o
from embedcli.cli.checks import hub_access
from embedcli.cli.inputs import read_text
from embedcli.cli.output import emit, models_listed, text_progress, write_json
from embedcli.core.config import DEFAULT_BATCH_SIZE, DEFAULT_SEQ_LEN
from embedcli.corpus.windows import batches, plan_windows, window_records
from embedcli.errors import UsageError
from embedcli.render.json import windows_json
from embedcli.tokenization.encodings import (
    get_encoding,
    resolve_encoding_name,
    with_specials,
)
from embedcli.tokenization.specialtext import specials_of

# windows' own options, each declared once.
Stride = Annotated[
    int | None,
    o.count(
        help="Tokens between window starts. \\[default: --seq-len]",
        show_default=False,
        metavar="N",
        rich_help_panel=o.BATCH,
    ),
]
KeepLast = Annotated[
    bool,
    typer.Option(
        "--keep-last",
        help="Keep a last batch shorter than --batch-size (drop_last=False).",
        rich_help_panel=o.BATCH,
    ),
]
Limit = Annotated[
    int, o.count(help="Batches shown (tables and --json).", metavar="N", rich_help_panel=o.DISPLAY)
]
AsJsonl = Annotated[
    bool,
    typer.Option(
        "--jsonl",
        help="Every window as one JSON line, streamed (each line a complete record).",
        rich_help_panel=o.OUTPUT,
    ),
]
OldMaxLength = Annotated[int | None, o.deprecated_alias("--max-length", "--seq-len")]


def windows(
    ctx: typer.Context,
    texts: o.JoinedText = None,
    file: o.File = None,
    encoding: o.Encoding = None,
    model: o.Model = None,
    allow_special: o.AllowSpecial = False,
    special_as_text: o.SpecialAsText = False,
    no_add_special: o.NoAddSpecial = False,
    download: o.Download = False,
    download_all: o.DownloadAll = False,
    seq_len: o.SeqLen = None,
    stride: Stride = None,
    batch_size: o.BatchSize = None,
    keep_last: KeepLast = False,
    limit: Limit = 1,
    as_json: o.AsJson = False,
    list_models: o.ListModels = False,
    quiet: o.Quiet = False,
    as_jsonl: AsJsonl = False,
    max_length: OldMaxLength = None,
) -> None:
    """The sliding-window data loader: inputs and their targets, shifted by one token.

    \b
      embedcli windows -f the-verdict.txt -t 4 --stride 1
      embedcli windows -f docs.txt -t 8 --allow-special    # <|endoftext|> between
      embedcli windows -f corpus.txt -t 256 --jsonl > windows.jsonl
    """
    if models_listed(ctx, list_models, as_json):
        return

    if as_json and as_jsonl:
        raise UsageError("--json and --jsonl cannot be combined; pick one")
    specials = specials_of(allow_special, special_as_text)
    enc = get_encoding(resolve_encoding_name(encoding, model), hub_access(download, download_all))
    text = read_text(texts, file)
    ids = with_specials(enc, _encoded(enc, text, specials, quiet), not no_add_special)
    length = o.renamed(seq_len, max_length, "--seq-len", "--max-length") or DEFAULT_SEQ_LEN
    plan = plan_windows(len(ids), length, stride, batch_size or DEFAULT_BATCH_SIZE, keep_last)
    if as_jsonl:
        for record in window_records(ids, plan):
            write_json(record)
        return
    emit(as_json, windows_json, "windows_view", enc, plan, batches(ids, plan, limit))


def _encoded(enc: Any, text: str, specials: Any, quiet: bool) -> list[int]:
    """The text's ids, on every core for a long text, whose progress a terminal's stderr shows
    (characters done); exactly the ids one pass gives."""
    from embedcli.tokenization.tokens import Parallel, encode_text  # late: windows' own path

    with text_progress(text, quiet) as progress:
        told = progress.rows(f"encoding with {getattr(enc, 'name', 'the tokenizer')}")
        return encode_text(enc, text, allow_special=specials, parallel=Parallel(on_chars=told))
