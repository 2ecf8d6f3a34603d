#!/usr/bin/env python3
"""Write a tiny GGUF file to try embedcli's GGUF support on: a Llama-architecture model with
random weights (no model worth running), its token table quantized to Q8_0, and a byte-level BPE
tokenizer of its own (GPT-2's pre-tokenizer) trained here on samples/lighthouse.txt.

Usage: python3 samples/make-gguf.py [OUT.gguf]     (default: model.gguf)

It needs the gguf package (llama.cpp's Python library), which embedcli installs.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections import Counter
from pathlib import Path

import gguf
import numpy as np
from gguf.constants import GGMLQuantizationType

MERGES = 200  # merges learned on top of the 256 byte tokens
WIDTH, HEADS, CONTEXT = 64, 4, 256
# GPT-2's split pattern without \p{...} classes (Python's re has none): for training only
SPLIT = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def byte_chars() -> list[str]:
    """GPT-2's printable stand-in for each byte (bytes_to_unicode)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in printable}
    for shifted, b in enumerate(b for b in range(256) if b not in chars):
        chars[b] = chr(256 + shifted)
    return [chars[b] for b in range(256)]


def train(text: str) -> tuple[list[str], list[str]]:
    """(tokens in id order, merges): the 256 bytes, then one token per merge learned."""
    chars = byte_chars()
    words = Counter(tuple(chars[b] for b in piece.encode()) for piece in SPLIT.findall(text))
    tokens, merges = list(chars), []
    for _ in range(MERGES):
        pairs: Counter[tuple[str, str]] = Counter()
        for word, count in words.items():
            for pair in itertools.pairwise(word):
                pairs[pair] += count
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda item: (item[1], item[0]))
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        merged: Counter[tuple[str, ...]] = Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == (a, b):
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    return tokens, merges


def main(out: Path) -> None:
    text = (Path(__file__).parent / "lighthouse.txt").read_text(encoding="utf-8")
    tokens, merges = train(text)
    tokens.append("<|endoftext|>")
    kinds = [1] * (len(tokens) - 1) + [3]  # NORMAL, then CONTROL
    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name("embedcli sample (random weights)")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(1)
    writer.add_feed_forward_length(4 * WIDTH)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(WIDTH // HEADS)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(kinds)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(len(tokens) - 1)
    writer.add_eos_token_id(len(tokens) - 1)
    writer.add_add_bos_token(False)
    table = np.random.default_rng(0).standard_normal((len(tokens), WIDTH)).astype(np.float32)
    quantized = gguf.quants.quantize(table * 0.02, GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", quantized, raw_dtype=GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", np.ones(WIDTH, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {out}: {len(tokens)} tokens, a {len(tokens)} x {WIDTH} Q8_0 token table")


if __name__ == "__main__":
    if len(sys.argv) > 2 or any(arg.startswith("-") for arg in sys.argv[1:]):
        sys.exit(__doc__.split("\n\n")[1])  # the usage line: an option is never a file name
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "model.gguf"))
