"""``inspect-shapes --list-presets``: the presets grouped by family, with their sizes, position
family, parameter count and the source of their values (a model's hub id)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.render.common import add_row, first_fitting, heading, new_table, note, pack

if TYPE_CHECKING:
    from embedcli.core.config import Preset


def short_count(n: int) -> str:
    """A parameter count in three significant digits, as model pages write it: 8.03B, 124M."""
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            value = n / size
            digits = 2 if value < 10 else 1 if value < 100 else 0
            return f"{value:.{digits}f}{unit}"
    return str(n)


def _parameters(p: Preset, exact: bool) -> str:
    if p.model_parameters is None:
        return ""
    show = (lambda n: f"{n:,}") if exact else short_count
    total = show(p.model_parameters)
    if p.active_parameters is not None:
        return f"{total}\n{show(p.active_parameters)} active"
    return total


def _context(p: Preset) -> str:
    return f"{p.config.context_length:,}" if p.config.context_limit else "no limit"


def groups(presets: Sequence[Preset]) -> list[tuple[str, list[Preset]]]:
    """The presets by family, families in the order their first preset comes."""
    found: dict[str, list[Preset]] = {}
    for p in presets:
        found.setdefault(p.family or "other", []).append(p)
    return list(found.items())


def _table(presets: Sequence[Preset]) -> Table:
    columns = [
        "preset",
        "model",
        "source",
        "parameters",
        "vocab",
        "d_model",
        "context",
        "positions",
    ]
    table = new_table(*columns, right=("parameters", "vocab", "d_model", "context"))
    grouped = groups(presets)
    for g, (family, members) in enumerate(grouped):
        add_row(table, Text(family, style="bold"), *[""] * (len(columns) - 1))
        for i, p in enumerate(members):
            add_row(
                table,
                "  " + p.name,
                p.description,
                p.source or "",
                _parameters(p, exact=True),
                f"{p.config.vocab_size:,}",
                f"{p.config.d_model:,}",
                _context(p),
                p.config.positional,
                end_section=i == len(members) - 1 and g < len(grouped) - 1,
            )
    return table


def _lines(presets: Sequence[Preset], width: int) -> Text:
    """Narrow terminals: a line of sizes per preset, its model and source under it."""
    name_width = max(len(p.name) for p in presets) + 2
    indent = " " * (2 + name_width)
    out = Text()
    for g, (family, members) in enumerate(groups(presets)):
        if g:
            out.append("\n")
        out.append(family, style="bold")
        for p in members:
            params = _parameters(p, exact=False).replace("\n", " params (") + (
                ")" if p.active_parameters is not None else " params"
            )
            sizes = [
                *([params] if p.model_parameters is not None else []),
                f"vocab {p.config.vocab_size:,}",
                f"d {p.config.d_model:,}",
                f"context {_context(p)}",
                p.config.positional,
            ]
            about = [p.description, *([p.source] if p.source else [])]
            first, *rest = pack(sizes, max(20, width - len(indent)))
            out.append(f"\n  {p.name:<{name_width}}{first}")
            for line in [*rest, *pack(about, max(20, width - len(indent)))]:
                out.append(f"\n{indent}{line}", style=None)
    return out


def presets_table(
    presets: Sequence[Preset], *, width: int = 100, plain: bool = True
) -> RenderableType:
    """Every preset by family in a table; narrow terminals get a line of sizes per preset, its
    model and source under it, with the parameter counts rounded (the exact ones: --json, or
    inspect-shapes --preset NAME)."""
    return Group(
        heading("Presets by family"),
        first_fitting(width, lambda: _table(presets), lambda: _lines(presets, width)),
        note(
            "a real family's preset is its published config.json, read as a model folder of "
            "that family is; a mixture of experts counts every expert, and says how many "
            "parameters one token runs through (the token table included, which some model "
            "cards leave out of their active count)"
        ),
        *(
            note(f"{p.name}: the hub page says {p.published}: {p.published_note}")
            for p in presets
            if p.published_note
        ),
        note(
            "inspect-shapes and positions --preset NAME: flags such as -d change the preset "
            "(the header says custom: ... with ...)"
        ),
    )
