"""Benchmark: streaming `embed --seq-len` of a 20 MB text, and `--lines` against one call a line.

- Streaming: `embedcli embed -f big.txt --seq-len 256 -d 64 --output out.npy` against a minimal
  plain torch + tiktoken loop doing the same lookups and writes (np.lib.format.open_memmap), both
  as whole processes; tokens/s, peak RSS against the output size, and the two files compared.
- Lines: `embedcli embed --lines` over 2,000 lines against 2,000 separate `embedcli embed` calls
  (a few timed, the rest estimated from their mean).

The text is ../shared/corpora/the-verdict.txt repeated, built in a temporary folder.

    python bench/stream_bench.py [--mb 20] [--lines 2000] [--sample-calls 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import DEFAULT_CORPUS, find_tool, mib, peak_bytes, prime_tiktoken_cache, timed

BASELINE = """
import sys
import numpy as np
import tiktoken
import torch
from torch import nn

L, d, batch = 256, 64, 32
enc = tiktoken.get_encoding("gpt2")
ids = torch.tensor(enc.encode_ordinary(open(sys.argv[1], encoding="utf-8").read()))
windows = ids.unfold(0, L, L)  # (N, L): every full window, one every L tokens
torch.manual_seed(123)
token_embedding, position_embedding = nn.Embedding(enc.n_vocab, d), nn.Embedding(1024, d)
out = np.lib.format.open_memmap(sys.argv[2], mode="w+", dtype=np.float32,
                                shape=(len(windows), L, d))
with torch.no_grad():
    positions = position_embedding(torch.arange(L))  # (L, d)
    for i in range(0, len(windows), batch):
        rows = windows[i : i + batch]  # (b, L)
        out[i : i + len(rows)] = (token_embedding(rows) + positions).numpy()  # (b, L, d)
out.flush()
print(len(ids))
"""


def main(argv: list[str] | None = None) -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=20, help="size of the streamed text in MB")
    parser.add_argument("--lines", type=int, default=2000, help="lines for the --lines run")
    parser.add_argument("--sample-calls", type=int, default=5, help="single calls timed")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args(argv)

    embedcli = find_tool("embedcli")
    corpus = args.corpus.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = dict(
            os.environ,
            TIKTOKEN_CACHE_DIR=str(root / "tiktoken"),
            EMBEDCLI_CACHE_DIR=str(root / "embedcli"),
        )
        prime_tiktoken_cache(root / "tiktoken")
        big = root / "big.txt"
        big.write_text(corpus * (args.mb * 1_000_000 // len(corpus.encode()) + 1), encoding="utf-8")
        script = root / "baseline.py"
        script.write_text(BASELINE, encoding="utf-8")
        ours, theirs = root / "embedcli.npy", root / "baseline.npy"
        mine = [
            embedcli,
            "embed",
            "-f",
            str(big),
            "--seq-len",
            "256",
            "-d",
            "64",
            "-b",
            "32",  # the baseline's batch
            "--output",
            str(ours),
            "--quiet",
        ]
        base = [sys.executable, str(script), str(big), str(theirs)]
        timed(mine, env)  # warm the ranks cache and the page cache
        base_seconds, tokens = timed(base, env)
        mine_seconds, _ = timed(mine, env)
        base_peak, mine_peak = peak_bytes(base, env), peak_bytes(mine, env)
        size, text_bytes = ours.stat().st_size, big.stat().st_size
        same = np.array_equal(np.load(ours, mmap_mode="r"), np.load(theirs, mmap_mode="r"))
        tokens = int(tokens)

        sentences = [s.strip().replace("\n", " ") for s in corpus.split(".") if s.strip()]
        lines = (sentences * (args.lines // len(sentences) + 1))[: args.lines]
        lines_file = root / "lines.txt"
        lines_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        batch_seconds, _ = timed(
            [embedcli, "embed", "--lines", "-f", str(lines_file), "-d", "64", "--pool", "mean"], env
        )
        single = [
            timed([embedcli, "embed", line, "-d", "64", "--json"], env)[0]
            for line in lines[: args.sample_calls]
        ]
    estimate = statistics.mean(single) * args.lines

    print(
        f"streaming benchmark: {text_bytes / 1e6:.1f} MB text, {tokens:,} tokens, "
        f"window 256, d 64; python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print(
        f"{'command':<46} {'seconds':>8} {'tokens/s':>11} {'ratio':>7} {'peak RSS':>9} "
        f"{'RSS/output':>10}"
    )
    for name, seconds, peak in (
        ("baseline: plain torch loop + open_memmap", base_seconds, base_peak),
        ("embedcli embed --seq-len 256 --output .npy", mine_seconds, mine_peak),
    ):
        print(
            f"{name:<46} {seconds:>8.2f} {tokens / seconds:>11,.0f} "
            f"{base_seconds / seconds:>6.2f}x {mib(peak):>9} {peak / size:>9.2f}x"
        )
    print(
        f"output {mib(size)}; files identical: {same}; ratio = tokens/s against the baseline "
        "(higher is faster)"
    )
    print(
        f"\n--lines over {args.lines:,} lines: {batch_seconds:.2f} s in one process; "
        f"{args.lines:,} separate calls: about {estimate:,.0f} s (mean of {len(single)} timed: "
        f"{statistics.mean(single):.2f} s each); {estimate / batch_seconds:,.0f}x faster"
    )


if __name__ == "__main__":
    main()
