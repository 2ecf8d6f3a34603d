"""Reports -> rich tables. Rendering never computes; the JSON twins live in jsonout.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.broadcast import BroadcastPlan, format_shape
from embedcli.devices import format_bytes

if TYPE_CHECKING:
    from embedcli.devices import DeviceInfo
    from embedcli.pipeline import EmbedReport
    from embedcli.tokens import Segment, TokenizeReport

# Tables list at most this many positions of each sequence; --json always has them all.
MAX_POSITIONS = 64

# What each traced tensor is, for readers learning the pipeline.
STEP_OPERATIONS = {
    "input_ids": "token ids, right-padded to the longest (T)",
    "token_embeddings": "token_embedding(input_ids)",
    "position_ids": "arange(T)",
    "position_embeddings": "position_embedding(position_ids)",
    "input_embeddings": "token_embeddings + position_embeddings",
}


# ---------------------------------------------------------------- tables


def broadcast_table(plan: BroadcastPlan, names: Sequence[str], title: str) -> Table:
    """Per axis: each operand's size after left-padding, the result, and the rule applied."""
    table = Table(title=title, title_justify="left")
    table.add_column("axis", justify="right")
    for name, shape, aligned in zip(names, plan.shapes, plan.aligned, strict=True):
        padded = len(aligned) - len(shape)
        header = f"{name}\n{format_shape(shape)}"
        if padded:
            header += f" → {format_shape(aligned)}"
        table.add_column(header, justify="right")
    table.add_column("result", justify="right")
    table.add_column("rule")
    for axis in plan.axes:
        sizes = []
        for shape, aligned, size in zip(plan.shapes, plan.aligned, axis.sizes, strict=True):
            padded = axis.axis + len(aligned) < len(aligned) - len(shape)  # left of the real axes
            sizes.append(f"{size} (padded)" if padded else str(size))
        rule = "sizes equal: kept" if axis.rule == "equal" else f"1 stretched to {axis.result}"
        table.add_row(str(axis.axis), *sizes, str(axis.result), rule)
    table.caption = f"result: {format_shape(plan.result)}"
    table.caption_justify = "left"
    return table


def vectors_table(report: EmbedReport, show: int) -> Table:
    """The first ``show`` dimensions of each position: token + position = input, per dimension."""
    d = report.config["d_model"]
    shown = min(show, d)
    multi = len(report.tokens) > 1
    table = Table(title=f"Vectors (first {shown} of {d} dimensions)", title_justify="left")
    if multi:
        table.add_column("seq", justify="right")
    table.add_column("pos", justify="right")
    table.add_column("piece", max_width=16, no_wrap=True)
    table.add_column("tensor", no_wrap=True)
    for i in range(shown):
        table.add_column(f"[{i}]", justify="right")
    if shown < d:
        table.add_column("…")
    more = ["…"] if shown < d else []
    for b, seq in enumerate(report.tokens):
        for t in seq[:MAX_POSITIONS]:
            rows = [("token", report.token_embeddings[b][t.position])]
            if report.position_embeddings is not None:
                rows.append(("+ position", report.position_embeddings[t.position]))
                rows.append(("= input", report.input_embeddings[b][t.position]))
            for k, (label, vector) in enumerate(rows):
                first = k == 0
                table.add_row(
                    *([str(b) if first else ""] if multi else []),
                    str(t.position) if first else "",
                    Text(t.piece if first else "", style="dim" if t.pad else ""),
                    label,
                    *(f"{v:+.4f}" for v in vector[:shown]),
                    *more,
                    end_section=k == len(rows) - 1,
                )
    return table


def embed_tables(report: EmbedReport, show: int = 4) -> RenderableType:
    """Header, tokens, pipeline steps, broadcast, and a preview of the vectors."""
    cfg = report.config
    batch = len(report.input_ids)
    multi = batch > 1
    header = Text.assemble(
        ("embed", "bold"),
        f" · {cfg['encoding']} · vocab {cfg['vocab_size']:,} · d {cfg['d_model']} · "
        f"context {cfg['context_length']} · {cfg['positional']} positions · seed {cfg['seed']} · "
        f"{cfg['device']} · {cfg['dtype']}",
    )
    parts: list[RenderableType] = [header]

    tokens = Table(title="Tokens", title_justify="left")
    if multi:
        tokens.add_column("seq", justify="right")
    tokens.add_column("pos", justify="right")
    tokens.add_column("id", justify="right")
    tokens.add_column("piece")
    for b, seq in enumerate(report.tokens):
        for t in seq[:MAX_POSITIONS]:
            piece = Text(f"{t.piece} (pad)", style="dim") if t.pad else Text(t.piece)
            tokens.add_row(*([str(b)] if multi else []), str(t.position), str(t.id), piece)
    parts.append(tokens)
    length = len(report.input_ids[0])
    if length > MAX_POSITIONS:
        parts.append(
            Text(
                f"(the tables show the first {MAX_POSITIONS} of {length} positions of each "
                "sequence; --json has all of them)",
                style="italic",
            )
        )
    for b, dropped in enumerate(report.truncated):
        if dropped:
            which = f"sequence {b}" if multi else "the sequence"
            parts.append(Text(f"--truncate dropped {dropped} tokens from the end of {which}."))

    steps = Table(title="Pipeline", title_justify="left")
    for column in ("step", "shape", "dtype", "device"):
        steps.add_column(column, no_wrap=True)
    steps.add_column("operation", overflow="fold")
    for s in report.steps:
        steps.add_row(
            s.name, format_shape(s.shape), s.dtype, s.device, STEP_OPERATIONS.get(s.name, "")
        )
    parts.append(steps)

    if report.broadcast is not None:
        parts.append(
            broadcast_table(
                report.broadcast,
                ("token_embeddings", "position_embeddings"),
                "Broadcast: position embeddings are added to every sequence of the batch",
            )
        )
    else:
        parts.append(Text("positional none: nothing is added, input_embeddings = token_embeddings"))

    parts.append(vectors_table(report, show))
    if report.verify is not None:
        v = report.verify
        word, style = ("agrees", "green") if v.ok else ("DISAGREES", "bold red")
        parts.append(
            Text.assemble(
                f"verify: {v.device} ",
                (word, style),
                f" with the CPU: largest difference {v.max_abs_diff:.3g} "
                f"(tolerance {v.tolerance:.3g} for {cfg['dtype']})",
            )
        )
    return Group(*parts)


def devices_table(
    rows: Sequence[DeviceInfo], torch_version: str, cuda_version: str | None, auto: str
) -> Table:
    """``embedcli devices``."""
    table = Table(title="Devices", title_justify="left")
    for column in ("device", "available", "description", "memory", "free"):
        table.add_column(column, justify="right" if column in ("memory", "free") else "left")
    for row in rows:
        table.add_row(
            row.name,
            "yes" if row.available else "no",
            row.description,
            "" if row.memory_total is None else format_bytes(row.memory_total),
            "" if row.memory_free is None else format_bytes(row.memory_free),
        )
    table.caption = (
        f"torch {torch_version} · CUDA {cuda_version or 'none'} · --device auto → {auto}"
    )
    table.caption_justify = "left"
    return table


# ---------------------------------------------------------------- tokenize

# Alternating backgrounds for token pieces, as on the tiktokenizer page.
SEGMENT_STYLES = (
    "black on #ffd6a5",
    "black on #caffbf",
    "black on #9bf6ff",
    "black on #bdb2ff",
    "black on #ffadad",
)
TOKEN_TABLE_LIMIT = 500  # tokens listed by the table view; --ids and --json have them all
PLAIN_SEPARATOR = "│"  # between pieces when there is no colour to tell them apart


def coloured_text(segments: Sequence[Segment], *, plain: bool) -> Text:
    """The text, each token (or split character) on its own alternating background."""
    text = Text()
    for i, segment in enumerate(segments):
        if plain:
            if i and not text.plain.endswith("\n"):
                text.append(PLAIN_SEPARATOR, style="dim")
            text.append(segment.text)
        else:
            text.append(segment.text, style=SEGMENT_STYLES[i % len(SEGMENT_STYLES)])
    return text


def _tokenize_header(report: TokenizeReport) -> Text:
    return Text.assemble(
        (report.encoding, "bold"),
        f" · {report.count:,} tokens · {report.characters:,} characters · "
        f"vocabulary {report.n_vocab:,}",
    )


def _shown_note(report: TokenizeReport) -> Text | None:
    shown = len(report.tokens or ())
    if report.count <= shown:
        return None
    return Text(
        f"(showing the first {shown:,} of {report.count:,} tokens; --ids or --json list them all)",
        style="italic",
    )


def tokenize_view(report: TokenizeReport, *, plain: bool) -> RenderableType:
    """Header, coloured text, then index / id / piece / bytes for each token."""
    table = Table(title_justify="left", show_edge=True)
    table.add_column("index", justify="right")
    table.add_column("id", justify="right")
    table.add_column("piece")
    table.add_column("bytes")
    for t in report.tokens or ():
        table.add_row(
            str(t.index),
            str(t.id),
            Text(t.display),
            " ".join(t.bytes_hex[i : i + 2] for i in range(0, len(t.bytes_hex), 2)),
        )
    parts: list[RenderableType] = [
        _tokenize_header(report),
        coloured_text(report.segments or (), plain=plain),
    ]
    if report.tokens:
        parts.append(table)
    note = _shown_note(report)
    if note is not None:
        parts.append(note)
    return Group(*parts)


def compare_view(reports: Sequence[TokenizeReport], *, plain: bool) -> RenderableType:
    """Several encodings: each one's coloured text, then their counts side by side."""
    parts: list[RenderableType] = []
    for report in reports:
        parts += [_tokenize_header(report), coloured_text(report.segments or (), plain=plain)]
        note = _shown_note(report)
        if note is not None:
            parts.append(note)
        parts.append(Text(""))
    table = Table(title="Token counts", title_justify="left")
    for column in (
        "encoding",
        "vocabulary",
        "tokens",
        "characters per token",
        f"vs {reports[0].encoding}",
    ):
        table.add_column(column, justify="left" if column == "encoding" else "right")
    first = reports[0].count
    for report in reports:
        per_token = report.characters / report.count if report.count else 0.0
        versus = f"{report.count / first:.2f}×" if first else "—"
        table.add_row(
            report.encoding, f"{report.n_vocab:,}", f"{report.count:,}", f"{per_token:.2f}", versus
        )
    parts.append(table)
    return Group(*parts)
