"""SentencePiece ``tokenizer.model`` files (Llama 2, Mistral 7B v0.1-v0.3, Gemma, T5: most models
before 2024), encoded by the ``sentencepiece`` package itself, so the ids are the library's:
its BPE and Unigram models, byte fallback, the dummy prefix, the normalizer rules stored in the
file, user-defined pieces always matched, control pieces (``<s>``) never matched from text.

``sentencepiece`` is the optional extra ``embedcli[sentencepiece]``, imported only when a model
file is loaded (about 25 ms; 5.5 MB installed). No torch, no protobuf: the pieces' types are
read from the file by :mod:`.spproto`.

Special tokens, with tiktoken's ``allowed_special``/``disallowed_special`` semantics:

- ``special_tokens_set``: the model's control and unknown pieces (``<s>``, ``</s>``, ``<unk>``,
  Mistral v0.3's ``[INST]``, Gemma's ``<start_of_turn>``), and the added tokens of the
  ``tokenizer_config.json`` beside the file (:mod:`.spconfig`) that are not user-defined
  pieces (those the library matches itself, always).
- ``encode_ordinary``: the library's ids of the whole text; special-token text is plain text.
- ``encode`` with allowed special tokens: the text is cut at each allowed token's text (leftmost,
  longest first; an added token marked lstrip/rstrip takes the whitespace beside it, as in
  transformers), and each fragment is encoded by the library on its own, so each gets the dummy
  prefix again: transformers' ``legacy`` behaviour. A folder whose config says ``legacy: false``
  (no prefix after a special token) is refused there, as the library cannot encode so.
- ``prefix``/``suffix``: what transformers adds for the folder (:mod:`.spconfig`).

A token's bytes are its piece with ``▁`` as a space, a byte piece's one byte, a control,
unknown or unused piece's text as written; so the dummy prefix shows as a leading space, and
``library_decode`` (the library's own decode of the leading text, special text kept) and
``offsets_of`` (the library's offsets) say what the text was, for :mod:`.spans`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from embedcli.errors import EncodingError, MissingExtraError
from embedcli.tokenization.common import (
    DecodedByToken,
    read_bytes,
    walked_spans,
    without_surrogates,
)
from embedcli.tokenization.gguf.native import disallowed_error
from embedcli.tokenization.specialsplit import SpecialMatcher
from embedcli.tokenization.spproto import (
    BYTE,
    CONTROL,
    NORMAL,
    UNKNOWN,
    USER_DEFINED,
    ModelSpec,
    read_model_spec,
)

if TYPE_CHECKING:
    from embedcli.tokenization.spconfig import FolderTokens

INSTALL = 'pip install "embedcli[sentencepiece]"'
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_SPACE = "\u2581"  # SentencePiece's visible space
# ids past the model's pieces that an added-token table may leave with no token, at most (a
# gap makes the vocabulary, and every table sized by it, larger)
_MAX_GAP = 1 << 16


class SentencePieceModel(DecodedByToken):
    """A SentencePiece model file behind ``tiktoken.Encoding``'s interface (the ModelTokenizer
    protocol of :mod:`embedcli.tokenization.modeltok`), with the library's ids."""

    family = "sentencepiece"
    cut_safe = False  # each piece of a cut text would get the dummy prefix again

    def __init__(
        self, processor: Any, spec: ModelSpec, folder: FolderTokens, *, name: str, path: Path
    ) -> None:
        self.name, self.path = name, path
        self.processor = processor
        self.model_type = spec.model_type
        self._types = spec.types
        n_pieces = len(spec.types)
        if processor.get_piece_size() != n_pieces:
            raise EncodingError(
                f"{path}: sentencepiece reads {processor.get_piece_size():,} pieces, the file "
                f"lists {n_pieces:,}; download it again, or pass the model's tokenizer.json"
            )
        self._n_pieces = n_pieces
        special = {
            processor.id_to_piece(i): i
            for i, kind in enumerate(spec.types)
            if kind in (CONTROL, UNKNOWN)
        }
        # on use: kinds imports this module on every command line, a model file is rarer
        from embedcli.tokenization.spconfig import AddedToken

        self._added: dict[int, str] = {}  # ids past the model's pieces, with their text
        sentinels = (  # T5's, as transformers adds them: <extra_id_0> last
            AddedToken(n_pieces + folder.extra_ids - 1 - i, f"<extra_id_{i}>", True, False, False)
            for i in range(folder.extra_ids)
        )
        for token in (*sentinels, *folder.added):
            if token.id < n_pieces:
                piece = processor.id_to_piece(token.id)
                if piece != token.content:
                    raise EncodingError(
                        f"{path.parent / 'tokenizer_config.json'} says token {token.id} is "
                        f"{token.content!r}, but the model's piece {token.id} is {piece!r}; fix "
                        "the file, or pass the model's tokenizer.json"
                    )
                if spec.types[token.id] == USER_DEFINED:
                    continue  # the library matches it as a piece, always
            else:
                self._added[token.id] = token.content
            special[token.content] = token.id
        self._special_ids = special
        self.special_tokens_set = frozenset(special)
        self._lstrip = frozenset(t.id for t in folder.added if t.lstrip)
        self._rstrip = frozenset(t.id for t in folder.added if t.rstrip)
        self.n_vocab = max(n_pieces, max(self._added, default=-1) + 1)
        if self.n_vocab - n_pieces - len(self._added) > _MAX_GAP:  # ids past the pieces unused
            raise EncodingError(
                f"{path.parent / 'tokenizer_config.json'} adds tokens up to id "
                f"{self.n_vocab - 1:,}, past the model's {n_pieces:,} pieces, leaving more than "
                f"{_MAX_GAP:,} ids between with no token; fix the file, or pass the model's "
                "tokenizer.json"
            )
        self._matchers: dict[frozenset[str], SpecialMatcher] = {}
        # transformers' legacy=False gives text after a special token no dummy prefix
        self._no_prefix_after_special = folder.legacy is False and spec.add_dummy_prefix
        self.prefix = self._around(folder.add_bos, folder.bos, processor.bos_id(), "bos")
        self.suffix = self._around(folder.add_eos, folder.eos, processor.eos_id(), "eos")
        self.eot_token = self._eot(folder)

    def __repr__(self) -> str:
        return f"<SentencePieceModel {self.name!r} ({self.model_type})>"

    # --- what a folder adds, and what pads

    def _id_of(self, text: str) -> int | None:
        """The id of a special token's or a piece's text (the text exactly, never <unk>)."""
        if text in self._special_ids:
            return self._special_ids[text]
        token = self.processor.piece_to_id(text)
        return token if self.processor.id_to_piece(token) == text else None

    def _around(self, add: bool, text: str | None, own: int, what: str) -> tuple[int, ...]:
        if not add:
            return ()
        if text is None and own >= 0:
            return (own,)
        token = None if text is None else self._id_of(text)
        if token is None:
            raise EncodingError(
                f"{self.path.parent / 'tokenizer_config.json'}: a {what} token is put around "
                f"every text, but the model has no {text or what} token; fix the file, or pass "
                "the model's tokenizer.json"
            )
        return (token,)

    def _eot(self, folder: FolderTokens) -> int | None:
        own = [self.processor.pad_id(), self.processor.eos_id()]
        named = [*folder.pads, own[0], *folder.eoses, own[1]]
        for token in named:
            if isinstance(token, str):
                token = self._id_of(token)
            if token is not None and token >= 0:
                return token
        return None

    # --- ids of text

    def _library_ids(self, text: str) -> list[int]:
        try:
            return list(self.processor.encode(text))
        except Exception as exc:  # the library raises RuntimeErrors from C++
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
            raise EncodingError(f"sentencepiece cannot encode this text: {first}") from None

    def encode_ordinary(self, text: str) -> list[int]:
        """The library's ids of ``text``, special-token text encoded as plain text."""
        return self._library_ids(without_surrogates(text))

    def _matcher(self, tokens: frozenset[str]) -> SpecialMatcher:
        matcher = self._matchers.get(tokens)
        if matcher is None:
            if len(self._matchers) > 8:
                self._matchers.clear()
            matcher = SpecialMatcher({t: self._special_ids.get(t, -1) for t in tokens})
            self._matchers[tokens] = matcher
        return matcher

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | AbstractSet[str] = "all",
    ) -> list[int]:
        """tiktoken's ``encode``: allowed special-token text becomes special ids, each
        fragment between them encoded by the library on its own."""
        everything = self.special_tokens_set
        if allowed_special == "all":
            allowed = everything
        else:
            allowed = frozenset(allowed_special) & everything
        if disallowed_special == "all":
            disallowed = everything - allowed
        else:
            disallowed = frozenset(disallowed_special)
        found = self._matcher(disallowed).first(text) if disallowed else None
        if found is not None:
            raise disallowed_error(found)
        if not allowed:
            return self.encode_ordinary(text)
        out: list[int] = []
        for _, part in self._parts(without_surrogates(text), allowed):
            out.extend([part] if isinstance(part, int) else self._library_ids(part))
        return out

    def _parts(self, text: str, allowed: frozenset[str]) -> list[tuple[int, str | int]]:
        """The text as (offset, fragment) and (offset, special id), in order; fragments are
        never empty, and whitespace beside an lstrip/rstrip token is dropped."""
        spans: list[tuple[int, int, int]] = list(self._matcher(allowed).matches(text))
        out: list[tuple[int, str | int]] = []
        at = 0
        for k, (start, end, token) in enumerate(spans):
            self._fragment(out, text, at, start, spans[k - 1][2] if k else None, token)
            out.append((start, token))
            at = end
        self._fragment(out, text, at, len(text), spans[-1][2] if spans else None, None)
        return out

    def _fragment(
        self, out: list, text: str, start: int, end: int, before: int | None, after: int | None
    ) -> None:
        if before is not None and before in self._rstrip:
            while start < end and text[start].isspace():
                start += 1
        if after is not None and after in self._lstrip:
            while end > start and text[end - 1].isspace():
                end -= 1
        if start >= end:
            return
        if before is not None and self._no_prefix_after_special:
            raise EncodingError(
                f"{self.path.parent / 'tokenizer_config.json'} sets legacy: false, so "
                "transformers encodes the text after a special token without SentencePiece's "
                "prefix space, which the sentencepiece library cannot do; pass the model's "
                "tokenizer.json, or --special-as-text"
            )
        out.append((start, text[start:end]))

    # --- tokens and their bytes

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (KeyError for an id the model lacks)."""
        if isinstance(token, bool) or not isinstance(token, int):
            raise KeyError(token)
        if token in self._added:
            return self._added[token].encode("utf-8")
        if not 0 <= token < self._n_pieces:
            raise KeyError(token)
        piece, kind = self.processor.id_to_piece(token), self._types[token]
        if kind == BYTE:
            match = _BYTE_PIECE.fullmatch(piece)
            if match:
                return bytes([int(match.group(1), 16)])
        if kind in (NORMAL, USER_DEFINED):
            return piece.replace(_SPACE, " ").encode("utf-8")
        return piece.encode("utf-8")

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token whose bytes these are (KeyError when there is none)."""
        if isinstance(text_or_bytes, str) and text_or_bytes in self._special_ids:
            return self._special_ids[text_or_bytes]
        if isinstance(text_or_bytes, str):
            data = text_or_bytes.encode("utf-8", errors="surrogatepass")
        else:
            data = bytes(text_or_bytes)
        pieces = []  # a piece of text before a byte piece of the same byte (▁ before <0x20>)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            pieces += [text.replace(" ", _SPACE), text]
        if len(data) == 1:
            pieces.append(f"<0x{data[0]:02X}>")
        for piece in pieces:
            token = self._id_of(piece)
            if token is not None and self.decode_single_token_bytes(token) == data:
                return token
        raise KeyError(text_or_bytes)

    # --- the library's own answers, where the tokens' bytes are not the text (spans.py)

    def _is_special_id(self, token: int) -> bool:
        return token in self._added or (
            0 <= token < self._n_pieces and self._types[token] in (CONTROL, UNKNOWN)
        )

    def library_decode(self, tokens: Sequence[int]) -> str:
        """The library's decode of the ids before the first special one (which drops the
        dummy prefix), then every other token's text, special ones as written."""
        out: list[str] = []
        for special, group in groupby(tokens, key=self._is_special_id):
            run = list(group)
            if not out and not special:
                try:
                    out.append(self.processor.decode(run))
                except Exception as exc:  # the library raises RuntimeErrors from C++
                    first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
                    raise EncodingError(f"sentencepiece cannot decode these ids: {first}") from None
            else:
                out.append(self.decode_bytes(run).decode("utf-8", errors="replace"))
        return "".join(out)

    def offsets_of(self, text: str, ids: Sequence[int]) -> list[tuple[int, int]] | None:
        """Character spans of the first tokens of ``text`` (which must be ``ids``, encoded
        with special-token text as text, or as special ids): the library's own where it gives
        them, else each token's bytes found in the text; None when neither encoding is ``ids``."""
        plain = without_surrogates(text)
        for allowed in (frozenset(), self.special_tokens_set):
            parts = self._parts(plain, allowed) if allowed else [(0, plain)]
            spans: list[tuple[int, int]] = []
            found: list[int] = []
            for start, part in parts:
                if isinstance(part, int):
                    found.append(part)
                    spans.append((start, start + len(self._special_text(part))))
                    continue
                part_ids = self._library_ids(part)
                found.extend(part_ids)
                spans.extend((start + a, start + b) for a, b in self._spans(part, part_ids))
                if len(found) >= len(ids):
                    break
            if found[: len(ids)] == list(ids):
                return spans[: len(ids)]
        return None

    def _special_text(self, token: int) -> str:
        return self._added.get(token) or self.processor.id_to_piece(token)

    def _spans(self, text: str, ids: list[int]) -> list[tuple[int, int]]:
        """One fragment's token spans: the library's offsets (sentencepiece 0.2.1 and later),
        else each token's bytes walked through the text."""
        try:
            mapped = self.processor.encode(text, out_type="offset_mapping")
        except Exception:  # an older sentencepiece has no offset_mapping (RuntimeError in 0.2.0)
            mapped = None
        if isinstance(mapped, dict) and list(mapped.get("ids", ())) == ids:
            return [(int(a), int(b)) for a, b in mapped["offsets"]]
        pieces = (self.decode_single_token_bytes(t).decode("utf-8", "replace") for t in ids)
        return walked_spans(pieces, text)


def looks_like_sentencepiece(data: bytes) -> bool:
    """Whether a file starts as a SentencePiece model does: its first piece (field 1)."""
    return data[:1] == b"\x0a"


def load_sentencepiece_model(path: Path, name: str) -> SentencePieceModel:
    """A SentencePiece tokenizer.model, with the config files beside it."""
    path = Path(path)
    data = read_bytes(path)
    spec = read_model_spec(data, str(path))
    from embedcli.tokenization.spconfig import folder_tokens  # on use, as in __init__

    folder = folder_tokens(path)
    try:
        import sentencepiece
    except ImportError:
        raise MissingExtraError(
            f"{path} is a SentencePiece model, and reading one needs the sentencepiece "
            f"package; run: {INSTALL} (or pass the model's tokenizer.json)"
        ) from None
    try:
        processor = sentencepiece.SentencePieceProcessor(model_proto=data)
    except Exception as exc:  # the library raises RuntimeErrors from C++
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        version = getattr(sentencepiece, "__version__", "?")
        raise EncodingError(
            f"sentencepiece {version} cannot load {path} ({first}); the file is damaged, or "
            "needs a newer sentencepiece (pip install -U sentencepiece)"
        ) from None
    return SentencePieceModel(processor, spec, folder, name=name, path=path)
