"""The quick path of the one command scripts run most: ``tokenize --count`` of a TEXT or a
file under a bundled encoding, without loading typer, click or any other command.

It takes only command lines of exactly this form, in any order::

    embedcli tokenize --count [-e|--encoding NAME] (TEXT | -f|--file PATH)

with NAME one of the bundled encodings (gpt2, r50k_base, cl100k_base, o200k_base; gpt2 when
absent) and one TEXT word that does not start with "-". It runs the same functions the full
command runs (the text read as ``read_joined_text`` reads it, ``get_encoding``,
``tokenize_text`` with special-token text refused) and prints the same number. Anything else,
and anything that goes wrong on the way (special-token text, a file that cannot be read, a
closed stdout), hands the command line to the full command line, which says what was wrong
in its own words: nothing is written here before the count is known. The full command takes
typer's 50 ms and its own modules' on top of the tiktoken floor (issue 38: 1.25x the floor
script for cl100k_base; this path is within a few percent of it).
"""

from __future__ import annotations

import sys
from pathlib import Path

FILE_FLAGS = ("-f", "--file")
ENCODING_FLAGS = ("-e", "--encoding")


def _parsed(argv: list[str]) -> tuple[str | None, str | None, Path | None] | None:
    """(encoding, TEXT, file) of a command line this path takes, else None."""
    if not argv or argv[0] != "tokenize":
        return None
    count, encoding, text, file = False, None, None, None
    rest = argv[1:]
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--count" and not count:
            count, i = True, i + 1
        elif word in ENCODING_FLAGS and encoding is None and i + 1 < len(rest):
            encoding, i = rest[i + 1], i + 2
        elif word in FILE_FLAGS and file is None and i + 1 < len(rest):
            file, i = Path(rest[i + 1]), i + 2
        elif word and not word.startswith("-") and text is None:
            text, i = word, i + 1
        else:
            return None
    if not count or (text is None) == (file is None) or str(file) == "-":
        return None
    return encoding, text, file


def counted(argv: list[str]) -> bool:
    """Print ``tokenize --count``'s number for ``argv`` and say True, or say False (and print
    nothing) when the full command line must run it."""
    found = _parsed(argv)
    if found is None:
        return False
    name, text, file = found
    try:
        # late, every one: a command line this path does not take loads none of them
        from embedcli.tokenization.encodings import (
            BUNDLED_ENCODINGS,
            DEFAULT_ENCODING,
            get_encoding,
        )

        name = name or DEFAULT_ENCODING
        if name not in BUNDLED_ENCODINGS:
            return False
        from embedcli.corpus.textinput import check_argument, read_joined_text  # late: above
        from embedcli.errors import EmbedCLIError  # late: above
        from embedcli.tokenization.tokens import tokenize_text  # late: above

        try:
            if text is not None:
                text = check_argument(text, 1)
            body = read_joined_text(None if text is None else [text], file, sys.stdin.buffer, True)
            count = tokenize_text(get_encoding(name), body, count_only=True).count
        except EmbedCLIError:
            return False  # the full command says what was wrong
        sys.stdout.buffer.write(f"{count}\n".encode())
        sys.stdout.buffer.flush()
    except (OSError, ValueError, AttributeError):
        return False
    return True
