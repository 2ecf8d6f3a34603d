"""llama.cpp's BPE pre-tokenizers, by ``tokenizer.ggml.pre`` name, as data (from
``src/llama-vocab.cpp``: the ``llm_tokenizer_bpe`` regex lists and the name -> type mapping in
``llama_vocab::impl::load``).

llama.cpp runs a type's regexes in sequence, each splitting the pieces left by the one before
and keeping the unmatched gaps as pieces: in ``tokenizers`` that is a Sequence of
``Split(behavior="isolated")`` followed by ``ByteLevel(use_regex=False)``.

Its regex engine is not Oniguruma (which ``tokenizers`` uses), and what was checked:

- GPT-2's and Llama 3's regexes run in hand-written splitters over llama.cpp's Unicode tables;
  any other regex that names ``\\p{L}``, ``\\p{N}``, ``\\p{P}``, ``\\p{M}`` or ``\\p{S}`` runs in
  ``std::regex`` on a copy of the text where every non-ASCII character is replaced by one byte
  for its category (whitespace by ``\\v``), the categories by classes of those bytes. Such a
  regex holds no other non-ASCII character, so Oniguruma on the real text with the same regex
  string gives the same splits, provided the two Unicode tables agree (a character assigned in
  a newer Unicode than one of them knows can differ).
- llama.cpp writes Llama 3's and Qwen 2's ``(?i:'s|'t|...)`` as ``'[sS]|'[tT]|...``, and the
  two differ: Oniguruma case-folds, so ``(?i:'s)`` also matches ``'ſ`` (U+017F), which
  llama.cpp's form does not. The llama.cpp forms are used here.
- A regex without categories runs in ``std::wregex`` on the text with non-ASCII whitespace
  replaced by ``\\v``: DeepSeek's classes of non-ASCII ranges then never match U+3000 and the
  other non-ASCII spaces inside them; here those classes end in ``&&\\S`` to say the same.
- GPT-2's list leaves out the final ``|\\s+``: a gap is kept as a piece, and a gap there is
  exactly the one whitespace character that ``\\s+`` would match, so GPT-2's full regex (the
  ByteLevel pre-tokenizer's built-in one) splits the same.

Names not listed here (BERT-style ``jina-*``, ``kimi-k2``, ``afmoe``, ``superbpe``, ``gemma4``,
...) need llama.cpp code, not a regex, or regex features Oniguruma reads differently, and are
refused.
"""

from __future__ import annotations

from dataclasses import dataclass

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
LLAMA3 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2 = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_UPPER_THEN_LOWER = r"((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+"
_UPPER_RUN = r"((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*"
TEKKEN = (
    rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER_THEN_LOWER}|[^\r\n\p{{L}}\p{{N}}]?{_UPPER_RUN}"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
GPT4O = (
    rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER_THEN_LOWER}{_CONTRACTIONS}?"
    rf"|[^\r\n\p{{L}}\p{{N}}]?{_UPPER_RUN}{_CONTRACTIONS}?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_CJK = "[一-龥ࠀ-一가-퟿&&\\S]+"
# Cased letters (Unicode's L&), as llama.cpp lists them; the singletons that NFC would change
# (U+1FBE, U+1FD3, U+1FDB, U+1F7D, U+2126, U+212A) are written as escapes.
_DEEPSEEK_LETTERS = (
    "A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕ"
    "ἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1f7dᾀ-ᾴᾶ-ᾼ\u1fbeῂ-ῄῆ-ῌῐ-\u1fd3ῖ-\u1fdbῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ"
    "\u212a-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓"
    "𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃"
)
DEEPSEEK_LLM = (
    "[\r\n]",
    "\\s?[" + _DEEPSEEK_LETTERS + "&&\\S]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。&&\\S]+",
    "\\s+$",
    _CJK,
    r"\p{N}+",
)
DEEPSEEK_CODER = ("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK, r"\p{N}")
DEEPSEEK_V3 = (
    r"\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)
SEED_CODER = (
    _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
PORO = r" ?[^(\s|.,!?…。，、।۔،)]+"


@dataclass(frozen=True)
class PreTokenizer:
    """One llama.cpp pre-tokenizer type: its regexes, and the flags its name sets."""

    kind: str  # llama.cpp's LLAMA_VOCAB_PRE_TYPE_..., lower-case
    regexes: tuple[str, ...]
    ignore_merges: bool = False  # a piece already in the vocabulary is one token
    add_bos: bool = False  # llama.cpp's default when tokenizer.ggml.add_bos_token is absent
    has_bos: bool = True  # False where the name clears the default bos id (chatglm)


_TYPES = {
    "default": PreTokenizer(
        "default", (r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", "[0-9][0-9][0-9]")
    ),
    "gpt2": PreTokenizer("gpt2", (GPT2,)),
    "llama3": PreTokenizer("llama3", (LLAMA3,), ignore_merges=True, add_bos=True),
    "dbrx": PreTokenizer("dbrx", (LLAMA3,)),
    "qwen2": PreTokenizer("qwen2", (QWEN2,)),
    "falcon": PreTokenizer("falcon", (r"[\p{P}\$\+<=>\^~\|`]+", GPT2, "[0-9][0-9][0-9]")),
    "starcoder": PreTokenizer("starcoder", (r"\p{N}", GPT2)),
    "tekken": PreTokenizer("tekken", (TEKKEN,), ignore_merges=True, add_bos=True),
    "gpt4o": PreTokenizer("gpt4o", (GPT4O,)),
    "chatglm4": PreTokenizer("chatglm4", (LLAMA3,), has_bos=False),
    "deepseek_llm": PreTokenizer("deepseek_llm", DEEPSEEK_LLM),
    "deepseek_coder": PreTokenizer("deepseek_coder", DEEPSEEK_CODER),
    "deepseek3_llm": PreTokenizer("deepseek3_llm", DEEPSEEK_V3),
    "seed_coder": PreTokenizer("seed_coder", (SEED_CODER,)),
    "poro": PreTokenizer("poro", (PORO,)),
    "viking": PreTokenizer("viking", (PORO, r"\p{N}")),
}

# tokenizer.ggml.pre -> type, as llama_vocab::impl::load maps them.
_NAMES = {
    "default": "default",
    **dict.fromkeys(
        ("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"),
        "llama3",
    ),
    **dict.fromkeys(("dbrx", "smaug-bpe"), "dbrx"),
    "deepseek-llm": "deepseek_llm",
    "deepseek-coder": "deepseek_coder",
    "deepseek-v3": "deepseek3_llm",
    "falcon": "falcon",
    **dict.fromkeys(
        ("gpt-2", "phi-2", "gigachat", "a.x-4.0", "mellum", "exaone4", "mpt", "olmo", "jais"),
        "gpt2",
    ),
    **dict.fromkeys(("trillion", "granite-docling"), "gpt2"),
    **dict.fromkeys(
        ("starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"),
        "starcoder",
    ),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"), "qwen2"),
    "tekken": "tekken",
    **dict.fromkeys(("gpt-4o", "llama4"), "gpt4o"),
    **dict.fromkeys(("glm4", "chatglm-bpe"), "chatglm4"),
    "seed-coder": "seed_coder",
    **dict.fromkeys(("poro-chat", "bloom", "gpt3-finnish"), "poro"),
    "viking": "viking",
}

KNOWN_PRE_NAMES = tuple(sorted(_NAMES))

# Single-regex types whose regex is cut-safe by the argument of modeltok's docstring: a space
# only ever opens a match (they differ from common.CUT_SAFE_PATTERNS only in how contractions
# are cased).
CUT_SAFE_REGEXES = frozenset({LLAMA3, QWEN2})


def pre_tokenizer(name: str) -> PreTokenizer | None:
    """The pre-tokenizer llama.cpp uses for a ``tokenizer.ggml.pre`` name, or None."""
    kind = _NAMES.get(name)
    return None if kind is None else _TYPES[kind]
