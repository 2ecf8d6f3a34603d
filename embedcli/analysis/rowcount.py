"""How far a pass over a table has gone: the rows read so far, told to a plain callback.

The analyses read their tables a chunk of rows at a time, some of them several times over; the
callback (``on_rows(done, total)``) hears the rows read counted over every pass, so that the
share done is ``done / total``. What draws it is the caller's business (a bar on a terminal's
stderr, or nothing): nothing here prints.
"""

from __future__ import annotations

from collections.abc import Callable

RowsDone = Callable[[int, int], None]  # on_rows(rows read so far, rows to read in all)


class RowCount:
    """Rows read of ``total`` (every pass counted), told to ``on_rows`` as chunks are done."""

    def __init__(self, on_rows: RowsDone | None, total: int) -> None:
        self.on_rows = on_rows
        self.total = total
        self.done = 0

    def add(self, rows: int) -> None:
        """``rows`` more rows read."""
        self.done = min(self.total, self.done + rows)
        if self.on_rows is not None:
            self.on_rows(self.done, self.total)

    def grow(self, rows: int) -> None:
        """``rows`` more to read than was planned (a pass found to be needed)."""
        self.total += rows
