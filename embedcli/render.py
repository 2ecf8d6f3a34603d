"""Reports -> rich tables. Rendering never computes; the JSON twins live in jsonout.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.broadcast import BroadcastPlan, format_shape
from embedcli.devices import format_bytes

TENSOR_NAMES = ("token_embeddings", "position_embeddings")

if TYPE_CHECKING:
    import tiktoken

    from embedcli.analysis import TableStats, TokenNeighbors, WeightsReport
    from embedcli.config import Preset
    from embedcli.devices import DeviceInfo
    from embedcli.pipeline import EmbedReport
    from embedcli.positions import Heatmap
    from embedcli.shapes import ShapesReport
    from embedcli.tokens import Segment, TokenizeReport
    from embedcli.windows import WindowPlan

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


def step_operation(name: str, positional: str) -> str:
    """What made a traced tensor, for this positional family."""
    if positional == "sinusoidal" and name == "position_embeddings":
        return "sin/cos table[:T]: fixed, no parameters"
    if positional == "rope" and name == "input_embeddings":
        return "token_embeddings: rope adds nothing here"
    if name == "rope_angles":
        return "position_ids × 10000^(-2i/d): rotates queries and keys inside attention"
    return STEP_OPERATIONS.get(name, "")


def addition_view(plan: BroadcastPlan | None, positional: str) -> RenderableType:
    """How positions enter: the broadcast of the addition, or why nothing is added."""
    if plan is not None:
        return broadcast_table(
            plan,
            TENSOR_NAMES,
            "Broadcast: position embeddings are added to every sequence of the batch",
        )
    if positional == "rope":
        return Text(
            "positional rope: nothing is added, input_embeddings = token_embeddings; attention "
            "rotates each pair of query and key dimensions by rope_angles = position × "
            "10000^(-2i/d), so a rope model has no position_embeddings tensor at all"
        )
    return Text("positional none: nothing is added, input_embeddings = token_embeddings")


def rope_table(angles: Sequence[Sequence[float]], show: int) -> Table:
    """The first positions' rotation angles (radians) for the first pairs of dimensions."""
    pairs = min(show, len(angles[0]) if angles else 0)
    total = len(angles[0]) if angles else 0
    table = Table(title=f"RoPE angles, radians ({pairs} of {total} pairs)", title_justify="left")
    table.add_column("pos", justify="right")
    for i in range(pairs):
        table.add_column(f"pair {i}", justify="right")
    for position, row in enumerate(angles[:MAX_POSITIONS]):
        table.add_row(str(position), *(f"{v:.4f}" for v in row[:pairs]))
    return table


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


def embed_tables(
    report: EmbedReport, show: int = 4, *, width: int = 100, plain: bool = True
) -> RenderableType:
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
            s.name,
            format_shape(s.shape),
            s.dtype,
            s.device,
            step_operation(s.name, cfg["positional"]),
        )
    parts.append(steps)

    parts.append(addition_view(report.broadcast, cfg["positional"]))

    if report.rope_angles is not None:
        parts.append(rope_table(report.rope_angles, show))
    parts.append(vectors_table(report, show))
    for b, matrix in enumerate(report.similarity or ()):
        from embedcli.positions import Heatmap

        pieces = [t.piece for t in report.tokens[b]]
        which = f" of sequence {b}" if len(report.tokens) > 1 else ""
        parts.append(
            heatmap_view(
                Heatmap(
                    f"cosine similarity between the input embeddings{which}",
                    "similarity",
                    "token",
                    "token",
                    matrix,
                    row_labels=pieces,
                    column_labels=[str(i) for i in range(len(pieces))],
                ),
                width=width,
                plain=plain,
            )
        )
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


# ---------------------------------------------------------------- inspect-shapes, broadcast


def shapes_tables(report: ShapesReport) -> RenderableType:
    """Every tensor, the broadcast, the parameters, and addition versus concatenation."""
    cfg = report.config
    header = Text.assemble(
        ("inspect-shapes", "bold"),
        f" · preset {report.preset} ({report.preset_description}) · vocab {cfg['vocab_size']:,} · "
        f"d {cfg['d_model']:,} · context {cfg['context_length']:,} · "
        f"{cfg['positional']} positions · batch {cfg['batch_size']} · seq-len {cfg['seq_len']} · "
        f"{cfg['device']} · {cfg['dtype']}",
    )
    tensors = Table(title="Tensors of the forward pass", title_justify="left")
    for column in ("tensor", "shape", "dtype", "device", "numel", "bytes"):
        tensors.add_column(column, justify="right" if column in ("numel", "bytes") else "left")
    for t in report.tensors:
        tensors.add_row(
            t.name, format_shape(t.shape), t.dtype, t.device, f"{t.numel:,}", format_bytes(t.bytes)
        )
    parts: list[RenderableType] = [header, tensors]
    parts.append(addition_view(report.broadcast, cfg["positional"]))
    parts += [parameters_table(report), combine_table(report)]
    return Group(*parts)


def parameters_table(report: ShapesReport) -> Table:
    """Rows for each table and the total, with memory in every dtype."""
    p, cfg = report.parameters, report.config
    table = Table(title="Parameters", title_justify="left")
    table.add_column("table")
    table.add_column("shape")
    table.add_column("parameters", justify="right")
    table.add_column("float32", justify="right")
    table.add_column("float16 / bfloat16", justify="right")
    rows = [("token_embeddings", (cfg["vocab_size"], cfg["d_model"]), p.token_embeddings)]
    if p.position_embeddings:
        rows.append(
            ("position_embeddings", (cfg["context_length"], cfg["d_model"]), p.position_embeddings)
        )
    for name, shape, count in rows:
        table.add_row(
            name,
            format_shape(shape),
            f"{count:,}",
            format_bytes(4 * count),
            format_bytes(2 * count),
        )
    if cfg["positional"] in ("sinusoidal", "rope"):
        fixed = (
            "(context_length, d) sin/cos buffer"
            if cfg["positional"] == "sinusoidal"
            else "angles computed in attention"
        )
        table.add_row(f"positions ({cfg['positional']})", fixed, "0", "—", "—")
    table.add_row(
        "total",
        "",
        f"{p.total:,}",
        format_bytes(p.bytes_by_dtype["float32"]),
        format_bytes(p.bytes_by_dtype["float16"]),
        end_section=True,
    )
    if p.model_parameters is not None and p.share_of_model is not None:
        whole = (
            f"the {p.model_parameters:,} parameters in {report.preset_description} (tied tensors "
            "counted once)"
            if report.preset == "checkpoint"
            else f"the whole {report.preset} model's {p.model_parameters:,} parameters (output "
            "head tied to the token table)"
        )
        table.caption = f"the embeddings are {p.share_of_model:.2%} of {whole}"
        table.caption_justify = "left"
    return table


def combine_table(report: ShapesReport) -> Table:
    """Adding keeps the width at d; concatenating doubles it, and the next layer pays."""
    c = report.combine
    table = Table(title="Add or concatenate token and position vectors?", title_justify="left")
    for column in ("combine", "result width", "first linear layer", "its parameters"):
        table.add_column(column, justify="left" if column == "combine" else "right")
    table.add_row(
        "add (GPT-2)",
        str(c.add_width),
        f"{c.add_width} → {c.d_model}",
        f"{c.add_linear_parameters:,}",
    )
    table.add_row(
        "concatenate",
        str(c.concat_width),
        f"{c.concat_width} → {c.d_model}",
        f"{c.concat_linear_parameters:,}",
    )
    extra = c.concat_linear_parameters - c.add_linear_parameters
    table.caption = f"concatenating costs {extra:,} more parameters in that layer alone"
    table.caption_justify = "left"
    return table


def presets_table(presets: Sequence[Preset]) -> Table:
    """``inspect-shapes --list-presets``."""
    table = Table(title="Presets (explicit flags override their values)", title_justify="left")
    for column in ("preset", "model", "vocab", "d_model", "context", "batch × seq", "parameters"):
        table.add_column(column, justify="left" if column in ("preset", "model") else "right")
    for p in presets:
        cfg = p.config
        params = "" if p.model_parameters is None else f"{p.model_parameters:,}"
        table.add_row(
            p.name,
            p.description,
            f"{cfg.vocab_size:,}",
            f"{cfg.d_model:,}",
            f"{cfg.context_length:,}",
            f"{p.batch_size} × {p.seq_len}",
            params,
        )
    return table


def broadcast_view(plan: BroadcastPlan) -> RenderableType:
    """``embedcli broadcast``: the aligned shapes, each axis's rule, then the result."""
    names = [f"shape {i}" for i in range(1, len(plan.shapes) + 1)]
    steps = Text(
        "Right-align the shapes and pad the shorter ones with 1s on the left; then, per axis, "
        "equal sizes are kept and a 1 is stretched to the other size."
    )
    table = broadcast_table(plan, names, "Broadcast, axis by axis")
    return Group(steps, table)


# ---------------------------------------------------------------- checkpoints


def weights_view(report: WeightsReport) -> RenderableType:
    """Every tensor, which ones are the tables, and whether the head is tied."""
    table = Table(title=f"{report.path} ({report.format})", title_justify="left")
    for column in ("tensor", "shape", "dtype", "role"):
        table.add_column(column)
    roles = {
        report.token_key: "token table",
        report.position_key: "positional table",
        report.head_key: f"output head ({report.head_tied})",
    }
    for t in report.tensors:
        table.add_row(t.name, format_shape(t.shape), t.dtype, roles.get(t.name, ""))
    if report.layout is None:
        summary = Text(f"no embedding tables detected: {report.detection_error}")
    else:
        position = report.position_key or "no learned positional table"
        summary = Text(
            f"layout: {report.layout} · token table: {report.token_key} · positions: {position}"
            f" · output head: {report.head_tied} · {report.parameters:,} parameters"
            " (tied tensors counted once)"
        )
    parts: list[RenderableType] = [table, summary]
    if report.extra:
        parts.append(Text("other entries: " + ", ".join(report.extra), style="dim"))
    return Group(*parts)


def neighbors_view(source: str, rows: Sequence[TokenNeighbors]) -> RenderableType:
    """Each token of the text, and its nearest tokens with their cosine similarity."""
    table = Table(title="Nearest tokens by cosine similarity", title_justify="left")
    table.add_column("index", justify="right")
    table.add_column("id", justify="right")
    table.add_column("piece")
    table.add_column("nearest tokens (cosine similarity)")
    for row in rows:
        near = ", ".join(f"{n.display} {n.score:.3f}" for n in row.neighbors)
        table.add_row(str(row.index), str(row.id), row.display, near)
    return Group(Text(f"tables: {source}"), table)


def stats_view(source: str, stats: Sequence[TableStats], seeded: bool) -> RenderableType:
    """Mean, std, range, share within one std, and row-norm percentiles, per table."""
    table = Table(title="Table statistics", title_justify="left")
    for column in ("table", "shape", "mean", "std", "min", "max", "within ±1 std"):
        table.add_column(column, justify="left" if column in ("table", "shape") else "right")
    for s in stats:
        table.add_row(
            s.name,
            format_shape(s.shape),
            f"{s.mean:+.4f}",
            f"{s.std:.4f}",
            f"{s.min:+.3f}",
            f"{s.max:+.3f}",
            f"{s.within_one_std:.1%}",
        )
    norms = Table(title="Row norms (percentiles)", title_justify="left")
    norms.add_column("table")
    for key in stats[0].row_norm_percentiles:
        norms.add_column(key, justify="right")
    for s in stats:
        norms.add_row(s.name, *(f"{v:.3f}" for v in s.row_norm_percentiles.values()))
    parts: list[RenderableType] = [Text(f"tables: {source}"), table, norms]
    if seeded:
        parts.append(
            Text(
                "nn.Embedding initialises its weights from N(0, 1), not from a uniform range: "
                "mean ≈ 0, std ≈ 1, 68.3% of values within one std (a uniform distribution would "
                "give 57.7%), and rows of length ≈ √d."
            )
        )
    return Group(*parts)


# ---------------------------------------------------------------- windows

WINDOW_COLUMNS = 8  # positions drawn per window; longer windows end in "…"


def windows_view(
    enc: tiktoken.Encoding, plan: WindowPlan, shown: Sequence[dict[str, list]]
) -> RenderableType:
    """Each shown batch: every window's input (x) over its target (y), one column a position,
    so the shift by one token reads diagonally; then the totals."""
    from embedcli.encodings import token_piece

    parts: list[RenderableType] = []
    width = min(plan.max_length, WINDOW_COLUMNS)
    for number, batch in enumerate(shown):
        table = Table(
            title=f"Batch {number}: inputs (x) and targets (y = x shifted by one)",
            title_justify="left",
        )
        table.add_column("row", justify="right")
        table.add_column("")
        for position in range(width):
            table.add_column(f"t{position}")
        if plan.max_length > width:
            table.add_column("…")
        for row, (inputs, targets) in enumerate(
            zip(batch["inputs"], batch["targets"], strict=True)
        ):
            for label, ids in (("x", inputs), ("y", targets)):
                cells = [f"{token_piece(enc, i).display}\n{i}" for i in ids[:width]]
                table.add_row(
                    str(row) if label == "x" else "",
                    label,
                    *cells,
                    *(["…"] if plan.max_length > width else []),
                    end_section=label == "y",
                )
        parts.append(table)
    parts.append(
        Text(
            f"{enc.name} · {plan.num_tokens:,} tokens · max-length {plan.max_length} · stride "
            f"{plan.stride} · {plan.num_windows:,} windows in {plan.num_batches:,} batches of "
            f"{plan.batch_size} · {plan.dropped_tokens:,} "
            f"token{'' if plan.dropped_tokens == 1 else 's'} dropped at the end"
            + (" (last short batch kept)" if plan.keep_last else "")
        )
    )
    return Group(*parts)


# ---------------------------------------------------------------- heatmaps

RAMP = " .:-=+*#%@"  # low to high, for terminals without colour
HEATMAP_MAX_ROWS = 64  # more rows are sampled evenly


def _colour(value: float, limit: float) -> str:
    """Diverging blue (negative) - white (0) - red (positive), as an rgb() colour."""
    t = max(-1.0, min(1.0, value / limit))
    if t < 0:
        r, g, b = (255 + t * 255 * 0.8, 255 + t * 255 * 0.6, 255)
    else:
        r, g, b = (255, 255 - t * 255 * 0.8, 255 - t * 255 * 0.8)
    return f"rgb({int(r)},{int(g)},{int(b)})"


def _ramp(value: float, limit: float) -> str:
    t = (max(-1.0, min(1.0, value / limit)) + 1) / 2
    return RAMP[min(len(RAMP) - 1, int(t * len(RAMP)))]


def _fit_columns(row: Sequence[float], bins: int) -> list[float]:
    """Average neighbouring columns into ``bins`` columns (or keep them all when they fit)."""
    if len(row) <= bins:
        return list(row)
    out = []
    for i in range(bins):
        start = i * len(row) // bins
        chunk = row[start : max((i + 1) * len(row) // bins, start + 1)]
        out.append(sum(chunk) / len(chunk))
    return out


def heatmap_view(heatmap: Heatmap, *, width: int, plain: bool) -> RenderableType:
    """Rows top to bottom, columns averaged to fit ``width``; half-blocks (two rows a line) in
    colour, a character ramp without; and a legend of the scale."""
    matrix = heatmap.matrix
    picked = list(range(len(matrix)))
    if len(picked) > HEATMAP_MAX_ROWS:
        step = len(picked) / HEATMAP_MAX_ROWS
        picked = [int(i * step) for i in range(HEATMAP_MAX_ROWS)]
    labels = heatmap.row_labels or [str(i) for i in range(len(matrix))]
    label_width = max(len(labels[i]) for i in picked) if picked else 1
    label_width = min(label_width, 12)
    available = max(8, width - label_width - 2)
    columns = len(matrix[0]) if matrix else 0
    cell = max(1, min(3, available // max(columns, 1)))
    bins = min(columns, available // cell)
    rows = [_fit_columns(matrix[i], bins) for i in picked]
    limit = heatmap.limit
    lines = Text()
    step = 1 if plain else 2
    for k in range(0, len(rows), step):
        lines.append(labels[picked[k]][:label_width].rjust(label_width) + " ", style="dim")
        for j in range(bins):
            if plain:
                lines.append(_ramp(rows[k][j], limit) * cell)
            else:
                upper = _colour(rows[k][j], limit)
                lower = _colour(rows[k + 1][j], limit) if k + 1 < len(rows) else "default"
                lines.append("▀" * cell, style=f"{upper} on {lower}")
        if k + step < len(rows):
            lines.append("\n")
    notes = []
    if len(picked) < len(matrix):
        notes.append(f"{len(picked)} of {len(matrix)} {heatmap.row_axis}s shown, evenly sampled")
    if bins < columns:
        notes.append(f"{columns} {heatmap.column_axis}s averaged into {bins} columns")
    legend = Text("scale: ")
    legend.append(f"{-limit:+.2f} ")
    for i in range(21):
        value = -limit + 2 * limit * i / 20
        if plain:
            legend.append(_ramp(value, limit))
        else:
            legend.append("█", style=_colour(value, limit))
    legend.append(f" {limit:+.2f}")
    if heatmap.column_labels and bins == columns:
        legend.append("   columns: " + " ".join(heatmap.column_labels[:bins]))
    parts: list[RenderableType] = [
        Text(heatmap.title, style="bold"),
        Text(
            f"rows: {heatmap.row_axis} · columns: {heatmap.column_axis}"
            + ("" if not notes else " · " + " · ".join(notes))
        ),
        lines,
        legend,
    ]
    return Group(*parts)
