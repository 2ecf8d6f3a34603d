"""Rows of a table read by the byte: a lookup fetches the rows it uses, not the table.

A safetensors table of shape (V, d) is stored row-major, so row ``i`` lies at ``start + i *
row_bytes``. Rows are fetched in blocks of about :data:`ROW_BLOCK_BYTES` (at least one row),
neighbouring missing blocks in one range read, and each block is kept in embedcli's cache
(tensorstore.py) so that later runs, offline ones too, read it from there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from embedcli.errors import WeightsError

if TYPE_CHECKING:
    import torch

ROW_BLOCK_BYTES = 1 << 16  # bytes of one cached row block (a row of a wider table is one block)
MAX_RUN_BYTES = 16 << 20  # bytes of one range read of neighbouring blocks


@dataclass(frozen=True)
class RowLayout:
    """Where the rows of a (rows, d) table are in its file."""

    name: str
    rows: int
    row_bytes: int
    start: int  # the file offset of row 0

    @property
    def per_block(self) -> int:
        """Rows in one cached block."""
        return max(1, ROW_BLOCK_BYTES // max(self.row_bytes, 1))

    def block_rows(self, index: int) -> tuple[int, int]:
        """(first row, end row) of block ``index``; the last block may be short."""
        first = index * self.per_block
        return first, min(first + self.per_block, self.rows)

    def block_bytes(self, index: int) -> int:
        first, end = self.block_rows(index)
        return (end - first) * self.row_bytes

    def check(self, wanted: Iterable[int]) -> list[int]:
        """``wanted`` as a list, each row checked to be in the table."""
        found = [int(row) for row in wanted]
        for row in found:
            if not 0 <= row < self.rows:
                raise WeightsError(
                    f"row {row} is outside {self.name}, which has {self.rows:,} rows "
                    f"(0 to {self.rows - 1:,})"
                )
        return found


class MissingRows(WeightsError):
    """Offline, and some blocks of the rows asked for are not in embedcli's cache."""

    def __init__(self, blocks: int) -> None:
        super().__init__(f"{blocks} block(s) of rows are not cached")
        self.blocks = blocks


def gather_rows(
    layout: RowLayout,
    wanted: Sequence[int],
    cached: Callable[[int], bytes | None],
    keep: Callable[[int, bytes], None],
    fetch: Callable[[int, int], bytes] | None,
) -> bytes:
    """The bytes of rows ``wanted`` (in that order), from cached blocks (``cached(k)``), the
    missing ones fetched with ``fetch(start, end)`` (file offsets; None: offline) and kept with
    ``keep(k, data)``."""
    per, size = layout.per_block, layout.row_bytes
    blocks: dict[int, bytes | None] = {k: cached(k) for k in sorted({r // per for r in wanted})}
    missing = [k for k, data in blocks.items() if data is None]
    if missing and fetch is None:
        raise MissingRows(len(missing))
    for run in _runs(missing, max(1, MAX_RUN_BYTES // (per * size))):
        first, _ = layout.block_rows(run[0])
        _, end = layout.block_rows(run[-1])
        data = fetch(layout.start + first * size, layout.start + end * size) if fetch else b""
        if len(data) != (end - first) * size:
            raise WeightsError(f"rows {first}-{end - 1} of {layout.name} came short; try again")
        for index in run:
            low, high = layout.block_rows(index)
            piece = data[(low - first) * size : (high - first) * size]
            keep(index, piece)
            blocks[index] = piece
    parts = []
    for row in wanted:
        block = blocks[row // per]
        offset = (row % per) * size
        parts.append(block[offset : offset + size] if block is not None else b"")
    return b"".join(parts)


def _runs(indices: Sequence[int], longest: int) -> list[list[int]]:
    """Sorted block indices cut into runs of neighbours, at most ``longest`` blocks each."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index == runs[-1][-1] + 1 and len(runs[-1]) < longest:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


@dataclass
class TableRows:
    """The rows of the tables that one lookup uses, read alone: from a hub model, only these
    are fetched (a sorted set of token rows, and the positional table's first rows)."""

    ids: list[int]  # the token table's rows held: sorted, each once
    token: torch.Tensor  # (len(ids), d) in the table's dtype
    position: torch.Tensor | None  # (positions, d): rows 0 to positions - 1, or None

    def local(self, ids: torch.Tensor) -> torch.Tensor:
        """Token ids (any shape, each one of ``self.ids``) as row numbers of ``self.token``."""
        import torch

        held = torch.tensor(self.ids, dtype=torch.long)
        return torch.searchsorted(held, ids.to(torch.long))


def read_rows(
    checkpoint: Any,
    token_key: str,
    ids: Iterable[int],
    position_key: str | None = None,
    positions: int = 0,
) -> TableRows:
    """The token rows of ``ids`` and the first ``positions`` rows of the positional table,
    through ``checkpoint.load_rows`` (a local file reads them; a hub model fetches them)."""
    held = sorted({int(i) for i in ids})
    token = checkpoint.load_rows(token_key, held)
    position = None
    if position_key is not None and positions > 0:
        position = checkpoint.load_rows(position_key, range(positions))
    return TableRows(held, token, position)
