"""Benchmark: `embedcli count PATH` against a plain one-process tiktoken loop, on four trees.

Every tree is made in a temporary folder from this Python's own standard library, so the
benchmark needs nothing beyond a clone and its environment:

- stdlib: the standard library folder as installed (less site-packages/, test/ and config-*/):
  source files beside compiled ones (__pycache__/*.pyc, lib-dynload/*.so), which are skipped;
- text-37mb: 37 MB of text only, the library's .py files copied over and over into folders;
- files-500: 500 of its .py files;
- single-file: one file of 12 MB of its source.

The baseline is the loop a user would write: the files embedcli counted (its --json list,
taken once, so the baseline walks nothing), each read as bytes (CRLF kept), decoded and counted with
`enc.encode_ordinary` in one process; tiktoken's own cache is primed from embedcli's verified
files, so it never downloads. Its total must equal embedcli's. Each round runs, in turn, the
baseline, `embedcli count` as installed, and `embedcli count` with EMBEDCLI_COUNT_ENGINE=tiktoken
(tiktoken only), each as a whole process; the ratio of each round is embedcli's time divided by
the baseline's (below 1 is faster), and the median of those ratios is printed with their range,
the medians of the times, each command's peak memory, and the engine that counted.

    python bench/count_bench.py [--runs 5] [--encoding cl100k_base] [--trees stdlib,single-file]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
from pathlib import Path

from common import find_tool, mib, peak_bytes, prime_tiktoken_cache, timed

BASELINE = r"""
import sys, tiktoken
enc = tiktoken.get_encoding(sys.argv[2])
total = 0
with open(sys.argv[1], encoding="utf-8") as listing:
    for path in listing.read().split("\n"):
        with open(path, "rb") as handle:
            total += len(enc.encode_ordinary(handle.read().decode("utf-8")))
print(total)
"""
TREES = ("stdlib", "text-37mb", "files-500", "single-file")
LEFT_OUT = ("site-packages", "test")


def sources() -> list[Path]:
    """The standard library's .py files that are UTF-8 text, in a fixed order."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if parts[0] in LEFT_OUT or parts[0].startswith("config-"):
            continue
        try:
            path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found.append(path)
    return found


def make_tree(name: str, root: Path) -> Path:
    """The tree (or file) ``name``, made under ``root``; returns the path to count."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    if name == "stdlib":
        target = root / "stdlib"
        skipped = shutil.ignore_patterns(*LEFT_OUT, "config-*")
        shutil.copytree(
            stdlib,
            target,
            ignore=lambda d, names: skipped(d, names) if Path(d) == stdlib else set(),
            symlinks=True,
        )
        return target
    files = sources()
    if name == "single-file":
        target = root / "single.txt"
        with target.open("wb") as out:
            while out.tell() < 12_000_000:
                for path in files:
                    out.write(path.read_bytes())
                    if out.tell() >= 12_000_000:
                        break
        return target
    target = root / name
    enough = (
        (lambda copies, written: copies >= 500)
        if name == "files-500"
        else (lambda copies, written: written >= 37_000_000)
    )
    written = copies = 0
    while True:
        for number, path in enumerate(files):
            if enough(copies, written):
                return target
            folder = target / f"round{copies // len(files)}" / path.parent.name
            folder.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            (folder / f"{number}_{path.name}").write_bytes(data)
            written += len(data)
            copies += 1


def bench_tree(name: str, root: Path, args: argparse.Namespace, env: dict[str, str]) -> dict:
    path = make_tree(name, root)
    embedcli = find_tool("embedcli")
    ours = [embedcli, "count", str(path), "-e", args.encoding, "--json", "--quiet"]
    _, out = timed(ours, env)  # warm-up, and the list of what it counted
    report = json.loads(out)
    listing = root / f"{name}.list"
    listing.write_text("\n".join(f["path"] for f in report["files"]), encoding="utf-8")
    total = report["totals"]["tokens"][args.encoding]
    plain = [sys.executable, "-c", BASELINE, str(listing), args.encoding]
    if int(timed(plain, env)[1]) != total:
        raise SystemExit(f"{name}: the counts differ from embedcli's {total:,}")
    tiktoken_only = {**env, "EMBEDCLI_COUNT_ENGINE": "tiktoken"}
    if json.loads(timed(ours, tiktoken_only)[1])["totals"]["tokens"][args.encoding] != total:
        raise SystemExit(f"{name}: the counts differ between embedcli's engines")
    runs = {"plain": (plain, env), "embedcli": (ours, env), "tiktoken": (ours, tiktoken_only)}
    times: dict[str, list[float]] = {key: [] for key in runs}
    for _ in range(args.runs):
        for key, (argv, environment) in runs.items():
            times[key].append(timed(argv, environment)[0])
    ratios = {
        key: [t / p for t, p in zip(times[key], times["plain"], strict=True)]
        for key in ("embedcli", "tiktoken")
    }
    return {
        "tree": name,
        "files": report["totals"]["files"],
        "skipped": report["totals"]["skipped"],
        "text": sum(f["bytes"] for f in report["files"]),
        "bytes": sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
        if path.is_dir()
        else path.stat().st_size,
        "tokens": total,
        "engine": ", ".join(report["engines"][args.encoding]),
        "times": {key: statistics.median(values) for key, values in times.items()},
        "ratios": {key: _spread(values) for key, values in ratios.items()},
        "peaks": {key: peak_bytes(argv, environment) for key, (argv, environment) in runs.items()},
    }


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}x ({min(values):.2f}-{max(values):.2f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed rounds of each tree")
    parser.add_argument("--encoding", default="cl100k_base")
    parser.add_argument("--trees", default=",".join(TREES), help="a comma-separated subset")
    args = parser.parse_args(argv)
    names = [name for name in args.trees.split(",") if name]
    if unknown := sorted(set(names) - set(TREES)):
        raise SystemExit(f"unknown tree {unknown[0]!r}: choose from {', '.join(TREES)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "EMBEDCLI_CACHE_DIR": str(Path(tmp) / "cache")}
        env["TIKTOKEN_CACHE_DIR"] = str(Path(tmp) / "tiktoken")
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a stale .pyc would be compiled in every run
        prime_tiktoken_cache(Path(env["TIKTOKEN_CACHE_DIR"]))
        for name in names:
            (Path(tmp) / name).mkdir()
            rows.append(bench_tree(name, Path(tmp) / name, args, env))
    print(
        f"count benchmark: {args.encoding}, {args.runs} rounds, {os.cpu_count()} CPUs, "
        f"python {sys.version.split()[0]}; each ratio is embedcli's time / the baseline's "
        "(one-process tiktoken loop over the same files), below 1 is faster"
    )
    header = f"{'tree':<12} {'files':>6} {'skipped':>7} {'text':>8} {'baseline s':>10}"
    print(f"{header} {'embedcli s':>10} {'embedcli / baseline':>20} {'tiktoken only':>20}  engine")
    for row in rows:
        times, ratios = row["times"], row["ratios"]
        print(
            f"{row['tree']:<12} {row['files']:>6,} {row['skipped']:>7,} {mib(row['text']):>8} "
            f"{times['plain']:>10.2f} {times['embedcli']:>10.2f} {ratios['embedcli']:>20} "
            f"{ratios['tiktoken']:>20}  {row['engine']}"
        )
    print("peak memory (baseline / embedcli / tiktoken only):")
    for row in rows:
        peaks = row["peaks"]
        print(
            f"  {row['tree']:<12}",
            " / ".join(mib(peaks[k]) for k in ("plain", "embedcli", "tiktoken")),
        )


if __name__ == "__main__":
    main()
