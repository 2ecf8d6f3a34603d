"""Reports -> rich tables, and reports -> JSON-ready dicts. Rendering never computes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.broadcast import BroadcastPlan, format_shape
from embedcli.devices import format_bytes

if TYPE_CHECKING:
    from embedcli.devices import DeviceInfo
    from embedcli.pipeline import EmbedReport

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


# ---------------------------------------------------------------- JSON


def broadcast_json(plan: BroadcastPlan) -> dict[str, Any]:
    """``{"shapes", "aligned", "axes": [{"axis", "sizes", "result", "rule"}], "result"}``."""
    return {
        "shapes": [list(s) for s in plan.shapes],
        "aligned": [list(s) for s in plan.aligned],
        "axes": [
            {"axis": a.axis, "sizes": list(a.sizes), "result": a.result, "rule": a.rule}
            for a in plan.axes
        ],
        "result": list(plan.result),
    }


def embed_json(report: EmbedReport) -> dict[str, Any]:
    """The embed report as plain JSON types."""
    return {
        "config": report.config,
        "input_ids": report.input_ids,
        "attention_mask": report.attention_mask,
        "tokens": [
            [
                {
                    "position": t.position,
                    "id": t.id,
                    "piece": t.text,
                    "bytes": t.bytes_hex,
                    "pad": t.pad,
                }
                for t in seq
            ]
            for seq in report.tokens
        ],
        "truncated": report.truncated,
        "steps": [
            {"name": s.name, "shape": list(s.shape), "dtype": s.dtype, "device": s.device}
            for s in report.steps
        ],
        "broadcast": None if report.broadcast is None else broadcast_json(report.broadcast),
        "token_embeddings": report.token_embeddings,
        "position_embeddings": report.position_embeddings,
        "input_embeddings": report.input_embeddings,
        "verify": None
        if report.verify is None
        else {**asdict(report.verify), "ok": report.verify.ok},
    }


def devices_json(
    rows: Sequence[DeviceInfo], torch_version: str, cuda_version: str | None, auto: str
) -> dict[str, Any]:
    """``embedcli devices --json``."""
    return {
        "torch_version": torch_version,
        "cuda_version": cuda_version,
        "auto": auto,
        "devices": [asdict(row) for row in rows],
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
