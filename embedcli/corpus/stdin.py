"""Standard input for ``count``, counted as a file is: read in blocks and cut only where
``tokenize --count`` proves a cut changes nothing (pieces.find_cut), so memory stays a few blocks
whatever its size. It is read once and has no offsets to hand a worker: it is counted here.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any, BinaryIO

from embedcli.corpus.pieces import MAX_PIECE_BYTES, count_text, encodings_for, find_cut
from embedcli.corpus.report import FileCount
from embedcli.corpus.selection import FIRST_BLOCK, Skipped

STDIN_BLOCK = 1 << 20  # bytes encoded at once (a cut is looked for after this many)
READ_BYTES = 1 << 20


def count_stdin(
    handle: BinaryIO,
    encoding_names: Sequence[str],
    errors: str,
    *,
    cuttable: bool = True,
    block: int | None = None,
) -> FileCount | Skipped:
    """Tokens of everything on ``handle`` (or why it is skipped: binary, not UTF-8, or a run
    longer than a piece may be with no place to cut, as for a file), ``block`` (STDIN_BLOCK)
    bytes at a time."""
    block = block or STDIN_BLOCK
    names = tuple(encoding_names)
    encodings = encodings_for(names)
    sums = [0] * len(names)
    buffer = bytearray()
    offset = 0  # of buffer[0] in the whole input
    searched = 0  # bytes of buffer already searched for a cut
    head_checked = False
    while True:
        data = handle.read(READ_BYTES)
        buffer += data
        if not head_checked and (len(buffer) >= FIRST_BLOCK or not data):
            head_checked = True
            if b"\0" in buffer[:FIRST_BLOCK]:
                return Skipped("-", "binary")
        while cuttable and len(buffer) > block:
            cut = find_cut(io.BytesIO(buffer), max(block, searched - 8), len(buffer))
            if cut is None:
                searched = len(buffer)
                break
            why = _add(buffer[:cut], offset, encodings, errors, sums)
            if why is not None:
                return Skipped("-", why)
            del buffer[:cut]
            offset, searched = offset + cut, 0
        if not data:
            why = _add(buffer, offset, encodings, errors, sums)
            if why is not None:
                return Skipped("-", why)
            return FileCount("-", offset + len(buffer), dict(zip(names, sums, strict=True)))
        if len(buffer) > MAX_PIECE_BYTES:  # encoding it would take ~50x in memory
            return Skipped(
                "-",
                f"over {MAX_PIECE_BYTES >> 20} MiB with no place to cut (a run with no space, or a "
                "tokenizer that must see a text whole): more than is counted at once",
            )


def _add(data: bytes | bytearray, offset: int, encodings: Any, errors: str, sums: list[int]):
    """Count one piece into ``sums``; or why the input is skipped (not UTF-8)."""
    try:
        text = bytes(data).decode("utf-8", errors="replace" if errors == "replace" else "strict")
    except UnicodeDecodeError as exc:
        where = offset + exc.start
        return f"not UTF-8 (byte 0x{data[exc.start]:02X} at offset {where:,})"
    for i, n in enumerate(count_text(text, encodings)):
        sums[i] += n
    return None
