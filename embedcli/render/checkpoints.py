"""What a checkpoint holds, and what a table has learned: nearest tokens and statistics."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.core.memory import format_bytes
from embedcli.render.common import (
    add_row,
    first_fitting,
    format_shape,
    heading,
    items_line,
    new_table,
    note,
    pack,
    plural,
    visible_name,
)

if TYPE_CHECKING:
    from embedcli.analysis.neighbors import TokenNeighbors
    from embedcli.analysis.stats import TableStats
    from embedcli.models.gguf.ollama import OllamaModel
    from embedcli.models.inventory import WeightsReport

PIECE_WIDTH = 16  # longer pieces end in "…"
BORDERS_4 = 13  # a boxed table of four columns: five rules and a space each side of every cell


# How the output head relates to the token table, in words.
_HEAD = {
    "same storage": "output head: tied (same storage)",
    "equal values": "output head: tied (equal values)",
    "not tied": "output head: not tied",
    "no output head": "no output head",
    "tied (config.json)": "output head: tied to the token table (config.json)",
    "not tied (config.json)": "output head: not tied (config.json)",
    "not compared": "output head: not compared (read over the network, and config.json is silent)",
    "tied (GGUF)": "output head: tied to the token table (the file has no output.weight)",
    "not tied (GGUF)": "output head: not tied (output.weight)",
}
_TIED = ("same storage", "equal values")


def weights_view(report: WeightsReport, *, width: int = 100, plain: bool = True) -> RenderableType:
    """Every tensor, which ones are the tables, and whether the head is tied."""
    roles = {
        report.token_key: "token table",
        report.position_key: "positional table",
        **report.input_layer,
        report.head_key: (
            "output head"  # how it is tied, the summary says
            if report.head_tied.endswith(")")
            else f"output head ({report.head_tied})"
        ),
    }

    gguf = report.gguf

    def tensors(with_roles: bool) -> Table:
        # Long tensor names (model.layers.31.self_attn.q_proj.weight) are never split: on a
        # narrow terminal the role column goes, and the summary below names the tables.
        stored = ["GGML type", "bytes"] if gguf else ["dtype"]
        table = new_table(
            "tensor", "shape", *stored, *(["role"] if with_roles else []), wrap=("role",)
        )
        for t in report.tensors:
            role = [roles.get(t.name, "")] if with_roles else []
            kind = (
                [gguf["tensor_types"][t.name], f"{gguf['tensor_bytes'][t.name]:,}"]
                if gguf
                else [t.dtype]
            )
            add_row(table, visible_name(t.name), format_shape(t.shape), *kind, *role)
        return table

    table = first_fitting(width, lambda: tensors(True), lambda: tensors(False))
    if report.layout is None:
        summary = Text(f"no embedding tables detected: {visible_name(str(report.detection_error))}")
    else:
        summary = items_line(
            [
                f"layout: {report.layout}",
                f"token table: {visible_name(str(report.token_key))}",
                f"positions: {visible_name(report.position_key or 'no learned table')}",
                _HEAD[report.head_tied],
                f"{report.parameters:,} parameters"
                + (" (tied tensors counted once)" if report.head_tied in _TIED else ""),
            ],
            width,
        )
    model = [f"{k}: {v}" for k, v in (report.model or {}).items()]
    parts: list[RenderableType] = [
        items_line([visible_name(str(report.path)), report.format, *model], width),
        table,
        summary,
    ]
    if gguf:
        parts.insert(1, items_line(gguf_lines(gguf), width))
    if report.ollama is not None:
        parts[2:2] = ollama_parts(report.ollama, width)
    if report.extra:
        parts.append(Text("other entries: " + ", ".join(report.extra), style="dim"))
    return Group(*parts)


def ollama_parts(model: OllamaModel, width: int) -> list[RenderableType]:
    """An Ollama model's manifest (each layer, its size, whether its blob is here), its config,
    the notes of what could not be read, and its chat template as the blob holds it."""
    layers = [
        f"{layer.kind} {format_bytes(layer.size) if layer.size is not None else '(no size)'}"
        + ("" if layer.here else " (blob not here)")
        for layer in model.layers
    ]
    items = [f"Ollama {visible_name(model.name)}", f"manifest {visible_name(model.manifest)}"]
    items.append("layers: " + ", ".join(layers))
    if model.config:
        items += [f"{k}: {visible_name(str(v))}" for k, v in model.config.items()]
    if model.params is not None:
        items.append(f"params: {visible_name(json.dumps(model.params, ensure_ascii=False))}")
    parts: list[RenderableType] = [items_line(items, width)]
    parts += [note(line) for line in model.notes]
    if model.template is not None:
        parts.append(heading("Chat template (Ollama's template layer)"))
        parts.append(Text(_printable(model.template)))
    return parts


def _printable(text: str) -> str:
    """A template's text with its lines kept and every other control character escaped."""
    return "\n".join(visible_name(line) for line in text.split("\n"))


def gguf_lines(gguf: dict) -> list[str]:
    """A GGUF file's version, architecture, input-layer metadata and tokenizer, as items."""
    items = [f"GGUF v{gguf['version']}", f"architecture: {gguf['architecture']}"]
    if gguf.get("name"):
        items.append(f"name: {visible_name(str(gguf['name']))}")
    items += [f"{k}: {_compact(v)}" for k, v in gguf["metadata"].items()]
    tokenizer = gguf["tokenizer"]
    if tokenizer:
        said = ", ".join(f"{k} {visible_name(_compact(v))}" for k, v in tokenizer.items())
        items.append(f"tokenizer: {said}")
    if gguf.get("special_tokens"):
        items.append(_special_tokens(gguf["special_tokens"]))
    elif gguf.get("special_tokens_error"):
        items.append(f"llama.cpp's special tokens: none ({gguf['special_tokens_error']})")
    return items


_NAMED = ("bos", "eos", "unk", "sep", "pad", "eot", "eom")
_SHOWN_EOG = 8  # end-of-generation tokens named; more are counted
_CANDIDATES = "one of {}, which llama.cpp's hash map of texts picks"


def _special_tokens(found: dict) -> str:
    """llama.cpp's special tokens as one item: each id with its text, then its flags."""
    texts = found["texts"]

    def token(i: int) -> str:
        return f"{i} {visible_name(repr(texts[i]))}"

    said = [f"{name} {token(found[name])}" for name in _NAMED if found[name] is not None]
    said += [
        f"{name} {_CANDIDATES.format(', '.join(map(token, ids)))}"
        for name, ids in found["undetermined"].items()
    ]
    eog = [token(i) for i in found["eog"][:_SHOWN_EOG]]
    more = len(found["eog"]) - _SHOWN_EOG
    said.append("eog " + ", ".join(eog + ([f"… ({more} more)"] if more > 0 else [])))
    said += [f"{k} {found[k]}" for k in ("add_bos", "add_eos", "add_space_prefix")]
    return "llama.cpp's special tokens: " + "; ".join(said)


def _compact(value: object) -> str:
    """A metadata value in a few characters: a per-block list as its one value ×N, or its
    first entries and length."""
    if isinstance(value, bool) or not isinstance(value, int | list | dict):
        return visible_name(str(value))
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):  # a long array, summed up by the summary
        count = value.get("entries", value.get("strings"))
        return f"{count:,} entries"
    if value and all(v == value[0] for v in value) and len(value) > 1:
        return f"{value[0]} ×{len(value)}"
    if len(value) <= 6:
        return "[" + ", ".join(map(str, value)) + "]"
    return "[" + ", ".join(map(str, value[:4])) + f", … ({len(value)})]"


def neighbors_view(
    source: str,
    rows: Sequence[TokenNeighbors],
    *,
    seeded: bool,
    width: int = 100,
    plain: bool = True,
) -> RenderableType:
    """Each token of the text, and its nearest tokens with their cosine similarity; a
    neighbor and its score always share a line."""
    table = new_table(
        "index", "id", "piece", "nearest tokens (cosine similarity)", right=("index", "id")
    )
    table.columns[2].max_width = PIECE_WIDTH
    table.columns[2].overflow = "ellipsis"
    table.columns[3].no_wrap = False
    used = sum(
        max(cell_len(header), *(cell_len(value) for value in values), 1)
        for header, values in (
            ("index", [str(r.token.index) for r in rows]),
            ("id", [str(r.token.id) for r in rows]),
            ("piece", [r.token.display[:PIECE_WIDTH] for r in rows]),
        )
    )
    available = max(12, width - BORDERS_4 - used)
    for row in rows:
        near = [f"{n.display} {n.score:.3f}" for n in row.neighbors]
        near = [item + ("," if i < len(near) - 1 else "") for i, item in enumerate(near)]
        add_row(
            table,
            row.token.index,
            row.token.id,
            row.token.display,
            "\n".join(pack(near, available, " ")),
        )
    parts: list[RenderableType] = [Text(f"tables: {visible_name(str(source))}"), table]
    if seeded:
        parts.append(
            note(
                "these tables are untrained (seeded, not learned from text), so these neighbors "
                "are random: pass --weights with a trained checkpoint to see related tokens"
            )
        )
    return Group(*parts)


def _stats_table(stats: Sequence[TableStats]) -> Table:
    table = new_table(
        "table",
        "shape",
        "mean",
        "std",
        "min",
        "max",
        "within ±1 std",
        right=("mean", "std", "min", "max", "within ±1 std"),
        wrap=("within ±1 std",),
    )
    for s in stats:
        add_row(table, visible_name(s.name), format_shape(s.shape), *_values(s))
    return table


def _values(s: TableStats) -> list[str]:
    return [
        f"{s.mean:+.4f}",
        f"{s.std:.4f}",
        f"{s.min:+.3f}",
        f"{s.max:+.3f}",
        f"{s.within_one_std:.1%}",
    ]


def _norms_table(stats: Sequence[TableStats]) -> Table:
    keys = list(stats[0].row_norm_percentiles)
    table = new_table("table", *keys, right=keys)
    for s in stats:
        add_row(table, visible_name(s.name), *(f"{v:.3f}" for v in s.row_norm_percentiles.values()))
    return table


def _wide_stats(stats: Sequence[TableStats]) -> Group:
    return Group(
        heading("Table statistics"),
        _stats_table(stats),
        heading("Row norms (percentiles)"),
        _norms_table(stats),
    )


def _narrow_stats(stats: Sequence[TableStats]) -> Group:
    """One table, a column per table: the statistics, then the row-norm percentiles."""
    table = new_table("statistic", *(s.name for s in stats), right=[s.name for s in stats])
    add_row(table, "shape", *(format_shape(s.shape) for s in stats))
    columns = [_values(s) for s in stats]
    labels = ["mean", "std", "min", "max", "within ±1 std"]
    for k, label in enumerate(labels):
        add_row(table, label, *(c[k] for c in columns), end_section=k == len(labels) - 1)
    for key in stats[0].row_norm_percentiles:
        add_row(table, f"row norm {key}", *(f"{s.row_norm_percentiles[key]:.3f}" for s in stats))
    return Group(heading("Table statistics, and row norms (percentiles)"), table)


def stats_view(
    source: str,
    stats: Sequence[TableStats],
    seeded: bool,
    *,
    width: int = 100,
    plain: bool = True,
) -> RenderableType:
    """Mean, std, range, share within one std, and row-norm percentiles, per table."""
    parts: list[RenderableType] = [
        Text(f"tables: {visible_name(str(source))}"),
        first_fitting(width, lambda: _wide_stats(stats), lambda: _narrow_stats(stats)),
    ]
    for table in stats:
        if table.non_finite:
            parts.append(
                Text(
                    f"{table.name} holds {plural(table.non_finite, 'NaN or infinite value')}: "
                    "the statistics leave them out, and the row norms leave out their rows"
                )
            )
    if seeded:
        parts.append(
            Text(
                "nn.Embedding initialises its weights from N(0, 1), not from a uniform range: "
                "mean ≈ 0, std ≈ 1, 68.3% of values within one std (a uniform distribution would "
                "give 57.7%), and rows of length ≈ √d."
            )
        )
    return Group(*parts)
