"""Progress of work on a table, on stderr: what is being done, a bar, the share and the rows done
of the total, the time spent and the time left; gone when the work is (transient).

The work hears nothing of rich: it is handed ``on_rows(done, total)`` (a plain callback, see
``embedcli.analysis.rowcount``), which only keeps the numbers and passes them on at most
UPDATES_PER_SECOND times a second, however often it is called. Until the first rows are counted
(the tables being read or built) the bar pulses beside the time spent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn, Task, TaskID
    from rich.table import Column

    from embedcli.analysis.rowcount import RowsDone


UPDATES_PER_SECOND = 4  # the bar's redraws, and the updates handed to it, at most
MAX_BAR = 30  # columns: a wider bar tells no more


class WorkProgress:
    """``with WorkProgress(console, "reading the tables") as progress:`` then hand
    ``progress.rows("statistics")`` to the work as its ``on_rows``. With ``console`` None
    (stderr is not a terminal, or -q) nothing is drawn and ``rows`` gives None. With ``label``
    None the bar waits for the first ``stage`` or ``rows`` (until text typed on stdin is read)."""

    def __init__(
        self,
        console: Console | None,
        label: str | None,
        *,
        unit: str = "rows read",  # over every pass: a statistic reads a table three times
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.label = label
        self.unit = unit
        self.clock = clock
        self.done, self.total = 0, 0  # as last heard
        self.last: float | None = None  # the clock at the last update handed to the bar
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __enter__(self) -> WorkProgress:
        if self.label is not None:
            self.stage(self.label)
        return self

    def stage(self, label: str) -> None:
        """Now doing ``label``, its size not known yet: the bar pulses (drawn from now on)."""
        if self.console is None:
            return
        if self.bar is not None and self.task is not None:
            self.done, self.total, self.last = 0, 0, None
            self.bar.reset(self.task, total=None, description=label, count="")
            return
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
        from rich.table import Column

        def fixed() -> Column:  # the text keeps its width: the bar gives way first
            return Column(no_wrap=True, overflow="ellipsis")

        self.bar = Progress(
            TextColumn("[bold]{task.description}", table_column=fixed()),
            BarColumn(bar_width=MAX_BAR), TaskProgressColumn(table_column=fixed()),
            TextColumn("{task.fields[count]}", table_column=fixed()), times_column(fixed()),
            console=self.console, transient=True, refresh_per_second=UPDATES_PER_SECOND,
            get_time=self.clock, redirect_stdout=False,  # stdout is the report's alone
        )  # fmt: skip
        self.bar.start()
        self.task = self.bar.add_task(label, total=None, count="")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def rows(self, label: str) -> RowsDone | None:
        """The callback for the next piece of work, now shown as ``label`` (its count starts
        again); None where nothing is drawn, so that the work need not call it."""
        if self.console is None:
            return None
        self.stage(label)
        return self.on_rows

    def on_rows(self, done: int, total: int) -> None:
        """``done`` of ``total`` rows read; handed to the bar at most a few times a second."""
        self.done, self.total = done, total
        now = self.clock()
        if self.last is not None and now - self.last < 1 / UPDATES_PER_SECOND and done < total:
            return
        self.last = now
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=done, total=total, count=self.count_text())

    def count_text(self) -> str:
        """'1,024/150,771 rows read'."""
        return f"{self.done:,}/{self.total:,} {self.unit}"


def clock_text(seconds: float | None) -> str:
    """62.5 -> '0:01:02'; None (not known yet) -> '-:--:--'."""
    if seconds is None:
        return "-:--:--"
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def times_text(elapsed: float | None, left: float | None) -> str:
    """'0:00:07 left' once the time left is known, else '0:00:03 elapsed'."""
    return f"{clock_text(elapsed)} elapsed" if left is None else f"{clock_text(left)} left"


def times_column(column: Column) -> ProgressColumn:
    """A rich column of :func:`times_text` (made here: rich is imported only when drawing)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Times(ProgressColumn):
        def render(self, task: Task) -> Text:
            left = task.time_remaining if task.total is not None else None
            return Text(times_text(task.elapsed, left))

    return Times(table_column=column)
