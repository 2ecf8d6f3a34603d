"""The tokenizer of a GGUF file (llama.cpp's format), built from the file's metadata so that its
ids are the ones llama.cpp gives (``llama_tokenize`` with ``add_special`` off; ``prefix`` and
``suffix`` say what ``add_special`` adds).

A byte-level vocabulary becomes an in-memory tokenizer.json and runs in
:class:`embedcli.tokenization.hfjson.HFTokenizer`; the others run as llama.cpp's own code does,
ported (:mod:`embedcli.tokenization.gguf.native`). What llama.cpp does, and how it is written
here:

- ``tokenizer.ggml.model`` "gpt2": byte-level BPE, merges ranked in file order, the
  pre-tokenizer of ``tokenizer.ggml.pre`` (:mod:`embedcli.tokenization.gguf.pre`, every name
  llama.cpp maps, and :mod:`~embedcli.tokenization.gguf.preregex`, which says how llama.cpp's
  regex engine differs from Oniguruma's); ``ignore_merges`` where llama.cpp sets it. The
  pre-tokenizers that do not byte-encode (Gemma 4's, Sarvam's, the whitespace one) run as
  llama.cpp's BPE session does, ported (:mod:`embedcli.tokenization.gguf.rawbpe`).
- "llama": SentencePiece-style, run by :class:`embedcli.tokenization.gguf.spm.SentencePieceGGUF`
  exactly as llama.cpp's ``llm_tokenizer_spm_session`` runs it (merges by score over the
  whole text, byte fallback, the prefix space of ``tokenizer.ggml.add_space_prefix``), with
  llama.cpp's special-token partition (:mod:`embedcli.tokenization.gguf.native`): no merges
  table is built, so a 262,144-token vocabulary loads in a fraction of a second.
- "bert", "t5" and "rwkv": llama.cpp's WordPiece (:mod:`embedcli.tokenization.gguf.wpm`, with
  llama.cpp's own Unicode 15.1 tables, :mod:`~embedcli.tokenization.gguf.unicodetables`),
  Unigram (:mod:`~embedcli.tokenization.gguf.ugm`, after the file's precompiled charsmap,
  :mod:`~embedcli.tokenization.gguf.charsmap`) and RWKV (:mod:`~embedcli.tokenization.gguf.rwkv`)
  sessions, ported; llama.cpp reads no ``tokenizer.ggml.pre`` for them (nor for "llama").
- "gemma4" (Gemma 4's own files): "gpt2" with Gemma 4's pre-tokenizer whatever
  ``tokenizer.ggml.pre`` says, and no default special ids. "whitespace": "gpt2" whose text is
  cut at whitespace, which is dropped (:class:`~embedcli.tokenization.gguf.rawbpe.WhitespaceBPE`),
  under the whitespace pre-tokenizer only.
- Token types (NORMAL=1, UNKNOWN=2, CONTROL=3, USER_DEFINED=4, UNUSED=5, BYTE=6): CONTROL and
  UNKNOWN tokens are special (their text is plain text for ``encode_ordinary``, llama.cpp's
  ``parse_special`` off); USER_DEFINED tokens always match as one token. llama.cpp also makes a
  token CONTROL by its text (``<|endoftext|>``, ``</s>``, ``<|eot_id|>``, ... listed below) and
  four gpt-oss tokens USER_DEFINED, and so does this module. llama.cpp matches the longest
  token's text first through the whole text, tokenizers the leftmost-longest: they differ only
  for tokens whose texts overlap in a text.
- bos and eos ids: the file's, else llama.cpp's defaults (1 and 2 for "llama", 11 and 11 for
  "gpt2", 101 and none for "bert", with the separator 102 and unknown 100, none and 1 for
  "t5", with unknown 2, none for "rwkv"; dropped when out of range). ``add_bos_token``: the
  file's, else llama.cpp's default (true for "llama" and "bert" and for the llama3, tekken and
  chameleon pre-tokenizers; always true for Gemma 4's); ``add_eos_token``: the file's, else
  false (true for "t5"). "bert" adds bos and the separator, "rwkv" nothing, whatever the flags
  say. An id the file gives out of range is refused here (llama.cpp warns and keeps its
  default).

Other tokenizer models ("no_vocab", "plamo2", "hybriddna"'s DNA k-mers, ...) and unknown
pre-tokenizers are refused, never guessed.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.errors import EncodingError, MissingExtraError
from embedcli.tokenization import hfspec
from embedcli.tokenization.gguf.pre import (
    CUT_SAFE_REGEXES,
    PreTokenizer,
    pre_tokenizer,
    refusal,
)
from embedcli.tokenization.gguf.spm import SentencePieceGGUF
from embedcli.tokenization.hfjson import HFTokenizer

if TYPE_CHECKING:
    from embedcli.tokenization.gguf.native import NativeTokenizer

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
SPECIAL_TYPES = (CONTROL, USER_DEFINED, UNKNOWN)  # llama.cpp's special-token cache

KEY = "tokenizer.ggml."
MODELS = ("gpt2", "llama", "bert", "t5", "rwkv", "gemma4", "whitespace")
UNSPLIT = ("llama", "bert", "t5", "rwkv")  # llama.cpp reads no pre-tokenizer for these
# Texts llama.cpp makes CONTROL whatever their type (its EOT, EOM, FIM and EOG lists).
_CONTROL_TEXTS = (
    "<|eot_id|> <|im_end|> <|end|> <end_of_turn> <|endoftext|> <|end_of_text|> <EOT> _<EOT> "
    "[EOT] <｜end▁of▁sentence｜> <end_of_utterance> <|eom_id|> <|fim_prefix|> <fim-prefix> "
    "<fim_prefix> <｜fim▁begin｜> <PRE> ▁<PRE> <|code_prefix|> <|prefix|> <|fim_suffix|> "
    "<fim-suffix> <fim_suffix> <｜fim▁hole｜> <SUF> ▁<SUF> <|code_suffix|> <|suffix|> "
    "<|fim_middle|> <fim-middle> <fim_middle> <｜fim▁end｜> <MID> ▁<MID> <|code_middle|> "
    "<|middle|> <|fim_pad|> <fim-pad> <fim_pad> <PAD> [PAD] <|fim_repo|> <|repo_name|> "
    "<fim-repo> <REPO> <reponame> <|file_sep|> <|return|> <|call|> <|flush|> <|calls|> </s> "
    "[EOS] <eos> <turn|> <|tool_response> [e~["
)
CONTROL_TEXTS = frozenset(_CONTROL_TEXTS.split())
USER_DEFINED_TEXTS = frozenset(("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"))
_DEFAULT_IDS = {
    "llama": {"bos": 1, "eos": 2, "unk": 0},
    "gpt2": {"bos": 11, "eos": 11},
    "bert": {"bos": 101, "unk": 100, "sep": 102, "padding": 0},
    "t5": {"eos": 1, "unk": 2, "padding": 0},
    "rwkv": {},
    "gemma4": {},  # read from the file alone
    "whitespace": {"bos": 11, "eos": 11},  # "gpt2"'s
}
# the special ids and their keys (llama.cpp's spelling: seperator)
_SPECIAL_KEYS = (
    ("bos", "bos"),
    ("eos", "eos"),
    ("unk", "unknown"),
    ("sep", "seperator"),
    ("padding", "padding"),
)
# llama.cpp's add_bos and add_eos where the file says nothing (and no pre-tokenizer sets them)
_DEFAULT_ADD = {"llama": (True, False), "bert": (True, False), "t5": (False, True)}
# add_special adds [CLS] and [SEP] ("bert"), or nothing ("rwkv"), whatever the flags say
_FLAGS_UNREAD = ("bert", "rwkv")
# the ports of llama.cpp's other sessions (module, class), imported when a file needs one
_PORTS = {
    "bert": ("wpm", "WordPieceGGUF"),
    "t5": ("ugm", "UnigramGGUF"),
    "rwkv": ("rwkv", "RwkvGGUF"),
}


class _Meta:
    """Typed reads of tokenizer metadata, each refusal one line naming the file."""

    def __init__(self, metadata: Mapping[str, Any], label: str) -> None:
        self.metadata = metadata
        self.label = label

    def fail(self, problem: str) -> EncodingError:
        return EncodingError(f"{self.label}: {problem}")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        value = self.metadata.get(KEY + key, default)
        if value is default:
            return default
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(f"{KEY}{key} is {value!r}, not {_kind_name(kind)}")
        if not isinstance(value, kind):
            raise self.fail(f"{KEY}{key} is {_kind_name(type(value))}, not {_kind_name(kind)}")
        return value

    def strings(self, key: str, required: bool) -> list[str] | None:
        value = self.get(key, list)
        if value is None:
            if required:
                raise self.fail(f"the tokenizer has no {KEY}{key}, which its model needs")
            return None
        bad = next((i for i, v in enumerate(value) if not isinstance(v, str)), None)
        if bad is not None:
            raise self.fail(f"{KEY}{key}[{bad}] is {_kind_name(type(value[bad]))}, not a str")
        return value

    def numbers(self, key: str, kind: type | tuple[type, ...], n: int) -> list[Any] | None:
        value = self.get(key, list)
        if value is None:
            return None
        if len(value) != n:
            raise self.fail(f"{KEY}{key} has {len(value):,} entries for {n:,} tokens")
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, kind):
                raise self.fail(f"{KEY}{key}[{i}] is {v!r}, not {_kind_name(kind)}")
        return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    """'an int', 'a str', 'a float or int': the kinds named with their article."""
    names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
    return ("an " if names[0] in "aeiou" else "a ") + names


class _Vocab:
    """The checked tokenizer metadata of one file, with llama.cpp's defaults applied."""

    def __init__(self, metadata: Mapping[str, Any], label: str) -> None:
        meta = self.meta = _Meta(metadata, label)
        self.model = meta.get("model", str)
        if self.model is None:
            raise meta.fail(f"the file has no {KEY}model, so its tokenizer is unknown")
        if self.model not in MODELS:
            raise meta.fail(
                f"the tokenizer model {self.model!r} is not one embedcli reads (it reads "
                "'gpt2', byte-level BPE, 'llama', SentencePiece-style, 'bert', WordPiece, "
                "'t5', Unigram, 'rwkv', 'gemma4' and 'whitespace')"
            )
        # llama.cpp runs a "gemma4" model with Gemma 4's pre-tokenizer, whatever the file says
        self.pre_name = "gemma4" if self.model == "gemma4" else meta.get("pre", str)
        if self.model == "whitespace" and self.pre_name != "whitespace":
            raise meta.fail(
                f"the tokenizer model 'whitespace' comes with the pre-tokenizer 'whitespace' "
                f"(llama.cpp's converter pins it), not {self.pre_name!r}; embedcli refuses to "
                "guess how the two combine"
            )
        self.pre = None if self.model in UNSPLIT else self._pre()
        tokens = meta.strings("tokens", required=True)
        assert tokens is not None
        if not tokens:
            raise meta.fail(f"{KEY}tokens is empty")
        # llama.cpp names an empty token [EMPTY_<id>]
        self.tokens = [t or f"[EMPTY_{i}]" for i, t in enumerate(tokens)]
        self.ids = self._ids()
        n = len(tokens)
        scores = meta.numbers("scores", (float, int), n)
        self.scores = [float(s) for s in scores] if scores is not None else [0.0] * n
        if any(math.isnan(s) for s in self.scores):
            raise meta.fail(f"{KEY}scores holds NaN, which gives no order to merge by")
        types = meta.numbers("token_type", int, n)
        self.file_types = types if types is not None else [NORMAL] * n  # before llama.cpp's
        self.types = self._types(self.file_types)  # retyping by text (Unigram reads both)
        self.special = self._special_ids()
        self.add_bos, self.add_eos = self._add_flags()

    def _pre(self) -> PreTokenizer | None:
        if self.model == "llama":
            return None
        pre = pre_tokenizer(self.pre_name or "")  # none, or empty: llama.cpp's "default"
        if pre is None:
            raise self.meta.fail(
                f"the tokenizer's pre-tokenizer {refusal(self.pre_name or '')}; embedcli "
                "refuses to guess its splits"
            )
        return pre

    def _ids(self) -> dict[str, int]:
        ids: dict[str, int] = {}
        for i, token in enumerate(self.tokens):
            if ids.setdefault(token, i) != i:
                raise self.meta.fail(f"the token {token!r} has two ids, {ids[token]} and {i}")
        return ids

    def _types(self, types: list[int]) -> list[int]:
        types = list(types)
        for i, token in enumerate(self.tokens):
            if token in CONTROL_TEXTS and types[i] != CONTROL:
                types[i] = CONTROL
            elif token in USER_DEFINED_TEXTS:
                types[i] = USER_DEFINED
        return types

    def _special_ids(self) -> dict[str, int | None]:
        found: dict[str, int | None] = {}
        defaults = dict(_DEFAULT_IDS[self.model])
        if self.pre is not None and not self.pre.has_bos:
            defaults.pop("bos", None)
        for what, key in _SPECIAL_KEYS:
            value = self.meta.get(f"{key}_token_id", int)
            if value is None:
                default = defaults.get(what)
                found[what] = (
                    default if default is not None and default < len(self.tokens) else None
                )
            elif not 0 <= value < len(self.tokens):
                raise self.meta.fail(
                    f"{KEY}{key}_token_id is {value}, outside the vocabulary of "
                    f"{len(self.tokens):,} tokens"
                )
            else:
                found[what] = value
        return found

    def _add_flags(self) -> tuple[bool, bool]:
        default_bos, default_eos = _DEFAULT_ADD.get(self.model, (False, False))
        if self.pre is not None:
            default_bos = self.pre.add_bos
        add_bos = self.meta.get("add_bos_token", bool, default_bos)
        add_bos = add_bos or bool(self.pre and self.pre.bos_always)
        add_eos = self.meta.get("add_eos_token", bool, default_eos)
        for flag, what in ((add_bos, "bos"), (add_eos, "eos")):
            if flag and self.special[what] is None and self.model not in _FLAGS_UNREAD:
                raise self.meta.fail(
                    f"{KEY}add_{what}_token is true, but the file has no {what} id"
                )
        return add_bos, add_eos

    # --- the tokenizer.json

    def added_tokens(self) -> list[dict[str, Any]]:
        name = str(self.meta.metadata.get("general.name", "")).lower()
        phi3 = "phi-3" in name or "phi3" in name  # llama.cpp strips spaces after its specials
        added = []
        for i, (token, kind) in enumerate(zip(self.tokens, self.types, strict=True)):
            if kind in SPECIAL_TYPES:
                rstrip = phi3 and token not in ("<unk>", "<s>", "<|endoftext|>")
                added.append(_added(i, token, special=kind != USER_DEFINED, rstrip=rstrip))
        return added

    def merges(self) -> list[list[str]]:
        merges = self.meta.strings("merges", required=True)
        assert merges is not None
        pairs = []
        for i, merge in enumerate(merges):
            cut = merge.find(" ", 1)
            left, right = merge[:cut], merge[cut + 1 :]
            if cut < 0 or not {left, right, left + right} <= self.ids.keys():
                raise self.meta.fail(
                    f"{KEY}merges[{i}] ({merge!r}) is not two tokens, separated by a space, "
                    "that join into a token"
                )
            pairs.append([left, right])
        return pairs

    def spec(self) -> dict[str, Any]:
        """The in-memory tokenizer.json of a byte-level ("gpt2") vocabulary."""
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": self.added_tokens(),
            "normalizer": None,
            "pre_tokenizer": _byte_level_pre(self.pre) if self.pre is not None else None,
            "post_processor": self._post_processor(),
            "decoder": _BYTE_LEVEL_DECODER,
            "model": {
                "type": "BPE",
                "dropout": None,
                "unk_token": None,
                "continuing_subword_prefix": None,
                "end_of_word_suffix": None,
                "fuse_unk": False,
                "byte_fallback": False,
                "ignore_merges": bool(self.pre and self.pre.ignore_merges),
                "vocab": self.ids,
                "merges": self.merges(),
            },
        }

    def _post_processor(self) -> dict[str, Any] | None:
        around = [
            (self.tokens[self.special[w]], self.special[w])  # type: ignore[index]
            for w, on in (("bos", self.add_bos), ("eos", self.add_eos))
            if on
        ]
        if not around:
            return None
        before = [{"SpecialToken": {"id": t, "type_id": 0}} for t, _ in around[: int(self.add_bos)]]
        after = [{"SpecialToken": {"id": t, "type_id": 0}} for t, _ in around[int(self.add_bos) :]]

        def template(*parts: str) -> list[dict[str, Any]]:
            return [*before, *({"Sequence": {"id": p, "type_id": 0}} for p in parts), *after]

        return {
            "type": "TemplateProcessing",
            "single": template("A"),
            "pair": template("A", "B"),
            "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in around},
        }


def _added(i: int, token: str, *, special: bool, rstrip: bool) -> dict[str, Any]:
    return {
        "id": i,
        "content": token,
        "single_word": False,
        "lstrip": False,
        "rstrip": rstrip,
        "normalized": False,
        "special": special,
    }


_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False}
_BYTE_LEVEL_DECODER = {**_BYTE_LEVEL, "use_regex": False}


def _byte_level_pre(pre: PreTokenizer) -> dict[str, Any]:
    # GPT-2's regex too is a Split: ByteLevel's built-in one reads Unicode 16.0's characters
    # as letters, which llama.cpp does not (preregex)
    splits = [
        {
            "type": "Split",
            "pattern": {"Regex": r},
            "behavior": "MergedWithPrevious" if r in pre.joined else "Isolated",
            "invert": False,
        }
        for r in pre.regexes
    ]
    return {"type": "Sequence", "pretokenizers": [*splits, {**_BYTE_LEVEL, "use_regex": False}]}


def load_gguf_tokenizer(
    metadata: Mapping[str, Any], name: str, path: Path
) -> HFTokenizer | NativeTokenizer:
    """The tokenizer of a GGUF file from its metadata, giving llama.cpp's ids (``metadata``
    holds the ``tokenizer.*`` keys, and ``general.name``, which llama.cpp reads too)."""
    path = Path(path)
    vocab = _Vocab(metadata, str(path))  # named as given, as every error names a file
    if vocab.model == "llama":
        model_name = metadata.get("general.name")
        model_name = model_name if isinstance(model_name, str) else ""
        return SentencePieceGGUF(vocab, name=name, path=path, model_name=model_name)
    port = _PORTS.get(vocab.model)
    if port is not None:
        module = importlib.import_module(f"embedcli.tokenization.gguf.{port[0]}")
        return getattr(module, port[1])(vocab, name=name, path=path)
    if vocab.pre is not None and not vocab.pre.byte_encode:
        # on use, as the ports above: only the pre-tokenizers that do not byte-encode need it
        from embedcli.tokenization.gguf.rawbpe import RawBPE, WhitespaceBPE

        raw = WhitespaceBPE if vocab.model == "whitespace" else RawBPE
        return raw(vocab, vocab.pre, name=name, path=path)
    spec = vocab.spec()
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise MissingExtraError(
            "reading a GGUF file's tokenizer needs the tokenizers package; run: pip install "
            "tokenizers"
        ) from None
    import json

    try:
        tokenizer = Tokenizer.from_str(json.dumps(spec))
    except Exception as exc:  # tokenizers raises plain Exceptions from Rust
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        raise vocab.meta.fail(
            f"its tokenizer metadata does not make a tokenizer ({first})"
        ) from None
    tok = HFTokenizer(tokenizer, spec, name=name, path=path, config_files=False)
    pad = vocab.special["padding"]
    tok.eot_token = pad if pad is not None else vocab.special["eos"]
    if not tok.cut_safe and vocab.pre is not None and vocab.pre.regexes[0] in CUT_SAFE_REGEXES:
        tok.cut_safe = _cut_safe_as_cased(spec)
    return tok


def _cut_safe_as_cased(spec: dict[str, Any]) -> bool:
    """hfspec's cut-safety test, with llama.cpp's regex read as the tokenizer.json pattern it
    splits as ([sS] contractions as (?i:'s))."""

    parts = spec["pre_tokenizer"]["pretokenizers"]
    if len(parts) != 2:
        return False
    cased = CUT_SAFE_REGEXES[parts[0]["pattern"]["Regex"]]
    split = {**parts[0], "pattern": {"Regex": cased}}
    return hfspec.cut_safe(
        {**spec, "pre_tokenizer": {**spec["pre_tokenizer"], "pretokenizers": [split, parts[1]]}},
        hfspec.BYTE_LEVEL,
    )


def gguf_tokenizer_summary(metadata: Mapping[str, Any], label: str = "the GGUF file") -> dict:
    """What a report says of a GGUF file's tokenizer: model, pre, size, bos/eos and flags."""
    vocab = _Vocab(metadata, label)
    return {
        "model": vocab.model,
        "pre": vocab.pre_name if vocab.model == "gpt2" else None,
        "vocab_size": len(vocab.tokens),
        "bos_token_id": vocab.special["bos"],
        "eos_token_id": vocab.special["eos"],
        "add_bos": vocab.add_bos,
        "add_eos": vocab.add_eos,
    }
