"""Vocabularies and texts for llama.cpp's WordPiece ("bert"), Unigram ("t5") and RWKV ("rwkv")
sessions, each written as convert_hf_to_gguf.py writes it (``BertModel.set_vocab`` with its
phantom space, ``T5Model.set_vocab`` with the model's precompiled charsmap,
``_set_vocab_rwkv_world`` with its escaped bytes), for a real GGUF file.

- Real vocabularies: llama.cpp's own test files in the converter's tree
  (``models/ggml-vocab-bert-bge.gguf``, BERT's uncased 30,522, with its ``.inp`` texts and
  published ``.out`` ids; ``ggml-vocab-nomic-bert-moe.gguf``, XLM-RoBERTa's 250,048 Unigram
  pieces with their charsmap).
- Trained here: a WordPiece vocabulary (the tokenizers library's trainer, cased or not), a
  SentencePiece Unigram model (the sentencepiece trainer, with its normalization rule's
  charsmap, user-defined symbols, byte fallback where asked), and an RWKV world-style list of
  byte strings (every byte, then the text's frequent substrings, partial characters included).
- :func:`table_metadata`: a WordPiece vocabulary whose tokens are every code point some
  character lowercases or NFD-reduces to, so that llama.cpp's ids for ``z<c>z`` tell, for each
  code point ``c``, its class and what it becomes (the check of llama.cpp's Unicode tables).
"""

from __future__ import annotations

import io
import random
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from support.ggufvocab import CONTROL, NORMAL, TRAINING_TEXT, UNKNOWN, USER_DEFINED
from support.llamacpp import tools

UNUSED, BYTE = 5, 6
CORPORA = Path("/work/shared/corpora")
SEPARATOR = "\n__ggml_vocab_test__\n"

HOSTILE = [
    "", " ", "   ", "\n", "\n\n\n", "Hello world", " Hello  World ", "  two  spaces  ",
    "\t\ttabs\r\n\r\nlines\n\n\n", "\x0b\x0c\x85\u2028\u2029\u3000\u00a0\u1680\u2009\u202f",
    "naïve café résumé CAFÉ Ångström", "e\u0301 a\u0308 \u0915\u093f \u0e01\u0e34 o\u0338",
    "İstanbul ΣΑΣ ὈΔΥΣΣΕΎΣ ß ẞ ǅ ﬁ Ⅻ ⓐ Ａｂｃ １２３", "한국어 가나다 がぎぐ パピプ ﾊﾟ",
    "😀👍🏽 👨\u200d👩\u200d👧 🏳️\u200d🌈 1️⃣ 🇫🇷",
    "東京は日本の首都です。中文字符 𠀀𪜀 \U0002b820\U0002b920 ⺀ 〇 한글 हिन्दी العربية עברית",
    "ABCxyz 0123456789 ½ ² ① ١٢٣ ๑๒",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ¡¿ «» „“ —– … ‰ € £ © ® ™ ° ± × ÷",
    "...!!!???,,, --- *** ((( ))) ''' \"\"\"",
    "it's don't we'll they're I'm you've he'd ' quote ' s",
    "\u00ad\u200b\u200c\u200d\u200e\ufeff\ue000\U000f0000 \u2060\u180e",
    "\x00\x01\x1f\x7f a\x00b \ufffd",
    "lone \ud800 surrogate \udfff",
    "\U00011f00\U00011f41\U0001e4d0\U0001e4ec\U00031350\U0002ebf0 \U00010d40\U0001cc00",
    "supercalifragilisticexpialidocious" * 3,
    "[CLS] [SEP] [MASK] [UNK] [PAD] [unused0] [TOOL] ▁[TOOL]",
    "<s> </s> <pad> <unk> <mask>  <mask> x <mask>",
    "<extra_id_0>x<extra_id_1> <extra_id_0> ёжик ёж Ｆｕｌｌ Full [PAD400] [PAD401]",
    "▁ ▁▁ ▁x x▁ ▁▁▁",
    "\\x41 \\n \\t \\\\ \\' \\xff \\xzz",
]  # fmt: skip
SPELLED = [t for t in HOSTILE if "\ud800" not in t and "\udfff" not in t]  # no lone surrogate
ALPHABET = [*"abcXYZé019 !?.,'\"-_<>|$+\\\n\r\t\x0b\x85\u2028\u3000\u00a0\u0301", "😀", "東"]
ALPHABET += ["한", "ß", "İ", "\u00ad", "\x00", "Ｆ", "▁", "  ", "[CLS]", "[SEP]", "<s>", "</s>"]
ALPHABET += ["<mask>", "<extra_id_0>", "ёж", "[PAD400]", "\\x", "\\n"]


def random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(ALPHABET, k=rng.randint(0, 40))) for _ in range(count)]


def corpus_texts(limit: int = 12) -> list[str]:
    """Paragraphs of the shared corpora, read where they are (none where they are not)."""
    if not CORPORA.is_dir():
        return []
    texts: list[str] = []
    for path in sorted(p for p in CORPORA.rglob("*.txt") if p.is_file()):
        try:
            paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        except (UnicodeDecodeError, OSError):
            continue
        texts += [p for p in paragraphs if p.strip()][:limit]
    return texts


def write_gguf(metadata: dict[str, Any], path: Path) -> Path:
    """``metadata`` in a real GGUF file (ggufvocab's through_gguf_file, without reading it
    back: gguf's reader parses a charsmap's 240,000 bytes one by one)."""
    import gguf
    import numpy as np

    from support.ggufmodels import add_fields

    writer = gguf.GGUFWriter(str(path), "llama")
    add_fields(writer, metadata)
    n = len(metadata["tokenizer.ggml.tokens"])
    writer.add_tensor("token_embd.weight", np.zeros((n, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def vocab_file(name: str) -> Path | None:
    """One of llama.cpp's test vocabularies (models/ggml-vocab-<name>.gguf), or None."""
    tree = tools.converter()
    path = tree / "models" / f"ggml-vocab-{name}.gguf" if tree is not None else None
    return path if path is not None and path.is_file() else None


def published(path: Path) -> list[tuple[str, list[int]]]:
    """The texts of a test vocabulary's .inp and the ids its .out publishes for them."""
    texts = path.with_name(path.name + ".inp").read_text(encoding="utf-8").split(SEPARATOR)
    lines = path.with_name(path.name + ".out").read_text(encoding="utf-8").split("\n")
    return [(t, [int(i) for i in line.split()]) for t, line in zip(texts, lines, strict=False)]


# ------------------------------------------------------------------ WordPiece


def _phantom(token: str, kind: int) -> str:
    """BertModel.set_vocab: a word's first piece gets ``▁``, a ``##`` continuation loses it."""
    if kind == CONTROL:
        return token
    return token[2:] if token.startswith("##") else "\u2581" + token


def wordpiece_metadata(lowercase: bool, strip_accents: bool | None) -> dict[str, Any]:
    """A WordPiece vocabulary trained here (BERT's normalizer as given), with a user-defined
    token, written as the converter writes one (normalizer flags from its tokenizer.json)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(
        lowercase=lowercase, strip_accents=strip_accents
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(
        vocab_size=900, special_tokens=specials, show_progress=False
    )
    tokenizer.train_from_iterator([TRAINING_TEXT, *SPELLED, *corpus_texts(4)], trainer)
    tokenizer.add_tokens(["[TOOL]"])
    vocab = tokenizer.get_vocab()
    added = {t.content: t for t in tokenizer.get_added_tokens_decoder().values()}
    tokens, types = [], []
    for token, _ in sorted(vocab.items(), key=lambda item: item[1]):
        kind = NORMAL
        if token in added:
            kind = CONTROL if added[token].special else USER_DEFINED
        tokens.append(_phantom(token, kind))
        types.append(kind)
    metadata: dict[str, Any] = {
        "tokenizer.ggml.model": "bert",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.unknown_token_id": vocab["[UNK]"],
        "tokenizer.ggml.seperator_token_id": vocab["[SEP]"],
        "tokenizer.ggml.padding_token_id": vocab["[PAD]"],
        "tokenizer.ggml.cls_token_id": vocab["[CLS]"],
        "tokenizer.ggml.mask_token_id": vocab["[MASK]"],
        "tokenizer.ggml.normalizer.lowercase": lowercase,
    }
    if strip_accents is not None:
        metadata["tokenizer.ggml.normalizer.strip_accents"] = strip_accents
    return metadata


def table_metadata(lowercase: bool, strip_accents: bool) -> dict[str, Any]:
    """A WordPiece vocabulary of every code point some character becomes (by llama.cpp's
    tables and by Python's), as a word's start and as a continuation, and ``z``."""
    from embedcli.tokenization.gguf import unicodetables as ucd

    targets = {"z"}
    for cpt in table_code_points():
        images = set()  # what it becomes, by either's NFD, then either's lowercase
        for first in (ucd.nfd_first(cpt), ord(unicodedata.normalize("NFD", chr(cpt))[0])):
            for kept in (first, cpt):
                images |= {kept, ucd.lowercase(kept), ord(chr(kept).lower()[0])}
        targets |= {chr(i) for i in images - {cpt}}
    targets = {t for t in targets if t.isprintable() and not t.isspace()} | {"z"}
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    for target in sorted(targets):
        tokens += ["\u2581" + target, target]
    return {
        "tokenizer.ggml.model": "bert",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": [CONTROL] * 4 + [NORMAL] * (len(tokens) - 4),
        "tokenizer.ggml.unknown_token_id": 1,
        "tokenizer.ggml.bos_token_id": 2,
        "tokenizer.ggml.seperator_token_id": 3,
        "tokenizer.ggml.padding_token_id": 0,
        "tokenizer.ggml.normalizer.lowercase": lowercase,
        "tokenizer.ggml.normalizer.strip_accents": strip_accents,
    }


def table_code_points() -> list[int]:
    """Every code point of planes 0 and 1, no surrogates, the CJK extensions' edges and the
    ideographs Unicode 15.0 and 15.1 added (planes 2 and 3), the tags and variation
    selectors; every 7th of the rest of planes 2 and 3, every 97th beyond."""
    dense = [*range(0xD800), *range(0xE000, 0x20000), *range(0xE0000, 0xE0200)]
    dense += [*range(0x2A6D0, 0x2A720), *range(0x2B730, 0x2B750), *range(0x2B810, 0x2B930)]
    dense += [*range(0x2CEA0, 0x2CEC0), *range(0x2EBE0, 0x2EE70), *range(0x31340, 0x32400)]
    sparse = [*range(0x20000, 0x32400, 7), *range(0x32400, 0xE0000, 97)]
    return sorted({*dense, *sparse, *range(0xE0200, 0x110000, 97)})


def table_texts(chunk: int = 6000) -> list[str]:
    """``z<c>z`` for each code point, joined by spaces, in texts of ``chunk`` code points."""
    points = table_code_points()
    return [
        " ".join(f"z{chr(c)}z" for c in points[i : i + chunk]) for i in range(0, len(points), chunk)
    ]


# ------------------------------------------------------------------ Unigram


def unigram_model(
    rule: str = "nmt_nfkc",
    dummy_prefix: bool = True,
    remove_whitespaces: bool = True,
    byte_fallback: bool = False,
) -> bytes:
    """A SentencePiece Unigram model trained here, T5's way (pad 0, eos 1, unk 2, no bos),
    some characters left out so that the unknown token shows."""
    import sentencepiece

    model = io.BytesIO()
    text = [TRAINING_TEXT, *SPELLED[:20], *corpus_texts(6)]
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(line for t in text for line in t.split("\n") if line),
        model_writer=model,
        vocab_size=900 if byte_fallback else 400,  # 256 byte pieces, then the text's
        model_type="unigram",
        character_coverage=0.995,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        normalization_rule_name=rule,
        add_dummy_prefix=dummy_prefix,
        remove_extra_whitespaces=remove_whitespaces,
        byte_fallback=byte_fallback,
        user_defined_symbols=["<sep>", "ёж"],
        control_symbols=["<cls>"],
        hard_vocab_limit=False,
        minloglevel=2,
    )
    return model.getvalue()


ADDED = ("<extra_id_0>", "<extra_id_1>", "ёжик", "Ｆｕｌｌ")  # added_tokens.json's, after it


def unigram_metadata(model: bytes, padding: int = 6) -> dict[str, Any]:
    """T5Model.set_vocab's metadata of a model: its pieces, typed by the processor
    (user-defined symbols are NORMAL), the added tokens USER_DEFINED at -1000, and UNUSED
    ``[PAD<n>]`` tokens up to the config's vocab_size; the charsmap as the model holds it."""
    from sentencepiece import SentencePieceProcessor
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(model)
    processor = SentencePieceProcessor(model_proto=model)
    size = processor.vocab_size()
    vocab_size = size + len(ADDED) + padding
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    scores, types = [-10000.0] * vocab_size, [UNUSED] * vocab_size
    for i in range(size):
        kind = NORMAL
        if processor.IsUnknown(i):
            kind = UNKNOWN
        elif processor.IsControl(i):
            kind = CONTROL
        elif processor.IsUnused(i):
            kind = UNUSED
        elif processor.IsByte(i):
            kind = BYTE
        tokens[i], scores[i], types[i] = processor.IdToPiece(i), processor.GetScore(i), kind
    for i, token in enumerate(ADDED, start=size):
        tokens[i], scores[i], types[i] = token, -1000.0, USER_DEFINED
    metadata: dict[str, Any] = {
        "tokenizer.ggml.model": "t5",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": scores,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.add_space_prefix": proto.normalizer_spec.add_dummy_prefix,
        "tokenizer.ggml.remove_extra_whitespaces": proto.normalizer_spec.remove_extra_whitespaces,
        "tokenizer.ggml.eos_token_id": 1,
        "tokenizer.ggml.unknown_token_id": 2,
        "tokenizer.ggml.padding_token_id": 0,
    }
    if proto.normalizer_spec.precompiled_charsmap:
        metadata["tokenizer.ggml.precompiled_charsmap"] = proto.normalizer_spec.precompiled_charsmap
    return metadata


# ------------------------------------------------------------------ RWKV


def rwkv_world_lines(count: int = 1500) -> list[str]:
    """rwkv_vocab_v20230424.txt's lines (``<id> <python literal> <bytes>``): every byte, then
    the most frequent 2- to 8-byte substrings of the training text (a ``str`` literal where
    they are UTF-8, ``bytes`` where they cut a character, as RWKV's own list writes them)."""
    text = "\n".join([TRAINING_TEXT, *SPELLED, *corpus_texts(6)]).encode("utf-8")
    counts: Counter[bytes] = Counter()
    for size in range(2, 9):
        counts.update(text[i : i + size] for i in range(len(text) - size + 1))
    pieces = [bytes([b]) for b in range(256)]
    pieces += [p for p, n in counts.most_common() if n > 1][:count]
    lines = []
    for i, piece in enumerate(pieces, start=1):
        try:
            literal = repr(piece.decode("utf-8"))
        except UnicodeDecodeError:
            literal = repr(piece)
        lines.append(f"{i} {literal} {len(piece)}")
    return lines


def rwkv_metadata(lines: list[str], padding: int = 5) -> dict[str, Any]:
    """_set_vocab_rwkv_world's metadata: ``<s>`` (CONTROL), each token as its bytes' repr
    inside the quotes, ``[PAD<n>]`` (UNUSED) up to vocab_size; bos and eos 0, eot 261."""
    import ast

    tokens, types = ["<s>"], [CONTROL]
    for line in lines:
        parts = line.split(" ")
        token = ast.literal_eval(" ".join(parts[1:-1]))
        token = token.encode("utf-8") if isinstance(token, str) else token
        assert len(token) == int(parts[-1])
        tokens.append(repr(token)[2:-1])
        types.append(NORMAL)
    for i in range(len(tokens), len(tokens) + padding):
        tokens.append(f"[PAD{i}]")
        types.append(UNUSED)
    return {
        "tokenizer.ggml.model": "rwkv",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.bos_token_id": 0,
        "tokenizer.ggml.eos_token_id": 0,
        "tokenizer.ggml.eot_token_id": 261,
    }
