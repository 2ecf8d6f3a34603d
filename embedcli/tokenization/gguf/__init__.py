"""The tokenizers GGUF files carry (``tokenizer.ggml.*``), with llama.cpp's ids.

- ``tokenizer``: ``GGUFTokenizer``: byte-level BPE split by llama.cpp's pre-tokenizers, or
  SentencePiece by score with byte fallback.
- ``pre``: llama.cpp's pre-tokenizer regexes, one for each known ``tokenizer.ggml.pre``.
- ``merges``: SentencePiece merges by score, bounded.
"""
