"""Hugging Face ``tokenizer.json`` files, through the ``tokenizers`` package (its own engine, so
ids are exactly the model's): byte-level BPE (GPT-2, Llama 3, Qwen 2) or SentencePiece-style
BPE/Unigram (Llama 2, Mistral, Gemma). The family is read from the file's own pre-tokenizer,
decoder, normalizer and model, never from its name.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from embedcli.errors import EncodingError, MissingExtraError
from embedcli.tokenization.common import (
    DecodedByToken,
    byte_of_char,
    char_of_byte,
    read_bytes,
    without_surrogates,
)
from embedcli.tokenization.hfspec import (
    BYTE_LEVEL,
    check_ids,
    config_tokens,
    cut_safe,
    family_of_json,
    n_vocab,
    parse_json,
    replacement,
)

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

    import tokenizers


# Used when nothing names the eos token: the end-of-text tokens of GPT-2, Qwen, Llama 2/3, Gemma.
_END_OF_TEXT_NAMES = ("<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>")


_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@cache
def _special_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True)))


def _found(text: str, tokens: frozenset[str]) -> str | None:
    """The first of ``tokens`` in ``text``, or None."""
    match = _special_regex(tokens).search(text) if tokens else None
    return None if match is None else match.group()


def _disallowed_error(token: str) -> ValueError:
    return ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}. Pass it in "
        "allowed_special to encode it as a special token, or disallowed_special=() to encode "
        "it as plain text."
    )


class HFTokenizer(DecodedByToken):
    """A Hugging Face tokenizer.json behind ``tiktoken.Encoding``'s interface."""

    def __init__(
        self,
        tokenizer: tokenizers.Tokenizer,
        spec: dict[str, Any],
        *,
        name: str,
        path: Path,
        config_files: bool = True,  # False: no tokenizer_config.json beside path is read
    ) -> None:
        self.name = name
        self._config_files = config_files
        self.path = path
        self.family = family_of_json(path, spec)  # BYTE_LEVEL or SENTENCEPIECE
        tokenizer.no_truncation()  # a tokenizer.json may carry both: ids must be whole
        tokenizer.no_padding()
        tokenizer.encode_special_tokens = True  # ordinary: special text is split as text
        self._ordinary = tokenizer
        self._special: tokenizers.Tokenizer | None = None
        self._lock = threading.Lock()
        added = {int(i): t for i, t in tokenizer.get_added_tokens_decoder().items()}
        self._added = {i: t.content for i, t in added.items()}
        self._added_ids = {t.content: i for i, t in added.items()}
        self.special_tokens_set = {t.content for t in added.values() if t.special}
        self.n_vocab = n_vocab(spec, added)
        model = spec["model"]
        self._byte_fallback = bool(model.get("byte_fallback"))
        self._replacement = replacement(spec)
        self.prefix, self.suffix = _added_around(path, tokenizer)
        self.eot_token = self._eot(spec)
        self.cut_safe = cut_safe(spec, self.family)

    def __repr__(self) -> str:
        return f"<HFTokenizer {self.name!r} ({self.family})>"

    # --- ids of text

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text``, special-token text encoded as plain text; nothing added."""
        return _ids(self._ordinary, text)

    def _special_tokenizer(self) -> tokenizers.Tokenizer:
        # A second instance, so that threads encoding at once never see the flag flip.
        with self._lock:
            if self._special is None:
                from tokenizers import Tokenizer

                special = Tokenizer.from_str(self._ordinary.to_str())
                special.encode_special_tokens = False
                self._special = special
            return self._special

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | AbstractSet[str] = "all",
    ) -> list[int]:
        """tiktoken's ``encode``: allowed special-token text becomes special ids; nothing added.

        Special text is encoded either all as ids or all as text: a text holding both an allowed
        special token and another one that is neither allowed nor disallowed is a ValueError.
        """
        everything = frozenset(self.special_tokens_set)
        allowed = everything if allowed_special == "all" else frozenset(allowed_special)
        if disallowed_special == "all":
            disallowed = everything - allowed
        else:
            disallowed = frozenset(disallowed_special)
        found = _found(text, disallowed)
        if found is not None:
            raise _disallowed_error(found)
        if not allowed:
            return self.encode_ordinary(text)
        if allowed != everything:
            if _found(text, allowed) is None:
                return self.encode_ordinary(text)
            if _found(text, everything - allowed) is not None:
                raise ValueError(
                    f"{self.name} encodes special-token text all as special ids or all as "
                    "text, not some of each; allow all of them, or none"
                )
        return _ids(self._special_tokenizer(), text)

    # --- tokens and their bytes

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The true bytes of one token (KeyError for an id the tokenizer lacks)."""
        if not isinstance(token, int) or not 0 <= token < self.n_vocab:
            raise KeyError(token)
        content = self._added.get(token)
        if content is not None:
            return content.encode("utf-8")
        piece = self._ordinary.id_to_token(token)
        if piece is None:
            raise KeyError(token)
        return self._piece_bytes(piece)

    def _piece_bytes(self, piece: str) -> bytes:
        if self.family == BYTE_LEVEL:
            byte_of = byte_of_char()
            try:
                return bytes(byte_of[c] for c in piece)
            except KeyError:  # not written in GPT-2's alphabet: tokenizers decodes it as is
                return piece.encode("utf-8")
        if self._byte_fallback:
            match = _BYTE_PIECE.fullmatch(piece)
            if match:
                return bytes([int(match.group(1), 16)])
        return piece.replace(self._replacement, " ").encode("utf-8")

    def _pieces_for(self, data: bytes) -> Iterator[str]:
        """The vocabulary pieces that could stand for ``data``."""
        if self.family == BYTE_LEVEL:
            yield "".join(char_of_byte()[b] for b in data)
            return
        text = data.decode("utf-8", errors="replace")
        if text.encode("utf-8") == data:
            yield text.replace(" ", self._replacement)
        if self._byte_fallback and len(data) == 1:
            yield f"<0x{data[0]:02X}>"

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token whose bytes these are (KeyError when there is none)."""
        if isinstance(text_or_bytes, str) and text_or_bytes in self._added_ids:
            return self._added_ids[text_or_bytes]
        data = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else text_or_bytes
        for piece in self._pieces_for(bytes(data)):
            token = self._ordinary.token_to_id(piece)
            if token is not None and self.decode_single_token_bytes(token) == data:
                return token
        raise KeyError(text_or_bytes)

    # --- the library's own answers, for what the tokens' bytes cannot say alone (spans.py)

    def offsets_of(self, text: str, ids: Sequence[int]) -> list[tuple[int, int]] | None:
        """The tokenizers library's character offsets of the first tokens of ``text``, which
        must be ``ids`` (encoded with special-token text as text, or as special ids); None
        when neither gives them."""
        for tokenizer in (self._ordinary, self._special_tokenizer()):
            found = _encoding(tokenizer, text)
            if found.ids[: len(ids)] == list(ids):
                return found.offsets[: len(ids)]
        return None

    def library_decode(self, tokens: Sequence[int]) -> str:
        """The text the tokenizers library's own decoder gives ``tokens``, special ones kept."""
        try:
            return self._ordinary.decode(list(tokens), skip_special_tokens=False)
        except Exception as exc:  # tokenizers raises plain Exceptions from Rust
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
            raise EncodingError(f"the tokenizer cannot decode these ids: {first}") from None

    # --- what pads a batch

    def _eot(self, spec: dict[str, Any]) -> int | None:
        padding = spec.get("padding")
        names = [padding.get("pad_token")] if isinstance(padding, dict) else []
        pads, eoses = config_tokens(self.path.parent) if self._config_files else ([], [])
        for token in [*names, *pads, *eoses, *_END_OF_TEXT_NAMES]:
            if isinstance(token, str):
                found = self._ordinary.token_to_id(token)  # added tokens first, then the model's
                if found is not None:
                    return found
        return None


def _ids(tokenizer: tokenizers.Tokenizer, text: str) -> list[int]:
    try:
        return _encode_ids(tokenizer, text)
    except EncodingError:
        raise
    except Exception as exc:  # tokenizers raises plain Exceptions from Rust
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        raise EncodingError(f"the tokenizer cannot encode this text: {first}") from None


def _encode_ids(tokenizer: tokenizers.Tokenizer, text: str) -> list[int]:
    return _encoding(tokenizer, text).ids


def _encoding(tokenizer: tokenizers.Tokenizer, text: str) -> tokenizers.Encoding:
    try:
        return tokenizer.encode(text, add_special_tokens=False)
    except TypeError:
        if not isinstance(text, str):
            raise
        # Lone surrogates cannot reach Rust; tiktoken replaces them with U+FFFD, and so do we.
        text = without_surrogates(text)
        return tokenizer.encode(text, add_special_tokens=False)


def _added_around(path: Path, tokenizer: tokenizers.Tokenizer) -> tuple[tuple[int, ...], ...]:
    """The ids the post-processor puts before and after one text (prefix, suffix)."""
    try:
        bare = tokenizer.encode("a", add_special_tokens=False).ids
        full = tokenizer.encode("a", add_special_tokens=True).ids
    except Exception as exc:  # tokenizers raises plain Exceptions from Rust
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        raise EncodingError(f"{path}: the tokenizer cannot encode a plain 'a' ({first})") from None
    if not bare:
        raise EncodingError(
            f"{path}: the tokenizer encodes a plain 'a' to no tokens at all (is its vocabulary "
            "empty?), so it cannot tokenize a text"
        )
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return tuple(full[:start]), tuple(full[start + len(bare) :])
    raise EncodingError(
        f"{path}: its post-processor changes a text's own tokens, so embedcli cannot tell "
        "which special tokens it adds around a text"
    )


def load_tokenizer_json(path: Path, name: str) -> HFTokenizer:
    """A Hugging Face tokenizer.json: byte-level BPE, or SentencePiece-style BPE or Unigram."""
    path = Path(path)
    text, spec = parse_json(path, read_bytes(path))
    family_of_json(path, spec)  # refuse unsupported models before the slow part
    check_ids(path, spec)
    try:
        from tokenizers import Tokenizer, __version__
    except ImportError:
        raise MissingExtraError(
            "reading a tokenizer.json needs the tokenizers package; run: pip install tokenizers"
        ) from None
    try:
        tokenizer = Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises plain Exceptions from Rust
        first = (str(exc).splitlines() or [""])[0][:160]
        raise EncodingError(
            f"tokenizers {__version__} cannot load {path} ({first}); the file is damaged, or "
            "needs a newer tokenizers (pip install -U tokenizers)"
        ) from None
    return HFTokenizer(tokenizer, spec, name=name, path=path)
