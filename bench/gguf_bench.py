"""Benchmark: time and peak memory of embedcli on a GGUF file far larger than its token table.

Writes (in a temporary folder, never committed) a Llama-3-8B-shaped GGUF: a 128,256 x 4,096
token table in Q8_0 (558 MB of real bytes), GPT-2's tokenizer, and 14 GiB of other tensors that
are a hole in a sparse file (declared in the header, never written). Each command runs in a
process of its own; baselines in the same run: embed with seeded tables (no file), and
reading the whole table's bytes once (what a loader that ignores rows would at least do).

    python bench/gguf_bench.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from common import find_tool, mib, peak_bytes

ROWS, WIDTH = 128256, 4096
OTHER = 14 << 30  # bytes of the other tensors: a hole
SENTENCE = "The verdict was read aloud, and the painter's reputation never recovered."


def make_gguf(folder: Path) -> tuple[Path, int]:
    """The sparse GGUF, and its token table's bytes."""
    import gguf
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from support.ggufmodels import add_fields, tokenizer_fields
    from support.hub import gpt2_tokenizer_json

    gpt2_tokenizer_json(folder / "tok")
    path = folder / "big.gguf"
    q8 = gguf.GGMLQuantizationType.Q8_0
    table_bytes = ROWS * WIDTH // 32 * 34
    writer = gguf.GGUFWriter(path, "llama")
    for key, value in {"context_length": 8192, "embedding_length": WIDTH, "block_count": 32,
                       "attention.head_count": 32, "attention.head_count_kv": 8,
                       "rope.dimension_count": 128}.items():  # fmt: skip
        writer.add_uint32(f"llama.{key}", value)
    writer.add_float32("llama.rope.freq_base", 500000.0)
    add_fields(writer, tokenizer_fields(folder / "tok"))
    shape = (ROWS, WIDTH // 32 * 34)  # in bytes, as the writer takes a quantized shape
    writer.add_tensor_info("token_embd.weight", shape, np.dtype(np.uint8), table_bytes, q8)
    f16 = gguf.GGMLQuantizationType.F16
    writer.add_tensor_info("blk.rest.weight", (OTHER // 2 // WIDTH, WIDTH), np.dtype(np.float16),
                           OTHER, f16)  # fmt: skip
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    start = -(-path.stat().st_size // 32) * 32
    rng = np.random.default_rng(0)
    with open(path, "r+b") as handle:
        handle.seek(start)
        scale = np.full((1, 2), 0, dtype=np.uint8)
        scale[:] = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
        for first in range(0, ROWS, 4096):
            count = min(4096, ROWS - first) * WIDTH // 32
            q = rng.integers(-127, 128, size=(count, 32), dtype=np.int8).view(np.uint8)
            handle.write(np.concatenate([np.repeat(scale, count, axis=0), q], axis=1).tobytes())
        end = -(-handle.tell() // 32) * 32
        handle.truncate(end + OTHER)  # the other tensors: a hole
    return path, table_bytes


def timed(argv: list[str]) -> float:
    import subprocess

    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        path, table = make_gguf(Path(tmp))
        size = path.stat().st_size
        on_disk = os.stat(path).st_blocks * 512
        script = (
            "import sys\nwith open(sys.argv[1], 'rb') as f:\n    left = int(sys.argv[2])\n"
            "    while left > 0:\n        left -= len(f.read(min(left, 1 << 24))) or left\n"
        )
        read_all = [sys.executable, "-c", script, str(path), str(table)]
        commands = [
            ("baseline: embed, seeded tables (no file)",
             [embedcli, "embed", SENTENCE, "--device", "cpu", "--json"]),
            ("baseline: read the table's bytes once", read_all),
            ("weights big.gguf", [embedcli, "weights", str(path), "--json"]),
            ("embed --weights big.gguf", [embedcli, "embed", SENTENCE, "--weights", str(path),
                                          "--device", "cpu", "--json"]),
            ("stats --weights big.gguf (whole table, chunks)",
             [embedcli, "stats", "--weights", str(path), "--json"]),
        ]  # fmt: skip
        rows = [(name, peak_bytes(argv), timed(argv)) for name, argv in commands]
    print(
        f"gguf benchmark: file {mib(size)} ({mib(on_disk)} on disk: the rest is a hole), token "
        f"table {ROWS:,} x {WIDTH:,} Q8_0 = {mib(table)}; python {sys.version.split()[0]}, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"{'command':<48} {'peak RSS':>10} {'vs seeded':>10} {'vs table':>9} {'time':>8}")
    seeded = rows[0][1]
    for name, peak, seconds in rows:
        print(f"{name:<48} {mib(peak):>10} {peak / seeded:>9.2f}x {peak / table:>8.2f}x "
              f"{seconds:>7.2f}s")  # fmt: skip
    print(
        "peak RSS: the command's own process (getrusage in a helper); time: one run, whole process"
    )


if __name__ == "__main__":
    main()
