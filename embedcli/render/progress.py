"""Progress bars on stderr: streaming embedding's (how far, how many tokens and windows, how
long), and count's (files counted of those found).

The streaming bar fits the terminal by leaving out the least important fields first, and its
clock starts with the first bytes read (not while the tables are being built).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from rich.cells import cell_len
from rich.text import Text

from embedcli.render.workprogress import clock_text, times_column

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.live import Live
    from rich.progress import Progress, TaskID

T = TypeVar("T")

MIN_BAR = 10  # columns: a narrower bar reads as noise
MAX_BAR = 40  # columns: a wider one tells no more
LABEL = "embedding"


class StreamProgress:
    """``with StreamProgress(size, console) as progress:`` then ``advance`` as bytes are read and
    ``update`` as tokens and windows are counted; the bar disappears when done (transient)."""

    def __init__(
        self,
        total_bytes: int | None,
        console: Console,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total_bytes = total_bytes
        self.console = console
        self.clock = clock
        self.done = 0  # bytes read
        self.tokens = 0
        self.windows = 0
        self.started: float | None = None  # the clock at the first advance
        self._live: Live | None = None

    def __enter__(self) -> StreamProgress:
        from rich.live import Live

        self._live = Live(
            self, console=self.console, transient=True, refresh_per_second=4, auto_refresh=True
        )
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def advance(self, nbytes: int) -> None:
        """``nbytes`` more bytes of input read."""
        if self.started is None:
            self.started = self.clock()
        self.done += nbytes

    def update(self, tokens: int, windows: int) -> None:
        """The tokens read and the windows written so far."""
        self.tokens, self.windows = tokens, windows

    @property
    def fraction(self) -> float | None:
        """Share of the input read, or None when its size is unknown (stdin)."""
        if not self.total_bytes:
            return None
        return min(1.0, self.done / self.total_bytes)

    @property
    def elapsed(self) -> float:
        """Seconds since the first bytes were read."""
        return 0.0 if self.started is None else max(0.0, self.clock() - self.started)

    @property
    def remaining(self) -> float | None:
        """Seconds left at the average speed so far, or None before it is known."""
        fraction, elapsed = self.fraction, self.elapsed
        if fraction is None or not fraction or not elapsed:
            return None
        return math.ceil(elapsed * (1 - fraction) / fraction)  # never "0:00:00 left" too early

    def line(self, width: int, *, plain: bool = True) -> Text:
        """The bar, the percentage and the counts that fit ``width`` columns, in that order of
        importance: percentage, time left, tokens, time elapsed, windows, speed."""
        fraction = self.fraction
        rate = self.tokens / self.elapsed if self.elapsed else 0.0
        fields = {  # name -> text, in the order shown
            "percent": None if fraction is None else f"{fraction:.0%}",
            "tokens": f"{self.tokens:,} token{'' if self.tokens == 1 else 's'}",
            "windows": f"{self.windows:,} window{'' if self.windows == 1 else 's'}",
            "rate": f"{rate:,.0f} tokens/s" if rate else None,
            "elapsed": f"{clock_text(self.elapsed)} elapsed",
            "left": None if fraction is None else f"{clock_text(self.remaining)} left",
        }
        priority = ("percent", "left", "tokens", "elapsed", "windows", "rate")
        bar = fraction is not None
        # One column spare: a line that fills the terminal exactly may wrap in some of them.
        budget = width - 1 - cell_len(LABEL) - (1 + MIN_BAR if bar else 0)
        chosen: set[str] = set()
        for name in priority:
            text = fields[name]
            if text is None:
                continue
            cost = cell_len(text) + (1 if name == "percent" else 3)  # " 42%" or " · x"
            if cost <= budget:
                chosen.add(name)
                budget -= cost
        line = Text(LABEL, style="bold")
        if bar:
            line.append(" ")
            line.append_text(
                self._bar(min(MAX_BAR, MIN_BAR + budget), fraction or 0.0, plain=plain)
            )
        for name in fields:
            if name in chosen:
                line.append(" " if name == "percent" else " · ")
                line.append(fields[name] or "")
        return line

    @staticmethod
    def _bar(width: int, fraction: float, *, plain: bool) -> Text:
        filled = round(width * fraction)
        bar = Text("━" * filled, style="bar.complete")
        # Without colour the two parts would look alike: draw the rest in a lighter line.
        bar.append(("─" if plain else "━") * (width - filled), style="bar.back")
        return bar

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        plain = console.no_color or console.color_system is None
        yield self.line(options.max_width, plain=plain)


FILES_DONE = "{task.fields[done]:,}/{task.fields[found]:,} files found so far"


class CountProgress:
    """``count``'s bar: bytes finished of those found so far (the walk goes on while they are
    counted), with the files finished and the time left, drawn on ``console`` once there is a
    file, gone when done (transient). Files finish largest first, in any order: the bar follows
    what is finished, not what has been handed on in walk order."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.files = 0  # found so far (files and skips)

    def plan(self, files: int, size: int) -> None:
        """The files (and skips) found so far, and their bytes."""
        if not files:
            return
        self.files = files
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, total=max(size, 1), found=files)
            return
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
        from rich.table import Column

        self.bar = Progress(
            "counting", BarColumn(), TaskProgressColumn(), TextColumn(FILES_DONE),
            times_column(Column(no_wrap=True)), console=self.console, transient=True,
        )  # fmt: skip
        self.bar.start()
        self.task = self.bar.add_task("count", total=max(size, 1), done=0, found=files)

    def done(self, files: int, size: int) -> None:
        """The files (and skips) finished so far, and the bytes of the files among them."""
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=size, done=min(files, self.files))

    def follow(self, items: Iterable[T]) -> Iterator[T]:
        """``items`` as they come; the bar stopped at the end or on error."""
        try:
            yield from items
        finally:
            if self.bar is not None:
                self.bar.stop()
