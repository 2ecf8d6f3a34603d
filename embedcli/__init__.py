"""embedcli: inspect the input layer of GPT-style transformers.

Public API (imported lazily, so that ``import embedcli`` does not pay for torch)::

    from embedcli import EmbedConfig, InputEmbedding, build_embedding, get_encoding
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"

_EXPORTS = {
    "EmbedConfig": "embedcli.core.config",
    "InputEmbedding": "embedcli.core.embedding",
    "EmbeddingTrace": "embedcli.core.embedding",
    "TraceStep": "embedcli.core.shapeplan",
    "build_embedding": "embedcli.core.embedding",
    "get_encoding": "embedcli.tokenization.encodings",
    "encoding_name_for_model": "embedcli.tokenization.encodings",
    "resolve_device": "embedcli.core.devices",
    "EmbedCLIError": "embedcli.errors",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'embedcli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
