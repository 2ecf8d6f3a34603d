"""Benchmark: ``embedcli undertrained`` against the plain in-memory way of computing the same
indicator, as whole processes, side by side.

The baseline (named ``numpy``) reads the whole matrix into float64 with the ``gguf`` package or
safetensors, and runs the NumPy reading of the formula the tests hold embedcli to
(tests/support/undertrainedoracle.py: an SVD of the centred matrix, the first component taken
out of every row, the cosine to the reference rows' mean). It computes the indicator alone;
embedcli also reads the tokenizer, finds the reference, and round-trips every token. Tables:

- Gemma 3 270M's tied token table (262,144 x 640, Q8_0), from the sample model;
- a GPT-2-shaped table (50,257 x 1,024, float32) written here, with ``-e gpt2``.

A ratio is the median over back-to-back pairs of (embedcli's time / the baseline's); peak memory
is each command's largest resident set, alone. The point is memory: embedcli's working copies
are a chunk and a d x d matrix, the baseline's are the whole matrix in float64, several times.

    python bench/undertrained_bench.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import find_tool, mib, peak_bytes, timed

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
BASELINE = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from support.undertrainedoracle import numpy_indicator
kind, path, first, last = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
if kind == "gguf":
    from gguf import GGUFReader
    from gguf.quants import dequantize
    tensor = next(t for t in GGUFReader(path).tensors if t.name == "token_embd.weight")
    matrix = dequantize(tensor.data, tensor.tensor_type).reshape(-1, int(tensor.shape[0]))
else:
    from safetensors.numpy import load_file
    matrix = load_file(path)["transformer.wte.weight"]
cosine = numpy_indicator(matrix, list(range(first, last)))
print(int(np.argmax(np.where(np.arange(len(cosine)) >= first, -2, cosine))))
"""


def _sample() -> Path:
    """The sample model's joined file (joined by embedcli into its cache if it is not yet)."""
    sys.path.insert(0, str(HERE.parent))
    from embedcli.models.sample import sample_path

    return sample_path("sample:gemma-3-270m")


def _gpt2_table(folder: Path) -> Path:
    import numpy as np
    import torch
    from safetensors.torch import save_file

    rng = np.random.default_rng(0)
    table = rng.standard_normal((50_257, 1024)).astype(np.float32)
    table[124:188] = rng.standard_normal(1024) * 0.1  # the byte tokens: one untrained row
    path = folder / "gpt2-shaped.safetensors"
    save_file({"transformer.wte.weight": torch.from_numpy(table)}, str(path))
    return path


def _pairs(a: list[str], b: list[str], env: dict[str, str], runs: int) -> list[float]:
    for argv in (a, b):  # warm the page cache first
        timed(argv, env)
    return [timed(a, env)[0] / timed(b, env)[0] for _ in range(runs)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed pairs of each table")
    args = parser.parse_args(argv)
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        gemma, gpt2 = _sample(), _gpt2_table(Path(tmp))
        unused = ",".join(map(str, range(6, 106)))  # <unused0>..<unused99>, as the paper took
        cases = {
            "Gemma 3 270M (262,144 x 640, Q8_0)": (
                [embedcli, "undertrained", "--weights", str(gemma), "--top", "5", "--json",
                 "--reference-ids", unused],
                ["gguf", str(gemma), "6", "106"],
            ),
            "GPT-2 shape (50,257 x 1,024, f32)": (
                [embedcli, "undertrained", "--weights", str(gpt2), "-e", "gpt2", "--json"],
                ["safetensors", str(gpt2), "124", "188"],
            ),
        }  # fmt: skip
        print("undertrained, against the whole matrix in float64 with NumPy (baseline: numpy)")
        print("ratio = median of (embedcli / numpy) over back-to-back pairs (lower is faster)")
        for label, (command, table) in cases.items():
            baseline = [sys.executable, "-c", BASELINE, str(TESTS), *table]
            ratios = _pairs(command, baseline, env, args.runs)
            ours, theirs = peak_bytes(command, env), peak_bytes(baseline, env)
            print(
                f"  {label:36} time {statistics.median(ratios):.2f}x ({min(ratios):.2f}-"
                f"{max(ratios):.2f})  memory {mib(ours)} vs {mib(theirs)} = {ours / theirs:.2f}x"
            )


if __name__ == "__main__":
    main()
