"""What a model folder says about its SentencePiece ``tokenizer.model``, as ``transformers``
reads it: the special tokens put around a text, the added tokens, and which tokens pad.

Read from the ``tokenizer_config.json`` beside the model file (``tokenizer_class``,
``add_bos_token``, ``add_eos_token``, ``bos_token``, ``eos_token``, ``pad_token``,
``added_tokens_decoder``, ``legacy``), else from ``config.json``'s ``model_type`` (how
``AutoTokenizer`` picks a class). The classes embedcli knows, with the defaults of
transformers 4's slow and fast classes where a key is absent (``add_bos_token=True`` in
``LlamaTokenizer`` and ``GemmaTokenizer``; ``T5Tokenizer`` always appends ``</s>``, reads
neither key, and puts its ``extra_ids`` sentinels after the model's pieces, ``<extra_id_0>``
last): ``CLASSES``. transformers 5.x builds these classes with ``add_bos_token`` False where the
key is absent (its docstrings still say True); every Llama 2, Mistral and Gemma folder on the hub
names the key, so the two agree on them. A folder naming another class is refused: which tokens
it puts around a text (XLM-R's ``<s> ... </s>``, ALBERT's ``[CLS] ... [SEP]``) is not known here.
A file with neither config beside it gets nothing added, as ``sentencepiece`` itself adds none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedcli.errors import EncodingError
from embedcli.tokenization.common import read_config_object

_ASCII_DIGITS = re.compile(r"[0-9]+")  # an id as transformers writes one (not "³", not "٣")
# T5's sentinels, at most (its folders have 100; each costs a special token's matching)
MAX_EXTRA_IDS = 1 << 14


@dataclass(frozen=True)
class TokenizerClass:
    """The defaults of one transformers tokenizer class for a SentencePiece model."""

    bos: str | None  # the class's default bos_token
    eos: str | None
    add_bos: bool  # where add_bos_token is absent
    add_eos: bool
    reads_keys: bool = True  # False: add_bos_token/add_eos_token are ignored (T5)
    extra_ids: int = 0  # sentinels <extra_id_0>... after the model's pieces, where not configured


_LLAMA = TokenizerClass("<s>", "</s>", add_bos=True, add_eos=False)
_GEMMA = TokenizerClass("<bos>", "<eos>", add_bos=True, add_eos=False)
_T5 = TokenizerClass(None, "</s>", add_bos=False, add_eos=True, reads_keys=False, extra_ids=100)
CLASSES = {
    "LlamaTokenizer": _LLAMA,
    "LlamaTokenizerFast": _LLAMA,
    "CodeLlamaTokenizer": _LLAMA,
    "CodeLlamaTokenizerFast": _LLAMA,
    "GemmaTokenizer": _GEMMA,
    "GemmaTokenizerFast": _GEMMA,
    "T5Tokenizer": _T5,
    "T5TokenizerFast": _T5,
}
# config.json's model_type -> the class AutoTokenizer builds for it (transformers 4's table)
MODEL_TYPES = {
    **dict.fromkeys(("llama", "code_llama", "mistral", "mixtral"), "LlamaTokenizer"),
    **dict.fromkeys(("gemma", "gemma2", "gemma3", "gemma3_text"), "GemmaTokenizer"),
    **dict.fromkeys(("t5", "mt5", "umt5"), "T5Tokenizer"),
}


@dataclass(frozen=True)
class AddedToken:
    """One entry of tokenizer_config.json's added_tokens_decoder."""

    id: int
    content: str
    special: bool
    lstrip: bool  # takes the whitespace before it, where it is matched
    rstrip: bool


@dataclass(frozen=True)
class FolderTokens:
    """What the config files beside a tokenizer.model say (all empty where there are none)."""

    tokenizer_class: str | None = None
    add_bos: bool = False  # a bos token is put before a text
    add_eos: bool = False  # an eos token after it
    bos: str | None = None  # its text, as named (None: the model's own bos piece)
    eos: str | None = None
    pads: tuple[str, ...] = ()  # tokens named to pad, then to end a text (for eot_token)
    eoses: tuple[str, ...] = ()
    added: tuple[AddedToken, ...] = ()
    legacy: bool | None = None  # transformers' `legacy` flag, as written (None: absent)
    extra_ids: int = 0  # T5's sentinels: <extra_id_i> at id pieces + extra_ids - 1 - i


def _token_text(value: object) -> str | None:
    value = value.get("content") if isinstance(value, dict) else value
    return value if isinstance(value, str) else None


def _flag(config: dict[str, Any], key: str, where: Path) -> bool | None:
    value = config.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise EncodingError(f"{where}: {key} is {value!r}, not true or false; fix the file")


def _added(config: dict[str, Any], where: Path) -> tuple[AddedToken, ...]:
    table = config.get("added_tokens_decoder") or {}
    if not isinstance(table, dict):
        raise EncodingError(f"{where}: added_tokens_decoder is not an object of id -> token")
    out = []
    for key, entry in table.items():
        content = entry.get("content") if isinstance(entry, dict) else None
        if not _ASCII_DIGITS.fullmatch(str(key)) or not isinstance(content, str) or not content:
            raise EncodingError(
                f"{where}: added_tokens_decoder[{key!r}] is not a token with an id and a "
                "content; fix the file, or pass the model's tokenizer.json"
            )
        if entry.get("single_word"):
            raise EncodingError(
                f"{where}: the added token {content!r} matches only as a whole word "
                "(single_word), which embedcli does not do; pass the model's tokenizer.json"
            )
        out.append(
            AddedToken(
                int(key),
                content,
                bool(entry.get("special")),
                bool(entry.get("lstrip")),
                bool(entry.get("rstrip")),
            )
        )
    return tuple(sorted(out, key=lambda t: t.id))


def _class_of(config: dict[str, Any] | None, folder: Path, where: Path) -> str | None:
    named = None if config is None else config.get("tokenizer_class")
    if named is not None and not isinstance(named, str):
        raise EncodingError(f"{where}: tokenizer_class is {named!r}, not a class name")
    if named is None:
        model = read_config_object(folder / "config.json")
        model_type = None if model is None else model.get("model_type")
        named = MODEL_TYPES.get(model_type) if isinstance(model_type, str) else None
    if named is not None and named not in CLASSES:
        known = ", ".join(sorted({c.removesuffix("Fast") for c in CLASSES}))
        raise EncodingError(
            f"{where} names the tokenizer class {named}, whose special tokens around a text "
            f"embedcli does not know for a SentencePiece model (it knows {known}); pass the "
            "model's tokenizer.json"
        )
    return named


def folder_tokens(model_file: Path) -> FolderTokens:
    """What the config files beside ``model_file`` say about its tokens."""
    folder = model_file.parent
    where = folder / "tokenizer_config.json"
    config = read_config_object(where)
    named = _class_of(config, folder, where)
    if config is None and named is None:
        return FolderTokens()
    config = config or {}
    defaults = CLASSES.get(named) if named else None
    bos_text = _token_text(config.get("bos_token")) or (defaults.bos if defaults else None)
    eos_text = _token_text(config.get("eos_token")) or (defaults.eos if defaults else None)
    add_bos = _flag(config, "add_bos_token", where)
    add_eos = _flag(config, "add_eos_token", where)
    if defaults is not None and not defaults.reads_keys:
        add_bos, add_eos = defaults.add_bos, defaults.add_eos
    else:
        add_bos = add_bos if add_bos is not None else bool(defaults and defaults.add_bos)
        add_eos = add_eos if add_eos is not None else bool(defaults and defaults.add_eos)
    specials = read_config_object(folder / "special_tokens_map.json") or {}
    pads = [_token_text(config.get("pad_token")), _token_text(specials.get("pad_token"))]
    eoses = [eos_text, _token_text(specials.get("eos_token"))]
    return FolderTokens(
        tokenizer_class=named,
        add_bos=add_bos,
        add_eos=add_eos,
        bos=bos_text,
        eos=eos_text,
        pads=tuple(t for t in pads if t),
        eoses=tuple(t for t in eoses if t),
        added=_added(config, where),
        legacy=_flag(config, "legacy", where),
        extra_ids=_extra_ids(config, defaults, where),
    )


def _extra_ids(config: dict[str, Any], defaults: TokenizerClass | None, where: Path) -> int:
    """T5Tokenizer's ``extra_ids`` (100 where absent); no other class has sentinels."""
    if defaults is None or not defaults.extra_ids:
        return 0
    value = config.get("extra_ids", defaults.extra_ids)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_EXTRA_IDS:
        raise EncodingError(
            f"{where}: extra_ids is {value!r}, not a count from 0 to {MAX_EXTRA_IDS:,} (T5's "
            "folders have 100); fix the file"
        )
    return value
