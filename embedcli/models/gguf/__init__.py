"""GGUF files (llama.cpp, Ollama, LM Studio) as model sources.

- ``file``: the header and metadata, memory-mapped and bounded; no tensor read until asked.
- ``checkpoint``: ``GGUFCheckpoint``: the tensors, a quantized table dequantized row by row.
- ``bounds``: the quantization step and error bound of every block, from its scales alone.
- ``config``: the metadata read as a config.json, through the family registry.
- ``source``: a GGUF file opened as a source: its tables' keys and what ``weights`` says.
- ``ollama``: ``ollama:NAME[:TAG]``, a model Ollama pulled, found offline.
"""
