"""The tokenizers GGUF files carry (``tokenizer.ggml.*``), with llama.cpp's ids.

- ``tokenizer``: the checked ``tokenizer.ggml.*`` metadata, and the tokenizer each model gets:
  byte-level BPE (through tokenizers) split by llama.cpp's pre-tokenizers, or a port below.
- ``pre``: every ``tokenizer.ggml.pre`` name llama.cpp maps, its type and flags;
  ``preregex``: the types' regexes, as llama.cpp's engine reads them (Unicode 15.1).
- ``rawbpe``: llama.cpp's BPE session on raw UTF-8, for pre-tokenizers that do not byte-encode.
- ``native``: what the ports of llama.cpp's own tokenizers share (the special-token partition,
  pieces, the tokenizer protocol).
- ``spm``: SentencePiece-style ("llama"): merges by score with byte fallback, as llama.cpp.
- ``wpm``: WordPiece ("bert"): BERT's normalizer, greedy longest match, as llama.cpp.
- ``unicodetables``: llama.cpp's Unicode 15.1 tables, as its WordPiece reads them (generated).
- ``ugm``: Unigram ("t5"): the charsmap, then Viterbi, as llama.cpp; ``charsmap``: its
  precompiled charsmap (SentencePiece's XOR-compressed double array).
- ``rwkv``: RWKV's world tokenizer ("rwkv"): greedy longest match over escaped bytes.
- ``matching``: what those three share (llama.cpp's trie walk, strip attributes, detokenize).
"""
