"""Benchmark: `embedcli embed "<sentence>"` against an equivalent plain torch + tiktoken script.

Run from the repository root, in the environment where embedcli is installed:

    python bench/embed_bench.py [--runs 7]      (or python bench/run.py for every benchmark)

Both sides are timed as whole processes (what a user waits for), alternating, in one run; the
report gives medians and ratios against the named baseline. The baseline reads GPT-2's BPE files
through tiktoken's own cache, primed here from the same hash-verified files embedcli uses, so
neither side touches the network.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import find_tool, prime_tiktoken_cache, timed

SENTENCE = "The verdict was read aloud, and the painter's reputation never recovered."

BASELINE = """
import sys
import tiktoken
import torch
from torch import nn

enc = tiktoken.get_encoding("gpt2")
ids = torch.tensor([enc.encode(sys.argv[1])])            # (1, T)
torch.manual_seed(123)
token_embedding = nn.Embedding(enc.n_vocab, 768)
position_embedding = nn.Embedding(1024, 768)
with torch.no_grad():
    x = token_embedding(ids) + position_embedding(torch.arange(ids.shape[1]))  # (1, T, 768)
print(ids.tolist(), tuple(x.shape), x.dtype, x.device)
print(x[0, :, :4])
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each command")
    args = parser.parse_args(argv)

    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(Path(tmp) / "cache"), NO_COLOR="1")
        prime_tiktoken_cache(Path(env["TIKTOKEN_CACHE_DIR"]))
        script = Path(tmp) / "plain_torch_tiktoken.py"
        script.write_text(BASELINE, encoding="utf-8")

        commands = {
            "baseline: plain torch + tiktoken script": [sys.executable, str(script), SENTENCE],
            "embedcli embed (tables)": [embedcli, "embed", SENTENCE, "--device", "cpu"],
            "embedcli embed --json": [embedcli, "embed", SENTENCE, "--device", "cpu", "--json"],
            "embedcli --help (no torch)": [embedcli, "--help"],
        }
        for argv in commands.values():  # warm the page cache and .pyc files
            timed(argv, env)[0]
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, argv in commands.items():
                times[name].append(timed(argv, env)[0])

    baseline = statistics.median(times["baseline: plain torch + tiktoken script"])
    print(
        f"embed startup benchmark: {args.runs} runs each, alternating; "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print(f"{'command':<44} {'median s':>9} {'min s':>7} {'ratio':>7}")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<44} {median:>9.3f} {min(samples):>7.3f} {median / baseline:>6.2f}x")
    print("ratio = median wall time / the baseline's median wall time (lower is faster)")


if __name__ == "__main__":
    main()
