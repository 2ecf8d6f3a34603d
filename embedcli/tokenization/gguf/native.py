"""GGUF tokenizers run as llama.cpp runs them, in Python: what every tokenizer model shares.

llama.cpp tokenizes a text in two steps (``llama_vocab::impl::tokenize``), and so does
:class:`NativeTokenizer`:

1. **The special-token partition** (``tokenizer_st_partition``): for each special token, longest
   text first (by UTF-8 bytes; tokens of one length in id order, where llama.cpp's
   ``std::sort`` leaves their order open), every occurrence in the text fragments not yet
   matched, left to right, becomes that token. USER_DEFINED tokens are always matched;
   CONTROL and UNKNOWN tokens only with ``parse_special`` (embedcli's ``--allow-special``),
   and otherwise are plain text (llama.cpp's default, embedcli's ``--special-as-text``). A
   token marked to strip spaces (Phi-3's specials) takes the ASCII whitespace beside it.
2. **Each remaining fragment** goes to the model's own session (a subclass's
   ``_encode_fragment``: SentencePiece by score, WordPiece, Unigram, RWKV's trie), which is
   told whether a special token came just before it (SentencePiece then prefixes a space).

A token's bytes are llama.cpp's ``token_to_piece`` with ``special`` on: the text of a
CONTROL, UNKNOWN, USER_DEFINED or UNUSED token as written, a BYTE token's one byte, a NORMAL
token's text with ``▁`` as a space.

The vocabulary arrives checked (:class:`Vocab`, which ``tokenizer._Vocab`` is): tokens, scores,
types, bos/eos/padding ids and llama.cpp's ``add_bos``/``add_eos``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal, Protocol

from embedcli.errors import EncodingError
from embedcli.tokenization.common import DecodedByToken, walked_spans, without_surrogates


class Vocab(Protocol):
    """The checked metadata a port reads (``tokenizer._Vocab`` is one)."""

    tokens: list[str]  # "[EMPTY_<id>]" for an empty one, as llama.cpp names it
    ids: dict[str, int]
    scores: list[float]
    types: list[int]  # llama.cpp's token types, its text-made CONTROL ones included
    special: dict[str, int | None]  # bos, eos, unk, padding
    add_bos: bool
    add_eos: bool
    meta: Any  # reads further keys: meta.get(key, kind, default); meta.fail(problem); label


NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
PARSED_ONLY = (CONTROL, UNKNOWN)  # matched from text only with parse_special
_BYTE_TEXT = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_ASCII_SPACE = " \t\n\v\f\r"  # C's isspace, which llama.cpp strips beside an lstrip/rstrip token

Fragment = str | int  # text still to encode, or a matched special token's id


def disallowed_error(token: str) -> ValueError:
    """tiktoken's refusal of special-token text, word for word (hfjson's too)."""
    return ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}. Pass it in "
        "allowed_special to encode it as a special token, or disallowed_special=() to encode "
        "it as plain text."
    )


class NativeTokenizer(DecodedByToken):
    """A GGUF file's tokenizer behind ``tiktoken.Encoding``'s interface (the ModelTokenizer
    protocol of :mod:`embedcli.tokenization.modeltok`), with llama.cpp's ids."""

    family = "gguf"
    cut_safe = False  # a text cut before a space may encode otherwise (prefix spaces, merges)

    def __init__(self, vocab: Vocab, *, name: str, path: Path) -> None:
        self.name, self.path = name, path
        self.tokens: list[str] = vocab.tokens
        self.ids: dict[str, int] = vocab.ids
        self.types: list[int] = vocab.types
        self.n_vocab = len(self.tokens)
        special = vocab.special
        self.bos_token, self.eos_token = special["bos"], special["eos"]
        pad = special["padding"]
        self.eot_token = pad if pad is not None else self.eos_token
        self.prefix = (self.bos_token,) if vocab.add_bos else ()
        self.suffix = (self.eos_token,) if vocab.add_eos else ()
        matched = [i for i, kind in enumerate(self.types) if kind in (*PARSED_ONLY, USER_DEFINED)]
        # longest first by bytes; Python's sort is stable, so equal lengths stay in id order
        matched.sort(key=lambda i: -len(self.tokens[i].encode("utf-8")))
        self._matched = tuple(matched)
        self._rank = {token_id: rank for rank, token_id in enumerate(matched)}
        self._trie: dict | None = None  # of the matched tokens' texts, built on first use
        self.special_tokens_set = frozenset(
            self.tokens[i] for i in matched if self.types[i] in PARSED_ONLY
        )
        self._user_defined = frozenset(self.tokens[i] for i in matched) - self.special_tokens_set
        self.lstrip: frozenset[int] = frozenset()  # ids that take the whitespace before them
        self.rstrip: frozenset[int] = frozenset()  # ids that take the whitespace after them

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    # --- the model's own step, for a subclass

    def _encode_fragment(self, text: str, after_special: bool) -> list[int]:
        raise NotImplementedError

    # --- ids of text

    def partition(self, text: str, parse_special: bool) -> list[Fragment]:
        """llama.cpp's tokenizer_st_partition: the text as fragments and special ids."""
        parts: list[Fragment] = [text] if text else []
        for token_id in self._present(text):
            if not parse_special and self.types[token_id] in PARSED_ONLY:
                continue
            token = self.tokens[token_id]
            if any(isinstance(p, str) and token in p for p in parts):
                parts = self._split_at(parts, token, token_id)
        return parts

    def _present(self, text: str) -> list[int]:
        """The matched tokens whose text occurs in ``text``, in partition order, found by
        walking a trie of their texts from each place (every token that starts there)."""
        if not self._matched or not text:
            return []
        if self._trie is None:
            self._trie = _trie({self.tokens[i]: i for i in self._matched})
        trie, found = self._trie, set()
        for start in range(len(text)):
            node = trie.get(text[start])
            at = start + 1
            while node is not None:
                token_id = node.get(_END)
                if token_id is not None:
                    found.add(token_id)
                node = node.get(text[at]) if at < len(text) else None
                at += 1
        return sorted(found, key=self._rank.__getitem__)

    def _split_at(self, parts: list[Fragment], token: str, token_id: int) -> list[Fragment]:
        out: list[Fragment] = []
        for part in parts:
            if not isinstance(part, str) or token not in part:
                out.append(part)
                continue
            pieces = part.split(token)
            for k, piece in enumerate(pieces):
                if k < len(pieces) - 1 and token_id in self.lstrip:
                    piece = piece.rstrip(_ASCII_SPACE)
                if k > 0 and token_id in self.rstrip:
                    piece = piece.lstrip(_ASCII_SPACE)
                if piece:
                    out.append(piece)
                if k < len(pieces) - 1:
                    out.append(token_id)
        return out

    def _encode(self, text: str, parse_special: bool) -> list[int]:
        out: list[int] = []
        after_special = True  # the text's start counts as just after a special token
        for part in self.partition(without_surrogates(text), parse_special):
            if isinstance(part, int):
                out.append(part)
                after_special = True
            else:
                out.extend(self._encode_fragment(part, after_special))
                after_special = False
        return out

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text``, special-token text encoded as plain text (llama.cpp's
        ``parse_special`` off); nothing added."""
        return self._encode(text, parse_special=False)

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | AbstractSet[str] = "all",
    ) -> list[int]:
        """tiktoken's ``encode``: allowed special-token text becomes special ids (llama.cpp's
        ``parse_special`` on, which matches every special token: allow all or none)."""
        everything = self.special_tokens_set
        allowed = everything if allowed_special == "all" else frozenset(allowed_special)
        if disallowed_special == "all":
            disallowed = everything - allowed
        else:
            disallowed = frozenset(disallowed_special)
        found = self._first_in(text, disallowed)
        if found is not None:
            raise disallowed_error(found)
        if not allowed or self._first_in(text, allowed) is None:
            return self.encode_ordinary(text)
        if allowed != everything and self._first_in(text, everything - allowed) is not None:
            raise ValueError(
                f"{self.name} encodes special-token text all as special ids or all as text, "
                "not some of each; allow all of them, or none"
            )
        return self._encode(text, parse_special=True)

    def _first_in(self, text: str, tokens: AbstractSet[str]) -> str | None:
        if not tokens:
            return None
        hits = [(text.find(t), -len(t), t) for t in tokens if t in text]
        return min(hits)[2] if hits else None

    # --- tokens and their bytes

    def decode_single_token_bytes(self, token: int) -> bytes:
        """llama.cpp's piece of one token, special text included (KeyError: no such id)."""
        if isinstance(token, bool) or not isinstance(token, int):
            raise KeyError(token)
        if not 0 <= token < self.n_vocab:
            raise KeyError(token)
        text, kind = self.tokens[token], self.types[token]
        if kind == BYTE:
            match = _BYTE_TEXT.fullmatch(text)
            if match:
                return bytes([int(match.group(1), 16)])
        if kind == NORMAL:
            return self._normal_bytes(text)
        return text.encode("utf-8")

    def _normal_bytes(self, text: str) -> bytes:
        return text.replace("\u2581", " ").encode("utf-8")

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token whose bytes these are (KeyError when there is none)."""
        if isinstance(text_or_bytes, str):
            if text_or_bytes in self.ids and self.types[self.ids[text_or_bytes]] != NORMAL:
                return self.ids[text_or_bytes]
            data = text_or_bytes.encode("utf-8")
        else:
            data = bytes(text_or_bytes)
        for piece in self._pieces_for(data):
            token = self.ids.get(piece)
            if token is not None and self.decode_single_token_bytes(token) == data:
                return token
        raise KeyError(text_or_bytes)

    def _pieces_for(self, data: bytes) -> list[str]:
        pieces = [f"<0x{data[0]:02X}>"] if len(data) == 1 else []
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return pieces
        return [*pieces, text.replace(" ", "\u2581"), text]

    # --- llama.cpp's own answers, where the tokens' bytes are not the text (spans.py)

    def library_decode(self, tokens: Sequence[int]) -> str:
        """llama.cpp's detokenize (special text kept): the pieces, with the first one's
        leading space dropped where the model prefixes one."""
        data = self.decode_bytes(tokens)
        if self._drops_first_space and data.startswith(b" "):
            data = data[1:]
        return data.decode("utf-8", errors="replace")

    _drops_first_space = False

    def offsets_of(self, text: str, ids: Sequence[int]) -> list[tuple[int, int]] | None:
        """Character spans of the first tokens of ``text`` (which must be ``ids``), where
        each token's bytes are the text's own, or a prefix space then them; None otherwise."""
        for parse_special in (False, True):
            if self._encode(text, parse_special)[: len(ids)] == list(ids):
                break
        else:
            return None
        pieces = (self.decode_single_token_bytes(t).decode("utf-8", "replace") for t in ids)
        return walked_spans(pieces, text)


_END = ""  # a trie node's key for the id of the token that ends there (no character is "")


def _trie(tokens: dict[str, int]) -> dict:
    root: dict = {}
    for text, token_id in tokens.items():
        node = root
        for char in text:
            node = node.setdefault(char, {})
        node[_END] = token_id
    return root


def refuse_without_bytes(vocab: Vocab, what: str) -> None:
    """llama.cpp spells unknown text in <0xXX> byte tokens: a vocabulary without all 256."""
    missing = [b for b in range(256) if f"<0x{b:02X}>" not in vocab.ids]
    if missing:
        raise EncodingError(
            f"{vocab.meta.label}: the {what} vocabulary lacks the byte token "
            f"<0x{missing[0]:02X}> (and {len(missing) - 1} more), which llama.cpp needs to "
            "spell unknown text"
        )
