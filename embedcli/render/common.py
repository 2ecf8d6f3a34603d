"""What every view shares: counted words, plain text, lines of items that wrap whole, and the
choice of the first layout that fits the terminal without splitting a word."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

# The presentation helpers, one import for every view: counted words, visible text and names,
# byte sizes, shapes. Defined below render/ because error messages there say sizes and counts too.
from embedcli.core.broadcast import format_shape as format_shape
from embedcli.core.memory import format_bytes as format_bytes
from embedcli.tokenization.display import plural as plural
from embedcli.tokenization.display import visible as visible
from embedcli.tokenization.display import visible_name as visible_name

WIDE = 10_000  # a width at which nothing wraps: the layout as it was meant to be
SEPARATOR = " · "  # between the items of a header or summary line

# Box drawing and block elements: table borders and heatmap cells, never part of a word.
_BOXES = str.maketrans({chr(c): " " for c in range(0x2500, 0x25A0)})


def strip_trailing(text: str) -> str:
    """The text without spaces at the ends of its lines (rich pads tables and titles)."""
    return "\n".join(line.rstrip() for line in text.split("\n"))


def to_text(renderable: RenderableType, *, width: int = 100) -> str:
    """``renderable`` as plain text ``width`` columns wide, without trailing spaces."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        color_system=None,
        no_color=True,
        highlight=False,
        legacy_windows=False,
    )
    console.print(renderable)
    return strip_trailing(buffer.getvalue())


def words(text: str) -> list[str]:
    """The words of rendered text, borders and heatmap blocks left out."""
    return text.translate(_BOXES).split()


def fits(renderable: RenderableType, width: int) -> bool:
    """Whether ``width`` columns show every word of ``renderable`` whole: wrapped only between
    words, never folded or cut short with an ellipsis.

    rich's own measurement settles the common case without rendering (each render of a table
    costs milliseconds): at its natural width or less nothing wraps. Narrower, the words are
    compared (rich's minimum is no shortcut: a table border splits words for us, not for it)."""
    console = Console(width=WIDE, color_system=None, legacy_windows=False)
    measured = Measurement.get(console, console.options, renderable)  # unclamped by ``width``
    return measured.maximum <= width or fits_by_words(renderable, width)


def fits_by_words(renderable: RenderableType, width: int) -> bool:
    """:func:`fits` by rendering: the words at ``width`` columns are those at any width."""
    return sorted(words(to_text(renderable, width=width))) == sorted(
        words(to_text(renderable, width=WIDE))
    )


def first_fitting(width: int, *layouts: Callable[[], RenderableType]) -> RenderableType:
    """The first layout that fits ``width`` (see :func:`fits`); else the last, the narrowest."""
    for layout in layouts[:-1]:
        renderable = layout()
        if fits(renderable, width):
            return renderable
    return layouts[-1]()


def pack(parts: Iterable[str], width: int, separator: str = SEPARATOR) -> list[str]:
    """Lines of ``parts`` joined by ``separator``, broken only between parts."""
    lines: list[str] = []
    for part in parts:
        if lines and cell_len(lines[-1] + separator + part) <= width:
            lines[-1] += separator + part
        else:
            lines.append(part)
    return lines


def items_line(parts: Sequence[str], width: int, *, lead: str | None = None) -> Text:
    """A header or summary: ``lead`` (bold) then short ``key value`` parts, wrapped between parts
    and never inside one."""
    text = Text()
    everything = ([lead] if lead else []) + list(parts)
    for i, line in enumerate(pack(everything, width)):
        if i:
            text.append("\n")
        if i == 0 and lead:
            text.append(lead, style="bold")
            line = line[len(lead) :]
        text.append(line)
    return text


def heading(title: str) -> Text:
    """A table's title, on its own line (a rich title would be padded with spaces)."""
    return Text(title, style="bold")


def note(message: str) -> Text:
    """A remark under a table: prose, wrapped between words."""
    return Text(message, style="italic")


def cell(value: object, style: str = "") -> Text:
    """Any value as a cell: Text, so that a piece like ``[/x]`` prints as itself."""
    return value if isinstance(value, Text) else Text(str(value), style=style)


def new_table(*columns: str, right: Iterable[str] = (), wrap: Iterable[str] = ()) -> Table:
    """A boxed table; ``right`` columns are right-aligned (numbers), ``wrap`` columns are prose
    that may wrap between words; every other column keeps its cells on one line."""
    right, wrap = set(right), set(wrap)
    table = Table()
    for name in columns:
        table.add_column(
            Text(name),
            justify="right" if name in right else "left",
            no_wrap=name not in wrap,
        )
    return table


def add_row(table: Table, *values: object, end_section: bool = False) -> None:
    """A row of cells, every one a Text (see :func:`cell`)."""
    table.add_row(*(cell(v) for v in values), end_section=end_section)
