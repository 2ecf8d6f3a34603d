"""``embedcli tokenize``: the text cut into its tokens, each token's id, piece and bytes, and
several encodings side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text

from embedcli.render.common import add_row, heading, items_line, new_table, note, plural, visible
from embedcli.tokenization.encodings import token_bytes_display

if TYPE_CHECKING:
    from rich.table import Table

    from embedcli.tokenization.explain import Chunk, Explained
    from embedcli.tokenization.tokens import Segment, TokenizeReport

# Alternating backgrounds for token pieces, as on the tiktokenizer page.
SEGMENT_STYLES = (
    "black on #ffd6a5",
    "black on #caffbf",
    "black on #9bf6ff",
    "black on #bdb2ff",
    "black on #ffadad",
)
TOKEN_TABLE_LIMIT = 500  # tokens listed by the table view; --encode and --json have them all
PLAIN_SEPARATOR = "│"  # between pieces when there is no colour to tell them apart
ADDED_NOTE = note(
    "(added): a special token the model's tokenizer adds to every text, as its files say "
    "(transformers' post-processor, a GGUF file's add_bos_token); --no-add-special leaves it out"
)


def coloured_text(segments: Sequence[Segment], *, width: int = 100, plain: bool = True) -> Text:
    """The text, each token (or split character) on its own alternating background; lines
    break between tokens (only a token wider than the terminal is cut)."""
    text = Text()
    column = 0
    for i, segment in enumerate(segments):
        for k, part in enumerate(segment.text.split("\n")):
            if k:
                text.append("\n")
                column = 0
            if not part:
                continue
            separator = PLAIN_SEPARATOR if plain and column else ""
            if column and column + cell_len(separator + part) > width:
                text.append("\n")
                column, separator = 0, ""
            if separator:
                text.append(separator, style="dim")
            style = "" if plain else SEGMENT_STYLES[i % len(SEGMENT_STYLES)]
            text.append(part, style=style)
            column += cell_len(separator + part)
    text.rstrip()  # a cut-off list of tokens may end in a newline: no empty line after it
    return text


def _header(report: TokenizeReport, width: int) -> Text:
    return items_line(
        [
            plural(report.count, "token"),
            plural(report.characters, "character"),
            f"vocabulary {report.n_vocab:,}",
        ],
        width,
        lead=report.encoding,
    )


def _shown_note(report: TokenizeReport) -> Text | None:
    shown = len(report.tokens or ())
    if report.count <= shown:
        return None
    return note(
        f"showing the first {shown:,} of {report.count:,} tokens: --encode or --json list them all"
    )


def _span(offsets: list[int] | None, added: bool | None) -> str:
    """[4, 10] -> '4–10'; a token that is not whole characters of the text, in words."""
    if offsets is None:
        return "(added)" if added else "(splits a character)"
    return f"{offsets[0]}–{offsets[1]}"


def explain_view(explained: Explained, *, width: int = 100, plain: bool = True) -> RenderableType:
    """The split pattern's chunks, each with its bytes and every merge in order."""
    shown, total = len(explained.chunks), explained.total_chunks
    parts: list[RenderableType] = [
        items_line(
            [
                explained.encoding,
                plural(total, "chunk"),
                plural(len(explained.ids), "token"),
                "lowest rank merges first",
            ],
            width,
            lead="explain",
        )
    ]
    added = [("before", explained.added_before), ("after", explained.added_after)]
    for where, ids in added:
        if ids:
            parts.append(
                note(
                    f"the tokenizer adds {plural(len(ids), 'token')} {where} the text "
                    f"({'id' if len(ids) == 1 else 'ids'} {', '.join(map(str, ids))}), as "
                    "its files say: no merge makes it, so no chunk shows it "
                    "(--no-add-special leaves it out)"
                )
            )
    for number, chunk in enumerate(explained.chunks):
        shown_text = visible(chunk.text)
        title = f"chunk {number} · {shown_text} · characters {chunk.start}–{chunk.end}"
        parts.append(heading(title))
        parts.append(_chunk_table(chunk))
    if shown < total:
        parts.append(note(f"showing the first {shown} of {total:,} chunks; --json has the ids"))
    return Group(*parts)


def _shown(part: str) -> str:
    """A part (hex bytes) as text where it is whole UTF-8, spaces made visible, else as bytes."""
    data = bytes.fromhex(part)
    try:
        return visible(data.decode("utf-8"))
    except UnicodeDecodeError:
        return token_bytes_display(data)


def _chunk_table(chunk: Chunk) -> Table:
    """Start from bytes; each row merges the lowest-ranked adjacent pair; then the ids."""
    table = new_table("step", "rank", "parts", right=("step", "rank"), wrap=("parts",))
    if chunk.special:
        add_row(table, "", "", f"{chunk.text} (special token)")
    else:
        add_row(table, "bytes", "", "  ".join(map(_shown, chunk.parts)))
        previous = 0
        for step in chunk.steps:
            if step.step > previous + 1:  # merges kept out of the table (explain.SHOWN_STEPS)
                hidden = plural(step.step - previous - 1, "merge")
                add_row(table, "…", "", f"({hidden} not shown)")
            add_row(table, step.step, f"{step.rank:,}", "  ".join(map(_shown, step.parts)))
            previous = step.step
    how = "the chunk is a token as it is" if chunk.whole and not chunk.special else ""
    add_row(table, "ids", "", " ".join(map(str, chunk.ids)) + (f"  ({how})" if how else ""))
    return table


def tokenize_view(
    report: TokenizeReport, *, width: int = 100, plain: bool = True
) -> RenderableType:
    """Header, the text token by token, then index / id / piece / bytes for each token."""
    parts: list[RenderableType] = [
        _header(report, width),
        coloured_text(report.segments or (), width=width, plain=plain),
    ]
    if report.tokens:
        where = ["chars"] if report.offsets is not None else []
        table = new_table(
            "index", "id", "piece", *where, "bytes", right=("index", "id"), wrap=("bytes",)
        )
        for i, t in enumerate(report.tokens):
            hex_ = t.bytes or ""
            data = " ".join(hex_[i : i + 2] for i in range(0, len(hex_), 2))
            chars = [] if report.offsets is None else [_span(report.offsets[i], t.added)]
            add_row(table, t.index, t.id, t.display + (" (added)" if t.added else ""), *chars, data)
        parts.append(table)
    if any(t.added for t in report.tokens or ()):
        parts.append(ADDED_NOTE)
    shown = _shown_note(report)
    if shown is not None:
        parts.append(shown)
    return Group(*parts)


def compare_view(
    reports: Sequence[TokenizeReport], *, width: int = 100, plain: bool = True
) -> RenderableType:
    """Several encodings: each one's text token by token, then their counts side by side."""
    parts: list[RenderableType] = []
    for report in reports:
        parts += [
            _header(report, width),
            coloured_text(report.segments or (), width=width, plain=plain),
        ]
        shown = _shown_note(report)
        if shown is not None:
            parts.append(shown)
        parts.append(Text(""))
    versus = f"vs {reports[0].encoding}"
    table = new_table(
        "encoding",
        "vocabulary",
        "tokens",
        "characters per token",
        versus,
        right=("vocabulary", "tokens", "characters per token", versus),
        wrap=("characters per token", versus),
    )
    first = reports[0].count
    for report in reports:
        per_token = report.characters / report.count if report.count else 0.0
        ratio = f"{report.count / first:.2f}×" if first else "—"
        add_row(
            table,
            report.encoding,
            f"{report.n_vocab:,}",
            f"{report.count:,}",
            f"{per_token:.2f}",
            ratio,
        )
    parts += [heading("Token counts"), table]
    return Group(*parts)
