"""Reading the text a command works on: arguments, ``-`` for stdin, strict UTF-8. No torch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from embedcli.core import memory
from embedcli.errors import InputTextError, UsageError, os_reason

# A text held whole (tokenize, embed, windows) costs about this many bytes of memory per byte of
# input, measured with gpt2 on English: the bytes, the str, the token ids as Python ints.
BYTES_PER_TEXT_BYTE = 16
# Texts up to this size are read without asking the machine for its free memory first.
UNCHECKED_BYTES = 64 << 20


def text_limit() -> int:
    """The most bytes of text a command reads whole: what this machine's free memory can hold
    (1 GiB where it cannot be told)."""
    available = memory.host_available_memory()
    return (available or 16 << 30) // BYTES_PER_TEXT_BYTE


def read_bounded(
    handle: BinaryIO, source: str, limit: int | None = None, why: str | None = None
) -> bytes:
    """All of ``handle``, read in blocks; a source larger than ``limit`` (endless like
    /dev/zero, or just too big; by default what :func:`text_limit` allows, asked only once a
    source passes UNCHECKED_BYTES) is refused as soon as the limit is passed, saying ``why``
    the limit is what it is (by default: free memory, and how to stream a text instead)."""
    blocks, size = [], 0
    while True:
        block = handle.read(1 << 20)
        if not block:
            return b"".join(blocks)
        size += len(block)
        if limit is None and size > UNCHECKED_BYTES:
            limit = text_limit()
        if limit is not None and size > limit:
            raise InputTextError(
                f"{source} is larger than {limit:,} bytes, "
                + (
                    why
                    or "more than this machine's free memory can hold as one text; stream it "
                    "with embed -t T -o out.npy, or cut it"
                )
            )
        blocks.append(block)


def decode_utf8(data: bytes, source: str) -> str:
    """Decode strictly, naming the first bad byte and where it is."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start]
        raise InputTextError(
            f"{source} is not valid UTF-8 (byte 0x{bad:02X} at offset {exc.start}); "
            "convert it first, e.g. with iconv -t UTF-8"
        ) from None


def check_argument(text: str, index: int) -> str:
    """An argument as text: arguments that were not UTF-8 arrive with lone surrogates (Python's
    surrogateescape). Under a locale that is not UTF-8 (LC_ALL=C without UTF-8 mode) a UTF-8
    argument arrives so too: its bytes are read back and decoded as UTF-8; what is not UTF-8
    even then is refused."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return os.fsencode(text).decode("utf-8")  # the argument's own bytes
    except UnicodeError:
        raise InputTextError(f"text argument {index} is not valid UTF-8") from None


def read_texts(args: list[str] | None, stdin: BinaryIO, stdin_is_tty: bool) -> list[str]:
    """One text per argument; ``-`` (or no argument, when stdin is piped) reads stdin once."""
    if not args:
        if stdin_is_tty:
            raise UsageError(
                "no text given: pass TEXT, '-' to read standard input, or pipe text in"
            )
        args = ["-"]
    if args.count("-") > 1:
        raise UsageError("'-' (standard input) can be given only once")
    texts = []
    for index, arg in enumerate(args, start=1):
        if arg == "-":
            texts.append(decode_utf8(read_bounded(stdin, "standard input"), "standard input"))
        else:
            texts.append(check_argument(arg, index))
    for index, text in enumerate(texts, start=1):
        if not text:
            where = "standard input" if args[index - 1] == "-" else f"text {index}"
            raise InputTextError(f"{where} is empty: there is nothing to embed")
    return texts


def read_joined_text(
    args: list[str] | None, file: Path | None, stdin: BinaryIO, stdin_is_tty: bool
) -> str:
    """TEXT arguments joined with single spaces; or the file; or stdin (``-`` or nothing)."""
    if file is not None:
        if args:
            raise UsageError("pass TEXT or --file, not both")
        try:
            with open(file, "rb") as handle:
                data = read_bounded(handle, str(file))
        except OSError as exc:
            raise InputTextError(f"cannot read {file}: {os_reason(exc)}") from None
        return decode_utf8(data, str(file))
    if args == ["-"] or (not args and not stdin_is_tty):
        return decode_utf8(read_bounded(stdin, "standard input"), "standard input")
    if not args:
        raise UsageError(
            "no text given: pass TEXT, --file PATH, '-' to read standard input, or pipe text in"
        )
    return " ".join(check_argument(arg, i) for i, arg in enumerate(args, start=1))
