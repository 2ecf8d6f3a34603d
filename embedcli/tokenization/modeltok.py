"""Tokenizers of real models (Hugging Face tokenizer.json, tiktoken-format model files), behind the
interface embedcli already uses for a ``tiktoken.Encoding``.

Every object returned here is a :class:`ModelTokenizer` (the ``typing.Protocol``s below: a
:class:`Tokenizer` is what commands call on any encoding, a :class:`Vocabulary` what even
``IdsOnly`` has): ``name``, ``n_vocab`` (the
largest id + 1, added and special tokens included), ``eot_token`` (the id that pads a batch),
``special_tokens_set``, ``encode_ordinary``, ``encode`` (tiktoken's ``allowed_special`` and
``disallowed_special``), ``encode_single_token``, ``decode_single_token_bytes`` (the true bytes of
a token), ``decode_bytes`` and ``decode``; and three things a model adds:

- ``prefix`` and ``suffix``: the special ids the model's tokenizer puts around one text by default,
  as ``transformers`` does (Llama 3's ``<|begin_of_text|>``, 128000, before the text). ``encode``
  and ``encode_ordinary`` never add them: the caller decides.
- ``cut_safe``: True only when cutting a text with
  :func:`embedcli.tokenization.tokens.split_points` (just before a space that follows a
  non-whitespace character) provably gives the ids of one pass. That holds for byte-level BPE
  whose split pattern never holds a non-whitespace character followed by a space (GPT-2's,
  cl100k's as in Llama 3, Qwen's, o200k's as in Llama 4), with no prefix space, no
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
- Mistral's ``tekken.json`` (:func:`load_tekken_file`, on tiktoken): mistral-common's ids, with
  its special-token policy named in :mod:`.tekken`.
- SentencePiece ``tokenizer.model`` files (:func:`load_sentencepiece_model`, needs the
  ``sentencepiece`` package: ``embedcli[sentencepiece]``): the library's own ids, with what
  transformers adds for the folder (:mod:`.spmodel`, :mod:`.spconfig`). A file named
  ``tokenizer.model``, ``*.model`` or ``*.model.vN`` (Mistral's ``tokenizer.model.v3``) that is
  not in tiktoken format is one.

A model folder is searched in TOKENIZER_FILES' order: tokenizer.json first, as it says exactly
what transformers does, then tiktoken-format files, then tekken.json, then a SentencePiece
model (tokenizer.model, T5's spiece.model, original/tokenizer.model); a folder holding both a
tekken.json and a SentencePiece model is refused as ambiguous.

This module imports neither torch, tokenizers, tiktoken nor sentencepiece until a tokenizer is
loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from embedcli.errors import EncodingError, WeightsError, os_reason
from embedcli.models.config import folder_config
from embedcli.models.gguf.file import looks_like_gguf, open_gguf_file
from embedcli.models.gguf.ollama import resolve
from embedcli.models.hub.cache import not_cached
from embedcli.models.hub.remote import Remote, cached_snapshot
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.sample import is_sample
from embedcli.models.sources import classify
from embedcli.tokenization.gguf.tokenizer import load_gguf_tokenizer
from embedcli.tokenization.hfjson import load_tokenizer_json
from embedcli.tokenization.spmodel import load_sentencepiece_model
from embedcli.tokenization.tekken import is_tekken_name, load_tekken_file
from embedcli.tokenization.tiktokenfile import load_tiktoken_file, looks_like_tiktoken

if TYPE_CHECKING:
    from embedcli.tokenization.hfjson import HFTokenizer
    from embedcli.tokenization.spmodel import SentencePieceModel
    from embedcli.tokenization.tiktokenfile import ModelTiktoken


class Vocabulary(Protocol):
    """What every encoding has, ``IdsOnly`` (ids without a tokenizer) included."""

    @property
    def name(self) -> str: ...
    @property
    def n_vocab(self) -> int: ...  # the largest id + 1
    @property
    def eot_token(self) -> int | None: ...  # the id that pads a batch
    @property
    def special_tokens_set(self) -> AbstractSet[str]: ...
    def decode_single_token_bytes(self, token: int) -> bytes: ...  # KeyError: no such id


class Tokenizer(Vocabulary, Protocol):
    """What commands call on a tokenizer: a ``tiktoken.Encoding``, ``HFTokenizer``,
    ``ModelTiktoken`` (``TekkenTokenizer`` is one), ``SentencePieceModel``, and the GGUF
    tokenizers (HFTokenizers, or NativeTokenizers)."""

    def encode_ordinary(self, text: str) -> list[int]: ...
    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = ...,
        disallowed_special: Literal["all"] | AbstractSet[str] = ...,
    ) -> list[int]: ...
    def encode_single_token(self, text_or_bytes: str | bytes) -> int: ...
    def decode_bytes(self, tokens: Sequence[int]) -> bytes: ...
    def decode(self, tokens: Sequence[int], errors: str = ...) -> str: ...


class ModelTokenizer(Tokenizer, Protocol):
    """A model's own tokenizer (every one this module returns): a Tokenizer that also says
    what it adds around a text, and whether a text may be cut before a space."""

    @property
    def prefix(self) -> tuple[int, ...]: ...
    @property
    def suffix(self) -> tuple[int, ...]: ...
    @property
    def cut_safe(self) -> bool: ...


# The files a model folder is searched for, in order, as exact names a hub can serve: a
# tokenizer.model in tiktoken format comes before qwen.tiktoken, one that is a SentencePiece
# model after tekken.json (find_tokenizer_file). A folder's one other *.tiktoken file, whatever
# its name, counts too, and so does one *tekken*.json.
TOKENIZER_FILES = (
    "tokenizer.json",
    "original/tokenizer.model",
    "tokenizer.model",
    "qwen.tiktoken",
    "tekken.json",
    "spiece.model",  # T5's (and ALBERT's, XLNet's) name for its SentencePiece model
)
_MODEL_FILES = ("original/tokenizer.model", "tokenizer.model")
# a folder's SentencePiece model, in the order it is taken
_SENTENCEPIECE_FILES = ("tokenizer.model", "spiece.model", "original/tokenizer.model")
# a tiktoken-format or SentencePiece model file: tokenizer.model, *.model, Mistral's *.model.v3
_MODEL_NAME = re.compile(r".+\.model(?:\.v[0-9]+\w*)?")


def _is_tiktoken_file(path: Path) -> bool:
    try:
        if path.exists() and not path.is_file():  # a FIFO would block the open below
            raise EncodingError(f"{path} is not a tokenizer file (not a regular file)")
        with path.open("rb") as handle:
            return looks_like_tiktoken(handle.read(512))
    except OSError as exc:
        raise EncodingError(f"cannot read {path}: {os_reason(exc)}") from None


def _one_of(folder: Path, pattern: str, what: str) -> Path | None:
    found = sorted(p for p in folder.glob(pattern) if p.is_file())
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise EncodingError(f"{folder} holds several {what} ({names}); pass one of them")
    return found[0] if found else None


def find_tokenizer_file(folder: Path) -> Path:
    """The tokenizer file of a model folder, searched for as TOKENIZER_FILES lists."""
    folder = Path(folder)
    if (folder / "tokenizer.json").is_file():
        return folder / "tokenizer.json"
    models = [folder / name for name in _MODEL_FILES if (folder / name).is_file()]
    for candidate in models:
        if _is_tiktoken_file(candidate):
            return candidate
    if (folder / "qwen.tiktoken").is_file():
        return folder / "qwen.tiktoken"
    found = _one_of(folder, "*.tiktoken", ".tiktoken files")
    if found is not None:
        return found
    tekken = folder / "tekken.json"
    tekken = tekken if tekken.is_file() else _one_of(folder, "*tekken*.json", "tekken files")
    sentencepiece = next(
        (folder / name for name in _SENTENCEPIECE_FILES if (folder / name).is_file()), None
    )
    if tekken is not None and sentencepiece is not None:
        raise EncodingError(
            f"{folder} holds both {tekken.name} and the SentencePiece model "
            f"{sentencepiece.relative_to(folder)}, tokenizers with different ids; pass the one "
            "the model uses"
        )
    if tekken is not None or sentencepiece is not None:
        return tekken or sentencepiece  # type: ignore[return-value]
    raise EncodingError(
        f"no tokenizer in {folder}: looked for tokenizer.json, original/tokenizer.model and "
        "tokenizer.model (tiktoken format or SentencePiece), *.tiktoken, tekken.json and "
        "spiece.model; pass the tokenizer file itself, or download the model's tokenizer.json "
        "into the folder"
    )


def load_model_tokenizer(
    path: Path, name: str | None = None, family: str | None = None
) -> HFTokenizer | ModelTiktoken | SentencePieceModel:
    """A model's tokenizer from a tokenizer.json, a tiktoken-format file, a tekken.json, a
    SentencePiece model, or a model folder."""
    path = Path(path)
    if path.is_dir():
        label = name or path.resolve().name
        path = find_tokenizer_file(path)
    elif path.exists():
        label = name or path.name
    else:
        raise EncodingError(f"cannot read {path}: no such file or folder")

    if path.is_file() and looks_like_gguf(path):
        if family is not None:
            raise EncodingError(
                f"a tokenizer family ({family}) applies only to tiktoken-format files; {path} is "
                "a GGUF file, which carries its own tokenizer"
            )
        return gguf_file_tokenizer(path, label)
    if path.suffix.lower() == ".json":
        tekken = is_tekken_name(path)
        if family is not None:
            kind = "a tekken.json" if tekken else "a tokenizer.json"
            raise EncodingError(
                f"a tokenizer family ({family}) applies only to tiktoken-format files; {path} is "
                f"{kind}, which names its own special tokens"
            )
        return load_tekken_file(path, label) if tekken else load_tokenizer_json(path, label)
    model = bool(_MODEL_NAME.fullmatch(path.name))
    if path.suffix.lower() == ".tiktoken" or (model and _is_tiktoken_file(path)):
        return load_tiktoken_file(path, label, family)
    if model:
        if family is not None:
            raise EncodingError(
                f"a tokenizer family ({family}) applies only to tiktoken-format files; {path} is "
                "a SentencePiece model, which names its own special tokens"
            )
        return load_sentencepiece_model(path, label)
    raise EncodingError(
        f"{path} is neither a tokenizer.json, a tekken.json, a tiktoken-format .model or "
        ".tiktoken file, nor a SentencePiece .model; pass one of those, or the model's folder"
    )


# ---------------------------------------------------------------- a source's tokenizer


def _has_tokenizer(folder: Path) -> bool:
    return any((folder / name).is_file() for name in TOKENIZER_FILES) or any(
        p for pattern in ("*.tiktoken", "*tekken*.json") for p in folder.glob(pattern)
    )


def tokenizer_source(weights: str | Path) -> str | None:
    """The tokenizer a --weights source brings (as an -e value): a hub model's, a model
    folder's; the family's own tiktoken encoding for a folder without tokenizer files whose
    family has one (GPT-2's gpt2); None for a bare checkpoint file or folder of tables. A model
    folder with another tokenizer is an error without -e: GPT-2's ids
    would fit its table and give the wrong rows, silently."""
    source = classify(weights)
    text = source.text
    if source.kind in ("hub", "ollama", "gguf"):
        return text  # a GGUF file (an Ollama model is one) carries its tokenizer
    if source.kind != "folder":
        return None
    path = Path(text)
    if _has_tokenizer(path):
        return text
    config = folder_config(path)
    if config is None:
        return None  # a bare folder of tables: the default encoding
    own = None if config.family is None else config.family.own_encoding
    if own is not None and config.vocab_size in (None, own[1]):
        return own[0]  # GPT-2 itself: the family's own tiktoken encoding is its tokenizer
    raise EncodingError(
        f"{path} holds a model (model_type {config.model_type or 'not given'}) but no "
        f"tokenizer files ({', '.join(TOKENIZER_FILES)}); pass -e with its tokenizer (a file, "
        "a folder, or hf:ORG/NAME) or an encoding"
    )


def load_tokenizer(name: str, access: HubAccess = OFFLINE) -> ModelTokenizer:
    """A model's tokenizer from a file, a model folder, or hf:ORG/NAME (the cache first; the
    network only where ``access`` allows it, and then only the tokenizer files)."""
    source = classify(name)
    if source.kind == "ollama":
        return _loaded_tokenizer(resolve(name), name)
    spec = source.hub
    if spec is None and source.path is not None and is_sample(name):
        return _loaded_tokenizer(source.path, name)
    if spec is None:
        path = Path(name)
        if source.kind == "missing":
            raise EncodingError(f"cannot read the tokenizer {name}: no such file or folder")
        # a file is named with its folder: llama3/tokenizer.model, llama4/tokenizer.model
        label = f"{path.parent.name}/{path.name}" if path.is_file() and path.parent.name else None
        return _loaded_tokenizer(path, label or path.name or name)
    snapshot = cached_snapshot(spec, access)
    if snapshot is not None and _has_tokenizer(snapshot):
        return _loaded_tokenizer(snapshot, str(spec))
    if not access.allowed():
        raise not_cached(
            spec,
            "the tokenizer",
            files=TOKENIZER_FILES,
            instead="pass -e with an encoding or a tokenizer file",
        )
    remote = Remote(spec, access)
    for filename in TOKENIZER_FILES:
        found = remote.file(filename)
        if found is not None:
            if filename.endswith(".model") and not _is_tiktoken_file(found):
                # a SentencePiece model: what transformers adds is in the configs beside it
                for config in ("tokenizer_config.json", "special_tokens_map.json", "config.json"):
                    remote.file(config)
            return _loaded_tokenizer(found, str(spec))
    raise EncodingError(
        f"{spec} has no tokenizer files ({', '.join(TOKENIZER_FILES)}); pass -e with an "
        "encoding or a tokenizer file"
    )


def _loaded_tokenizer(path: Path, name: str) -> ModelTokenizer:
    """Load a tokenizer once per process for the same file (a command may ask several times)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise EncodingError(f"cannot read the tokenizer {path}: {os_reason(exc)}") from None
    # absolute, not resolved: a hub snapshot's file is a link to a blob named by its hash,
    # and the tokenizer's kind is told by the name (tokenizer.json, tokenizer.model)
    return _load_once(str(path.absolute()), stat.st_mtime_ns, stat.st_size, name)


@lru_cache(maxsize=8)
def _load_once(path: str, mtime: int, size: int, name: str) -> ModelTokenizer:
    return load_model_tokenizer(Path(path), name=name)


def gguf_file_tokenizer(path: Path, name: str) -> HFTokenizer:
    """The tokenizer a GGUF file carries in its metadata (``tokenizer.ggml.*``)."""

    try:
        gguf = open_gguf_file(path)
    except WeightsError as exc:
        raise EncodingError(str(exc)) from None
    metadata = {
        k: v.plain()
        for k, v in gguf.metadata.items()
        if k.startswith("tokenizer.") or k in ("general.name", "general.architecture")
    }
    return load_gguf_tokenizer(metadata, name, path)
