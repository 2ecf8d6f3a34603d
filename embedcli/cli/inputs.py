"""Where a command's input comes from: TEXT, -f FILE or stdin, or --ids; read one way everywhere.

The twin of output.py: a closed stdin is a data error, never a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import typer

from embedcli.cli.checks import parse_ids
from embedcli.errors import InputTextError, UsageError


def stdin() -> BinaryIO:
    """Standard input as bytes; a closed one (``<&-``) is a data error, not a crash."""
    try:
        return typer.get_binary_stream("stdin")
    except RuntimeError:  # sys.stdin is None
        raise InputTextError(
            "standard input is closed: pass TEXT or -f FILE, or pipe text in"
        ) from None


def read_text(texts: list[str] | None, file: Path | None) -> str:
    """TEXT joined with single spaces, or the file, or stdin ('-' or nothing, when piped)."""
    from embedcli.textinput import read_joined_text

    reader = stdin()
    return read_joined_text(texts, file, reader, reader.isatty())


def joined_ids(ids: list[str], texts: list[str] | None, file: Path | None) -> list[int]:
    """Every --ids value as one sequence (tokenize and neighbors join them; embed batches
    them); --ids beside TEXT or --file is a usage error."""
    if texts or file is not None:
        raise UsageError("pass only one of TEXT, --file and --ids")
    return [token for sequence in parse_ids(ids) for token in sequence]
