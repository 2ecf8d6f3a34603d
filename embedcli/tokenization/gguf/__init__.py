"""The tokenizers GGUF files carry (``tokenizer.ggml.*``), with llama.cpp's ids.

- ``tokenizer``: the checked ``tokenizer.ggml.*`` metadata, and the tokenizer each model gets:
  byte-level BPE (through tokenizers) split by llama.cpp's pre-tokenizers, or a port below.
- ``pre``: llama.cpp's pre-tokenizer regexes, one for each known ``tokenizer.ggml.pre``.
- ``native``: what the ports of llama.cpp's own tokenizers share (the special-token partition,
  pieces, the tokenizer protocol).
- ``spm``: SentencePiece-style ("llama"): merges by score with byte fallback, as llama.cpp.
"""
