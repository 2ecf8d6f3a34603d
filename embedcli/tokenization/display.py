"""How a token or a name is shown: the one Token record, visible whitespace and control
characters, bytes that are not UTF-8 alone. Imports no torch and no rich."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken


@dataclass(frozen=True)
class Token:
    """One token, the one way every command describes it. Field names are the JSON keys.

    ``display`` is for tables only and never in JSON; ``index``, ``pad`` and ``score`` are filled
    where they mean something (a token's place in its sequence, a padding position, a neighbor's
    cosine similarity) and are left out of JSON when None.
    """

    id: int
    piece: str | None  # the exact text; None when the bytes are not UTF-8 alone, or the id unknown
    bytes: str | None  # the bytes as lowercase hex; None for an id the encoding lacks
    display: str  # whitespace made visible; non-UTF-8 bytes as <0x..>; <unknown> for a bad id
    index: int | None = None  # place in its sequence
    pad: bool | None = None  # a padding position (attention_mask 0)
    score: float | None = None  # cosine similarity to the token it was found for
    added: bool | None = None  # a special token the tokenizer added (Llama's begin_of_text)

    @property
    def data(self) -> bytes | None:
        """The token's bytes, or None for an id the encoding lacks."""
        return None if self.bytes is None else bytes.fromhex(self.bytes)


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 token', '2 tokens', '1,024 windows'; ``many`` where adding an s is wrong."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


# Characters that are not seen, or that move the ones after them: every C0 and C1 control
# (Python's str.splitlines and rich break lines at 0x1c-0x1e and 0x85 too), the line and
# paragraph separators, and the bidirectional controls that reorder a row.
UNSEEN = (
    *range(0x20),
    0x7F,
    *range(0x80, 0xA0),
    *(0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0xFEFF),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
)


def _shown(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures: ␀ ... ␟
    if code == 0x7F:
        return "␡"
    return f"<U+{code:04X}>"


_WHITESPACE = {" ": "␣", "\t": "⇥", "\r": "␍", "\n": "↵"}
_VISIBLE = str.maketrans({**{chr(c): _shown(c) for c in UNSEEN}, **_WHITESPACE})
_VISIBLE_KEEP_LINES = str.maketrans(
    {**{chr(c): _shown(c) for c in UNSEEN}, **_WHITESPACE, "\n": "↵\n"}
)
_NAME = str.maketrans({chr(c): _shown(c) for c in UNSEEN})


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """Spaces, tabs, carriage returns and newlines as ␣ ⇥ ␍ ↵ (with ``keep_newlines``, newlines
    still break lines); every other control character as its control picture (0x1d: ␝, DEL: ␡)
    or as <U+0085>, so that no piece breaks or reorders the row it is shown in."""
    return text.translate(_VISIBLE_KEEP_LINES if keep_newlines else _VISIBLE)


def visible_name(name: str) -> str:
    """A path or a tensor's name for a table: spaces kept, every control character visible."""
    return name.translate(_NAME)


def token_bytes_display(data: bytes) -> str:
    """Bytes that are not UTF-8 on their own, as <0xF0 0x9F>."""
    return "<" + " ".join(f"0x{b:02X}" for b in data) + ">"


def token_piece(enc: tiktoken.Encoding, token_id: int, **context: object) -> Token:
    """The bytes and text behind one token id (``context``: index, pad or score)."""
    try:
        data = enc.decode_single_token_bytes(token_id)
    except (KeyError, ValueError, OverflowError):
        return Token(token_id, None, None, "<unknown>", **context)
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    display = token_bytes_display(data) if text is None else visible(text)
    return Token(token_id, text, data.hex(), display, **context)
