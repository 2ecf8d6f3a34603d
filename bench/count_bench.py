"""Benchmark: `embedcli count DIR` against a plain single-process loop (os.walk + tiktoken).

Generates (in a temporary folder, never committed) a tree of about 200 MB: 10,000 small files,
four large ones, binaries, an ignored node_modules/ and a .git/ folder, from
../shared/corpora/the-verdict.txt cut and repeated. The baseline walks the tree, leaves out what
.gitignore, hidden folders and binaries leave out (hard-coded for this tree), and encodes every
file whole with `enc.encode(text, disallowed_special=())`: the total must equal embedcli's.
Each runs as a whole process, in turn: the baseline, embedcli with tiktoken only
(EMBEDCLI_COUNT_ENGINE=tiktoken, as before the faster engine), and embedcli as installed (with
embedcli[fast], fastokens counts once its tables are built); medians, the median of the ratios to
the baseline in each round, each one's peak memory, and the engines that counted are printed.
`files-to-prompt DIR | ttok` runs too where both are installed (its count differs:
files-to-prompt adds each file's name and fences).

    python bench/count_bench.py [--runs 3] [--megabytes 200] [--encoding gpt2] [--dask]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import DEFAULT_CORPUS, find_tool, mib, peak_bytes, prime_tiktoken_cache, timed

BASELINE = r"""
import os, sys
from embedcli.tokenization.encodings import get_encoding   # the same verified files, no download
enc = get_encoding(sys.argv[2])
total = 0
for folder, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if d not in ("node_modules", ".git") and not d.startswith(".")]
    for name in files:
        if name.startswith("."):
            continue
        with open(os.path.join(folder, name), "rb") as handle:
            data = handle.read()
        if b"\0" in data[:8192]:
            continue
        total += len(enc.encode(data.decode("utf-8"), disallowed_special=()))
print(total)
"""


def make_tree(root: Path, megabytes: int, corpus: Path) -> int:
    """Small files (half the bytes), four large ones (the other half), binaries, ignored
    folders; returns the bytes of the files that count."""
    text = corpus.read_text(encoding="utf-8")
    words = text.split(" ")
    rng = random.Random(0)
    (root / ".gitignore").write_text("node_modules/\n*.bin\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    counted = 0
    small = megabytes * 2**20 // 2 // 10_000
    for i in range(10_000):
        folder = root / f"pkg{i % 50:02d}" / f"mod{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        start = rng.randrange(len(words))
        body = " ".join(words[start : start + small // 6])
        body = (body + " ") * max(1, small // max(1, len(body)))
        (folder / f"file{i:05d}.md").write_text(body, encoding="utf-8")
        counted += len(body.encode())
    big = megabytes * 2**20 // 2 // 4
    for i in range(4):
        data = (text + "\n") * (big // len(text.encode()) + 1)
        (root / f"large{i}.txt").write_text(data[:big], encoding="utf-8")
        counted += len(data[:big].encode())
    for i in range(50):
        (root / f"pkg{i:02d}" / "blob.dat").write_bytes(
            bytes(rng.randrange(256) for _ in range(4096)) + b"\0"
        )
    modules = root / "node_modules" / "dep"
    modules.mkdir(parents=True)
    for i in range(500):
        (modules / f"m{i}.js").write_text("module.exports = 1;\n" * 100)
    return counted


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each command")
    parser.add_argument("--megabytes", type=int, default=200, help="size of the generated tree")
    parser.add_argument("--encoding", default="gpt2")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument(
        "--dask", action="store_true", help="embedcli on a two-worker Dask LocalCluster"
    )
    args = parser.parse_args(argv)

    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        counted = make_tree(root, args.megabytes, args.corpus)
        env = {**os.environ, "EMBEDCLI_CACHE_DIR": str(Path(tmp) / "cache")}
        ours = [embedcli, "count", str(root), "-e", args.encoding, "--json", "--quiet"]
        if args.dask:
            ours += ["--engine", "dask", "--workers", "2"]
        plain = [sys.executable, "-c", BASELINE, str(root), args.encoding]
        _, out = timed(ours, env)  # warm-up, and the parsed-ranks cache
        import json

        total = json.loads(out)["totals"]["tokens"][args.encoding]
        _, theirs = timed(plain, env)
        if int(theirs) != total:
            raise SystemExit(f"the counts differ: embedcli {total:,}, plain loop {theirs}")
        only_tiktoken = {**env, "EMBEDCLI_COUNT_ENGINE": "tiktoken"}
        _, out = timed(ours, only_tiktoken)
        if json.loads(out)["totals"]["tokens"][args.encoding] != total:
            raise SystemExit("the counts differ between embedcli's engines")
        engines = (
            json.loads(out)["engines"][args.encoding],
            json.loads(timed(ours, env)[1])["engines"][args.encoding],
        )
        runs = {"plain": (plain, env), "tiktoken": (ours, only_tiktoken), "embedcli": (ours, env)}
        if engines[1] == engines[0] and _fastokens_may_count(args.encoding):
            # the default kept tiktoken: what fastokens throughout would have cost
            runs["fastokens"] = (ours, {**env, "EMBEDCLI_COUNT_ENGINE": "fastokens"})
        times: dict[str, list[float]] = {name: [] for name in runs}
        ratios: dict[str, list[float]] = {name: [] for name in runs if name != "plain"}
        for _ in range(args.runs):
            for name, (argv, environment) in runs.items():
                times[name].append(timed(argv, environment)[0])
            for name in ratios:
                ratios[name].append(times["plain"][-1] / times[name][-1])
        peaks = {name: peak_bytes(argv, environment) for name, (argv, environment) in runs.items()}
        files_to_prompt = _files_to_prompt(root, env, args.encoding)
    print(
        f"count benchmark{' (--engine dask, 2 workers)' * args.dask}: {mib(counted)} of text in "
        f"10,004 files (plus binaries, node_modules/, .git/), {args.encoding}, {total:,} tokens "
        f"(identical); {os.cpu_count()} CPUs, python {sys.version.split()[0]}"
    )
    print(f"{'command':<44} {'median s':>9} {'peak RSS':>10}")
    labels = {
        "plain": "baseline: os.walk + tiktoken, one process",
        "tiktoken": "embedcli count DIR, tiktoken only",
        "embedcli": "embedcli count DIR",
        "fastokens": "embedcli count DIR, fastokens forced",
    }
    for name, label in labels.items():
        if name not in times:
            continue
        print(f"{label:<44} {statistics.median(times[name]):>9.2f} {mib(peaks[name]):>10}")
    print(f"engines: tiktoken only: {', '.join(engines[0])}; default: {', '.join(engines[1])}")
    for name in ratios:
        speedup = statistics.median(ratios[name])
        print(f"speed-up (plain / {labels[name]}, median of {args.runs}): {speedup:.2f}x")
    if files_to_prompt is not None:
        seconds, count = files_to_prompt
        print(f"files-to-prompt DIR | ttok: {seconds:.2f} s, {count} tokens (file names included)")


def _fastokens_may_count(encoding: str) -> bool:
    """Whether fastokens is installed at a version proven exact for ``encoding``."""
    if importlib.util.find_spec("fastokens") is None:
        return False
    from importlib.metadata import version

    from embedcli.tokenization.engines import PROVEN

    return encoding in PROVEN.get(version("fastokens"), ())


def _files_to_prompt(root: Path, env: dict[str, str], encoding: str) -> tuple[float, str] | None:
    if shutil.which("files-to-prompt") is None or shutil.which("ttok") is None:
        return None
    prime_tiktoken_cache(Path(env.setdefault("TIKTOKEN_CACHE_DIR", str(root.parent / "tk"))))
    model = {"gpt2": "gpt2", "cl100k_base": "gpt-4", "o200k_base": "gpt-4o"}[encoding]
    import time

    start = time.perf_counter()
    done = subprocess.run(
        f"files-to-prompt {root} | ttok -m {model}", shell=True, env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    return time.perf_counter() - start, done.stdout.strip()


if __name__ == "__main__":
    main()
