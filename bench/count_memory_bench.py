"""Benchmark: peak memory of `embedcli count` against the number of files it counts.

Generates (under a temporary folder, deleted afterwards) trees of 10^4, 10^5 and 10^6 small files
(about 43 bytes each, 1,000 to a folder) and measures the peak RSS of each whole process (the
largest of the process and its children, as getrusage reports it) for:

- the baseline: one Python process walking the tree with os.walk and counting each file with
  tiktoken, holding nothing per file (the floor: the interpreter and the encoding);
- `embedcli count DIR` (the table view), `--jsonl` and `--csv`, local engine;
- with `--dask`, the table view and `--jsonl` on a LocalCluster of two workers (the client
  process: each worker is a process of its own).

Each line prints the peak and its ratio to the baseline's; bytes per file is (peak - baseline)
divided by the files. The total tokens of every run are checked against the baseline's.

    python bench/count_memory_bench.py [--sizes 10000 100000 1000000] [--dask] [--tmp /tmp]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import find_tool, mib

BASELINE = r"""
import os, sys
from embedcli.tokenization.encodings import get_encoding   # the same verified files
enc = get_encoding(sys.argv[2])
total = 0
for folder, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        with open(os.path.join(folder, name), "rb") as handle:
            total += len(enc.encode_ordinary(handle.read().decode("utf-8")))
print(total)
"""

# Runs a command with its stdout sent to a file; prints the peak RSS of the largest process
# among its children (the command itself, or one of its workers), in bytes.
PEAK = (
    "import resource, subprocess, sys\n"
    "with open(sys.argv[1], 'wb') as out:\n"
    "    done = subprocess.run(sys.argv[2:], stdout=out)\n"
    "if done.returncode: sys.exit(done.returncode)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


def make_files(root: Path, count: int) -> None:
    """``count`` small files, 1,000 to a folder, each a different short sentence."""
    for start in range(0, count, 1000):
        folder = root / f"d{start // 1000:04d}"
        folder.mkdir()
        for i in range(start, min(start + 1000, count)):
            with open(folder / f"f{i:07d}.txt", "w", encoding="utf-8") as handle:
                handle.write(f"file number {i} says hello to the counter\n")


def peak(argv: list[str], env: dict[str, str], output: Path) -> tuple[int, float]:
    """Peak RSS of one command (its stdout to ``output``), and its wall time."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(output), *argv], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:6])} failed:\n{done.stderr}")
    return int(done.stdout.strip()), seconds


def tokens_of(view: str, output: Path, encoding: str) -> int:
    """The total tokens a run printed (the table's from its totals line)."""
    text = output.read_text(encoding="utf-8")
    if view == "jsonl":
        records = (json.loads(line) for line in text.split("\n") if line)
        return sum(r.get("tokens", {}).get(encoding, 0) for r in records)
    if view == "csv":
        rows = text.splitlines()[1:]
        return sum(int(row.rsplit(",", 2)[1] or 0) for row in rows)
    import re

    found = re.search(r"([0-9,]+) tokens? \(" + re.escape(encoding) + r"\)", text)
    return int(found.group(1).replace(",", "")) if found else -1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--encoding", default="gpt2")
    parser.add_argument("--dask", action="store_true", help="the Dask engine too")
    parser.add_argument("--tmp", default=None, help="where the trees are made (default: $TMPDIR)")
    args = parser.parse_args(argv)

    embedcli = find_tool("embedcli")
    views = [("table", []), ("jsonl", ["--jsonl"]), ("csv", ["--csv"])]
    engines = [("local", [])] + ([("dask", ["--engine", "dask", "--workers", "2"])] * args.dask)
    print(
        f"count memory benchmark: peak RSS against files counted; {args.encoding}; "
        f"{os.cpu_count()} CPUs, python {sys.version.split()[0]}"
    )
    print(f"{'files':>9}  {'command':<34} {'peak RSS':>10} {'x baseline':>10} "
          f"{'B/file':>7} {'s':>7}")  # fmt: skip
    for size in args.sizes:
        tmp = Path(tempfile.mkdtemp(prefix="count-memory-", dir=args.tmp))
        try:
            root = tmp / "tree"
            root.mkdir()
            make_files(root, size)
            env = {**os.environ, "EMBEDCLI_CACHE_DIR": str(tmp / "cache"), "COLUMNS": "100"}
            output = tmp / "out"
            base, seconds = peak([sys.executable, "-c", BASELINE, str(root), args.encoding],
                                 env, output)  # fmt: skip
            expected = int(output.read_text())
            print(f"{size:>9,}  {'baseline: os.walk + tiktoken':<34} {mib(base):>10} "
                  f"{1:>10.2f} {'':>7} {seconds:>7.1f}")  # fmt: skip
            for engine, engine_args in engines:
                for view, view_args in views:
                    if engine == "dask" and view == "csv":
                        continue
                    command = [embedcli, "count", str(root), "-e", args.encoding, "--quiet",
                               *view_args, *engine_args]  # fmt: skip
                    used, seconds = peak(command, env, output)
                    got = tokens_of(view, output, args.encoding)
                    if got != expected:
                        raise SystemExit(f"{engine} {view}: {got:,} tokens, baseline {expected:,}")
                    label = f"count ({view}, {engine})"
                    per_file = (used - base) / size
                    print(f"{size:>9,}  {label:<34} {mib(used):>10} {used / base:>10.2f} "
                          f"{per_file:>7,.0f} {seconds:>7.1f}")  # fmt: skip
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
