"""``embedcli count``: files by tokens, a tree of folders, the totals, and what was skipped.

Paths are shown with their control characters visible, and cut in the middle when they do not
fit, so that the file name stays."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.text import Text

from embedcli.corpus.report import SKIPPED_SHOWN
from embedcli.render.common import (
    add_row,
    cell,
    first_fitting,
    heading,
    items_line,
    new_table,
    note,
    plural,
    visible,
)

if TYPE_CHECKING:
    from embedcli.corpus.report import CountReport
    from embedcli.tokenization.modelnames import ModelName

_CONTROL = ("Cc", "Cf", "Zl", "Zp")  # characters a path shows as a mark or an escape


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "—"


def shown_path(path: str) -> str:
    """A path with its control characters visible (a newline as ↵, others escaped)."""
    import unicodedata

    if all(unicodedata.category(c) not in _CONTROL for c in path):
        return path
    out = []
    for c in path:
        if unicodedata.category(c) not in _CONTROL:
            out.append(c)
            continue
        mark = visible(c)
        if mark == c:
            mark = f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
        out.append(mark)
    return "".join(out)


def _cut_chars(text: str, width: int) -> str:
    """``text`` cut in its middle to ``width`` cells: its start, …, its end."""
    if width <= 1:
        return "…"[:width]
    left_room = (width - 1) // 2
    left, used = "", 0
    for c in text:
        if used + cell_len(c) > left_room:
            break
        left, used = left + c, used + cell_len(c)
    right, room = "", width - 1 - used
    for c in reversed(text):
        if cell_len(right) + cell_len(c) > room:
            break
        right = c + right
    return left + "…" + right


def middle_cut(path: str, width: int) -> str:
    """A path in ``width`` cells: whole if it fits; else its first folders, …/, and its file
    name whole (pip/_vendor/…/langbulgarianmodel.py); else cut in the middle of the name."""
    if cell_len(path) <= width:
        return path
    head, slash, name = path.rpartition("/")
    room = width - cell_len(name) - 2  # for "…/"
    if not slash or room < 0:
        return _cut_chars(path, width)
    kept = ""
    for part in head.split("/"):
        if cell_len(kept + part + "/") > room:
            break
        kept += part + "/"
    return kept + "…/" + name


class PathCell:
    """A table cell holding a path: as wide as the path when there is room, else cut in the
    middle (:func:`middle_cut`) to the width the table gives it, so that rows stay apart."""

    def __init__(self, path: str) -> None:
        self.path = shown_path(path)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        full = cell_len(self.path)
        name = cell_len(self.path.rpartition("/")[2])
        return Measurement(min(full, max(8, min(name, 24))), full).clamp(None, options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        yield Text(middle_cut(self.path, options.max_width), no_wrap=True, overflow="crop")


class _Indented:
    """A tree row's path: its indent kept whole, the path cut in the middle after it."""

    def __init__(self, indent: str, path: PathCell) -> None:
        self.indent, self.path = indent, path

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        inner = self.path.__rich_measure__(console, options)
        pad = len(self.indent)
        return Measurement(inner.minimum + pad, inner.maximum + pad).clamp(None, options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        room = max(1, options.max_width - len(self.indent))
        cut = middle_cut(self.path.path, room)
        yield Text(self.indent + cut, no_wrap=True, overflow="crop")


def _folded(text: str, width: int) -> Text:
    """A line folded every ``width`` cells (a long path is not moved to a line of its own)."""
    lines, line = [], ""
    for c in text:
        if line and cell_len(line + c) > width:
            lines.append(line)
            line = ""
        line += c
    return Text("\n".join([*lines, line]))


def _apart(paths: Sequence[str], rows: Sequence[Sequence[str]], table: Any, width: int) -> bool:
    """Whether ``paths`` cut in the middle to the room the other columns leave stay apart."""
    columns = [str(c.header) for c in table.columns[1:]]
    widths = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(columns)]
    room = width - sum(w + 3 for w in widths) - 4  # each column's padding and rule, the edges
    cut = [middle_cut(shown_path(p), max(room, 1)) for p in paths]
    return len(set(cut)) == len(cut)


def _common_folder(paths: Sequence[str]) -> str:
    """The folder every path is in (with its final /), or "" when they share none."""
    folders = [p.split("/")[:-1] for p in paths]
    if not folders or not folders[0]:
        return ""
    shared = 0
    while all(len(f) > shared and f[shared] == folders[0][shared] for f in folders):
        shared += 1
    common = "/".join(folders[0][:shared])
    return common + "/" if shared and common else ""


def files_view(
    report: CountReport,
    *,
    sort: str = "tokens",
    top: int | None = 20,
    context: tuple[str, int] | None = None,
    width: int = 100,
    plain: bool = True,
) -> RenderableType:
    """The files, sorted, with bytes, tokens per encoding and their share of the total; then the
    totals, what was skipped, and each total against a context window. Paths that do not fit
    are shown below the folder they share (named above the table), then cut in the middle."""
    files = report.sorted_files(sort)
    shown = files if top is None else files[:top]
    names = list(report.encodings)
    total = report.tokens[names[0]]
    common = _common_folder([f.path for f in shown])

    def table(with_share: bool, strip: str = "", cut: bool = False) -> RenderableType:
        t = new_table(
            "file",
            "bytes",
            *names,
            *(["share"] if with_share else []),
            right=("bytes", *names, "share"),
            wrap=("file",),
        )
        rows = []
        for f in shown:
            share = [_share(f.tokens[names[0]], total)] if with_share else []
            rows.append(
                (
                    f.path[len(strip) :],
                    [f"{f.bytes:,}", *(f"{f.tokens[n]:,}" for n in names), *share],
                )
            )
        # Cut in the middle only where the cut paths stay apart; else they are folded whole.
        fold = cut and not _apart([p for p, _ in rows], [c for _, c in rows], t, width)
        for path, cells in rows:
            if fold:
                first = Text(shown_path(path), overflow="fold")
            else:
                first = PathCell(path) if cut else Text(shown_path(path))
            t.add_row(first, *map(cell, cells))
        return Group(_folded(f"under {shown_path(strip)}", width), t) if strip else t

    layouts = [lambda: table(True), lambda: table(False)]
    if common:
        layouts[1:1] = [lambda: table(True, common)]
        layouts.append(lambda: table(False, common))
    layouts.append(lambda: table(True, common, cut=True))
    parts: list[RenderableType] = []
    if shown:
        parts.append(first_fitting(width, *layouts))
    if report.counted > len(shown):
        parts.append(
            note(
                f"showing {len(shown):,} of {report.counted:,} files: --top N shows more, "
                "--json all"
            )
        )
    parts += totals_view(report, context, width)
    return Group(*parts)


def _against(tokens: int, context: tuple[str | None, int], encoding: str) -> str:
    """A total against a context window: a share up to 100%, past it how many windows."""
    label, size = context
    window = f"{label}'s {size:,}-token" if label else f"a {size:,}-token"
    ratio = tokens / size
    if ratio <= 1:
        return f"{ratio:.1%} of {window} context ({encoding})"
    times = f"{ratio:.2f}" if ratio < 10 else f"{ratio:,.1f}"
    return f"{times}× {window} context ({encoding})"


def totals_view(
    report: CountReport, context: tuple[str, int] | None, width: int
) -> list[RenderableType]:
    """The totals line(s), the context-window shares, and the skipped files."""
    totals = report.totals
    counts = [f"{plural(totals['tokens'][n], 'token')} ({n})" for n in report.encodings]
    lines: list[RenderableType] = [
        items_line(
            [
                f"{plural(totals['files'], 'file')} counted",
                f"{totals['skipped']:,} skipped",
                f"{totals['bytes']:,} bytes",
                *counts,
            ],
            width,
        )
    ]
    if context is not None:
        lines.append(
            items_line([_against(report.tokens[n], context, n) for n in report.encodings], width)
        )
    if report.skips:
        kinds = sorted(report.skip_kinds.items(), key=lambda kv: -kv[1])  # ties: first met
        summary = ", ".join(f"{n:,} {kind}" for kind, n in kinds)
        listed = report.skipped[:SKIPPED_SHOWN]
        named = "; ".join(f"{shown_path(s.path)}: {shown_path(s.reason)}" for s in listed)
        more = report.skips - len(listed)
        tail = f"; and {more:,} more (--json lists them)" if more > 0 else ""
        lines.append(note(f"skipped ({summary}): {named}{tail}"))
    return lines


def tree_view(
    report: CountReport,
    *,
    depth: int = 3,
    min_share: float = 0.0,
    context: tuple[str, int] | None = None,
    width: int = 100,
    plain: bool = True,
) -> RenderableType:
    """Tokens rolled up per folder, to ``depth`` levels; branches under ``min_share`` of the
    total are folded into one line each."""
    first = report.encodings[0]
    total = report.tokens[first] or 0
    rows, hidden = report.tree.rows(total, min_share) if report.tree is not None else ([], 0)
    table = new_table(
        "path",
        *report.encodings,
        "share",
        "files",
        right=(*report.encodings, "share", "files"),
        wrap=("path",),  # the path gives way (cut in the middle), never a number
    )
    for row in rows:
        indent = "  " * (row.level - 1)
        label = row.name + ("/" if row.folder else "")
        numbers = [*(f"{n:,}" for n in row.tokens), _share(row.tokens[0], total), f"{row.files:,}"]
        table.add_row(_Indented(indent, PathCell(label)), *map(cell, numbers))
    levels = f"{depth} level{'s' * (depth != 1)}"
    parts: list[RenderableType] = [heading(f"Tokens by folder ({first}, {levels})"), table]
    if hidden:
        parts.append(note(f"{hidden:,} branches under {min_share:.1%} of the total are hidden"))
    parts += totals_view(report, context, width)
    return Group(*parts)


def models_view(models: Sequence[ModelName], *, width: int = 100, plain: bool = True):
    """``count --list-models``: every model name embedcli knows, its encoding and context."""
    table = new_table("model", "encoding", "context", right=("context",))
    for model in models:
        add_row(table, model.name, model.encoding, f"{model.context:,}")
    return Group(
        table,
        Text(
            "dated snapshots (gpt-4o-2024-08-06) and fine-tunes (ft:gpt-4o-mini:org::id) are "
            "matched to their base model"
        ),
    )


def engines_view(infos: Sequence[Any], *, width: int = 100, plain: bool = True):
    """``count --engine-info``: what counts each encoding, from how much text, and why."""
    table = new_table("encoding", "counted by", "from", "why", right=("from",), wrap=("why",))
    for info in infos:
        if info.min_chars is None:
            start = ""
        else:
            start = "any text" if not info.min_chars else f"{info.min_chars / 2**20:g} Mi chars"
        add_row(table, info.encoding, info.engine, start, info.reason)
    parts: list[Any] = [table]
    if any(info.min_chars for info in infos):
        parts.append(
            Text(
                "from: the text a count must have per process (per thread for tokenize "
                "--count) for building the faster engine's tables to pay; smaller jobs are "
                "counted by tiktoken. The counts are the same either way."
            )
        )
    return Group(*parts)
