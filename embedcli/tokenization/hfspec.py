"""What a Hugging Face ``tokenizer.json`` says, read and checked before the ``tokenizers``
library loads it: the JSON itself, the family its parts write tokens in (byte-level or
SentencePiece-style), its vocabulary's ids, the config files beside it that name its pad and
eos tokens, and whether split_points' cuts provably keep its ids. No tokenizers import here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from embedcli.errors import EncodingError
from embedcli.tokenization.common import CUT_SAFE_PATTERNS, read_config_object

# Read beside a tokenizer.json, when there, for its pad and eos tokens (tokenizer.json lacks them).
CONFIG_FILES = ("tokenizer_config.json", "special_tokens_map.json")

BYTE_LEVEL = "byte-level"
SENTENCEPIECE = "sentencepiece"

_HOLDS_CUT = re.compile(r"\S ")  # Python's \s is str.isspace, the test split_points uses


def components(node: object) -> Iterator[dict[str, Any]]:
    """Every typed part of a normalizer/pre-tokenizer/decoder, through Sequences."""
    if isinstance(node, dict):
        if "type" in node:
            yield node
        for value in node.values():
            if isinstance(value, list):
                for item in value:
                    yield from components(item)


def _replaces(parts: list[dict[str, Any]], old: str, new: str) -> bool:
    return any(
        p["type"] == "Replace" and p.get("pattern") == {"String": old} and p.get("content") == new
        for p in parts
    )


def replacement(spec: dict[str, Any]) -> str:
    for part in [*components(spec.get("pre_tokenizer")), *components(spec.get("decoder"))]:
        if part["type"] == "Metaspace" and isinstance(part.get("replacement"), str):
            return part["replacement"]
    return "▁"


def model_type(model: dict[str, Any]) -> str:
    if isinstance(model.get("type"), str):
        return model["type"]
    if "merges" in model:  # files from old tokenizers versions leave the type out
        return "BPE"
    if isinstance(model.get("vocab"), list):
        return "Unigram"
    return "WordPiece" if "max_input_chars_per_word" in model else "WordLevel"


def family_of_json(path: Path, spec: dict[str, Any]) -> str:
    """BYTE_LEVEL or SENTENCEPIECE, from the file's own parts; else an EncodingError."""
    kind = model_type(spec["model"])
    if kind not in ("BPE", "Unigram"):
        raise EncodingError(
            f"{path} holds a {kind} tokenizer (as BERT-style encoders use), whose tokens are not "
            "pieces of the text's bytes; embedcli reads BPE tokenizers (byte-level, as GPT-2 and "
            "Llama 3, or SentencePiece-style, as Llama 2 and Gemma) and SentencePiece Unigram ones"
        )
    pre = list(components(spec.get("pre_tokenizer")))
    decoder = list(components(spec.get("decoder")))
    normalizer = list(components(spec.get("normalizer")))
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


def n_vocab(spec: dict[str, Any], added: dict[int, Any]) -> int:
    vocab = spec["model"].get("vocab")
    top = max(vocab.values(), default=-1) if isinstance(vocab, dict) else len(vocab or ()) - 1
    return max([top, *added]) + 1


def check_ids(path: Path, spec: dict[str, Any]) -> None:
    """Refuse a file that gives one id to two tokens: the model's vocabulary giving an id twice,
    two added tokens sharing one, or an added token taking a vocabulary token's id with other
    text. The tokenizers library keeps one of them for that id and encodes with both, so ids
    would decode to text they do not stand for (GGUF files are refused the same way)."""
    vocab = spec["model"].get("vocab")
    owner: dict[object, str] = {}
    if isinstance(vocab, dict):
        for token, index in vocab.items():
            first = owner.setdefault(index, token)
            if first != token:
                raise _shared_id(path, index, first, token, "its vocabulary")
    elif isinstance(vocab, list):  # Unigram: a token's id is its place in the list
        owner = {i: t[0] for i, t in enumerate(vocab) if isinstance(t, list) and t}
    added: dict[object, str] = {}
    for entry in spec.get("added_tokens") or ():
        if not isinstance(entry, dict):
            continue  # the tokenizers library refuses it when it loads the file
        index, content = entry.get("id"), entry.get("content")
        first = added.setdefault(index, content)
        if first != content:
            raise _shared_id(path, index, first, content, "its added tokens")
        if owner.get(index, content) != content:
            raise _shared_id(
                path, index, owner[index], content, "its vocabulary and its added tokens"
            )


def _shared_id(path: Path, index: object, first: object, second: object, where: str) -> Exception:
    return EncodingError(
        f"{path} is damaged: in {where}, id {index} stands for two tokens, {first!r} and "
        f"{second!r}, and an id names one token; download the model's tokenizer.json again"
    )


def config_tokens(folder: Path) -> tuple[list[str], list[str]]:
    """The pad and eos tokens named by the config files beside a tokenizer.json."""
    pads: list[str] = []
    eoses: list[str] = []
    for file_name in CONFIG_FILES:
        config = read_config_object(folder / file_name)  # refused where unreadable
        if config is None:
            continue  # absent: these files only refine eot_token
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


def cut_safe(spec: dict[str, Any], family: str) -> bool:
    """Whether split_points' cuts provably keep the ids of one pass (see the module doc)."""
    model = spec["model"]
    return (
        family == BYTE_LEVEL
        and model_type(model) == "BPE"
        and not model.get("dropout")
        and spec.get("normalizer") in (None, {"type": "NFC"})
        and all(_added_token_safe(t) for t in spec.get("added_tokens") or ())
        and _pre_tokenizer_safe(spec.get("pre_tokenizer"))
    )


def parse_json(path: Path, data: bytes) -> tuple[str, dict[str, Any]]:
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
    if isinstance(spec, dict) and isinstance(spec.get("vocab"), list) and "config" in spec:
        raise EncodingError(
            f"{path} is Mistral's tekken format (mistral-common's ranks, pattern and special "
            "tokens), which embedcli does not read; pass the tokenizer.json that the same "
            "model repository ships beside it"
        )
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise EncodingError(
            f'{path} is JSON but not a Hugging Face tokenizer.json (it has no "model" '
            "section); pass the model's tokenizer.json"
        )
    return text, spec
