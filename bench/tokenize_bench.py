"""Benchmark: `embedcli tokenize --count` against ttok (the baseline), start-up and a 20 MB file.

Both tools run as whole processes in this environment, alternating, and must print the same
count. ttok reads its BPE files through tiktoken's cache, primed here from the same hash-verified
files embedcli uses; embedcli uses its own parsed-ranks cache (a fresh one, warmed by the first
run; the empty-cache first run is reported too). The 20 MB text is ../shared/corpora/the-verdict.txt
repeated, built in a temporary folder and never committed.

    pip install ttok        # the baseline, into the same environment
    python bench/tokenize_bench.py [--runs 9] [--big-runs 3] [--corpus PATH]

`--paired N` runs only the large-file count, N rounds (the order reversed every other round),
of the baseline, embedcli with tiktoken only (EMBEDCLI_COUNT_ENGINE=tiktoken, as before
embedcli[fast]) and embedcli as installed, and prints the CPU time (user + sys) and wall time of
each: median, spread and outliers, and the per-round ratio to the baseline. CPU time is the
figure to trust on a shared machine: wall time waits for other work. The baseline is plain
tiktoken in one process (`tiktoken.get_encoding` from tiktoken's cache, then `encode`), or ttok
with `--baseline ttok`; PYTHONPATH picks the embedcli tree.

    python bench/tokenize_bench.py --paired 12 [--encoding cl100k_base] [--file PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
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


# Plain tiktoken in one process: what counting a file costs without embedcli.
PLAIN_TIKTOKEN = (
    "import sys, tiktoken\n"
    "enc = tiktoken.get_encoding(sys.argv[1])\n"
    "with open(sys.argv[2], encoding='utf-8') as handle:\n"
    "    text = handle.read()\n"
    "print(len(enc.encode(text)))\n"
)
OUTLIER = 1.5  # a run whose CPU time is this many times its command's median


def cpu_timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """CPU time (user + sys) and wall time of one whole process, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed:\n{done.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, wall, done.stdout.strip()


def spread(samples: list[float]) -> str:
    """'median [min-max]' of some seconds."""
    return f"{statistics.median(samples):6.2f} [{min(samples):.2f}-{max(samples):.2f}]"


def paired(commands: dict[str, list[str]], env: dict[str, str], pairs: int) -> None:
    """Run each command ``pairs`` times, in turn (the order reversed every other round); print
    CPU and wall time of each, the outliers, and the ratio of each command to the first (the
    baseline)."""
    names = list(commands)
    counts = {name: cpu_timed(argv, env)[2] for name, argv in commands.items()}  # warm-up
    if len(set(counts.values())) != 1:
        raise SystemExit(f"the tools disagree: {counts}")
    cpu: dict[str, list[float]] = {name: [] for name in names}
    wall: dict[str, list[float]] = {name: [] for name in names}
    for i in range(pairs):
        for name in names if i % 2 == 0 else names[::-1]:
            c, w, count = cpu_timed(commands[name], env)
            if count != counts[name]:
                raise SystemExit(f"{name} printed {count}, then {counts[name]}")
            cpu[name].append(c)
            wall[name].append(w)
    header = ("CPU s median [min-max]", "outliers", "wall s median [min-max]")
    print(f"{'command':<10} {header[0]:>24} {header[1]:>9} {header[2]:>25}")
    for name in names:
        outliers = sum(c > OUTLIER * statistics.median(cpu[name]) for c in cpu[name])
        print(f"{name:<10} {spread(cpu[name]):>24} {outliers:>9} {spread(wall[name]):>25}")
    base = names[0]
    for tool in names[1:]:
        cpu_ratio = [t / b for t, b in zip(cpu[tool], cpu[base], strict=True)]
        wall_ratio = [t / b for t, b in zip(wall[tool], wall[base], strict=True)]
        print(
            f"{tool}/{base} per pair: CPU {spread(cpu_ratio).strip()}x, wall "
            f"{spread(wall_ratio).strip()}x; ratio of medians: CPU "
            f"{statistics.median(cpu[tool]) / statistics.median(cpu[base]):.2f}x, wall "
            f"{statistics.median(wall[tool]) / statistics.median(wall[base]):.2f}x"
        )
    print(f"tokens {int(counts[base]):,}; outlier: CPU over {OUTLIER}x its median")


def main_paired(args: argparse.Namespace, embedcli: str, root: Path, env: dict[str, str]) -> None:
    """The large-file count, in pairs against the baseline."""
    big = args.file
    if big is None:
        text = args.corpus.read_text(encoding="utf-8")
        big = root / "big.txt"
        repeat = args.big_mb * 1_000_000 // len(text.encode()) + 1
        big.write_text(text * repeat, encoding="utf-8")
    if args.baseline == "ttok":
        model = MODELS.get(args.encoding)
        if model is None:
            raise SystemExit(f"ttok has no model for {args.encoding}; use --baseline tiktoken")
        baseline = [find_tool("ttok"), "-m", model, "-i", str(big)]
    else:
        baseline = [sys.executable, "-c", PLAIN_TIKTOKEN, args.encoding, str(big)]
    tool = [embedcli, "tokenize", "--count", "-e", args.encoding, "-f", str(big)]
    print(
        f"tokenize --count -e {args.encoding} -f FILE ({big.stat().st_size / 1e6:.1f} MB), "
        f"{args.paired} pairs; python {sys.version.split()[0]}, {len(os.sched_getaffinity(0))} "
        f"CPUs, load average {os.getloadavg()[0]:.2f}; baseline: {args.baseline}"
    )
    only_tiktoken = ["env", "EMBEDCLI_COUNT_ENGINE=tiktoken", *tool]  # as before embedcli[fast]
    commands = {args.baseline: baseline, "tiktoken-only": only_tiktoken, "embedcli": tool}
    if importlib.util.find_spec("fastokens") is not None:  # what the default weighs up
        commands["fastokens"] = ["env", "EMBEDCLI_COUNT_ENGINE=fastokens", *tool]
    paired(commands, env, args.paired)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="timed start-up runs of each command")
    parser.add_argument("--big-runs", type=int, default=3, help="timed runs on the large file")
    parser.add_argument("--big-mb", type=int, default=20, help="size of the large file in MB")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--paired", type=int, default=0, help="only the large file, N pairs")
    parser.add_argument("--baseline", choices=("tiktoken", "ttok"), default="tiktoken")
    parser.add_argument("--encoding", default="cl100k_base", help="with --paired")
    parser.add_argument("--file", type=Path, help="with --paired: this file, not a built one")
    args = parser.parse_args(argv)

    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = dict(
            os.environ,
            TIKTOKEN_CACHE_DIR=str(root / "tiktoken"),
            EMBEDCLI_CACHE_DIR=str(root / "embedcli"),
        )
        prime_tiktoken_cache(root / "tiktoken")
        if args.paired:
            return main_paired(args, embedcli, root, env)
        ttok = find_tool("ttok")

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
