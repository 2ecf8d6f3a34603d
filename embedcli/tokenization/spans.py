"""Where a text's tokens sit in it, and the text some ids stand for, only where that is sure.

A token's bytes are where it sits in the text when the tokens spell the text exactly: each
token's characters are then counted from the text's own bytes (tiktoken's
``decode_with_offsets`` counts them so). A model's tokenizer may change the text before it
encodes it, and then its tokens spell another text: SentencePiece's dummy prefix (Llama 2's
Prepend("▁") normalizer, a Metaspace pre-tokenizer's prepend scheme, a byte-level
``add_prefix_space``) puts a space before the text that the user never wrote, and a normalizer
(NFKC, NFC) writes other characters. For a tokenizer.json, the ``tokenizers`` library's own
offsets then say where each token sits, and each is checked against the text (its bytes are the
text there, or a dummy space and the text there); its own decoder says what ids stand for, and
is taken where it agrees with the tokens' bytes, or drops the dummy prefix from them. A GGUF
file's tokenizer, run as llama.cpp runs it, places its pieces through the text the same way, and
its decoder is llama.cpp's detokenize (the first prefix space dropped). Anything else is
refused, naming why, rather than shown wrong. No torch here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from embedcli.errors import EncodingError
from embedcli.tokenization.display import Token
from embedcli.tokenization.kinds import SELF_PLACING

if TYPE_CHECKING:
    import tiktoken

    from embedcli.tokenization.kinds import SelfPlacing

_REPLACED = re.compile("\ufffd+")  # bytes that are no character, however many U+FFFD show them


def _text_bytes(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogatepass")  # a lone surrogate spells no token's bytes


def token_offsets(enc: tiktoken.Encoding, tokens: Sequence[Token], text: str) -> list:
    """Each token's [start, end) in characters of ``text``; None for a special token the
    tokenizer added (it is not in the text), and for a token that starts or ends inside a
    character or whose place cannot be proven. Refused where the tokens do not spell the text
    and the tokenizer cannot say where they sit."""
    data = [b"" if t.added else (t.data or b"") for t in tokens]
    spelled = b"".join(data)
    if _text_bytes(text).startswith(spelled):
        return _counted(tokens, data)
    if not isinstance(enc, SELF_PLACING):
        raise EncodingError(
            f"--offsets cannot place {enc.name}'s tokens in this text: they spell "
            f"{_shown(spelled)}, not the text as written (its tokenizer normalizes the text "
            "before it encodes it)"
        )
    return _placed(enc, tokens, data, text)


def _counted(tokens: Sequence[Token], data: list[bytes]) -> list[list[int] | None]:
    """Offsets counted from the tokens' bytes, which are the text's own."""
    inside = [bool(d) and 0x80 <= d[0] < 0xC0 for d in data]  # starts inside a character
    out: list[list[int] | None] = []
    at = 0  # characters before the current token
    for i, piece in enumerate(data):
        chars = sum(1 for b in piece if not 0x80 <= b < 0xC0)
        split = inside[i] or (i + 1 < len(data) and inside[i + 1])
        out.append(None if tokens[i].added or split else [at, at + chars])
        at += chars
    return out


def _placed(
    enc: SelfPlacing, tokens: Sequence[Token], data: list[bytes], text: str
) -> list[list[int] | None]:
    """The tokenizers library's offsets, each kept only where the text there is the token's
    bytes (or a dummy space, then them), and where it does not overlap the next one kept (the
    library puts a lone dummy prefix on the characters of the token after it)."""
    body = [t.id for t in tokens if not t.added]
    spans = enc.offsets_of(text, body)
    if spans is None:
        raise EncodingError(
            f"--offsets cannot place {enc.name}'s tokens in this text: the tokenizer's own "
            "offsets are for other tokens"
        )
    found = iter(spans)
    out: list[list[int] | None] = []
    for token, piece in zip(tokens, data, strict=True):
        if token.added:
            out.append(None)
            continue
        start, end = next(found)
        there = _text_bytes(text[start:end])
        sure = piece and piece in (there, b" " + there)
        out.append([start, end] if sure else None)
    kept = [i for i, span in enumerate(out) if span is not None]
    for i, j in pairwise(kept):
        first, second = out[i], out[j]
        if first is not None and second is not None and first[1] > second[0]:
            inside = second[0] <= first[0] and first[1] <= second[1]
            out[i] = None
            if not inside:  # they cross: neither can be sure
                out[j] = None
    return out


def _shown(data: bytes, size: int = 40) -> str:
    text = data.decode("utf-8", errors="replace")
    return repr(text if len(text) <= size else text[:size] + "…")


def _same(ours: str, theirs: str) -> bool:
    """Equal texts, however many U+FFFD each shows for bytes that are no character."""
    return _REPLACED.sub("\ufffd", ours) == _REPLACED.sub("\ufffd", theirs)


def decoded_text(enc: tiktoken.Encoding, ids: Sequence[int], ours: str) -> str:
    """The text of ``ids``: ``ours`` (their bytes, decoded), or for a tokenizer.json its own
    decoder's text where that is ours or ours without a dummy prefix space; else refused."""
    if not isinstance(enc, SELF_PLACING):
        return ours
    theirs = enc.library_decode(ids)
    if _same(ours, theirs) or (ours.startswith(" ") and _same(ours[1:], theirs)):
        return theirs
    raise EncodingError(
        f"{enc.name}'s own decoder gives {_shown(theirs.encode())} for these ids, not the text "
        f"their pieces spell ({_shown(ours.encode())}), so embedcli cannot be sure of their text"
    )


def cut_text(enc: tiktoken.Encoding, kept: Sequence[int], ours: str, text: str | None) -> str:
    """The text of the first tokens ``kept`` of ``text`` (their bytes decoded: ``ours``), which
    must be how ``text`` begins: a tokenizer.json's dummy prefix space is dropped where its own
    decoder drops it too; any other text is refused, never given as the user's."""
    if text is None or text.startswith(ours):
        return ours
    dummy = isinstance(enc, SELF_PLACING) and ours.startswith(" ") and text.startswith(ours[1:])
    if dummy and enc.library_decode(kept) == ours[1:]:
        return ours[1:]
    raise EncodingError(
        f"--truncate cannot cut this text with {enc.name}: its first tokens spell "
        f"{_shown(ours.encode())}, which is not how the text begins (the tokenizer changes the "
        "text before it encodes it), so which text they stand for is not sure"
    )
