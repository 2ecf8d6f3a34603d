"""Benchmark: peak memory of `embedcli embed "<a sentence>" --weights CKPT` with a large checkpoint.

Generates (in a temporary folder, never committed) GPT-2-sized embedding tables plus about 1.5 GB
of other tensors, as safetensors, as a PyTorch zip checkpoint and as .npz (stored, np.savez, and
compressed, np.savez_compressed), then measures each command's peak resident memory in a process
of its own. Baselines in the same run: the same embed with its
seeded tables (no checkpoint), and a plain `torch.load` of the whole checkpoint.

    python bench/weights_bench.py [--other-gb 1.5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from common import find_tool, mib, peak_bytes

VOCAB, D_MODEL, CONTEXT = 50257, 768, 1024
SENTENCE = "The verdict was read aloud, and the painter's reputation never recovered."


def make_checkpoints(folder: Path, other_gb: float) -> tuple[list[Path], int]:
    import numpy as np
    import torch
    from safetensors.torch import save_file

    generator = torch.Generator().manual_seed(0)
    state = {
        "transformer.wte.weight": torch.randn(VOCAB, D_MODEL, generator=generator),
        "transformer.wpe.weight": torch.randn(CONTEXT, D_MODEL, generator=generator),
    }
    tables = sum(t.numel() * 4 for t in state.values())
    block = 32 * 2**20  # 32 Mi floats = 128 MiB a tensor
    for i in range(max(1, round(other_gb * 2**30 / (block * 4)))):
        state[f"transformer.h.{i}.mlp.c_fc.weight"] = torch.full((block,), 0.5)
    safetensors, pytorch = folder / "big.safetensors", folder / "big.pt"
    save_file(state, str(safetensors))
    torch.save(state, pytorch)
    stored, compressed = folder / "big.npz", folder / "big-compressed.npz"
    arrays = {name: tensor.numpy() for name, tensor in state.items()}
    np.savez(stored, **arrays)
    np.savez_compressed(compressed, **arrays)
    return [safetensors, pytorch, stored, compressed], tables


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other-gb", type=float, default=1.5, help="GB of non-table tensors")
    args = parser.parse_args(argv)

    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        files, tables = make_checkpoints(Path(tmp), args.other_gb)
        safetensors, pytorch, stored, compressed = files
        size = safetensors.stat().st_size
        embed = [embedcli, "embed", SENTENCE, "--device", "cpu", "--json"]
        weights = [*embed, "--weights"]
        rows = [
            ("baseline: embed, seeded tables (no checkpoint)", peak_bytes(embed)),
            (
                "baseline: torch.load of the whole .pt",
                peak_bytes(
                    [
                        sys.executable,
                        "-c",
                        "import sys, torch; torch.load(sys.argv[1])",
                        str(pytorch),
                    ]
                ),
            ),
            ("embed --weights big.safetensors", peak_bytes([*weights, str(safetensors)])),
            ("embed --weights big.pt (zip, mmap)", peak_bytes([*weights, str(pytorch)])),
            ("embed --weights big.npz (stored, mmap)", peak_bytes([*weights, str(stored)])),
            (
                "embed --weights big-compressed.npz (rows)",
                peak_bytes([*weights, str(compressed)]),
            ),
        ]
    print(
        f"weights benchmark: checkpoint {mib(size)} (the two tables {mib(tables)}, the rest "
        f"other tensors); python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print(f"{'command':<48} {'peak RSS':>10} {'vs seeded':>10} {'vs tables':>10} {'vs file':>8}")
    seeded = rows[0][1]
    for name, peak in rows:
        print(
            f"{name:<48} {mib(peak):>10} {peak / seeded:>9.2f}x {peak / tables:>9.2f}x "
            f"{peak / size:>7.2f}x"
        )
    print("peak RSS: the command's own process, measured by getrusage in a helper")


if __name__ == "__main__":
    main()
