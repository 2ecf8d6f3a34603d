"""Tiny tokenizer.json files, built with the tokenizers library as transformers writes real ones:
a byte-level BPE (GPT-2 style) and SentencePiece-style BPE or Unigram ones (Llama 2, newer Llama
conversions, Gemma), and a way to damage one (``edited``) the way a hostile file would be."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

BYTE_LEVEL_MERGES = [("h", "e"), ("l", "l"), ("he", "ll"), ("Ġ", "w"), ("o", "r"), ("Ġw", "or")]


def byte_level_json(folder: Path) -> Path:
    """A GPT-2-style byte-level BPE: the 256 byte symbols, a few merges, <|endoftext|>."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from embedcli.tokenization.common import char_of_byte

    vocab = {char_of_byte()[b]: b for b in range(256)}
    for left, right in BYTE_LEVEL_MERGES:
        vocab[left + right] = len(vocab)
    tokenizer = Tokenizer(models.BPE(vocab, BYTE_LEVEL_MERGES))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken("<|endoftext|>", special=True)])
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"


def edited(path: Path, edit: Callable[[dict[str, Any]], object]) -> Path:
    """``path`` rewritten with ``edit`` applied to its JSON (in place, or returning a new one)."""
    spec = json.loads(path.read_text(encoding="utf-8"))
    spec = edit(spec) or spec
    path.write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    return path


SP_PIECES = ["▁", "h", "e", "l", "o", "w", "r", "d", "é"]
SP_MERGES = [
    ("▁", "h"),
    ("▁h", "e"),
    ("l", "l"),
    ("▁he", "ll"),
    ("▁hell", "o"),
    ("▁", "w"),
    ("o", "r"),
    ("▁w", "or"),
    ("l", "d"),
    ("▁wor", "ld"),
]


def sentencepiece_json(folder: Path, style: str, model: str = "BPE") -> Path:
    """A tiny tokenizer.json the way transformers writes Llama 2 ("llama2": a Prepend and a
    Replace normalizer), newer Llama conversions ("metaspace") or Gemma ("gemma": no prefix
    space), with byte-fallback pieces <0x00>..<0xFF> and a post-processor adding <s>."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"<0x{b:02X}>": 3 + b for b in range(256)}
    for piece in SP_PIECES + [a + b for a, b in SP_MERGES]:
        vocab.setdefault(piece, len(vocab))
    if model == "BPE":
        bpe = models.BPE(vocab, SP_MERGES, unk_token="<unk>", byte_fallback=True, fuse_unk=True)
        tokenizer = Tokenizer(bpe)
    else:
        # Bytes only stand in for unknown characters; longer pieces win over their letters.
        pieces = [(p, 0.0 if i < 259 else -10.0 if len(p) == 1 else -1.0) for p, i in vocab.items()]
        tokenizer = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=True))
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in ("<unk>", "<s>", "</s>")])
    pieces_to_text = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if style == "metaspace":
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace("▁", prepend_scheme="first", split=False)
        tokenizer.decoder = decoders.Metaspace("▁", prepend_scheme="first", split=False)
    elif style == "llama2":
        tokenizer.normalizer = normalizers.Sequence(
            [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
        )
        tokenizer.decoder = decoders.Sequence([*pieces_to_text, decoders.Strip(" ", 1, 0)])
    else:
        tokenizer.normalizer = normalizers.Replace(" ", "▁")
        tokenizer.decoder = decoders.Sequence(pieces_to_text)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"
