"""llama.cpp's WordPiece tokenizer (``tokenizer.ggml.model`` "bert"), ported from
``llm_tokenizer_wpm_session`` in ``src/llama-vocab.cpp``.

The converter writes BERT's vocabulary with a phantom space (``_set_vocab_wordpiece``): a
word-initial piece ``hello`` becomes ``▁hello``, a continuation ``##ing`` becomes ``ing``, and
CONTROL tokens (``[CLS]``) stay as they are. Each text fragment (what the special-token
partition leaves, :mod:`.native`) is split into words, character by character, with
llama.cpp's own Unicode tables (:mod:`.unicodetables`, Unicode 15.1):

- with ``tokenizer.ggml.normalizer.strip_accents`` (default: the lowercase flag) each code
  point first becomes the first code point of its NFD, all llama.cpp keeps of it (``é`` is
  ``e``; a Hangul syllable is its leading consonant: ``한`` is ``ᄒ``), and a mark is dropped;
- whitespace ends a word; U+0000, U+FFFD and control characters (Cc, Cf, Co, Cs) are dropped;
- with ``tokenizer.ggml.normalizer.lowercase`` (default: on) each is lowercased by the simple
  mapping (one code point for one);
- punctuation (P), an ASCII symbol and a CJK ideograph (llama.cpp's ranges, tokenizers' typo
  of U+2B920 for U+2B820 included) are each a word of their own.

Each word, ``▁`` first, is cut greedily into the longest tokens from the left (any token, of
any type, as llama.cpp's ``text_to_token`` knows them all); a word with a place no token starts
is one unknown token. llama.cpp's ``add_special`` puts the bos id before ([CLS], 101 unless the
file says: the converter writes ``cls_token_id``, which llama.cpp does not read) and the
separator id after ([SEP], 102), whatever ``add_bos_token`` says: :attr:`prefix` and
:attr:`suffix`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from embedcli.tokenization.gguf import unicodetables as ucd
from embedcli.tokenization.gguf.matching import (
    SHOWN,
    PrefixMatcher,
    detokenize,
    strip_attributes,
)
from embedcli.tokenization.gguf.native import BYTE, NativeTokenizer, Vocab

SPACE = "\u2581"
_CJK = (
    (0x04E00, 0x09FFF),
    (0x03400, 0x04DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),  # sic: llama.cpp copies tokenizers' 0x2B920 for 0x2B820
    (0x0F900, 0x0FAFF),
    (0x2F800, 0x2FA1F),
)
# what a character does to the words: dropped, ends a word, is a word, joins the word
_DROP, _BREAK, _ALONE, _JOIN = range(4)


def _is_cjk(cpt: int) -> bool:
    return any(low <= cpt <= high for low, high in _CJK)


class WordPieceGGUF(NativeTokenizer):
    """A "bert" GGUF vocabulary: BERT's normalizer and greedy longest-match WordPiece."""

    family = "wordpiece"

    def __init__(self, vocab: Vocab, *, name: str, path: Path) -> None:
        super().__init__(vocab, name=name, path=path)
        meta = vocab.meta
        self.lowercase = bool(meta.get("normalizer.lowercase", bool, True))
        self.strip_accents = bool(meta.get("normalizer.strip_accents", bool, self.lowercase))
        special = vocab.special
        bos, sep, unknown = special["bos"], special["sep"], special["unk"]
        needed = (
            (bos, "bos", 101, "puts before every text"),
            (sep, "seperator", 102, "puts after every text"),
            (unknown, "unknown", 100, "writes for a word no token spells"),
        )
        for found, key, default, why in needed:
            if found is None:
                raise meta.fail(
                    f"the WordPiece vocabulary has no {key} id (tokenizer.ggml.{key}_token_id, "
                    f"or llama.cpp's default {default}, in range), which llama.cpp {why}"
                )
        assert bos is not None and sep is not None and unknown is not None
        byte = next((i for i, kind in enumerate(self.types) if kind == BYTE), None)
        if byte is not None:
            raise meta.fail(
                f"the WordPiece vocabulary types token {byte} ({self.tokens[byte]!r}) a BYTE "
                "token, whose piece llama.cpp cannot make for a WordPiece vocabulary (it "
                "aborts on load)"
            )
        self.unknown = unknown
        self.prefix, self.suffix = (bos,), (sep,)
        self.add_space_prefix = bool(meta.get("add_space_prefix", bool, False))
        self._matcher = PrefixMatcher(self.ids)
        self._chars: dict[str, tuple[int, str]] = {}
        self.lstrip, self.rstrip = strip_attributes(vocab, self._matched)

    # --- encoding

    def _encode_fragment(self, text: str, after_special: bool) -> list[int]:
        out: list[int] = []
        for word in self.words(text):
            word = SPACE + word
            start, at = len(out), 0
            while at < len(word):
                found = self._matcher.longest(word, at)
                if found is None:
                    del out[start:]  # a place no token starts: the whole word is unknown
                    break
                at = found[0]
                out.append(found[1])
            if len(out) == start:
                out.append(self.unknown)
        return out

    def words(self, text: str) -> list[str]:
        """llm_tokenizer_wpm_session::preprocess: the words of a fragment, normalized."""
        words: list[str] = []
        word: list[str] = []
        for char in text:
            what, spelled = self._chars.get(char) or self._char(char)
            if what == _JOIN:
                word.append(spelled)
            elif what != _DROP:
                if word:
                    words.append("".join(word))
                    word = []
                if what == _ALONE:
                    words.append(spelled)
        if word:
            words.append("".join(word))
        return words

    def _char(self, char: str) -> tuple[int, str]:
        cpt = ord(char)
        if self.strip_accents:
            cpt = ucd.nfd_first(cpt)
        kind = ucd.category(cpt)
        if cpt in ucd.WHITESPACE:
            what = _BREAK
        elif cpt in (0, 0xFFFD) or kind == ucd.CONTROL or (self.strip_accents and kind == ucd.MARK):
            what = _DROP
        elif kind == ucd.PUNCTUATION or (cpt < 0x7F and kind == ucd.SYMBOL) or _is_cjk(cpt):
            what = _ALONE
        else:
            what = _JOIN
        spelled = chr(ucd.lowercase(cpt) if self.lowercase else cpt)
        self._chars[char] = (what, spelled)
        return what, spelled

    # --- pieces

    def decode_single_token_bytes(self, token: int) -> bytes:
        data = super().decode_single_token_bytes(token)
        return data if self.types[token] in SHOWN else b""

    def library_decode(self, tokens: Sequence[int]) -> str:
        """llama.cpp's detokenize: no first space dropped (a "bert" vocabulary has no
        add_space_prefix unless the file says), then its clean_spaces, which WordPiece sets."""
        pieces = [self.decode_single_token_bytes(t) for t in tokens]
        return detokenize(pieces, remove_space=self.add_space_prefix, clean_spaces=True)
