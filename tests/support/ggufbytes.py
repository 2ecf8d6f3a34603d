"""GGUF files written byte by byte (without the gguf package), so that a test can make any field
lie: metadata entries of any type, tensor records, and ``gguf_file``, by default a llama with
one F32 token table of V x D."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

V, D = 64, 32
U32, F32, STR, ARR, U64 = 4, 6, 8, 9, 10


def s(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def kv(key: str, kind: int, value: object) -> bytes:
    """One metadata entry: a key, its GGUF type, its value packed as that type."""
    head = s(key) + struct.pack("<I", kind)
    if kind == U32:
        return head + struct.pack("<I", value)
    if kind == F32:
        return head + struct.pack("<f", value)
    if kind == STR:
        return head + s(value)  # type: ignore[arg-type]
    if kind == U64:
        return head + struct.pack("<Q", value)
    raise ValueError(kind)


def strings(key: str, items: list[str], count: int | None = None) -> bytes:
    body = b"".join(s(item) for item in items)
    return s(key) + struct.pack("<IIQ", ARR, STR, len(items) if count is None else count) + body


def floats(key: str, values: list[float]) -> bytes:
    return s(key) + struct.pack(f"<IIQ{len(values)}f", ARR, F32, len(values), *values)


def tensor(name: str, dims: tuple[int, ...], ggml_type: int, offset: int) -> bytes:
    return s(name) + struct.pack("<I", len(dims)) + b"".join(
        struct.pack("<Q", d) for d in dims
    ) + struct.pack("<IQ", ggml_type, offset)  # fmt: skip


def good_metadata(**replace: bytes) -> list[bytes]:
    tokens = [chr(0x30 + i) for i in range(V)]  # single characters: no merges needed
    entries = {
        "general.architecture": kv("general.architecture", STR, "llama"),
        "llama.context_length": kv("llama.context_length", U32, 128),
        "llama.embedding_length": kv("llama.embedding_length", U32, D),
        "llama.attention.head_count": kv("llama.attention.head_count", U32, 4),
        "llama.block_count": kv("llama.block_count", U32, 1),
        "tokenizer.ggml.model": kv("tokenizer.ggml.model", STR, "gpt2"),
        "tokenizer.ggml.pre": kv("tokenizer.ggml.pre", STR, "gpt-2"),
        "tokenizer.ggml.tokens": strings("tokenizer.ggml.tokens", tokens),
        "tokenizer.ggml.merges": strings("tokenizer.ggml.merges", []),
    }
    entries.update(replace)
    return [entry for entry in entries.values() if entry]


def arch_metadata(arch: str, *extra: bytes, blocks: int = 1) -> list[bytes]:
    """The good metadata with llama's keys written for another architecture, and ``extra``."""
    entries = {"general.architecture": kv("general.architecture", STR, arch)}
    sizes = {"context_length": 128, "embedding_length": D, "attention.head_count": 4}
    for key, value in {**sizes, "block_count": blocks}.items():
        entries[f"llama.{key}"] = kv(f"{arch}.{key}", U32 if value < 1 << 32 else U64, value)
    return good_metadata(**entries) + list(extra)


def gguf_file(
    path: Path,
    metadata: list[bytes] | None = None,
    tensors: list[bytes] | None = None,
    data: bytes | None = None,
    *,
    version: int = 3,
    kv_count: int | None = None,
    cut: int | None = None,
) -> Path:
    """A GGUF file: by default a llama with one F32 token table of V x D."""
    metadata = good_metadata() if metadata is None else metadata
    if tensors is None:
        tensors = [tensor("token_embd.weight", (D, V), 0, 0)]
    if data is None:
        data = np.random.default_rng(0).standard_normal((V, D)).astype("<f4").tobytes()
    head = b"GGUF" + struct.pack(
        "<IQQ", version, len(tensors), len(metadata) if kv_count is None else kv_count
    )
    body = head + b"".join(metadata) + b"".join(tensors)
    body += b"\0" * (-len(body) % 32)
    raw = body + data
    path.write_bytes(raw if cut is None else raw[:cut])
    return path


def with_metadata(**entries: bytes):
    """A builder of the good file with some metadata entries added (b"": left out)."""
    return lambda path: gguf_file(path, good_metadata(**entries))


def swap(key: str, entry: bytes):
    """A builder of the good file with the entry of ``key`` replaced (b"": left out)."""
    return with_metadata(**{key: entry})


def with_tensors(*records: bytes, data: bytes | None = None):
    """A builder of the good file with these tensor records."""
    return lambda path: gguf_file(path, tensors=list(records), data=data)
