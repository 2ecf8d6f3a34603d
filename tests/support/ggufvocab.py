"""Tiny tokenizer.json files, and their GGUF metadata written as convert_hf_to_gguf.py does,
through a real GGUF file (gguf.GGUFWriter, then gguf.GGUFReader)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRAINING_TEXT = (
    "The quick brown fox jumps over the lazy dog. It's what we'LL do, isn't it? I'm sure "
    "they've said we'd go.  Numbers 12345 and 3.14159, 2024-01-01!\n\n\tTabs\r\nand lines.\n"
    "naïve café résumé — 東京は日本の首都です。中文字符 हिन्दी भाषा 😀👍🏽 👨‍👩‍👧 "
) * 3

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6


def byte_level_json(pre_tokenizer: dict[str, Any] | None, ignore_merges: bool = False) -> str:
    """A small byte-level BPE tokenizer.json, trained here, with a special and a plain added
    token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=700,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([TRAINING_TEXT], trainer)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_tokens(["[TOOL]"])
    spec = json.loads(tokenizer.to_str())
    if pre_tokenizer is not None:
        spec["pre_tokenizer"] = pre_tokenizer
    spec["model"]["ignore_merges"] = ignore_merges
    return json.dumps(spec)


def split_then_bytes(pattern: str) -> dict[str, Any]:
    return {
        "type": "Sequence",
        "pretokenizers": [
            {
                "type": "Split",
                "pattern": {"Regex": pattern},
                "behavior": "Isolated",
                "invert": False,
            },
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "trim_offsets": True,
                "use_regex": False,
            },
        ],
    }


def byte_level_metadata(tokenizer_json: str, pre: str) -> dict[str, Any]:
    """GGUF metadata as get_vocab_base and SpecialVocab write it for a byte-level tokenizer."""
    spec = json.loads(tokenizer_json)
    vocab = dict(spec["model"]["vocab"])
    added = {t["content"]: t for t in spec["added_tokens"]}
    for token in added.values():
        vocab[token["content"]] = token["id"]
    reverse = {i: t for t, i in vocab.items()}
    tokens, types = [], []
    for i in range(max(reverse) + 1):
        token = reverse[i]
        tokens.append(token)
        if token in added:
            looks = token.startswith("<|") and token.endswith("|>")
            types.append(CONTROL if added[token]["special"] or looks else USER_DEFINED)
        else:
            types.append(NORMAL)
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    return {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.eos_token_id": vocab["<|endoftext|>"],
        "tokenizer.ggml.bos_token_id": vocab["<|endoftext|>"],
    }


def llama2_json() -> str:
    """A Llama-2-style SentencePiece BPE tokenizer.json (as transformers' LlamaConverter writes
    one): <unk> <s> </s>, the 256 byte pieces, then trained pieces; merges are every split of
    every piece into two pieces, ordered by the piece's score (0 for control and byte pieces,
    -id for the others), as SentencePiece gives them."""
    from tokenizers import Tokenizer, models, normalizers, trainers

    trained = Tokenizer(models.BPE())
    trained.normalizer = normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
    )
    trainer = trainers.BpeTrainer(vocab_size=500, show_progress=False)
    trained.train_from_iterator([TRAINING_TEXT], trainer)
    pieces = sorted(trained.get_vocab().items(), key=lambda item: item[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in pieces:
        vocab.setdefault(piece, len(vocab))
    scores = spm_scores(vocab)
    merges = []
    for token, t in vocab.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                merges.append((-scores[t], t, vocab[left], vocab[right], left, right))
    merges.sort()
    spec = json.loads(trained.to_str())
    spec["model"].update(
        vocab=vocab,
        merges=[[m[4], m[5]] for m in merges],
        byte_fallback=True,
        unk_token="<unk>",
        fuse_unk=True,
    )
    spec["added_tokens"] = [
        {
            "id": i,
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for t, i in (("<unk>", 0), ("<s>", 1), ("</s>", 2))
    ]
    spec["decoder"] = {
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ],
    }
    return json.dumps(spec)


def spm_scores(vocab: dict[str, int]) -> list[float]:
    scores = [0.0] * len(vocab)
    for i in vocab.values():
        if i >= 259:
            scores[i] = -float(i)
    return scores


def llama2_metadata(tokenizer_json: str) -> dict[str, Any]:
    """GGUF metadata as _set_vocab_sentencepiece writes it (scores and types from the model)."""
    vocab = json.loads(tokenizer_json)["model"]["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])]
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256 + [NORMAL] * (len(tokens) - 259)
    return {
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.pre": "default",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": spm_scores(vocab),
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
        "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_eos_token": False,
    }


def through_gguf_file(metadata: dict[str, Any], path: Path) -> dict[str, Any]:
    """Write ``metadata`` to a real GGUF file and read its fields back as plain values."""
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
    reader = gguf.GGUFReader(str(path))
    return {
        name: field.contents()
        for name, field in reader.fields.items()
        if name.startswith(("tokenizer.", "general."))
    }
