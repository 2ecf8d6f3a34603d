"""``embedcli undertrained``: the candidates the indicator ranks highest, and the classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from embedcli.render.common import add_row, heading, new_table, note, visible_name

if TYPE_CHECKING:
    from embedcli.pipeline.undertrained import UndertrainedReport

PIECE_WIDTH = 24  # longer pieces end in "…"

# What each class means, under the table (the classes the report counts, in its order).
_MEANING = {
    "reference": "the known-unused tokens the direction is drawn from",
    "no token": "a row the tokenizer gives no token (past its vocabulary, or a gap)",
    "special": "a special token: plain text never encodes to it",
    "not text": "bytes that are not UTF-8 alone (a byte, or part of a character)",
    "unreachable": "its text encodes to other ids: encode(decode(id)) != [id]",
    "unchecked": "its round trip merged with the text put before it (dummy prefix)",
    "ordinary": "its text encodes back to it",
}


def _number(value: float | None, digits: int) -> str:
    return "NaN/inf" if value is None else f"{value:.{digits}f}"


# Where the reference came from, in words.
_FROM = {
    "names": "the tokenizer's names",
    "bytes never in UTF-8": "the tokenizer's byte tokens",
    "--reference-ids": "the command line",
}


def _where(report: UndertrainedReport) -> str:
    """The matrix, and why it is that one."""
    key, head = visible_name(report.matrix_key), report.head
    if report.matrix == "output head":
        return f"the output head {key} (its own: {head})"
    if head == "no output head":
        return f"the token table {key} (the checkpoint has no output head)"
    why = head.removeprefix("tied (").removesuffix(")") if head.startswith("tied (") else head
    return f"the token table {key} (the head is tied to it: {why})"


def undertrained_view(
    report: UndertrainedReport, *, width: int = 100, plain: bool = True
) -> RenderableType:
    """The header (matrix, reference), the candidates, the classes and what they mean."""
    reference = report.reference
    rows, width = report.shape
    share = f"{report.first_pc_share:.1%}"
    parts: list[RenderableType] = [
        Text(
            f"undertrained: {visible_name(report.source)} · {rows:,} × {width:,} · "
            f"tokenizer {visible_name(report.tokenizer)}"
        ),
        Text(f"indicator: cosine to the reference's mean row in {_where(report)}, its first "
             f"principal component ({share} of the variance) removed from every row"),
        Text(f"reference: {reference.described} (from {_FROM[reference.source]})"),
    ]  # fmt: skip
    table = new_table(
        "rank", "id", "piece", "cosine", "row norm", "class",
        right=("rank", "id", "cosine", "row norm"),
    )  # fmt: skip
    table.columns[2].max_width = PIECE_WIDTH
    table.columns[2].overflow = "ellipsis"
    for c in report.candidates:
        add_row(
            table, f"{c.rank:,}", c.token.id, c.token.display, _number(c.cosine, 4),
            _number(c.row_norm, 4), c.token_class,
        )  # fmt: skip
    parts += [
        heading(
            f"The {len(report.candidates)} tokens that rank highest, reference tokens left out "
            "(rank: among all tokens)"
        ),
        table,
    ]
    top = f"top {report.top_reference:,}"
    classes = new_table(
        "class",
        "tokens",
        f"in the {top}",
        "meaning",
        right=("tokens", f"in the {top}"),
        wrap=("meaning",),
    )
    for count in report.classes:
        add_row(classes, count.token_class, f"{count.tokens:,}", f"{count.in_top:,}",
                _MEANING[count.token_class])  # fmt: skip
    parts += [heading(f"Every token by class, and in the {top} (as many as the reference)"),
              classes]  # fmt: skip
    parts.append(
        Text(
            f"{report.reference_in_top:,} of the {report.top_reference:,} reference tokens rank "
            f"in the {top} by the indicator"
        )
    )
    if report.non_finite_rows:
        parts.append(
            note(
                f"{report.non_finite_rows:,} rows hold NaN or infinity: they have no cosine and "
                "are left out of the component and the reference"
            )
        )
    parts.append(
        note(
            "a candidate, not a verdict: a high cosine says the row points where the unused "
            "rows point; whether the model really never learned the token is for a prompt to "
            "show (Land and Bartolo 2024, 'Fishing for Magikarp')"
        )
    )
    return Group(*parts)
