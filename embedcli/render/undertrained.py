"""``embedcli undertrained``: the candidates the indicator ranks highest, and the classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from embedcli.render.common import add_row, heading, new_table, note, visible_name

if TYPE_CHECKING:
    from embedcli.pipeline.undertrained import Candidate, UndertrainedReport

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
    return "none" if value is None else f"{value:.{digits}f}"


# Where a reference found in the tokenizer came from, in words.
_FROM = {
    "names": " (from the tokenizer's names)",
    "bytes never in UTF-8": " (from its byte tokens)",
}


# How the head relates to the token table (weights' words), said in a sentence.
_TIED = {
    "tied (GGUF)": "the head is tied to it: the GGUF file has no output.weight",
    "tied (config.json)": "the head is tied to it, as config.json says",
    "same storage": "the head is tied to it: the same storage",
    "equal values": "the head is tied to it: its values are equal",
    "no output head": "the checkpoint has no output head",
    "not tied (GGUF)": "its own: the GGUF file has an output.weight",
    "not tied (config.json)": "its own, as config.json says",
    "not tied": "its own: its values differ from the token table's",
    "not compared": "its own, not compared with the token table (read over the network)",
}


def _where(report: UndertrainedReport) -> str:
    """The matrix, and why it is that one."""
    key, why = visible_name(report.matrix_key), _TIED.get(report.head, report.head)
    return f"the {report.matrix} {key} ({why})"


def _piece(candidate: Candidate) -> str:
    """The piece as shown; a byte token no text reaches (byte fallback) with its byte, so that
    ``y`` is not taken for the letter's own token."""
    data = candidate.token.data
    if candidate.token_class == "unreachable" and data is not None and len(data) == 1:
        return f"{candidate.token.display} <0x{data[0]:02X}>"
    return candidate.token.display


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
        Text(f"reference: {reference.described}{_FROM.get(reference.source, '')}"),
    ]  # fmt: skip
    norm = "row norm" if report.matrix == "token table" else "token-table norm"
    table = new_table(
        "rank", "id", "piece", "cosine", norm, "class", right=("rank", "id", "cosine", norm),
    )  # fmt: skip
    table.columns[2].max_width = PIECE_WIDTH
    table.columns[2].overflow = "ellipsis"
    for c in report.candidates:
        add_row(
            table, f"{c.rank:,}", c.token.id, _piece(c), _number(c.cosine, 4),
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
    if report.undefined_rows:
        parts.append(
            note(
                f"{report.undefined_rows:,} rows are zero once the component is removed (an "
                "all-zero row is one): their cosine is undefined, and they rank last"
            )
        )
    if report.non_finite_rows:
        parts.append(
            note(
                f"{report.non_finite_rows:,} rows hold NaN or infinity: they have no cosine and "
                "are left out of the component and the reference; they rank last"
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
