"""Tokenizers of real models (Hugging Face tokenizer.json, tiktoken-format model files), behind the
interface embedcli already uses for a ``tiktoken.Encoding``.

Every object returned here has what embedcli reads from an encoding: ``name``, ``n_vocab`` (the
largest id + 1, added and special tokens included), ``eot_token`` (the id that pads a batch),
``special_tokens_set``, ``encode_ordinary``, ``encode`` (tiktoken's ``allowed_special`` and
``disallowed_special``), ``encode_single_token``, ``decode_single_token_bytes`` (the true bytes of
a token), ``decode_bytes`` and ``decode``; and three things a model adds:

- ``prefix`` and ``suffix``: the special ids the model's tokenizer puts around one text by default,
  as ``transformers`` does (Llama 3's ``<|begin_of_text|>``, 128000, before the text). ``encode``
  and ``encode_ordinary`` never add them: the caller decides.
- ``cut_safe``: True only when cutting a text with :func:`embedcli.tokens.split_points` (just before
  a space that follows a non-whitespace character) provably gives the ids of one pass. That holds
  for byte-level BPE whose split pattern never holds a non-whitespace character followed by a space
  (GPT-2's, cl100k's as in Llama 3, Qwen's, o200k's as in Llama 4), with no prefix space, no
  normalizer but NFC (U+0020 is a stable NFC boundary, and a non-whitespace character never
  normalizes to whitespace), and no added token that strips the spaces beside it or holds a space
  after a non-space. SentencePiece-style tokenizers (Metaspace, ``▁``) are never cut-safe.

Two ways in:

- ``tokenizer.json`` (:func:`load_tokenizer_json`, needs the ``tokenizers`` package): byte-level
  BPE (GPT-2, Llama 3, Qwen 2: ``Ġ`` pieces) or SentencePiece-style BPE/Unigram (Llama 2, Mistral,
  Gemma: ``▁`` for a space, ``<0xE2>`` byte-fallback pieces). The family is read from the file's
  own pre-tokenizer, decoder, normalizer and model, never from its name. ``encode_ordinary`` uses
  tokenizers' ``encode_special_tokens``: the text of a *special* token is split like any other
  text (``<|begin_of_text|>`` becomes ``<|``, ``begin``, ...), exactly as tiktoken's
  ``encode_ordinary`` does; added tokens that are not special still match as one token, as they do
  in transformers (and a Unigram model whose vocabulary holds ``<s>`` as a piece may still pick
  it). ``eot_token`` is the file's padding token, else the ``pad_token`` then the
  ``eos_token`` of a ``tokenizer_config.json`` or ``special_tokens_map.json`` beside it, else a
  special token with a usual end-of-text name, else None.
- tiktoken-format files (:func:`load_tiktoken_file`): Llama 3's ``original/tokenizer.model``,
  Llama 4's ``tokenizer.model`` and Qwen's ``qwen.tiktoken``, with each family's split pattern and
  special tokens (from ``llama_models`` and Qwen's ``tokenization_qwen.py``). Qwen's tokenizer
  NFC-normalizes a text before encoding it, and so does this one. The ids are transformers' ids;
  Meta's reference tokenizer also cuts a text every 400,000 characters and runs of 25,000
  (whitespace or not), which can differ right at those cuts.

This module imports neither torch, tokenizers nor tiktoken until a tokenizer is loaded.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from embedcli import cache as ranks_cache
from embedcli.bpe import parse_tiktoken_bpe
from embedcli.errors import EncodingError

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

    import tiktoken
    import tokenizers

# The files a model folder is searched for, in order, as exact names a hub can serve; a
# tokenizer.model counts only when it is in tiktoken format. After them, a folder's one other
# *.tiktoken file, whatever its name, is taken too.
TOKENIZER_FILES = ("tokenizer.json", "original/tokenizer.model", "tokenizer.model", "qwen.tiktoken")
# Read beside a tokenizer.json, when there, for its pad and eos tokens (tokenizer.json lacks them).
CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json")

BYTE_LEVEL = "byte-level"
SENTENCEPIECE = "sentencepiece"

# Used when nothing names the eos token: the end-of-text tokens of GPT-2, Qwen, Llama 2/3, Gemma.
_END_OF_TEXT_NAMES = ("<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>")

# Split patterns proven cut-safe (tests/test_model_tokenizers.py checks each): in every
# alternative a space can only open a match, so no match holds a non-whitespace character
# followed by a space.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
LLAMA4_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
CUT_SAFE_PATTERNS = frozenset({GPT2_PATTERN, LLAMA3_PATTERN, QWEN_PATTERN, LLAMA4_PATTERN})

_HOLDS_CUT = re.compile(r"\S ")  # Python's \s is str.isspace, the test split_points uses
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_TIKTOKEN_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?")
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f-\xff]")  # bytes no text file holds


# ---------------------------------------------------------------- the tiktoken-format families


def _llama3_specials() -> tuple[str, ...]:
    named = (
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>",
        "<|finetune_right_pad_id|>",
        "<|step_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eom_id|>",
        "<|eot_id|>",
        "<|python_tag|>",
        "<|image|>",
    )
    return named + tuple(f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(named)))


def _reserved(kind: str, count: int, start: int) -> tuple[str, ...]:
    return tuple(f"<|{kind}_reserved_special_token_{i}|>" for i in range(start, start + count))


def _llama4_specials() -> tuple[str, ...]:
    basic = (
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|fim_prefix|>",
        "<|fim_middle|>",
        "<|fim_suffix|>",
    )
    post_train = (  # 200005 to 200079
        "<|header_start|>",
        "<|header_end|>",
        "<|eom|>",
        "<|eot|>",
        "<|step|>",
        *_reserved("text_post_train", 6, 0),
        "<|python_start|>",
        "<|python_end|>",
        "<|finetune_right_pad|>",
        *_reserved("text_post_train", 61, 8),
    )
    vision = (  # 200080 to 201133
        "<|image_start|>",
        "<|image_end|>",
        *_reserved("vision", 2, 0),
        "<|tile_x_separator|>",
        "<|tile_y_separator|>",
        *_reserved("vision", 4, 2),
        "<|image|>",
        *_reserved("vision", 1, 6),
        "<|patch|>",
        *_reserved("vision", 1041, 7),
    )
    reasoning = (  # 201134 to 201143
        *_reserved("reasoning", 8, 0),
        "<|reasoning_thinking_start|>",
        "<|reasoning_thinking_end|>",
    )
    named = basic + post_train + vision + reasoning
    return named + tuple(f"<|reserved_special_token_{i}|>" for i in range(2048 - len(named)))


def _qwen_specials() -> tuple[str, ...]:
    extras = (f"<|extra_{i}|>" for i in range(205))
    return ("<|endoftext|>", "<|im_start|>", "<|im_end|>", *extras)


@dataclass(frozen=True)
class TiktokenFamily:
    """What a tiktoken-format model file leaves out: its split pattern and special tokens."""

    key: str  # the ``family`` argument that names it
    title: str
    n_ranks: int  # tokens in the published file: how a file is recognised
    pattern: str
    specials: tuple[str, ...]  # ids from the number of ranks on, in this order
    begin: str | None  # put before every text by default (transformers' add_bos_token)
    end_of_text: str  # pads a batch
    nfc: bool = False  # the model's tokenizer NFC-normalizes text before encoding it


FAMILIES = {
    f.key: f
    for f in (
        TiktokenFamily(
            "llama3",
            "Llama 3",
            128_000,
            LLAMA3_PATTERN,
            _llama3_specials(),
            "<|begin_of_text|>",
            "<|end_of_text|>",
        ),
        TiktokenFamily(
            "llama4",
            "Llama 4",
            200_000,
            LLAMA4_PATTERN,
            _llama4_specials(),
            "<|begin_of_text|>",
            "<|end_of_text|>",
        ),
        TiktokenFamily(
            "qwen", "Qwen", 151_643, QWEN_PATTERN, _qwen_specials(), None, "<|endoftext|>", nfc=True
        ),
    )
}


# ---------------------------------------------------------------- shared helpers


MAX_TOKENIZER_BYTES = 1 << 30  # the largest published tokenizer.json is tens of MB


def _read_bytes(path: Path, limit: int = MAX_TOKENIZER_BYTES) -> bytes:
    try:
        if path.stat().st_size > limit or not path.is_file():
            raise EncodingError(
                f"{path} is not a tokenizer file (not a regular file of at most "
                f"{limit // 2**20:,} MiB)"
            )
        with path.open("rb") as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        raise EncodingError(
            f"cannot read {path}: {exc.strerror or exc}; check the path and its permissions"
        ) from None


@cache
def _char_of_byte() -> tuple[str, ...]:
    """GPT-2's bytes_to_unicode: the printable character each byte is written as in a vocab."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in printable}
    for shifted, b in enumerate(b for b in range(256) if b not in chars):
        chars[b] = chr(256 + shifted)
    return tuple(chars[b] for b in range(256))


@cache
def _byte_of_char() -> dict[str, int]:
    return {c: b for b, c in enumerate(_char_of_byte())}


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


# ---------------------------------------------------------------- tiktoken-format files


class ModelTiktoken:
    """A real ``tiktoken.Encoding`` of a model's own file, with the model's family rules."""

    def __init__(
        self, encoding: tiktoken.Encoding, family: TiktokenFamily, *, sha256: str, path: Path
    ) -> None:
        self.encoding = encoding
        self.family = family.key
        self.path = path
        self.sha256 = sha256  # of the file as read
        self.name = encoding.name
        self.n_vocab = encoding.n_vocab
        self.special_tokens_set = encoding.special_tokens_set
        self.eot_token: int | None = encoding.encode_single_token(family.end_of_text)
        begin = () if family.begin is None else (encoding.encode_single_token(family.begin),)
        self.prefix: tuple[int, ...] = begin
        self.suffix: tuple[int, ...] = ()
        self.cut_safe = True  # every family's pattern is in CUT_SAFE_PATTERNS, NFC included
        self._nfc = family.nfc

    def __repr__(self) -> str:
        return f"<ModelTiktoken {self.name!r} ({self.family})>"

    def _normal(self, text: str) -> str:
        return unicodedata.normalize("NFC", text) if self._nfc else text

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text``, special-token text encoded as plain text."""
        return self.encoding.encode_ordinary(self._normal(text))

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | AbstractSet[str] = "all",
    ) -> list[int]:
        """tiktoken's ``encode``: allowed special-token text becomes special ids."""
        return self.encoding.encode(
            self._normal(text),
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
        )

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of one whole token (KeyError when it is not one)."""
        return self.encoding.encode_single_token(text_or_bytes)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (KeyError for an id the file lacks)."""
        return self.encoding.decode_single_token_bytes(token)

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of a sequence of ids."""
        return self.encoding.decode_bytes(tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of a sequence of ids."""
        return self.encoding.decode(tokens, errors=errors)


def _looks_like_tiktoken(data: bytes) -> bool:
    first = data.lstrip(b"\r\n")[:512].split(b"\n", 1)[0]
    return bool(_TIKTOKEN_LINE.fullmatch(first))


def _check_tiktoken_format(path: Path, data: bytes) -> None:
    if not data.strip():
        raise EncodingError(f"{path} is empty; pass the model's tokenizer file")
    if _looks_like_tiktoken(data):
        return
    if data.startswith(b"\n") and _BINARY.search(data[:512]):
        raise EncodingError(
            f"{path} is a SentencePiece model (binary protobuf), not a tiktoken-format BPE file; "
            "use the model's tokenizer.json instead (Hugging Face repositories ship one beside "
            "tokenizer.model)"
        )
    raise EncodingError(
        f"{path} is not a tiktoken-format BPE file (lines of `<base64 token> <rank>`); pass a "
        "tokenizer.json, a tiktoken-format tokenizer.model or a .tiktoken file"
    )


def _check_ranks(path: Path, ranks: dict[bytes, int]) -> None:
    n = len(ranks)
    if n == 0 or min(ranks.values()) != 0 or max(ranks.values()) != n - 1:
        raise EncodingError(
            f"{path} is damaged: its ranks should run from 0 to one less than its {n:,} tokens, "
            "each once; download the file again"
        )
    if any(bytes([b]) not in ranks for b in range(256)):
        raise EncodingError(
            f"{path} lacks some of the 256 single-byte tokens every byte-level BPE needs; "
            "download the file again"
        )


def _parse_ranks(path: Path, data: bytes, sha256: str) -> dict[bytes, int]:
    """The file's ranks, from embedcli's ranks cache when it holds the same bytes."""
    ranks = ranks_cache.load_ranks(sha256)
    if ranks is None:
        try:
            ranks = parse_tiktoken_bpe(data)
        except ValueError:  # a bad base64 token (binascii.Error) or rank, or a short line
            raise EncodingError(
                f"{path} is not a tiktoken-format BPE file: some line is not "
                "`<base64 token> <rank>`; download the file again"
            ) from None
        _check_ranks(path, ranks)
        ranks_cache.store_ranks(sha256, ranks)
    else:
        _check_ranks(path, ranks)
    return ranks


def _family(path: Path, family: str | None, n_ranks: int) -> TiktokenFamily:
    if family is not None:
        if family not in FAMILIES:
            raise EncodingError(
                f"unknown tokenizer family {family!r}; choose one of: {', '.join(FAMILIES)}"
            )
        return FAMILIES[family]
    for known in FAMILIES.values():
        if known.n_ranks == n_ranks:
            return known
    sizes = "; ".join(f"{f.title}: {f.n_ranks:,} ({f.key})" for f in FAMILIES.values())
    raise EncodingError(
        f"{path} holds {n_ranks:,} tokens, which matches no tokenizer family embedcli knows "
        f"({sizes}); name its family ({', '.join(FAMILIES)}) to say which special tokens it has"
    )


def load_tiktoken_file(path: Path, name: str, family: str | None = None) -> ModelTiktoken:
    """A tiktoken-format model file (Llama 3, Llama 4, Qwen); ``family`` None: by its size."""
    import tiktoken

    path = Path(path)
    data = _read_bytes(path)
    _check_tiktoken_format(path, data)
    sha256 = hashlib.sha256(data).hexdigest()
    ranks = _parse_ranks(path, data, sha256)
    fam = _family(path, family, len(ranks))
    specials = {token: len(ranks) + i for i, token in enumerate(fam.specials)}
    encoding = tiktoken.Encoding(
        name=name, pat_str=fam.pattern, mergeable_ranks=ranks, special_tokens=specials
    )
    return ModelTiktoken(encoding, fam, sha256=sha256, path=path)


# ---------------------------------------------------------------- tokenizer.json


class HFTokenizer:
    """A Hugging Face tokenizer.json behind ``tiktoken.Encoding``'s interface."""

    def __init__(
        self, tokenizer: tokenizers.Tokenizer, spec: dict[str, Any], *, name: str, path: Path
    ) -> None:
        self.name = name
        self.path = path
        self.family = _family_of_json(path, spec)  # BYTE_LEVEL or SENTENCEPIECE
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
        self.n_vocab = _n_vocab(spec, added)
        model = spec["model"]
        self._byte_fallback = bool(model.get("byte_fallback"))
        self._replacement = _replacement(spec)
        self.prefix, self.suffix = _added_around(path, tokenizer)
        self.eot_token = self._eot(spec)
        self.cut_safe = _cut_safe(spec, self.family)

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
            byte_of = _byte_of_char()
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
            yield "".join(_char_of_byte()[b] for b in data)
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

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of a sequence of ids, token by token."""
        return b"".join(self.decode_single_token_bytes(t) for t in tokens)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of a sequence of ids (no prefix space is stripped)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    # --- what pads a batch

    def _eot(self, spec: dict[str, Any]) -> int | None:
        padding = spec.get("padding")
        names = [padding.get("pad_token")] if isinstance(padding, dict) else []
        pads, eoses = _config_tokens(self.path.parent)
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
    try:
        return tokenizer.encode(text, add_special_tokens=False).ids
    except TypeError:
        if not isinstance(text, str):
            raise
        # Lone surrogates cannot reach Rust; tiktoken replaces them with U+FFFD, and so do we.
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return tokenizer.encode(text, add_special_tokens=False).ids


def _components(node: object) -> Iterator[dict[str, Any]]:
    """Every typed part of a normalizer/pre-tokenizer/decoder, through Sequences."""
    if isinstance(node, dict):
        if "type" in node:
            yield node
        for value in node.values():
            if isinstance(value, list):
                for item in value:
                    yield from _components(item)


def _replaces(parts: list[dict[str, Any]], old: str, new: str) -> bool:
    return any(
        p["type"] == "Replace" and p.get("pattern") == {"String": old} and p.get("content") == new
        for p in parts
    )


def _replacement(spec: dict[str, Any]) -> str:
    for part in [*_components(spec.get("pre_tokenizer")), *_components(spec.get("decoder"))]:
        if part["type"] == "Metaspace" and isinstance(part.get("replacement"), str):
            return part["replacement"]
    return "▁"


def _model_type(model: dict[str, Any]) -> str:
    if isinstance(model.get("type"), str):
        return model["type"]
    if "merges" in model:  # files from old tokenizers versions leave the type out
        return "BPE"
    if isinstance(model.get("vocab"), list):
        return "Unigram"
    return "WordPiece" if "max_input_chars_per_word" in model else "WordLevel"


def _family_of_json(path: Path, spec: dict[str, Any]) -> str:
    """BYTE_LEVEL or SENTENCEPIECE, from the file's own parts; else an EncodingError."""
    kind = _model_type(spec["model"])
    if kind not in ("BPE", "Unigram"):
        raise EncodingError(
            f"{path} holds a {kind} tokenizer (as BERT-style encoders use), whose tokens are not "
            "pieces of the text's bytes; embedcli reads BPE tokenizers (byte-level, as GPT-2 and "
            "Llama 3, or SentencePiece-style, as Llama 2 and Gemma) and SentencePiece Unigram ones"
        )
    pre = list(_components(spec.get("pre_tokenizer")))
    decoder = list(_components(spec.get("decoder")))
    normalizer = list(_components(spec.get("normalizer")))
    if any(p["type"] == "ByteLevel" for p in pre + decoder):
        return BYTE_LEVEL
    if (
        any(p["type"] == "Metaspace" for p in pre + decoder)
        or _replaces(decoder, "▁", " ")
        or _replaces(normalizer, " ", "▁")
        or spec["model"].get("byte_fallback")
    ):
        return SENTENCEPIECE
    raise EncodingError(
        f"{path} writes its tokens neither as byte-level pieces (Ġ, as GPT-2) nor as "
        "SentencePiece pieces (▁, as Llama 2), so embedcli cannot tell the bytes of a token; "
        "pass the tokenizer of a GPT-style model"
    )


def _n_vocab(spec: dict[str, Any], added: dict[int, Any]) -> int:
    vocab = spec["model"].get("vocab")
    top = max(vocab.values(), default=-1) if isinstance(vocab, dict) else len(vocab or ()) - 1
    return max([top, *added]) + 1


def _added_around(path: Path, tokenizer: tokenizers.Tokenizer) -> tuple[tuple[int, ...], ...]:
    """The ids the post-processor puts before and after one text (prefix, suffix)."""
    try:
        bare = tokenizer.encode("a", add_special_tokens=False).ids
        full = tokenizer.encode("a", add_special_tokens=True).ids
    except Exception as exc:  # tokenizers raises plain Exceptions from Rust
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        raise EncodingError(f"{path}: the tokenizer cannot encode a plain 'a' ({first})") from None
    for start in range(len(full) - len(bare) + 1):
        if bare and full[start : start + len(bare)] == bare:
            return tuple(full[:start]), tuple(full[start + len(bare) :])
    raise EncodingError(
        f"{path}: its post-processor changes a text's own tokens, so embedcli cannot tell "
        "which special tokens it adds around a text"
    )


def _config_tokens(folder: Path) -> tuple[list[str], list[str]]:
    """The pad and eos tokens named by the config files beside a tokenizer.json."""
    pads: list[str] = []
    eoses: list[str] = []
    for file_name in CONFIG_FILES:
        try:
            config = json.loads(_read_bytes(folder / file_name, 64 << 20))
        except (OSError, ValueError, RecursionError, EncodingError):
            continue  # absent or unreadable: these files only refine eot_token
        if not isinstance(config, dict):
            continue
        for key, found in (("pad_token", pads), ("eos_token", eoses)):
            value = config.get(key)
            value = value.get("content") if isinstance(value, dict) else value
            if isinstance(value, str):
                found.append(value)
    return pads, eoses


def _added_token_safe(token: dict[str, Any]) -> bool:
    content = token.get("content")
    stripping = token.get("lstrip") or token.get("rstrip") or token.get("single_word")
    return isinstance(content, str) and not stripping and not _HOLDS_CUT.search(content)


def _pre_tokenizer_safe(pre: object) -> bool:
    if not isinstance(pre, dict):
        return False
    if pre.get("type") == "ByteLevel":  # GPT-2's own split, built in
        return pre.get("use_regex", True) is True and not pre.get("add_prefix_space", True)
    parts = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not isinstance(parts, list) or len(parts) != 2:
        return False
    split, level = parts
    pattern = split.get("pattern") if isinstance(split, dict) else None
    return (
        isinstance(pattern, dict)
        and pattern.get("Regex") in CUT_SAFE_PATTERNS
        and split.get("type") == "Split"
        and split.get("behavior") == "Isolated"
        and not split.get("invert", True)
        and isinstance(level, dict)
        and level.get("type") == "ByteLevel"
        and level.get("use_regex") is False
        and not level.get("add_prefix_space", True)
    )


def _cut_safe(spec: dict[str, Any], family: str) -> bool:
    """Whether split_points' cuts provably keep the ids of one pass (see the module doc)."""
    model = spec["model"]
    return (
        family == BYTE_LEVEL
        and _model_type(model) == "BPE"
        and not model.get("dropout")
        and spec.get("normalizer") in (None, {"type": "NFC"})
        and all(_added_token_safe(t) for t in spec.get("added_tokens") or ())
        and _pre_tokenizer_safe(spec.get("pre_tokenizer"))
    )


def _parse_json(path: Path, data: bytes) -> tuple[str, dict[str, Any]]:
    try:
        text = data.decode("utf-8")
        spec = json.loads(text)
    except UnicodeDecodeError:
        raise EncodingError(
            f"{path} is not a tokenizer.json (it is not UTF-8 text); pass the model's "
            "tokenizer.json, or its tiktoken-format tokenizer.model"
        ) from None
    except json.JSONDecodeError as exc:
        raise EncodingError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); pass the model's "
            "tokenizer.json, downloaded again if it was cut short"
        ) from None
    except (ValueError, RecursionError) as exc:  # nesting or integers past Python's limits
        raise EncodingError(
            f"{path} is not a usable tokenizer.json ({type(exc).__name__})"
        ) from None
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise EncodingError(
            f'{path} is JSON but not a Hugging Face tokenizer.json (it has no "model" '
            "section); pass the model's tokenizer.json"
        )
    return text, spec


def load_tokenizer_json(path: Path, name: str) -> HFTokenizer:
    """A Hugging Face tokenizer.json: byte-level BPE, or SentencePiece-style BPE or Unigram."""
    path = Path(path)
    text, spec = _parse_json(path, _read_bytes(path))
    _family_of_json(path, spec)  # refuse unsupported models before the slow part
    try:
        from tokenizers import Tokenizer, __version__
    except ImportError:
        raise EncodingError(
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


# ---------------------------------------------------------------- one entry point


def _is_tiktoken_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return _looks_like_tiktoken(handle.read(512))
    except OSError as exc:
        raise EncodingError(f"cannot read {path}: {exc.strerror or exc}") from None


def find_tokenizer_file(folder: Path) -> Path:
    """The tokenizer file of a model folder, searched for as TOKENIZER_FILES lists."""
    folder = Path(folder)
    if (folder / "tokenizer.json").is_file():
        return folder / "tokenizer.json"
    sentencepiece = None
    for relative in TOKENIZER_FILES[1:3]:
        candidate = folder / relative
        if candidate.is_file():
            if _is_tiktoken_file(candidate):
                return candidate
            sentencepiece = sentencepiece or relative
    if (folder / TOKENIZER_FILES[3]).is_file():
        return folder / TOKENIZER_FILES[3]
    found = sorted(p for p in folder.glob("*.tiktoken") if p.is_file())
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(p.name for p in found)
        raise EncodingError(f"{folder} holds several .tiktoken files ({names}); pass one of them")
    if sentencepiece is not None:
        raise EncodingError(
            f"{folder} has no tokenizer.json, and its {sentencepiece} is a SentencePiece model, "
            "which embedcli does not read; download the model's tokenizer.json into the folder"
        )
    raise EncodingError(
        f"no tokenizer in {folder}: looked for tokenizer.json, original/tokenizer.model and "
        "tokenizer.model (tiktoken format), and *.tiktoken; pass the tokenizer file itself, or "
        "download the model's tokenizer.json into the folder"
    )


def load_model_tokenizer(
    path: Path, name: str | None = None, family: str | None = None
) -> HFTokenizer | ModelTiktoken:
    """A model's tokenizer from a tokenizer.json, a tiktoken-format file, or a model folder."""
    path = Path(path)
    if path.is_dir():
        label = name or path.resolve().name
        path = find_tokenizer_file(path)
    elif path.exists():
        label = name or path.name
    else:
        raise EncodingError(f"no such file or folder: {path}")
    suffix = path.suffix.lower()
    if suffix == ".json":
        if family is not None:
            raise EncodingError(
                f"a tokenizer family ({family}) applies only to tiktoken-format files; {path} is "
                "a tokenizer.json, which names its own special tokens"
            )
        return load_tokenizer_json(path, label)
    if suffix in (".model", ".tiktoken"):
        return load_tiktoken_file(path, label, family)
    raise EncodingError(
        f"{path} is neither a tokenizer.json nor a tiktoken-format .model or .tiktoken file; "
        "pass one of those, or the model's folder"
    )
