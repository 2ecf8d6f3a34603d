"""Text to token ids and back, exactly as the model's own tokenizer does it, offline.

- ``encodings``: tiktoken encodings from hash-verified bundled files; ``get_encoding`` for any
  name, file, folder or ``hf:`` source; token pieces and bytes for display.
- ``bpe``: the ``.tiktoken`` rank file format.
- ``modeltok``: a model's own tokenizer, found in a file, a folder or a hub source.
- ``hfjson``, ``tiktokenfile``, ``common``: the two model-tokenizer formats and what they share;
  ``hfspec``: what a tokenizer.json says, read and checked before the tokenizers library loads it.
- ``kinds``: which kind of tokenizer an encoding is, told by its class (``MODEL_TOKENIZERS``,
  ``tiktoken_behind``).
- ``tokens``: the tokenize job (encode in parallel chunks, count, decode, offsets, truncate).
- ``spans``: where tokens sit in their text, and the text of ids, only where that is sure
  (a model tokenizer that changes the text before encoding it: its own offsets and decoder).
- ``idtext``: token ids written as text (--ids, --decode, --ids-file), read one way.
- ``threads``: the helper threads that encode chunks, each with its own copy of an encoding.
- ``explain``: BPE replayed merge by merge (``tokenize --explain``).
- ``modelnames``: model names to encodings and context windows.
- ``request``: ``TokenizeRequest``, tokenize's mode flags as one frozen object that refuses the
  combinations that mean nothing.
- ``engines``: the counting engines (tiktoken, and fastokens where it is proven exact).
- ``counts``: token counts without keeping the ids, by the fastest exact engine.
- ``runs``: text tiktoken cannot split (a whitespace run of about a million characters).
- ``display``: how a token or a name is shown (the Token record, visible whitespace, bytes).
- ``gguf/``: llama.cpp's tokenizers as GGUF files carry them (vocabulary, pre-tokenizer, merges).

Imports: models, core, io, errors.
"""
