"""``embedcli count``: files by tokens, a tree of folders, the totals, and what was skipped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from embedcli.render.common import (
    add_row,
    first_fitting,
    heading,
    items_line,
    new_table,
    note,
    plural,
)

if TYPE_CHECKING:
    from embedcli.corpus.count import CountReport
    from embedcli.tokenization.modelnames import ModelName

SKIPPED_SHOWN = 5  # skipped files listed by name; --json lists them all


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "—"


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
    totals, what was skipped, and each total against a context window."""
    files = report.sorted_files(sort)
    shown = files if top is None else files[:top]
    total = report.totals["tokens"][report.encodings[0]]

    def table(with_share: bool) -> RenderableType:
        names = list(report.encodings)
        t = new_table(
            "file",
            "bytes",
            *names,
            *(["share"] if with_share else []),
            right=("bytes", *names, "share"),
            wrap=("file",),
        )
        for f in shown:
            share = [_share(f.tokens[names[0]], total)] if with_share else []
            add_row(t, f.path, f"{f.bytes:,}", *(f"{f.tokens[n]:,}" for n in names), *share)
        return t

    parts: list[RenderableType] = []
    if shown:
        parts.append(first_fitting(width, lambda: table(True), lambda: table(False)))
    if len(files) > len(shown):
        parts.append(
            note(f"showing {len(shown):,} of {len(files):,} files: --top N shows more, --json all")
        )
    parts += totals_view(report, context, width)
    return Group(*parts)


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
        label, size = context
        lines.append(
            items_line(
                [
                    f"{totals['tokens'][n] / size:.1%} of "
                    + (f"{label}'s {size:,}-token" if label else f"a {size:,}-token")
                    + f" context ({n})"
                    for n in report.encodings
                ],
                width,
            )
        )
    if report.skipped:
        reasons = Counter(_kind(s.reason) for s in report.skipped)
        summary = ", ".join(f"{n:,} {kind}" for kind, n in reasons.most_common())
        listed = "; ".join(f"{s.path}: {s.reason}" for s in report.skipped[:SKIPPED_SHOWN])
        more = len(report.skipped) - SKIPPED_SHOWN
        tail = f"; and {more:,} more (--json lists them)" if more > 0 else ""
        lines.append(note(f"skipped ({summary}): {listed}{tail}"))
    return lines


def _kind(reason: str) -> str:
    for kind in ("binary", "not UTF-8", "over --max-file-size", "symlink loop", "unreadable"):
        if kind in reason:
            return kind
    return reason.split(":")[0]


def _tree_paths(report: CountReport) -> list[tuple[str, ...]]:
    """Each file's path as folders and name, the folders every file shares made one root
    (/work/corpus/ rather than work/, main/, corpus/ spending three levels of --depth)."""
    paths = [tuple(p for p in f.path.split("/") if p not in ("", ".")) for f in report.files]
    shared = 0
    if paths:
        folders = [p[:-1] for p in paths]
        while all(len(p) > shared and p[shared] == folders[0][shared] for p in folders):
            shared += 1
    if shared < 2 and not (shared and report.files[0].path.startswith("/")):
        return paths
    root = ("/" if report.files[0].path.startswith("/") else "") + "/".join(paths[0][:shared])
    return [(root, *p[shared:]) for p in paths]


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
    total = report.totals["tokens"][first] or 0
    sums: dict[tuple[str, ...], list[int]] = {}
    files: dict[tuple[str, ...], int] = {}
    leaves: set[tuple[str, ...]] = set()
    for f, parts in zip(report.files, _tree_paths(report), strict=True):
        if len(parts) <= depth:
            leaves.add(parts)
        for level in range(1, min(len(parts), depth) + 1):
            key = parts[:level]
            into = sums.setdefault(key, [0] * len(report.encodings))
            for i, name in enumerate(report.encodings):
                into[i] += f.tokens[name]
            files[key] = files.get(key, 0) + 1
    children: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for key in sums:
        children.setdefault(key[:-1], []).append(key)
    table = new_table(
        "path", *report.encodings, "share", "files", right=(*report.encodings, "share", "files")
    )
    hidden = 0

    def ordered(parent: tuple[str, ...]) -> list[tuple[str, ...]]:
        return sorted(children.get(parent, ()), key=lambda k: (-sums[k][0], k[-1]))

    stack = list(reversed(ordered(())))  # depth first, without recursion: trees can be deep
    while stack:
        key = stack.pop()
        if total and sums[key][0] / total < min_share:
            hidden += 1
            continue
        folder = key not in leaves or key in children
        label = "  " * (len(key) - 1) + key[-1] + ("/" if folder else "")
        add_row(
            table,
            label,
            *(f"{n:,}" for n in sums[key]),
            _share(sums[key][0], total),
            f"{files[key]:,}",
        )
        stack.extend(reversed(ordered(key)))
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
