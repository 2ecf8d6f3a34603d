"""Mistral's ``tekken.json`` (Mistral NeMo, Pixtral, Mistral Small 3 and later): tiktoken-style
byte-level BPE with the file's own split pattern, read as mistral-common's ``Tekkenizer`` reads
it and run on tiktoken, so the ids are mistral-common's ``Tekkenizer.encode(text, bos=False,
eos=False)``.

The file, as mistral-common's reader takes it (and refuses what it refuses): ``config`` with
``pattern``, ``default_vocab_size``, ``default_num_special_tokens`` and ``version``; ``vocab``, one
``{"rank", "token_bytes" (base64), "token_str"}`` per rank, the first 256 the single bytes;
``special_tokens``, ``{"rank", "token_str", "is_control"}`` each (absent in files of version v7
and before: mistral-common's 20 tokens, ``<unk>``, ``<s>``, ``</s>``, ``[INST]``...). Special
tokens take ids 0 to ``default_num_special_tokens`` - 1 (``<SPECIAL_i>`` fill the ids the file
names none for), and only the first ``default_vocab_size`` - ``default_num_special_tokens`` ranks
are used, from that id on.

Special-token policy. mistral-common never reads a special token from text: ``encode`` gives
``[INST]`` the pieces of any text, and its instruct tokenizer puts special ids in from the shape
of a request. embedcli holds tekken to its other tokenizers: ``special_tokens_set`` is every
special token, fillers included; text holding one is refused by default, encoded as plain text
(mistral-common's own ids) by ``encode_ordinary`` and ``--special-as-text``, and as its id with
``--allow-special`` (tiktoken's ``allowed_special``). A special token's bytes are its text
(mistral-common's ``SpecialTokenPolicy.KEEP``). ``prefix`` is ``<s>``, as mistral-common's
``encode(text, bos=True)`` and its requests begin, and the tokenizer.json of these models adds;
``eot_token`` is ``<pad>``, else ``</s>``. The version (``v3``, ``v7``, ``v13``...) changes only
how requests are laid out, so any ``vN`` is read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from embedcli.errors import EncodingError
from embedcli.tokenization.common import CUT_SAFE_PATTERNS, read_bytes
from embedcli.tokenization.tiktokenfile import ModelTiktoken, TiktokenFamily

# mistral-common's Tekkenizer.DEPRECATED_SPECIAL_TOKENS: a file of version v7 or before
# without a special_tokens list has these, at ids 0 to 19
DEPRECATED_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)  # fmt: skip
FILLER = "<SPECIAL_{id}>"
# special ids a file may reserve, at most (Mistral's have 1,000): tiktoken builds one regex of
# them all, about 5 KB per token, so a million would take gigabytes for an 18 KB file
MAX_SPECIAL_TOKENS = 1 << 15
# texts an encoding is tried on once loaded: a pattern that matches the empty string makes
# tiktoken's Rust core panic on them (a BaseException, with a Rust backtrace)
_PROBES = ("", "a", " ", "Hello, world! 123\n", "\t\r\n  x", "é中😀", "'s ")
_VERSION = re.compile(r"v([0-9]+)")


def is_tekken_name(path: Path) -> bool:
    """mistral-common's own test (``is_tekken``): a .json file with "tekken" in its name."""
    return "tekken" in path.name and path.suffix == ".json"


class TekkenTokenizer(ModelTiktoken):
    """A tekken.json on a real ``tiktoken.Encoding``: its ranks moved up past the special
    tokens (a uniform shift keeps every merge's order), the special tokens at their ids."""

    def __init__(
        self, encoding: Any, specials: tuple[str, ...], *, sha256: str, path: Path
    ) -> None:
        named = set(specials)
        family = TiktokenFamily(
            key="tekken",
            title="Mistral tekken",
            n_ranks=encoding.n_vocab - len(specials),
            pattern=encoding._pat_str,
            specials=specials,  # here at ids 0 to len - 1, before the ranks
            begin="<s>" if "<s>" in named else None,
            end_of_text=specials[0],  # replaced below: the file may lack both <pad> and </s>
        )
        super().__init__(encoding, family, sha256=sha256, path=path)
        pad = next((t for t in ("<pad>", "</s>") if t in named), None)
        self.eot_token = None if pad is None else encoding.encode_single_token(pad)
        self.cut_safe = encoding._pat_str in CUT_SAFE_PATTERNS

    def __repr__(self) -> str:
        return f"<TekkenTokenizer {self.name!r}>"


def _refused(path: Path, problem: str) -> EncodingError:
    return EncodingError(
        f"{path} is not a tekken file mistral-common reads ({problem}); download it again, or "
        "pass the model's tokenizer.json"
    )


def _int(config: dict[str, Any], key: str, path: Path) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _refused(path, f"config.{key} is {value!r}, not a count")
    return value


def _specials(model: dict[str, Any], count: int, version: int, path: Path) -> tuple[str, ...]:
    listed = model.get("special_tokens")
    if listed is None:
        if version > 7:
            raise _refused(path, "a file past version v7 must list its special_tokens")
        names = list(DEPRECATED_SPECIAL_TOKENS)
    else:
        if not isinstance(listed, list):
            raise _refused(path, "special_tokens is not a list")
        names = []
        for i, entry in enumerate(listed):
            text = entry.get("token_str") if isinstance(entry, dict) else None
            if not isinstance(text, str) or not text or entry.get("rank") != i:
                raise _refused(path, f"special token {i} is not {{rank: {i}, token_str: ...}}")
            names.append(text)
    if len(names) > count:
        raise _refused(path, f"{len(names)} special tokens, more than its {count} ids for them")
    names += [FILLER.format(id=i) for i in range(len(names), count)]
    if len(set(names)) != len(names):
        raise _refused(path, "two special tokens have one text")
    return tuple(names)


def _ranks(vocab: object, count: int, path: Path) -> dict[bytes, int]:
    if not isinstance(vocab, list) or len(vocab) < count:
        size = len(vocab) if isinstance(vocab, list) else "no"
        raise _refused(path, f"its vocab has {size} tokens, fewer than the {count} it uses")
    ranks: dict[bytes, int] = {}
    keys = {"rank", "token_bytes", "token_str"}
    for i, entry in enumerate(vocab[:count]):
        if not isinstance(entry, dict) or entry.keys() != keys or entry["rank"] != i:
            raise _refused(path, f"vocab[{i}] is not {{rank: {i}, token_bytes, token_str}}")
        try:
            data = base64.b64decode(entry["token_bytes"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise _refused(path, f"vocab[{i}]'s token_bytes is not base64") from None
        if i < 256 and data != bytes([i]):
            raise _refused(path, f"token {i} should be the single byte {i}")
        if ranks.setdefault(data, i) != i:
            raise _refused(path, f"tokens {ranks[data]} and {i} have the same bytes")
    return ranks


def load_tekken_file(path: Path, name: str) -> TekkenTokenizer:
    """A tekken.json, read as mistral-common reads it, on tiktoken."""
    import tiktoken

    path = Path(path)
    data = read_bytes(path)
    try:
        model = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise _refused(path, f"it is not JSON: {type(exc).__name__}") from None
    config = model.get("config") if isinstance(model, dict) else None
    if not isinstance(config, dict):
        raise _refused(path, "it has no config object")
    pattern = config.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise _refused(path, "config.pattern is not a regular expression")
    version = _VERSION.fullmatch(str(config.get("version")))
    if version is None:
        raise _refused(path, f"config.version is {config.get('version')!r}, not v1, v3, v7...")
    vocab_size = _int(config, "default_vocab_size", path)
    n_special = _int(config, "default_num_special_tokens", path)
    if n_special > MAX_SPECIAL_TOKENS:
        raise EncodingError(
            f"{path}: config.default_num_special_tokens is {n_special:,}, past the "
            f"{MAX_SPECIAL_TOKENS:,} embedcli reads (Mistral's files have 1,000); pass the "
            "model's tokenizer.json"
        )
    if vocab_size <= n_special + 255:
        raise _refused(path, f"default_vocab_size {vocab_size} leaves no room for 256 bytes")
    specials = _specials(model, n_special, int(version.group(1)), path)
    ranks = _ranks(model.get("vocab"), vocab_size - n_special, path)
    shifted = {token: rank + n_special for token, rank in ranks.items()}
    try:
        encoding = tiktoken.Encoding(
            name=name,
            pat_str=pattern,
            mergeable_ranks=shifted,
            special_tokens={text: i for i, text in enumerate(specials)},
        )
    except ValueError as exc:  # tiktoken's regex engine cannot compile the pattern
        first = (str(exc).splitlines() or [""])[0][:160]
        raise _refused(path, f"tiktoken cannot compile its pattern: {first}") from None
    _refuse_empty_matches(encoding, pattern, path)
    sha256 = hashlib.sha256(data).hexdigest()
    return TekkenTokenizer(encoding, specials, sha256=sha256, path=path)


def _refuse_empty_matches(encoding: Any, pattern: str, path: Path) -> None:
    """Refuse a pattern that can match the empty string: tiktoken's core panics on such a
    match (and so does mistral-common's, on tiktoken). Asked of the ``regex`` module (tiktoken's
    own dependency, whose syntax is the file's), then of tiktoken itself on a few texts."""
    import regex

    try:
        compiled = regex.compile(pattern)
    except regex.error:
        compiled = None
    for probe in _PROBES:
        empty = compiled is not None and any(m.start() == m.end() for m in compiled.finditer(probe))
        if not empty:
            try:
                encoding.encode_ordinary(probe)
            except BaseException as exc:  # pyo3's PanicException is no Exception
                if type(exc).__name__ != "PanicException":
                    raise
                empty = True
        if empty:
            raise EncodingError(
                f"{path}: its config.pattern can match the empty string, on which tiktoken's "
                "core panics (mistral-common's too); fix the pattern, or pass the model's "
                "tokenizer.json"
            )
