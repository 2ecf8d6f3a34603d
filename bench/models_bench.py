"""Benchmark: real-model sources read only the bytes they need.

Generates (in a temporary folder, never committed) a Llama-3-8B-shaped model folder of sparse
safetensors shards (config.json, an index, 4 shards, 16 GB as the files say; the disk holds only
their headers), then measures, each command in a process of its own:

- `weights FOLDER` and `inspect-shapes --weights FOLDER`: bytes of the model's files brought into
  memory (pages resident after the run, counted with mincore after evicting them first), against
  the folder's size (the baseline: a loader that reads the whole model);
- `embed --weights FOLDER` on a smaller model with real values: peak memory against the size of
  the two tables, and against a plain `python -c "import torch"`;
- `weights hf:ORG/NAME --download` against a local HTTP server standing in for the hub
  (tests/support/hub, FakeHub): bytes served, against the repo's size.

    python bench/models_bench.py
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from common import find_tool, mib, peak_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

LLAMA_8B = {"vocab": 128256, "d": 4096, "layers": 32, "ffn": 14336, "kv": 1024, "heads": 32}
LLAMA_405B = {"vocab": 128256, "d": 16384, "layers": 126, "ffn": 53248, "kv": 1024, "heads": 128}
PAGE = os.sysconf("SC_PAGE_SIZE")


def _write_shard(
    path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]], full: bool = True
) -> int:
    """A safetensors file whose data is a hole: its header, then its size by truncation (or,
    not ``full``, only its first MiB: a stand-in for a remote shard whose data is never asked
    for). Returns the size the header declares."""
    sizes = {"BF16": 2, "F32": 4}
    header: dict[str, object] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        count = 1
        for s in shape:
            count *= s
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + count * sizes[dtype]],
        }
        offset += count * sizes[dtype]
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        # A stand-in for a remote shard keeps 1 MiB of its data (more than any header read
        # asks for), so that range reads are answered as they would be by a real shard.
        handle.truncate(8 + len(raw) + (offset if full else min(offset, 1 << 20)))
    return 8 + len(raw) + offset


def make_sparse_llama(
    folder: Path, m: dict[str, int] = LLAMA_8B, shards: int = 4, full: bool = True
) -> int:
    """A Llama-shaped folder of sparse shards; returns its size in bytes (as declared)."""
    tensors: list[tuple[str, tuple[str, tuple[int, ...]]]] = [
        ("model.embed_tokens.weight", ("BF16", (m["vocab"], m["d"]))),
    ]
    for i in range(m["layers"]):
        p = f"model.layers.{i}."
        tensors += [
            (p + "self_attn.q_proj.weight", ("BF16", (m["d"], m["d"]))),
            (p + "self_attn.k_proj.weight", ("BF16", (m["kv"], m["d"]))),
            (p + "self_attn.v_proj.weight", ("BF16", (m["kv"], m["d"]))),
            (p + "self_attn.o_proj.weight", ("BF16", (m["d"], m["d"]))),
            (p + "mlp.gate_proj.weight", ("BF16", (m["ffn"], m["d"]))),
            (p + "mlp.up_proj.weight", ("BF16", (m["ffn"], m["d"]))),
            (p + "mlp.down_proj.weight", ("BF16", (m["d"], m["ffn"]))),
            (p + "input_layernorm.weight", ("BF16", (m["d"],))),
            (p + "post_attention_layernorm.weight", ("BF16", (m["d"],))),
        ]
    tensors += [
        ("model.norm.weight", ("BF16", (m["d"],))),
        ("lm_head.weight", ("BF16", (m["vocab"], m["d"]))),
    ]
    per = -(-len(tensors) // shards)
    weight_map, total = {}, 0
    for k in range(shards):
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = dict(tensors[k * per : (k + 1) * per])
        total += _write_shard(folder / name, part, full)
        weight_map.update({t: name for t in part})
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    config = {
        "model_type": "llama", "vocab_size": m["vocab"], "hidden_size": m["d"],
        "num_attention_heads": m["heads"], "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0, "tie_word_embeddings": False, "num_hidden_layers": m["layers"],
    }  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    return total


def _evict(files: list[Path]) -> None:
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages cannot be dropped: write them back first
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _resident(files: list[Path]) -> int:
    """Bytes of these files in the page cache (mincore over a mapping of each)."""
    libc = ctypes.CDLL(None, use_errno=True)
    total = 0
    for path in files:
        size = path.stat().st_size
        if not size:
            continue
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), size, prot=mmap.PROT_READ) as m:
            pages = -(-size // PAGE)
            vec = (ctypes.c_ubyte * pages)()
            if libc.mincore(ctypes.c_void_p(_address(m)), ctypes.c_size_t(size), vec) != 0:
                raise OSError(ctypes.get_errno(), "mincore failed")
            total += sum(v & 1 for v in vec) * PAGE
    return total


def _address(m: mmap.mmap) -> int:
    """The address of a read-only mapping (ctypes cannot take a buffer of read-only memory)."""
    import numpy as np

    return np.frombuffer(m, dtype=np.uint8).ctypes.data


def read_by(command: list[str], files: list[Path]) -> int:
    """Bytes of ``files`` brought into memory by ``command``, run alone."""
    _evict(files)
    before = _resident(files)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{done.stderr}")
    return _resident(files) - before


def main(argv: list[str] | None = None) -> None:
    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama-8b-shaped"
        folder.mkdir()
        size = make_sparse_llama(folder)
        files = sorted(folder.iterdir())
        print(
            f"models benchmark: a Llama-3-8B-shaped folder, {mib(size)} in "
            f"{sum(f.suffix == '.safetensors' for f in files)} shards (sparse); "
            f"python {sys.version.split()[0]}"
        )
        print(f"{'command':<52} {'bytes read':>12} {'vs folder':>11}")
        print(f"{'baseline: a loader that reads the whole model':<52} {mib(size):>12} {1:>10.2f}x")
        for name, command in (
            ("weights FOLDER --json", [embedcli, "weights", str(folder), "--json"]),
            (
                "inspect-shapes --weights FOLDER",
                [embedcli, "inspect-shapes", "--weights", str(folder)],
            ),
        ):
            read = read_by(command, files)
            print(f"{name:<52} {read / 1024:>9,.0f} KiB {read / size:>10.6f}x")
    _remote(embedcli)
    _embed_memory(embedcli)


def _remote(embedcli: str) -> None:
    """Header-only inspection of a Llama-3.1-405B-shaped repo (191 shards) through a local
    stand-in for the hub; its shards hold their headers only, as no byte past one is asked."""

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama-405b-shaped"
        folder.mkdir()
        size = make_sparse_llama(folder, LLAMA_405B, shards=191, full=False)
        _served(embedcli, folder, size)


def _served(embedcli: str, folder: Path, size: int) -> None:
    from support.hub import FakeHub

    with FakeHub({"bench/llama-405b": folder}) as hub, tempfile.TemporaryDirectory() as cache:
        env = {
            **os.environ,
            "HF_ENDPOINT": hub.endpoint,
            "HF_HUB_CACHE": str(Path(cache) / "hub"),
            "EMBEDCLI_CACHE_DIR": str(Path(cache) / "embedcli"),
            "HF_HUB_DISABLE_TELEMETRY": "1",
        }
        command = [embedcli, "weights", "hf:bench/llama-405b", "--download", "--json"]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"remote weights failed:\n{done.stderr}")
        report = json.loads(done.stdout)
        served = hub.served_bytes
        print()
        print(
            f"remote: a Llama-3.1-405B-shaped repo on a local hub, {size / 1e9:,.0f} GB in 191 "
            f"shards; `weights hf:... --download` listed {len(report['tensors']):,} tensors, "
            f"{report['parameters']:,} parameters"
        )
        print(f"{'command':<52} {'bytes served':>14} {'vs repo':>11}")
        print(f"{'baseline: hf download (the whole repo)':<52} {size / 1e9:>11,.0f} GB {1:>10.2f}x")
        print(
            f"{'weights hf:bench/llama-405b --download':<52} {served / 2**20:>10,.2f} MiB "
            f"{served / size:>10.7f}x"
        )


def _embed_memory(embedcli: str) -> None:
    """Peak memory of `embed --weights FOLDER` against the size of its two tables."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "gpt2-wide"
        torch.manual_seed(0)
        config = GPT2Config(n_embd=1024, n_layer=1, n_head=8, n_positions=1024)
        GPT2LMHeadModel(config).save_pretrained(folder)
        tables = (50257 + 1024) * 1024 * 4
        embed = [embedcli, "embed", "A sentence to embed.", "-e", "gpt2", "--device", "cpu"]
        torch_only = peak_bytes([sys.executable, "-c", "import torch"])
        seeded = peak_bytes([*embed, "-d", "1024"])
        loaded = peak_bytes([*embed, "--weights", str(folder), "--json"])
    print()
    print(f"embed memory: tables {mib(tables)} (GPT-2 vocabulary x 1024, fp32)")
    print(f"{'command':<52} {'peak RSS':>10} {'above torch':>12} {'vs tables':>10}")
    for name, peak in (
        ("baseline: python -c 'import torch'", torch_only),
        ("embed, seeded tables of the same size", seeded),
        ("embed --weights FOLDER", loaded),
    ):
        above = peak - torch_only
        print(f"{name:<52} {mib(peak):>10} {mib(above):>12} {above / tables:>9.2f}x")


if __name__ == "__main__":
    main()
