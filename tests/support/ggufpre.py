"""Vocabularies and texts for checking llama.cpp's BPE pre-tokenizers (``tokenizer.ggml.pre``)
against llama.cpp itself.

Two vocabularies, each trained here with *no* word splitting, so that their tokens span what a
pre-tokenizer splits (spaces, digits, punctuation runs, newlines, scripts): a split made in a
different place changes the ids, so a difference between two pre-tokenizers shows.

- :func:`spanning_metadata`: byte-level (GPT-2's byte alphabet), for the pre-tokenizers that
  byte-encode their pieces; with whole-word tokens that no merge reaches, so that a name's
  ``ignore_merges`` shows too.
- :func:`raw_metadata`: raw UTF-8 with ``▁`` for a space and ``<0xXX>`` byte tokens (one left
  out, as llama.cpp drops a byte it has no token for), as Gemma 4's is, for those that do not;
  with newline-run tokens that no merge reaches (Gemma 4's lookup of them).

The texts: llama.cpp's own vocab tests (``models/ggml-vocab-*.gguf.inp`` of the converter's
tree), a hostile list (every Unicode general category, whitespace runs, combining marks, ZWJ
emoji, digit runs of 1 to 12, contractions in both cases, scripts), and the corpora's
paragraphs (read where they are, never copied).
"""

from __future__ import annotations

import json
import random
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

from support.ggufvocab import CONTROL, NORMAL, USER_DEFINED
from support.llamacpp import tools

BYTE = 6
CORPORA = Path("/work/shared/corpora")
SEPARATOR = "\n__ggml_vocab_test__\n"

# One character of each Unicode general category (Cs, a lone surrogate, spells no UTF-8).
CATEGORIES = {
    "Lu": "AÀΩЖ",
    "Ll": "aßωж",
    "Lt": "ǅᾈ",
    "Lm": "ʰー",
    "Lo": "あ中가ก",
    "Mn": "\u0301\u0308\u093f",
    "Mc": "\u093e\u0903",
    "Me": "\u20dd",
    "Nd": "7٣९",
    "Nl": "ⅫⅠ",
    "No": "½²①",
    "Pc": "_‿",
    "Pd": "-—",
    "Ps": "([「",
    "Pe": ")]」",
    "Pi": "«“",
    "Pf": "»”",
    "Po": "!.、。",
    "Sm": "+<=∑",
    "Sc": "$€¥",
    "Sk": "^`˚",
    "So": "©😀",
    "Zs": " \u00a0\u3000\u2009",
    "Zl": "\u2028",
    "Zp": "\u2029",
    "Cc": "\x00\x1f\x7f\x85",
    "Cf": "\u00ad\u200b\u200d\ufeff",
    "Co": "\ue000",
    "Cn": "\u0378",
}
# Letters, marks, digits and symbols that Unicode 16.0 added: Oniguruma's tables know them,
# llama.cpp's (15.1) read them as undefined.
UNICODE_16 = "\u1c89\u1c8a\u0897\u2427\ua7cb\U00010d41\U00010d50\U00016d40\U0001ccf5\U0001fa89"
WHITESPACE = ["\r\n", "\t", "\v", "\f", "\x85", "\u2028", "\u3000", "\u00a0", "\u1680"]
HOSTILE = [
    "",
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    "\n\n\n",
    "\n\n\n\n\n",
    " \n",
    "a \n b",
    "a\n\n\n\n\nb",
    "\t\ttabs\r\n\r\nlines\n\n\n",
    "end   ",
    "x\u3000\u3000y \u3000 z",
    "".join(WHITESPACE),
    " ".join(WHITESPACE) + " a",
    *(f"a{w}{w}b {w}c" for w in WHITESPACE),
    *(" ".join(chars) for chars in CATEGORIES.values()),
    "".join(CATEGORIES.values()),
    "e\u0301 a\u0308 \u0915\u093f \u0e01\u0e34 n\u0303\u0303",
    "😀👍🏽 👨\u200d👩\u200d👧 🏳️\u200d🌈 🇫🇷",
    "東京は日本の首都です。中文字符，标点！ 한국어 문장 ㄱㄴ ㄅㄆ",
    "ภาษาไทย हिन्दी भाषा বাংলা العربية עברית Ελληνικά Русский",
    "〆々〇 ⺀⼀ 豈 𠀀 ｶﾀｶﾅ ＡＢＣ１２３",
    *("".join(str((i + 1) % 10) for i in range(n)) for n in range(1, 13)),
    "1 22 333 4444 55555 666666 7777777 88888888 999999999",
    "a1234b 12345678c x9 1,234,567.89 3.14159 2024-01-01 ٣٤٥٦ १२३४",
    "It's I'M we'LL they'VE she'D don'T you'RE 'S 's 'll 'Ll 'lL '' 'x",
    "a'ſt Kelvin K İstanbul",
    "Hello world Hello World HELLO WORLD hELLO CamelCase iPhone XMLHttpRequest",
    "!!!!!! ??? ... ---  ,,, ;;; ''' \"\"\" ((( ))) <<< >>> /// \\\\\\ |||",
    "a/b/c path/to/file.py http://example.com/x?y=1&z=2 #tag @user $5 100% ^_^",
    "<sentinel:12> IMGIMGABCZ IMGIMGAAAAAAZ <eos>",
    "    indented\n        more\n\ttab\n  \n",
    "¡Hola! ¿Qué tal? naïve café résumé Cửa Việt Äpfel ààààà",
    "a.b,c!d?e…f。g，h、i।j۔k،l(m|n)",
    "\x00\x01\x1f\x7f",
    "lone \ud800 surrogate",
    "<|endoftext|> [TOOL] a<|endoftext|>b [TOOL]x",
    "<bos>hi<eos> [TOOL]<pad>x<unk>",
    "Ankara'dan İstanbul'a it'sabc we'llbe THEY'REx",
    *(f"x{' ' * n}y{chr(9) * n}z" for n in (3, 5, 9, 17, 33, 70, 600)),
    " ".join(UNICODE_16),
    f"a{UNICODE_16}b 1{UNICODE_16[5:]}2 Ab{UNICODE_16[:2]}Cd",
]

_TRAINING = (
    "The quick brown fox jumps over the lazy dog. It's what we'LL do, isn't it? I'm sure "
    "they've said we'd go.  Numbers 12345 and 3.14159, 2024-01-01! 1234567890 000 999 42\n\n"
    "\tTabs\r\nand lines.\n  \n    indented code() {}\n\n\n!!!... --- ??? ,,, ;;\n"
    "naïve café résumé — 東京は日本の首都です。中文字符，标点！한국어 문장 ภาษาไทย "
    "हिन्दी भाषा বাংলা 😀👍🏽 👨‍👩‍👧 Hello world HELLO World hello, y'all! ½ ① Ⅻ ² "
    "e\u0301 \u3000 \u00a0 ｶﾀｶﾅ ＡＢＣ Русский Ελληνικά العربية "
    f"a{UNICODE_16}b 1{UNICODE_16[5:]}2 Ab{UNICODE_16[:2]}Cd "
)
# Pieces a pre-tokenizer may leave whole, given tokens that no merge makes (ignore_merges).
_UNREACHABLE = [
    *("Hello", " Hello", " world", " World", "world", "333", "33", "3", " discards", "!!!!!!"),
    *(" (", "résumé", "東京", "中文字符", "'s", " \n", "\n\n", "123", " 123", "\t\t", " x", "Ab"),
]


def _lines() -> tuple[str, ...]:
    """What the vocabularies are trained on: the training text and the hostile texts, so that
    their merges span the places where pre-tokenizers split those texts."""
    texts = [_TRAINING, *(as_utf8(t) for t in HOSTILE), *vocab_test_texts()]
    for special in ("<|endoftext|>", "[TOOL]", "<pad>", "<eos>", "<bos>", "<unk>"):
        texts = [t.replace(special, " ") for t in texts]
    return tuple(t for t in texts if t)


@cache
def _train(lines: tuple[str, ...], vocab_size: int, raw: bool) -> dict[str, Any]:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    if raw:
        tokenizer.normalizer = normalizers.Replace(" ", "\u2581")
        alphabet = sorted(set("".join(lines).replace(" ", "\u2581")) - {"😀", "ภ"})
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=alphabet,
        limit_alphabet=len(alphabet),
        show_progress=False,
    )
    tokenizer.train_from_iterator(lines, trainer)
    return json.loads(tokenizer.to_str())["model"]


def _byte_level(text: str) -> str:
    from embedcli.tokenization.common import char_of_byte

    table = char_of_byte()
    return "".join(table[b] for b in text.encode("utf-8"))


def spanning_metadata(pre: str) -> dict[str, Any]:
    """GGUF metadata of a byte-level vocabulary whose tokens span every kind of split."""
    model = _train(_lines(), 2000, raw=False)
    tokens = ["<|endoftext|>", "[TOOL]"]
    tokens += [t for t, _ in sorted(model["vocab"].items(), key=lambda item: item[1])]
    for word in _UNREACHABLE:
        spelled = _byte_level(word)
        if spelled not in tokens:
            tokens.append(spelled)
    types = [CONTROL, USER_DEFINED] + [NORMAL] * (len(tokens) - 2)
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": [" ".join(m) for m in model["merges"]],
        "tokenizer.ggml.bos_token_id": 0,
        "tokenizer.ggml.eos_token_id": 0,
    }


def raw_metadata(pre: str) -> dict[str, Any]:
    """GGUF metadata of a raw UTF-8 vocabulary (``▁`` for a space, ``<0xXX>`` bytes but
    ``<0x9F>``, tokens that span spaces) with newline runs of 2, 3 and 5 as tokens no merge
    makes."""
    # no NUL: llama.cpp reads a token as a C string, so "a\x00" would be "a" a second time
    texts = (text.replace("\x00", "") for text in _lines())
    model = _train(tuple(line for t in texts for line in t.split("\n") if line), 1200, raw=True)
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "[TOOL]"]
    tokens += [f"<0x{b:02X}>" for b in range(256) if b != 0x9F]
    types = [CONTROL] * 4 + [USER_DEFINED] + [BYTE] * 255
    for token, _ in sorted(model["vocab"].items(), key=lambda item: item[1]):
        if token not in tokens:
            tokens.append(token)
            types.append(NORMAL)
    for run in ("\n", "\n\n", "\n\n\n", "\n" * 5):
        if run not in tokens:
            tokens.append(run)
            types.append(NORMAL)
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": [" ".join(m) for m in model["merges"]],
        "tokenizer.ggml.bos_token_id": 2,
        "tokenizer.ggml.eos_token_id": 1,
        "tokenizer.ggml.unknown_token_id": 3,
        "tokenizer.ggml.padding_token_id": 0,
    }


def write_gguf(metadata: dict[str, Any], path: Path) -> Path:
    """A GGUF file of ``metadata`` (as llama.cpp's converter types it) and a tiny token table."""
    import gguf
    import numpy as np

    from support.ggufmodels import add_fields

    writer = gguf.GGUFWriter(str(path), "llama")
    add_fields(writer, metadata)
    rows = len(metadata["tokenizer.ggml.tokens"])
    writer.add_tensor("token_embd.weight", np.zeros((rows, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def vocab_test_texts() -> list[str]:
    """The texts of llama.cpp's own vocab tests (every distinct one), or none where the
    converter's tree is absent."""
    tree = tools.converter()
    if tree is None:
        return []
    texts: dict[str, None] = {}
    for path in sorted((tree / "models").glob("ggml-vocab-*.gguf.inp")):
        parts = path.read_text(encoding="utf-8").split(SEPARATOR)
        texts.update(dict.fromkeys(parts[:-1]))
    return list(texts)


def corpus_texts(limit: int = 12) -> list[str]:
    """Paragraphs of the shared corpora, and each corpus whole (read in place), or none where
    they are absent."""
    if not CORPORA.is_dir():
        return []
    texts: list[str] = []
    for path in sorted(CORPORA.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        texts += [*[p for p in text.split("\n\n") if p.strip()][:limit], text]
    return texts


def random_texts(count: int, seed: int) -> list[str]:
    """Random strings over the hostile alphabet (seeded: the same texts every run)."""
    alphabet = [c for chars in CATEGORIES.values() for c in chars]
    alphabet += [*WHITESPACE, " ", "  ", "\n", "'s", "'LL", "123", "東京", "ab", "Ab", "é"]
    rng = random.Random(seed)
    return ["".join(rng.choices(alphabet, k=rng.randint(0, 30))) for _ in range(count)]


def as_utf8(text: str) -> str:
    """The text with a lone surrogate as U+FFFD, as embedcli encodes it (llama.cpp is given
    this)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def category_of_every_char() -> set[str]:
    """The general categories the hostile texts cover (a test checks that it is all of them)."""
    return {unicodedata.category(c) for text in HOSTILE for c in text}
