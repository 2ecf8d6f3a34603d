"""SentencePiece tokenizer.model files for the tests, and tekken.json files.

- :func:`train`: a tiny model trained by ``sentencepiece.SentencePieceTrainer`` on the shared
  corpus (read where it is, never copied) and a few lines of other scripts, in one of the
  variants of ``VARIANTS`` (BPE and Unigram, byte fallback on and off, user-defined and control
  symbols, no dummy prefix, nmt_nfkc and identity normalization); 30-60 ms each.
- :func:`gemma_model`: a 262,144-piece model built from the real Gemma 3 GGUF file
  (:mod:`support.gemmafile`): its ``tokenizer.ggml.tokens``, ``scores`` and ``token_type``,
  written as a ``ModelProto`` with Gemma's settings: BPE, byte fallback, identity
  normalization, no dummy prefix, spaces kept; its spaces written ``▁`` as SentencePiece
  stores them (llama.cpp's converter writes them back as spaces). ``bench/vocab_bench.py``
  builds one to time a large model's load.
- :func:`folder`: a model folder (the model, and a tokenizer_config.json when given one).
- :func:`tekken_file`: a tekken.json written from a tiktoken encoding's ranks, in the format
  mistral-common's reader takes.
"""

from __future__ import annotations

import base64
import io
import json
from functools import cache
from pathlib import Path
from typing import Any

CORPUS = Path("/work/shared/corpora")

# a few lines in other scripts, so that the models hold pieces past ASCII
OTHER_SCRIPTS = """Ünïcödé naïve café façade déjà vu — “quotes” ‘single’ «guillemets»
中文字符测试，这是一个句子。日本語のテキストです。한국어 문장입니다.
Ελληνικά γράμματα. Русский текст здесь. العربية نص. עברית טקסט. हिन्दी पाठ।
emoji 😀 👩‍👩‍👧‍👦 🇫🇷 ① ¼ Ⅻ ﬁ ﬂ ＡＢＣ １２３ e\u0301 a\u0308
"""

VARIANTS: dict[str, dict[str, Any]] = {
    "bpe": dict(  # Llama 2's kind: BPE, byte fallback, a dummy prefix, identity
        model_type="bpe",
        vocab_size=600,
        byte_fallback=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        user_defined_symbols=["<tool>", "\n\n"],
        control_symbols=["<ctl>", "[INST]", "[/INST]"],
    ),
    "bpe-nofallback": dict(model_type="bpe", vocab_size=500, byte_fallback=False),
    "bpe-nodummy": dict(  # Gemma's kind: no dummy prefix, spaces kept, Gemma's special ids
        model_type="bpe",
        vocab_size=600,
        byte_fallback=True,
        add_dummy_prefix=False,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        control_symbols=["<start_of_turn>", "<end_of_turn>"],
        user_defined_symbols=["\n\n"],
        **dict(pad_id=0, eos_id=1, bos_id=2, unk_id=3),
        **dict(pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>"),
    ),
    "unigram": dict(
        model_type="unigram", vocab_size=600, byte_fallback=True, user_defined_symbols=["<tool>"]
    ),
    "unigram-nfkc": dict(  # T5's kind: Unigram, nmt_nfkc, no byte fallback, T5's ids
        model_type="unigram",
        vocab_size=500,
        normalization_rule_name="nmt_nfkc",
        control_symbols=["<extra_id_0>"],
        **dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1),
    ),
}


# what the models are trained on where the shared corpus is absent
FALLBACK_TEXT = """The quick brown fox jumps over the lazy dog. It was a bright cold day in April,
and the clocks were striking thirteen. Call me Ishmael. Some years ago, never mind how long
precisely, having little or no money in my purse, I thought I would sail about a little.
"""


def corpus_text() -> str | None:
    """The shared corpus, as one text (None where it is absent)."""
    if not CORPUS.is_dir():
        return None
    parts = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.txt"))]
    return "\n".join(parts) or None


def train(out: Path, variant: str, text: str) -> Path:
    """A tiny model of ``VARIANTS[variant]`` trained on ``text``, written to out/NAME.model."""
    import sentencepiece

    model = io.BytesIO()
    lines = [line for line in (text + "\n" + OTHER_SCRIPTS).splitlines() if line.strip()]
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        hard_vocab_limit=False,
        character_coverage=0.98,  # the rarest characters: byte pieces, or <unk>
        minloglevel=2,
        num_threads=1,
        **VARIANTS[variant],
    )
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{variant}.model"
    path.write_bytes(model.getvalue())
    return path


def folder(out: Path, model: Path, config: dict[str, Any] | None = None) -> Path:
    """A model folder holding ``model`` as tokenizer.model, and ``config`` as its
    tokenizer_config.json when given."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.model").write_bytes(model.read_bytes())
    if config is not None:
        (out / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return out


def gemma_model(out: Path, gguf: Path) -> Path:
    """Gemma 3's 262,144 pieces from its GGUF file as a SentencePiece model, out/tokenizer.model."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    from embedcli.models.gguf.file import open_gguf_file

    metadata = open_gguf_file(gguf).metadata
    tokens = metadata["tokenizer.ggml.tokens"].plain()
    scores = metadata["tokenizer.ggml.scores"].plain()
    types = metadata["tokenizer.ggml.token_type"].plain()
    ids = {key: metadata[f"tokenizer.ggml.{key}_token_id"].plain() for key in
           ("unknown", "bos", "eos", "padding")}  # fmt: skip
    proto = pb.ModelProto()
    for i, (text, score, kind) in enumerate(zip(tokens, scores, types, strict=True)):
        piece = proto.pieces.add()
        piece.piece = text if kind in (2, 3, 6) else text.replace(" ", "\u2581")
        piece.score = score
        piece.type = pb.ModelProto.SentencePiece.UNKNOWN if i == ids["unknown"] else kind
    trainer = proto.trainer_spec
    trainer.model_type = pb.TrainerSpec.BPE
    trainer.vocab_size = len(tokens)
    trainer.byte_fallback = True
    trainer.unk_id, trainer.bos_id = ids["unknown"], ids["bos"]
    trainer.eos_id, trainer.pad_id = ids["eos"], ids["padding"]
    for key, value in ("unk", ids["unknown"]), ("bos", ids["bos"]), ("eos", ids["eos"]):
        setattr(trainer, f"{key}_piece", tokens[value])
    trainer.pad_piece = tokens[ids["padding"]]
    normalizer = proto.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = False
    normalizer.remove_extra_whitespaces = False
    normalizer.escape_whitespaces = True
    out.mkdir(parents=True, exist_ok=True)
    path = out / "tokenizer.model"
    path.write_bytes(proto.SerializeToString())
    return path


GEMMA_CONFIG = {"tokenizer_class": "GemmaTokenizer", "add_bos_token": True, "add_eos_token": False}


# ---------------------------------------------------------------- tekken.json


def tekken_file(
    path: Path,
    ranks: dict[bytes, int],
    pattern: str,
    *,
    specials: list[str] | None,
    num_special: int = 100,
    vocab_size: int | None = None,
    version: str = "v7",
) -> Path:
    """A tekken.json of ``ranks`` (0 to n-1, the 256 single bytes first), as mistral-common's
    reader takes it; ``specials`` None leaves the list out (files of v7 and before)."""
    vocab = [
        {"rank": rank, "token_bytes": base64.b64encode(token).decode(), "token_str": None}
        for token, rank in sorted(ranks.items(), key=lambda item: item[1])
    ]
    model: dict[str, Any] = {
        "config": {
            "pattern": pattern,
            "num_vocab_tokens": len(vocab),
            "default_vocab_size": vocab_size or len(vocab) + num_special,
            "default_num_special_tokens": num_special,
            "version": version,
        },
        "vocab": vocab,
    }
    if specials is not None:
        model["special_tokens"] = [
            {"rank": i, "token_str": text, "is_control": True} for i, text in enumerate(specials)
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(model), encoding="utf-8")
    return path


# ---------------------------------------------------------------- hostile text


@cache
def category_characters() -> str:
    """The first character of every Unicode general category (Cs: a lone surrogate; Cn: an
    unassigned code point), in Python's tables."""
    import unicodedata

    first: dict[str, str] = {}
    for code in range(0x110000):
        first.setdefault(unicodedata.category(chr(code)), chr(code))
    return "".join(first[c] for c in sorted(first))


def hostile_texts() -> list[str]:
    """Texts that stress a tokenizer: every Unicode category, whitespace runs, combining marks,
    ZWJ emoji, lone surrogates, control characters, and text that spells special tokens."""
    every = category_characters()
    return [
        "", " ", "   ", "\n", "\n\n\n", "Hello world", " Hello  World ", "  two  spaces  ",
        every, " ".join(every), f"x{every}x",
        "\t\ttabs\r\n\r\nlines\n\n\n", "\x0b\x0c\x85\u2028\u2029\u3000\u00a0\u1680\u2009\u202f",
        " " * 40 + "x" + "\t" * 9 + "\n" * 7 + "\u3000" * 5,
        "naïve café résumé CAFÉ Ångström", "e\u0301 a\u0308 \u0915\u093f \u0e01\u0e34 o\u0338",
        "a" + "\u0301" * 30, "İstanbul ΣΑΣ ß ẞ ǅ ﬁ Ⅻ ⓐ Ａｂｃ １２３ ㍿ ℌ",
        "😀👍🏽 👨\u200d👩\u200d👧 🏳️\u200d🌈 1️⃣ 🇫🇷 \U0001faf1\U0001f3fb",
        "東京は日本の首都です。中文字符 𠀀𪜀 \U0002b820 한글 हिन्दी العربية עברית",
        "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ¡¿ «» „“ —– … ‰ € £ © ® ™ ° ± × ÷",
        "\u00ad\u200b\u200c\u200d\u200e\ufeff\ue000\U000f0000 \u2060\u180e",
        "\x00\x01\x1f\x7f a\x00b \ufffd",
        "lone \ud800 surrogate \udfff and a pair \ud83d\ude00",
        "▁ ▁▁ ▁x x▁ ▁▁▁ <0x41> <0xZZ>",
        "<s> </s> <unk> <pad> <ctl> <tool> [INST] x [/INST] <start_of_turn>user\n<extra_id_0>",
        "supercalifragilisticexpialidocious" * 3,
    ]  # fmt: skip
