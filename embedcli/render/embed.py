"""``embedcli embed``: the header, the pipeline, the addition, each sequence's tokens and
vectors, similarity maps, and the notes on what the tables leave out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from embedcli.core.steps import NORM_NAMES, applied_scale, positions_phrase
from embedcli.pipeline.positionmaps import Heatmap
from embedcli.render.common import (
    add_row,
    first_fitting,
    fits,
    format_shape,
    heading,
    items_line,
    new_table,
    note,
    plural,
    visible_name,
)
from embedcli.render.heatmap import heatmap_view
from embedcli.render.shapes import addition_view

if TYPE_CHECKING:
    from embedcli.pipeline.embed import EmbedReport
    from embedcli.tokenization.encodings import Token

# Tables list at most this many positions of each sequence; --json always has them all.
MAX_POSITIONS = 64
PIECE_WIDTH = 12  # longer pieces end in "…" in the vectors table


def _not_shown(model: Any) -> list[str]:
    """A multimodal model's towers the header names as not shown (its sub-configs)."""
    towers = (model or {}).get("not_shown")
    return [f"not shown: {', '.join(f'{k} ({v})' for k, v in towers.items())}"] if towers else []


def _rope_free(model: Any) -> list[str]:
    """Llama 4's layers without rope, and whether layer 0 (the first block) uses rope."""
    layers = (model or {}).get("rope_free_layers")
    if layers is None:
        return []
    first = "layer 0 uses rope" if model["layer_0_rope"] else "layer 0 uses no rope"
    listed = ", ".join(map(str, layers[:6])) + (", …" if len(layers) > 6 else "")
    return [f"{first}; no rope in layers {listed}" if layers else first]


def _mrope(model: Any) -> list[str]:
    """Multimodal rope with token ids alone: its three streams, each the token's position."""
    mrope = (model or {}).get("mrope")
    if not mrope:
        return []
    sections = "/".join(map(str, mrope["section"]))
    return [f"mrope {sections}: temporal = height = width = position (plain rope's angles)"]


def _header(report: EmbedReport, width: int) -> Text:
    cfg, src = report.config, report.source
    source = [f"weights {visible_name(src.weights)}"] if src.trained else [f"seed {cfg.seed}"]
    stored = src.table_type
    if stored:  # a GGUF table: how it is stored, what its rows were read as, their error
        source.append(f"table {stored.ggml_type} → {stored.lookup_dtype}")
        if stored.max_error is not None:  # in the table's values, before any scale
            scaled = " (in the table, before its scale)" if cfg.embed_scale != 1.0 else ""
            source.append(f"quantization error ≤ {stored.max_error:.3g}{scaled}")
    return items_line(
        [
            src.encoding,
            f"vocab {cfg.vocab_size:,}",
            f"d {cfg.d_model:,}",
            f"context {cfg.context_length:,}" if cfg.context_limit else "no context limit",
            positions_phrase(cfg, src.model),
            *_not_shown(src.model),
            *_mrope(src.model),
            *_rope_free(src.model),
            *source,
            src.device,
            cfg.dtype,
        ],
        width,
        lead="embed",
    )


def _pipeline_table(report: EmbedReport, *, stacked: bool) -> Table:
    """Full: step, shape, dtype, device, operation. Stacked (narrow): the dtype under the shape,
    the device left to the header line."""
    columns = ("step", "shape", "operation") if stacked else ("step", "shape", "dtype", "device")
    table = new_table(*columns, *(() if stacked else ("operation",)), wrap=("operation",))
    for s in report.steps:
        if stacked:
            add_row(table, s.name, f"{format_shape(s.shape)}\n{s.dtype}", s.operation)
        else:
            add_row(table, s.name, format_shape(s.shape), s.dtype, s.device, s.operation)
    return table


def pipeline_block(report: EmbedReport, width: int) -> Group:
    """Every tensor the module made, in order, with the operation that made it."""
    return Group(
        heading("Pipeline"),
        first_fitting(
            width,
            lambda: _pipeline_table(report, stacked=False),
            lambda: _pipeline_table(report, stacked=True),
        ),
    )


def rope_block(
    angles: Sequence[Sequence[float]],
    show: int,
    max_positions: int,
    attention_factor: float | None = None,
    sequence_length: int | None = None,
) -> Group:
    """The first positions' rotation angles (radians) for the first pairs of dimensions; the
    attention factor on cos and sin where it is not 1, and dynamic scaling's length."""
    total = angles.shape[1] if len(angles) else 0
    pairs = min(show, total)
    table = new_table("pos", *(f"pair {i}" for i in range(pairs)), right=["pos"])
    for column in table.columns[1:]:
        column.justify = "right"
    for position, row in enumerate(angles[:max_positions]):
        add_row(table, position, *(f"{v:.4f}" for v in row[:pairs].tolist()))
    said = [f"{pairs} of {total} pairs"]
    if attention_factor is not None and attention_factor != 1.0:
        said.append(f"attention multiplies cos and sin by {attention_factor:.6g}")
    if sequence_length is not None:
        said.append(f"dynamic scaling for a sequence of {sequence_length:,}")
    return Group(heading(f"RoPE angles, radians ({'; '.join(said)})"), table)


def _vectors_table(
    report: EmbedReport,
    b: int,
    dims: int,
    max_positions: int,
    only: Sequence[int] | None = None,
) -> Table:
    """One sequence: each position's id and piece, then token + position = input, per
    dimension (the first ``dims``); without a positional table, the token vector alone."""
    labelled = any(
        t is not None
        for t in (
            report.position_embeddings,
            report.scaled_embeddings,
            report.projected_embeddings,
            report.token_type_embeddings,
        )
    ) or any(s.name == "embedding_layernorm" for s in report.steps)
    table = new_table("pos", "id", "piece", *(["tensor"] if labelled else []), right=("pos", "id"))
    table.columns[2].max_width = PIECE_WIDTH
    table.columns[2].overflow = "ellipsis"
    for i in range(dims):
        table.add_column(Text(f"[{i}]"), justify="right", no_wrap=True)
    for position, t in enumerate(report.tokens[b][:max_positions]):
        if only is not None and position not in only:
            continue
        piece = Text("(pad)", style="dim") if t.pad else Text(("+" if t.added else "") + t.display)
        vectors, labels = _vector_rows(report, b, position, labelled)
        for k, (label, vector) in enumerate(zip(labels, vectors, strict=True)):
            first = k == 0
            add_row(
                table,
                position if first else "",
                t.id if first else "",
                piece if first else "",
                *([label] if labelled else []),
                *(f"{v:+.4f}" for v in vector[:dims].tolist()),
                end_section=labelled and k == len(vectors) - 1,
            )
    return table


def _vector_rows(
    report: EmbedReport, b: int, position: int, labelled: bool
) -> tuple[list[Any], list[str | None]]:
    """One position's vectors, step by step, and the label of each row."""
    vectors = [report.token_embeddings[b][position]]
    labels: list[str | None] = ["token"] if labelled else [None]
    steps = (
        (report.scaled_embeddings, f"× {applied_scale(report.config):.6g}"),
        (report.projected_embeddings, "project_in"),
        (report.token_type_embeddings, "+ type 0"),
    )
    for tensor, label in steps:
        if tensor is not None:
            vectors.append(tensor[b][position])
            labels.append(label)
    if report.position_embeddings is not None:
        vectors.append(_positions_of(report, b)[position])
        labels.append("+ pos")
    if report.row0_embeddings is not None:  # TAPAS, LayoutLM: the row-0 tables' sum
        vectors.append(report.row0_embeddings[b][position])
        labels.append("+ row 0s")
    normed = any(s.name == "embedding_layernorm" for s in report.steps)
    final = report.input_embeddings[b][position]
    # the last row shown is the input only where it holds the same numbers (a step the rows
    # leave out, T5Gemma 2's replaced row, shows as its own input row)
    if len(vectors) > 2 or normed or not bool((vectors[-1] == final).all()):
        vectors.append(final)
        norm = NORM_NAMES[report.config.norm_kind]
        labels.append(f"{norm} = input" if normed else "= input")
    elif labelled:
        labels[-1] = f"{labels[-1]} = input"
    return vectors, labels


def _positions_of(report: EmbedReport, b: int) -> Any:
    """Sequence ``b``'s position vectors (T, d): one table for the batch, or its own rows where
    the family counts positions per sequence."""
    position = report.position_embeddings
    return position[b] if position.dim() == 3 else position


def _widest_rows(report: EmbedReport, b: int, dims: int, max_positions: int) -> set[int]:
    """The positions holding the widest cell of some column among the first ``dims``: the
    longest piece, the largest id and position, and each dimension's largest magnitude in each
    vector shown."""
    tokens = report.tokens[b][:max_positions]
    count = len(tokens)
    rows = {0, count - 1} if count else set()
    rows.add(max(range(count), key=lambda i: len(tokens[i].display), default=0))
    rows.add(max(range(count), key=lambda i: tokens[i].id, default=0))
    vectors = [report.token_embeddings[b], report.input_embeddings[b]]  # (T, d) each
    if report.scaled_embeddings is not None:
        vectors.append(report.scaled_embeddings[b])
    if report.position_embeddings is not None:
        vectors.append(_positions_of(report, b))  # (T, d)
    for vector in vectors:
        block = vector[:count, :dims].double()
        if count:  # "+0.1234" widens with the integer part; nan and inf print short
            widest = block.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).abs().argmax(dim=0)
            rows.update(int(i) for i in widest)
    return rows


def vectors_block(
    report: EmbedReport, b: int, show: int, max_positions: int, width: int
) -> RenderableType:
    """The sequence's tokens and the first ``show`` dimensions of their vectors, or as many
    dimensions as the terminal fits."""
    d = report.config.d_model
    which = f"Sequence {b}: tokens" if len(report.tokens) > 1 else "Tokens"

    def title(dims: int) -> str:
        text = f"{which} and vectors, " + (
            f"all {plural(d, 'dimension')}" if dims == d else f"first {dims} of {d:,} dimensions"
        )
        if dims < min(show, d):
            text += f" ({min(show, d)} asked: the terminal is too narrow)"
        return text

    def layout(dims: int) -> Group:
        return Group(heading(title(dims)), _vectors_table(report, b, dims, max_positions))

    # Each layout is tried on the rows that hold each column's widest cell (the table's widths
    # are theirs), and only as many dimensions as could fit: a long batch is drawn once.
    most = max(min(show, d, width // 8), 1)  # a dimension takes at least 8 columns
    rows = _widest_rows(report, b, most, max_positions)

    def probe(dims: int) -> Group:
        return Group(heading(title(dims)), _vectors_table(report, b, dims, max_positions, rows))

    chosen = next((n for n in range(most, 1, -1) if fits(probe(n), width)), 1)
    return layout(chosen)


def _similarity(report: EmbedReport, width: int, plain: bool) -> list[RenderableType]:

    parts: list[RenderableType] = []
    for b, matrix in enumerate(() if report.similarity is None else report.similarity):
        tokens = report.tokens[b]
        which = f" of sequence {b}" if len(report.tokens) > 1 else ""
        heatmap = Heatmap(
            f"cosine similarity between the input embeddings{which}",
            "similarity",
            "token",
            "token",
            matrix.numpy(),
            row_labels=[token_label(t, len(tokens)) for t in tokens],
            column_labels=[str(t.index) for t in tokens],
        )
        parts.append(heatmap_view(heatmap, width=width, plain=plain))
    return parts


def _verify_line(report: EmbedReport) -> Text | None:
    v = report.verify
    if v is None:
        return None
    word, style = ("agrees", "green") if v.ok else ("DISAGREES", "bold red")
    return Text.assemble(
        f"verify: the {v.device} result ",
        (word, style),
        f" with a separate CPU computation from {v.reference}: largest difference "
        f"{v.max_abs_diff:.3g} (tolerance {v.tolerance:.3g} for {report.config.dtype})",
    )


def _truncation_notes(report: EmbedReport) -> list[Text]:
    multi = len(report.truncated) > 1
    return [
        Text(
            f"truncation dropped {plural(dropped, 'token')} from the end of "
            + (f"sequence {b}" if multi else "the sequence")
        )
        for b, dropped in enumerate(report.truncated)
        if dropped
    ]


def _end_notes(report: EmbedReport, max_positions: int) -> list[Text]:
    notes = []
    pads = [t for seq in report.tokens for t in seq if t.pad]
    if pads:
        pad, window = pads[0], report.config.window
        fills = "fills the shorter sequences up to the longest"
        if window is not None:  # Longformer, LED: every sequence up to the window's multiple
            fills = f"fills each sequence up to a multiple of the attention window, {window}"
        notes.append(
            note(
                f"(pad) marks padding: id {pad.id} ({pad.display}) {fills}; its attention_mask "
                "is 0, so attention ignores it"
            )
        )
    added = [t for seq in report.tokens for t in seq if t.added]
    if added:
        notes.append(
            note(
                f"+ marks a special token the model's tokenizer adds to every text ("
                f"{added[0].display}), as its files say (transformers' post-processor, a GGUF "
                "file's add_bos_token); --no-add-special leaves it out"
            )
        )
    length = len(report.input_ids[0]) if report.input_ids else 0
    if length > max_positions:
        notes.append(
            note(
                f"showing {max_positions:,} of {length:,} positions of each sequence: "
                "--max-positions N changes the cap, --json has them all"
            )
        )
    return notes


def embed_tables(
    report: EmbedReport,
    show: int = 4,
    *,
    max_positions: int = MAX_POSITIONS,
    width: int = 100,
    plain: bool = True,
) -> RenderableType:
    """Header, pipeline steps, broadcast, each sequence's tokens and vectors (the first
    ``max_positions`` positions, ``show`` dimensions), then what was left out."""
    parts: list[RenderableType] = [_header(report, width), *_truncation_notes(report)]
    parts.append(pipeline_block(report, width))
    parts.append(
        addition_view(report.broadcast, report.config, width=width, model=report.source.model)
    )
    if report.rope_angles is not None:
        rope = (report.rope_attention_factor, report.rope_sequence_length)
        parts.append(rope_block(report.rope_angles, show, max_positions, *rope))
    for b in range(len(report.tokens)):
        parts.append(vectors_block(report, b, show, max_positions, width))
    parts += _similarity(report, width, plain)
    verify = _verify_line(report)
    if verify is not None:
        parts.append(verify)
    parts += _end_notes(report, max_positions)
    return Group(*parts)


def token_label(token: Token, length: int) -> str:
    """`` 3 ␣world``: a token's position (aligned for ``length`` positions) and its visible
    piece, or (pad), for row labels."""
    return f"{token.index:>{len(str(length - 1))}} {'(pad)' if token.pad else token.display}"
