"""Where llama.cpp's tools are on this machine, and why a test must skip where one is not.

- The converter: a llama.cpp source tree holding ``convert_hf_to_gguf.py``, ``conversion/``
  and ``gguf-py/`` (the llama-cpp-python sdist's ``vendor/llama.cpp``): ``$EMBEDCLI_LLAMA_CPP``,
  else the cache .ci/run fills (``$XDG_CACHE_HOME/embedcli-tests/llama.cpp``).
- A transformers 4 overlay (``pip install --target``) for the models whose hub config.json
  transformers 5 no longer hands the converter as it was written (GPT-NeoX's rotary_pct,
  EXAONE 3's and NomicBERT's remote names): ``$EMBEDCLI_TRANSFORMERS4``, else the same cache's
  ``transformers4``.
- The runtime: the ``llama_cpp`` package (``../shared/wheels``), importable in this Python.
"""

from __future__ import annotations

import importlib.util
import os
from functools import cache
from pathlib import Path

# what puts the converter, the overlay and the runtime in place
FETCH = "bash .ci/fetch-llama-cpp .venv/bin/python"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "embedcli-tests"


@cache
def converter() -> Path | None:
    """The llama.cpp source tree whose converter the tests run, or None."""
    given = os.environ.get("EMBEDCLI_LLAMA_CPP")
    root = Path(given) if given else cache_root() / "llama.cpp"
    ok = (root / "convert_hf_to_gguf.py").is_file() and (root / "gguf-py").is_dir()
    return root if ok else None


@cache
def transformers4() -> Path | None:
    """A folder that puts transformers 4 (with its tokenizers and hub client) first on the
    converter's path, or None."""
    given = os.environ.get("EMBEDCLI_TRANSFORMERS4")
    root = Path(given) if given else cache_root() / "transformers4"
    return root if (root / "transformers" / "__init__.py").is_file() else None


@cache
def runtime() -> bool:
    """Whether llama.cpp's runtime (the llama_cpp package) is importable here."""
    return importlib.util.find_spec("llama_cpp") is not None


CONVERTER_MISSING = (
    "llama.cpp's converter is not on this machine: run `"
    + FETCH
    + "` (it downloads the llama-cpp-python sdist into "
    "~/.cache/embedcli-tests) or set EMBEDCLI_LLAMA_CPP to a llama.cpp source tree"
)
TRANSFORMERS4_MISSING = (
    "no transformers 4 overlay for the converter: run `" + FETCH + "` or set "
    "EMBEDCLI_TRANSFORMERS4 to a `pip install --target` folder of transformers 4.57"
)
RUNTIME_MISSING = (
    "llama.cpp's runtime (the llama_cpp package) is not installed: pip install "
    "../shared/wheels/llama_cpp_python-*.whl, or build it from its sdist"
)
