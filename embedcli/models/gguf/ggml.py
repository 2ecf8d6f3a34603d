"""llama.cpp's GGML type constants (``gguf.constants`` of the ``gguf`` package), loaded without
the package's ``__init__``.

``import gguf.constants`` runs ``gguf/__init__.py`` first, which imports the whole toolkit:
numpy, and ``gguf.vocab``, which imports ``sentencepiece`` and ``mistral-common`` wherever they
are installed. Reading a GGUF file's header and tokenizer needs none of that; with
mistral-common installed it cost 0.5 s and 30 MiB of every ``tokenize -e FILE.gguf`` (measured
by ``bench/vocab_bench.py``: 1.35x llama.cpp's time, from 0.94x). ``constants.py`` imports only
the standard library, so it is loaded from its file, under its own name ``gguf.constants``: a
later ``import gguf`` (the dequantizers, ``gguf.quants``) finds it there and uses the same
module, so its enums are one set of classes.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

NAME = "gguf.constants"


def constants() -> ModuleType:
    """The ``gguf.constants`` module, without importing the rest of the package."""
    loaded = sys.modules.get(NAME)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("gguf")  # finds, imports nothing
    folders = package.submodule_search_locations if package is not None else None
    spec = None
    for folder in folders or ():
        spec = importlib.util.spec_from_file_location(NAME, f"{folder}/constants.py")
        if spec is not None:
            break
    if spec is None or spec.loader is None:
        import gguf.constants  # no plain file to load: the package's own import, whole

        return gguf.constants
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[NAME]
        raise
    return module
