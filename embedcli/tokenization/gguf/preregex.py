"""The regexes of llama.cpp's BPE pre-tokenizers, written for Oniguruma (the engine of
``tokenizers``) so that they split as llama.cpp does (``llm_tokenizer_bpe`` in
``src/llama-vocab.cpp``, run by ``unicode_regex_split`` in ``src/unicode.cpp``).

llama.cpp runs a regex in one of three ways, and each is matched here:

- **A hand-written splitter** where the regex is one it knows by its text: GPT-2's, Llama 3's,
  Qwen 2's and Qwen 3.5's (each the regex it names, over llama.cpp's Unicode tables, which
  agree with Oniguruma's for every character both know), Kimi K2's ``\\p{Han}+`` (which stands
  for Kimi's whole regex, without its ``\\p{M}`` and with llama.cpp's own Han ranges:
  :data:`KIMI_K2`), ``\\p{AFMoE_digits}`` and Tiny Aya's ``\\d{1,3}(?=(?:\\d{3})*\\b)`` (both one
  splitter: :data:`AFMOE_DIGITS`), and ``[^\\n]+|[\\n]+``.
- **std::regex on a collapsed text** where the regex names ``\\p{N}``, ``\\p{L}``, ``\\p{P}``,
  ``\\p{M}``, ``\\p{S}`` or ``\\p{Lu}``/``Ll``/``Lt``/``Lm``/``Lo``: every non-ASCII character
  becomes one byte for its category (whitespace: ``\\v``), each category a class of that byte
  and its ASCII members. Such a regex has no other non-ASCII character, so Oniguruma on the
  real text with the same regex splits the same, except that every ``\\p{L..}`` is one class
  of all letters: ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+`` is
  ``[\\p{L}\\p{M}]+`` there, and is written so here (Youtu, Tiny Aya).
- **std::wregex on the text** otherwise, with every non-ASCII whitespace character replaced by
  ``\\v``; its ``\\d`` and ``\\s`` are C's (ASCII digits; ASCII whitespace and that ``\\v``).
  So ``\\d`` is ``[0-9]`` here (SuperBPE), and DeepSeek's classes of non-ASCII ranges end in
  ``&&\\S``: they hold U+3000 and other spaces, which llama.cpp's text no longer has.

llama.cpp's Unicode tables are Unicode 15.1's, Oniguruma's (in ``tokenizers``) Unicode 16.0's,
and they agree on every character both know: :func:`as_llama_tables` takes the 5,185 letters,
marks, numbers, punctuation and symbols that 16.0 added (which llama.cpp reads as undefined,
like an unassigned code point) out of each ``\\p{..}`` class. Whitespace is Unicode's
White_Space in both.

Also: llama.cpp writes ``(?i:'s|'t|...)`` as ``'[sS]|'[tT]|...`` (:data:`CONTRACTIONS`), which
differ: Oniguruma case-folds ``(?i:'s)`` to match ``'ſ`` (U+017F) too; llama.cpp's
hand-written splitters lower-case with a table that maps no other character to those letters.
GPT-2's regex leaves out its final ``|\\s+``: a gap is kept as a piece, and the gap there is
exactly the one whitespace character that ``\\s+`` would match.
"""

from __future__ import annotations

import re

CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_TAIL = r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
LLAMA3 = CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}" + _TAIL
QWEN2 = CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}" + _TAIL
QWEN35 = (
    CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
UFAKZEKA = r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}" + _TAIL
JAIS2 = (
    CONTRACTIONS
    + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    + "".join(rf"|\s{{{n}}}(?!\S)" for n in (512, 256, 128, 64, 32, 16, 8, 4))
    + r"|\s{1,2}(?!\S)|\s{1}"
)
MINICPM5 = CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+" + _TAIL
SEED_CODER = (
    CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
BAILINGMOE = (
    r"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"
)
EXAONE_MOE = (
    CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+"
)


# Mistral's and GPT-4o's upper-then-lower words, by lookaheads (llama.cpp's std::regex has no
# \p{Lu}): ``letter`` is what the lookaheads take (with \p{M}: granite-embed-multi-97m).
def _cased(letter: str, contraction: str) -> str:
    upper_then_lower = rf"(?:(?={letter})[^a-z])*(?:(?={letter})[^A-Z])+"
    upper_run = rf"(?:(?={letter})[^a-z])+(?:(?={letter})[^A-Z])*"
    lead = r"[^\r\n\p{L}\p{N}]?"
    return f"{lead}{upper_then_lower}{contraction}|{lead}{upper_run}{contraction}"


_SLASH_TAIL = r"| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
TEKKEN = _cased(r"[\p{L}]", "") + r"|\p{N}" + _SLASH_TAIL
GPT4O = _cased(r"[\p{L}]", CONTRACTIONS + "?") + r"|\p{N}{1,3}" + _SLASH_TAIL
GRANITE_EMB_MULTI = _cased(r"[\p{L}\p{M}]", CONTRACTIONS + "?") + r"|\p{N}{1,3}" + _SLASH_TAIL
# Youtu's and Tiny Aya's \p{Lu}..\p{Lo} classes, as llama.cpp collapses them: any letter.
_LETTERS_AND_MARKS = r"[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+" + CONTRACTIONS + "?"
YOUTU = (
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
    _LETTERS_AND_MARKS + r"|\p{N}" + _SLASH_TAIL,
)
TINY_AYA_WORDS = _LETTERS_AND_MARKS + r"|\p{N}{1,3}" + _SLASH_TAIL

# llama.cpp's AFMoE digit splitter: a run of \p{N} in groups of three from its end, the first
# group (1 to 3 digits) joined to the text before it; split with "MergedWithPrevious".
AFMOE_DIGITS = r"\p{N}{1,2}(?=(?:\p{N}{3})*(?!\p{N}))|\p{N}{3}"

# Kimi K2's splitter: llama.cpp's Han ranges (not Unicode's Han script), words of other
# letters (no marks) with a contraction, digits by three.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ebef"
_HAN += "\U0002f800-\U0002fa1f"
KIMI_K2 = (
    f"[{_HAN}]+|[^\\r\\n\\p{{L}}\\p{{N}}]?[\\p{{L}}&&[^{_HAN}]]+{CONTRACTIONS}?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
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
_ASCII_PUNCT_WORD = r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+"""
_KANA_HAN = "[一-龥぀-ゟ゠-ヿ]+"
DEEPSEEK_V3 = (
    r"\p{N}{1,3}",
    _KANA_HAN,
    _ASCII_PUNCT_WORD + r"|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+",
)
SPARK2_5 = (
    r"\p{N}{1,3}",
    _KANA_HAN,
    _ASCII_PUNCT_WORD + r"|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]"
    r"|\s+(?!\S)|\s+",
    r"\p{N}",
)
AFMOE = (
    AFMOE_DIGITS,
    "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
    DEEPSEEK_V3[2],
)
# Each digit run cut before every group of three ASCII digits that ends it (a split between
# characters; std::wregex's \d is [0-9]).
SUPERBPE = (r"\p{N}+", r"(?=(?:[0-9]{3})+(?![0-9]))")
PORO = r" ?[^(\s|.,!?…。，、।۔،)]+"
CHAMELEON = (
    "<sentinel:[0-9]+>",
    "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "([\t\n]|    |  )",
    r"\p{N}",
    r"[\p{P}!-/:-@\[-`{-~]",
    GPT2,
)
NEWLINE_RUNS = r"[^\n]+|[\n]+"
# llama.cpp's whitespace (Unicode's White_Space, as its table and std::wregex read it).
NOT_SPACE = "[^\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+"

# What Unicode 16.0 added to \p{L}, \p{M}, \p{N}, \p{P} and \p{S}: Oniguruma's tables have
# them, llama.cpp's (15.1) do not.
_UNICODE_16 = (
    "\u0897\u1b4e-\u1b4f\u1b7f\u1c89-\u1c8a\u2427-\u2429\u31e4-\u31e5\ua7cb-\ua7cd"
    "\ua7da-\ua7dc\U000105c0-\U000105f3\U00010d40-\U00010d65\U00010d69-\U00010d85"
    "\U00010d8e-\U00010d8f\U00010ec2-\U00010ec4\U00010efc\U00011380-\U00011389\U0001138b"
    "\U0001138e\U00011390-\U000113b5\U000113b7-\U000113c0\U000113c2\U000113c5"
    "\U000113c7-\U000113ca\U000113cc-\U000113d5\U000113d7-\U000113d8\U000113e1-\U000113e2"
    "\U000116d0-\U000116e3\U00011bc0-\U00011be1\U00011bf0-\U00011bf9\U00011f5a"
    "\U00013460-\U000143fa\U00016100-\U00016139\U00016d40-\U00016d79\U00018cff"
    "\U0001cc00-\U0001ccf9\U0001cd00-\U0001ceb3\U0001e5d0-\U0001e5fa\U0001e5ff"
    "\U0001f8b2-\U0001f8bb\U0001f8c0-\U0001f8c1\U0001fa89\U0001fa8f\U0001fabe\U0001fac6"
    "\U0001fadc\U0001fadf\U0001fae9\U0001fbcb-\U0001fbef"
)
_CATEGORY = re.compile(r"\\p\{([LMNPS])\}")


def as_llama_tables(regex: str) -> str:
    """``regex`` with each ``\\p{L}`` (``M``, ``N``, ``P``, ``S``) as llama.cpp's tables read it:
    without the characters Unicode 16.0 added."""
    return _CATEGORY.sub(lambda m: f"[\\p{{{m[1]}}}&&[^{_UNICODE_16}]]", regex)
