"""Benchmark: `embedcli tokenize --count` against ttok (the baseline), start-up and a 20 MB file.

Both tools run as whole processes in this environment, alternating, and must print the same
count. ttok reads its BPE files through tiktoken's cache, primed here from the same hash-verified
files embedcli uses; embedcli uses its own parsed-ranks cache (a fresh one, warmed by the first
run; the empty-cache first run is reported too). The 20 MB text is ../shared/corpora/the-verdict.txt
repeated, built in a temporary folder and never committed.

    pip install ttok        # the baseline, into the same environment
    python bench/tokenize_bench.py [--runs 9] [--big-runs 3] [--corpus PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import DEFAULT_CORPUS, find_tool, prime_tiktoken_cache, timed

SENTENCE = "The quick brown fox jumps over the lazy dog, and the dog did not mind at all."
# encoding -> the ttok model that selects it
MODELS = {"gpt2": "gpt2", "cl100k_base": "gpt-4", "o200k_base": "gpt-4o"}


def timed_pair(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median wall time of each command, alternating; every command must print the same."""
    outputs = {name: timed(argv, env)[1] for name, argv in commands.items()}  # warm-up
    if len(set(outputs.values())) != 1:
        raise SystemExit(f"the tools disagree: {outputs}")
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(timed(argv, env)[0])
    return {name: statistics.median(samples) for name, samples in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="timed start-up runs of each command")
    parser.add_argument("--big-runs", type=int, default=3, help="timed runs on the large file")
    parser.add_argument("--big-mb", type=int, default=20, help="size of the large file in MB")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args(argv)

    embedcli, ttok = find_tool("embedcli"), find_tool("ttok")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = dict(
            os.environ,
            TIKTOKEN_CACHE_DIR=str(root / "tiktoken"),
            EMBEDCLI_CACHE_DIR=str(root / "embedcli"),
        )
        prime_tiktoken_cache(root / "tiktoken")

        print(
            f"tokenize benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
            "baseline: ttok; ratio = embedcli median / ttok median (lower is faster)"
        )
        print(f"\nstart-up: tokenize --count of one sentence, {args.runs} runs each")
        print(f"{'encoding':<13} {'ttok s':>8} {'embedcli s':>11} {'ratio':>7} {'first run s':>12}")
        for encoding, model in MODELS.items():
            cold_env = dict(env, EMBEDCLI_CACHE_DIR=str(root / f"cold-{encoding}"))
            cold, _ = timed([embedcli, "tokenize", "--count", "-e", encoding, SENTENCE], cold_env)
            medians = timed_pair(
                {
                    "ttok": [ttok, "-m", model, SENTENCE],
                    "embedcli": [embedcli, "tokenize", "--count", "-e", encoding, SENTENCE],
                },
                env,
                args.runs,
            )
            print(
                f"{encoding:<13} {medians['ttok']:>8.3f} {medians['embedcli']:>11.3f} "
                f"{medians['embedcli'] / medians['ttok']:>6.2f}x {cold:>12.3f}"
            )

        text = args.corpus.read_text(encoding="utf-8")
        big = root / "big.txt"
        big.write_text(text * (args.big_mb * 1_000_000 // len(text.encode()) + 1), encoding="utf-8")
        size = big.stat().st_size / 1e6
        print(
            f"\nlarge file: --count of {size:.1f} MB ({args.corpus.name} repeated), "
            f"{args.big_runs} runs each"
        )
        print(f"{'encoding':<13} {'ttok s':>8} {'embedcli s':>11} {'ratio':>7} {'tokens':>12}")
        for encoding in ("gpt2", "o200k_base"):
            commands = {
                "ttok": [ttok, "-m", MODELS[encoding], "-i", str(big)],
                "embedcli": [embedcli, "tokenize", "--count", "-e", encoding, "-f", str(big)],
            }
            medians = timed_pair(commands, env, args.big_runs)
            count = timed(commands["embedcli"], env)[1]
            print(
                f"{encoding:<13} {medians['ttok']:>8.3f} {medians['embedcli']:>11.3f} "
                f"{medians['embedcli'] / medians['ttok']:>6.2f}x {int(count):>12,}"
            )


if __name__ == "__main__":
    main()
