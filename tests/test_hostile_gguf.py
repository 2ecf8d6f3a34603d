"""Hostile GGUF files, written here byte by byte: truncated files, lying tensor offsets, absurd
sizes, unknown GGML types, metadata of the wrong type, each one ``Error:`` line from every
command that reads weights, with memory in proportion to the file (never to what it claims).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import make_runner
from helpers import expect_error

from embedcli.cli import app

pytest.importorskip("gguf")

runner = make_runner()
V, D = 64, 32
COMMANDS = {
    "weights": ["weights", "{}"],
    "embed": ["embed", "--ids", "1,2", "--weights", "{}", "--device", "cpu"],
    "inspect-shapes": ["inspect-shapes", "--weights", "{}"],
    "stats": ["stats", "--weights", "{}"],
    "neighbors": ["neighbors", "--ids", "1", "--weights", "{}", "-k", "2"],
    "positions": ["positions", "--weights", "{}"],
}

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


def invoke(command: str, path: Path):
    return runner.invoke(app, [arg.format(path) for arg in COMMANDS[command]])


def test_the_good_file_works(tmp_path: Path) -> None:
    """The baseline every hostile case departs from is read by every command."""
    path = gguf_file(tmp_path / "good.gguf")
    for command in COMMANDS:
        result = invoke(command, path)
        if command == "positions":
            continue  # rope without pictures of a table: its refusal or picture is not the point
        assert result.exit_code == 0, (command, result.output)


HOSTILE = {  # builder, what the one error line says
    "not GGUF at all (but named .gguf)": (
        lambda p: (p.write_bytes(b"GGUX" + b"\0" * 60), p)[1],
        "cannot tell the format",
    ),
    "version 1": (lambda p: gguf_file(p, version=1), "GGUF version 1"),
    "big-endian": (lambda p: gguf_file(p, version=3 << 24), "big-endian GGUF"),
    "truncated in the metadata": (lambda p: gguf_file(p, cut=400), "it is truncated, or its"),
    "truncated in the data": (lambda p: gguf_file(p, cut=-100), "runs past the end of the"),
    "lying tensor offset": (
        with_tensors(tensor("token_embd.weight", (D, V), 0, 1 << 40)),
        "runs past the end of the file",
    ),
    "misaligned tensor offset": (
        with_tensors(tensor("token_embd.weight", (D, V), 0, 4)),
        "not on the file's alignment",
    ),
    "absurd shape": (
        with_tensors(tensor("token_embd.weight", (1 << 40, 1 << 40), 0, 0)),
        "absurd shape",
    ),
    "huge but finite shape": (
        with_tensors(tensor("token_embd.weight", (D, 1 << 40), 0, 0)),
        "runs past the end of the file",
    ),
    "five dimensions": (
        with_tensors(tensor("token_embd.weight", (D, V, 1, 1, 1), 0, 0)),
        "has 5 dimensions",
    ),
    "unknown GGML type": (
        with_tensors(tensor("token_embd.weight", (D, V), 99, 0)),
        "GGML type 99",
    ),
    "rows not whole blocks": (
        with_tensors(tensor("token_embd.weight", (D + 1, V), 8, 0)),
        "not a whole number of Q8_0 blocks",
    ),
    "overlapping tensors": (
        lambda p: gguf_file(
            p,
            tensors=[
                tensor("token_embd.weight", (D, V), 0, 0),
                tensor("output.weight", (D, V // 2), 0, 32),
            ],
        ),
        "overlap",
    ),
    "two tensors of one name": (
        lambda p: gguf_file(
            p,
            tensors=[tensor("token_embd.weight", (D, V), 0, 0)] * 2,
            data=b"\0" * (2 * V * D * 4),
        ),
        "two tensors named",
    ),
    "absurd metadata count": (lambda p: gguf_file(p, kv_count=1 << 60), "more than the file"),
    "absurd string array": (
        swap("tokenizer.ggml.tokens", strings("tokenizer.ggml.tokens", ["a"], 1 << 50)),
        "claims 1,125,899,906,842,624 strings",
    ),
    "absurd string length": (
        swap("general.architecture", s("general.architecture") + struct.pack("<IQ", STR, 1 << 50)),
        "claims 1,125,899,906,842,624 bytes",
    ),
    "unknown value type": (
        with_metadata(x=s("x") + struct.pack("<I", 77) + b"\0" * 8),
        "unknown GGUF value type 77",
    ),
    "a key twice": (
        with_metadata(x=kv("llama.block_count", U32, 2)),
        "holds the metadata key 'llama.block_count' twice",
    ),
    "a key that is not UTF-8": (
        with_metadata(x=s(b"\xff\xfe") + struct.pack("<II", U32, 1)),
        "is not UTF-8 text",
    ),
    "bad alignment": (
        with_metadata(x=kv("general.alignment", U32, 3)),
        "general.alignment must be a uint32 power of two",
    ),
    "context length of the wrong type": (
        swap("llama.context_length", kv("llama.context_length", STR, "4096")),
        "llama.context_length must be an integer, it is string",
    ),
    "no embedding length": (
        swap("llama.embedding_length", b""),
        "has no llama.embedding_length",
    ),
    "unknown architecture": (
        swap("general.architecture", kv("general.architecture", STR, "mamba9")),
        "a 'mamba9' model (general.architecture), an architecture embedcli does not map",
    ),
    "architecture of the wrong type": (
        swap("general.architecture", kv("general.architecture", U32, 7)),
        "general.architecture must be a string, it is uint32",
    ),
    "no token table": (
        with_tensors(tensor("blk.0.attn_q.weight", (D, V), 0, 0)),
        "has no token_embd.weight",
    ),
    "width disagreeing with the metadata": (
        swap("llama.embedding_length", kv("llama.embedding_length", U32, 2 * D)),
        "gives llama.embedding_length 64, but its weights have 32 columns",
    ),
}  # fmt: skip
# header-level damage is found by every command; config-level by those that read a config
WEIGHTS_ONLY_OK = {"width disagreeing with the metadata"}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_gguf_files_are_one_error_line(tmp_path: Path, case: str) -> None:
    build, message = HOSTILE[case]
    path = build(tmp_path / "model.gguf")
    for command in COMMANDS:
        if command == "weights" and case in WEIGHTS_ONLY_OK:
            continue
        result = invoke(command, path)
        expect_error(result, message)


def test_a_lying_file_costs_memory_in_proportion_to_its_size(tmp_path: Path) -> None:
    """A header declaring a trillion-row table and a million-string vocabulary over a few KB:
    refused before anything of that size is allocated (RLIMIT_AS would kill the run)."""
    import subprocess
    import sys

    path = gguf_file(
        tmp_path / "lie.gguf", tensors=[tensor("token_embd.weight", (D, 1 << 40), 0, 0)]
    )
    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 32, 1 << 32))\n"
        "from embedcli.cli import main\n"
        f"sys.argv = ['embedcli', 'weights', {str(path)!r}]\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1, result.stderr
    assert "runs past the end of the file" in result.stderr and "Traceback" not in result.stderr
