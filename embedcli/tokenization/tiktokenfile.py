"""tiktoken-format model tokenizers: Llama 3's ``original/tokenizer.model``, Llama 4's
``tokenizer.model`` and Qwen's ``qwen.tiktoken``, each with its family's split pattern and special
tokens (from ``llama_models`` and Qwen's ``tokenization_qwen.py``).

The ranks are checked as they are parsed (one ``base64 rank`` pair a line, ranks unique) and
cached by the file's SHA-256. Qwen's tokenizer NFC-normalizes a text before encoding it, and so
does this one.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from embedcli.errors import EncodingError
from embedcli.io import cache as ranks_cache
from embedcli.tokenization.bpe import BadLine, parse_tiktoken_bpe, ranks_sha256
from embedcli.tokenization.common import LLAMA3_PATTERN, LLAMA4_PATTERN, QWEN_PATTERN, read_bytes

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

    import tiktoken


_TIKTOKEN_LINE = re.compile(rb"[A-Za-z0-9+/]+={0,2} [0-9]+\r?")
_BINARY = re.compile(rb"[\x00-\x08\x0e-\x1f\x7f-\xff]")  # bytes no text file holds


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


def looks_like_tiktoken(data: bytes) -> bool:
    first = data.lstrip(b"\r\n")[:512].split(b"\n", 1)[0]
    return bool(_TIKTOKEN_LINE.fullmatch(first))


def _check_tiktoken_format(path: Path, data: bytes) -> None:
    if not data.strip():
        raise EncodingError(f"{path} is empty; pass the model's tokenizer file")
    if looks_like_tiktoken(data):
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
    """The file's ranks, from embedcli's ranks cache when the entry filed under the file's hash
    holds exactly the file's ranks (written out again, they hash as the file does)."""
    ranks = ranks_cache.load_ranks(sha256)
    if ranks is not None and ranks_sha256(ranks) == sha256:
        _check_ranks(path, ranks)
        return ranks
    try:
        ranks = parse_tiktoken_bpe(data)
    except BadLine as exc:
        raise EncodingError(
            f"{path} is not a tiktoken-format BPE file: {exc}; download the file again"
        ) from None
    _check_ranks(path, ranks)
    if ranks_sha256(ranks) == sha256:  # else (CRLF lines, say) no entry could be checked
        ranks_cache.store_ranks(sha256, ranks)
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
    sizes = "; ".join(f"{f.title}: {f.n_ranks:,}" for f in FAMILIES.values())
    raise EncodingError(
        f"{path} holds {n_ranks:,} tokens, which matches no tokenizer family embedcli knows "
        f"({sizes}), so its special tokens are unknown; embedcli tells a tiktoken-format file's "
        "family by its size alone (no option names it): pass the model's tokenizer.json "
        "instead, which lists its own special tokens"
    )


def load_tiktoken_file(path: Path, name: str, family: str | None = None) -> ModelTiktoken:
    """A tiktoken-format model file (Llama 3, Llama 4, Qwen); ``family`` None: by its size."""
    import tiktoken

    path = Path(path)
    data = read_bytes(path)
    _check_tiktoken_format(path, data)
    sha256 = hashlib.sha256(data).hexdigest()
    ranks = _parse_ranks(path, data, sha256)
    fam = _family(path, family, len(ranks))
    specials = {token: len(ranks) + i for i, token in enumerate(fam.specials)}
    encoding = tiktoken.Encoding(
        name=name, pat_str=fam.pattern, mergeable_ranks=ranks, special_tokens=specials
    )
    return ModelTiktoken(encoding, fam, sha256=sha256, path=path)
