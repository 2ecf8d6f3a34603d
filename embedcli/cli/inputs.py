"""Where a command's input comes from: TEXT, -f FILE or stdin, or --ids; read one way everywhere.

The twin of output.py: a closed stdin is a data error, never a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import typer

from embedcli.corpus.textinput import decode_utf8, read_bounded, read_joined_text
from embedcli.errors import InputTextError, UsageError, os_reason
from embedcli.tokenization.encodings import encode
from embedcli.tokenization.idtext import BadIds, read_ids
from embedcli.tokenization.specialtext import Specials

_CLOSED = "standard input is closed: pass TEXT or -f FILE, or pipe text in"


def stdin() -> BinaryIO:
    """Standard input as bytes; a closed one (``<&-``) is a data error, not a crash."""
    try:
        return typer.get_binary_stream("stdin")
    except RuntimeError:  # sys.stdin is None
        raise InputTextError(_CLOSED) from None


class _ClosedStdin:
    """Standard input started closed (``<&-``): an error only if it is read, so that TEXT or
    -f FILE still work (a cron job or a daemon often has no stdin)."""

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> object:
        raise InputTextError(_CLOSED)


def lazy_stdin() -> BinaryIO:
    """Standard input, or a stand-in that refuses only when read."""
    try:
        return stdin()
    except InputTextError:
        return _ClosedStdin()  # type: ignore[return-value]


def read_text(texts: list[str] | None, file: Path | None) -> str:
    """TEXT joined with single spaces, or the file, or stdin ('-' or nothing, when piped)."""

    reader = lazy_stdin()
    return read_joined_text(texts, file, reader, reader.isatty())


def joined_ids(ids: list[list[int]], texts: list[str] | None, file: Path | None) -> list[int]:
    """Every --ids value as one sequence (tokenize and neighbors join them; embed batches
    them); --ids beside TEXT or --file is a usage error."""
    if texts or file is not None:
        raise UsageError("pass only one of TEXT, --file and --ids")
    return [token for sequence in ids for token in sequence]


def ids_or_text(
    enc: object,
    texts: list[str] | None,
    file: Path | None,
    ids: list[list[int]] | None,
    special: bool | Specials,
) -> list[int]:
    """The token ids a command looks up: --ids as given, or the tokens of TEXT, a file or
    stdin."""

    if ids:
        return joined_ids(ids, texts, file)
    return encode(enc, read_text(texts, file), allow_special=special)


# An ids file lists token ids: 64 MiB holds millions, far more than any table has rows (an
# endless source, /dev/zero, was read until free memory was full).
IDS_FILE_LIMIT = 64 << 20
IDS_FILE_WHY = "more than a list of token ids needs (64 MiB holds millions of ids)"


def ids_from_file(path: Path, texts: list[str] | None = None) -> list[int]:
    """The distinct token ids in a file ('-': stdin, which TEXT '-' may not read too), in the
    order first given, separated by commas, spaces or newlines; a list in brackets (JSON) too
    (``tokenization.idtext.read_ids``, loosely). Anything else in it is a data error that names
    it and its line."""

    if str(path) == "-" and texts == ["-"]:
        raise UsageError("--ids-file - reads standard input, so the text cannot: pass TEXT or -f")
    where = "standard input" if str(path) == "-" else str(path)
    try:
        if str(path) == "-":
            data = read_bounded(stdin(), f"--ids-file {where}", IDS_FILE_LIMIT, IDS_FILE_WHY)
        else:
            with open(path, "rb") as handle:
                data = read_bounded(handle, f"--ids-file {where}", IDS_FILE_LIMIT, IDS_FILE_WHY)
    except OSError as exc:
        raise InputTextError(f"cannot read --ids-file {path}: {os_reason(exc)}") from None
    text = decode_utf8(data, f"--ids-file {where}")
    found = read_ids(text, loose=True)
    if not isinstance(found, BadIds):
        return found
    if found.kind == "none":
        raise InputTextError(f"--ids-file {where} holds no token ids")
    line = text.count("\n", 0, found.offset) + 1
    what = (
        "is far beyond any token table"
        if found.kind == "too_long"
        else "is not a token id (ids are whole numbers separated by commas, spaces or newlines)"
    )
    shown = found.word if len(found.word) <= 40 else found.word[:40] + "…"
    raise InputTextError(f"--ids-file {where}, line {line}: {shown!r} {what}")
