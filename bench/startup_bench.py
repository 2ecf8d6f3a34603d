"""Benchmark: start-up against its floor, for each torch wheel a user may have installed.

For each environment (a venv with embedcli installed as a user installs it), in one run, as
whole processes, alternating; a ratio is the median over rounds of (command / its baseline, run
back to back in the same round), so a drifting machine moves both sides of each pair:

- inspect-shapes, every preset with default options, and `--weights` on a 15 GB
  Llama-3-8B-shaped model folder (sparse shards), against `python -c "import torch"`: the
  cost of torch's own import is the floor a table of shapes should stay under (target 1.2x).
- tokenize --count and count (table, and --json) of a sentence, for gpt2, cl100k_base and
  o200k_base, against bench/tiktoken_floor.py: import tiktoken, load already-parsed ranks,
  build the encoding, encode (target 1.05x for o200k_base and cl100k_base).
- embed "<a sentence>" on the built-in defaults (tables, and --json), against PLAIN_EMBED, a
  plain torch + tiktoken script doing the same lookups (target 0.8x).
- `import torch` itself: seconds and peak memory, the cost of each wheel (README's install note).

    python bench/startup_bench.py [--runs 7]                   # this environment
    bench/make_wheel_envs.sh /tmp/w                            # a CPU-wheel and a default venv
    python bench/startup_bench.py --env /tmp/w/cpu --env /tmp/w/default
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import mib, peak_bytes, prime_tiktoken_cache, timed
from models_bench import make_sparse_llama

HERE = Path(__file__).resolve().parent
SENTENCE = "The verdict was read aloud, and the painter's reputation never recovered."
PRESETS = ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl", "gpt3", "book-ch2")
ENCODINGS = ("gpt2", "cl100k_base", "o200k_base")
IMPORT_TORCH = 'python -c "import torch"'
FLOOR = "tiktoken floor"
PLAIN = "plain torch + tiktoken"
# baseline -> the most a command may take, as a multiple of it (issue 14's, and issue 38's
# 1.05x of the floor for o200k_base and cl100k_base; reported for gpt2)
TARGETS = {
    IMPORT_TORCH: 1.2,
    f"{FLOOR} o200k_base": 1.05,
    f"{FLOOR} cl100k_base": 1.05,
    PLAIN: 0.8,
}

# Written with the environment's own Python (marshal's format is Python's): the floor's ranks,
# from embedcli's hash-verified files.
WRITE_RANKS = """
import marshal, sys
from embedcli.tokenization.encodings import get_encoding
for name in sys.argv[2:]:
    with open(f"{sys.argv[1]}/{name}.marshal", "wb") as handle:
        marshal.dump(get_encoding(name)._mergeable_ranks, handle)
"""

# The same job, written plainly: GPT-2's encoding, the seeded tables, the sum, printed.
PLAIN_EMBED = """
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

DESCRIBE = """
import platform, torch
cuda = torch.version.cuda or "none"
print(f"torch {torch.__version__}, CUDA {cuda}, python {platform.python_version()}")
"""


def groups(env: Path, work: Path) -> dict[str, tuple[list[str], dict[str, list[str]]]]:
    """name -> (baseline argv, {what: embedcli argv}) for one environment."""
    python, embedcli = str(env / "bin" / "python"), str(env / "bin" / "embedcli")
    shapes = {
        f"inspect-shapes --preset {p}": [embedcli, "inspect-shapes", "--preset", p] for p in PRESETS
    }
    shapes["inspect-shapes --weights LLAMA-8B-FOLDER"] = [
        embedcli, "inspect-shapes", "--weights", str(work / "llama-8b"),
    ]  # fmt: skip
    found = {IMPORT_TORCH: ([python, "-c", "import torch"], shapes)}
    for name in ENCODINGS:
        floor = [python, str(HERE / "tiktoken_floor.py"), name, str(work / f"{name}.marshal")]
        count = [embedcli, "count", "-e", name, str(work / "sentence.txt")]
        found[f"{FLOOR} {name}"] = (
            [*floor, "-f", str(work / "sentence.txt")],
            {
                f"tokenize --count -e {name} -f FILE": [
                    embedcli, "tokenize", "--count", "-e", name, "-f", str(work / "sentence.txt"),
                ],
                f"count -e {name} FILE": count,
                f"count -e {name} FILE --json": [*count, "--json"],
            },
        )  # fmt: skip
    found[PLAIN] = (
        [python, str(work / "plain_embed.py"), SENTENCE],
        {
            "embed SENTENCE": [embedcli, "embed", SENTENCE],
            "embed SENTENCE --json": [embedcli, "embed", SENTENCE, "--json"],
        },
    )
    return found


def paired(
    group: tuple[list[str], dict[str, list[str]]], env: dict[str, str], runs: int
) -> tuple[float, dict[str, tuple[float, float]]]:
    """The baseline's median seconds, and each command's (median seconds, median ratio)."""
    baseline, commands = group
    for argv in [baseline, *commands.values()]:  # warm-up: page cache, .pyc files, ranks cache
        timed(argv, env)
    base_times: list[float] = []
    times: dict[str, list[float]] = {what: [] for what in commands}
    ratios: dict[str, list[float]] = {what: [] for what in commands}
    for _ in range(runs):
        for what, argv in commands.items():
            base = timed(baseline, env)[0]
            took = timed(argv, env)[0]
            base_times.append(base)
            times[what].append(took)
            ratios[what].append(took / base)
    return statistics.median(base_times), {
        what: (statistics.median(times[what]), statistics.median(ratios[what])) for what in commands
    }


def check_counts(env: Path, work: Path, child: dict[str, str]) -> None:
    """The floor and embedcli must agree on every count before either is timed."""
    for name in ENCODINGS:
        floor = timed(
            [str(env / "bin" / "python"), str(HERE / "tiktoken_floor.py"), name,
             str(work / f"{name}.marshal"), SENTENCE], child,
        )[1]  # fmt: skip
        ours = timed(
            [str(env / "bin" / "embedcli"), "tokenize", "--count", "-e", name, SENTENCE], child
        )[1]
        if floor != ours:
            raise SystemExit(f"{name}: the floor counts {floor}, embedcli {ours}")


def bench_env(env: Path, runs: int, only: str | None = None) -> None:
    python = str(env / "bin" / "python")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        child = dict(
            os.environ,
            TIKTOKEN_CACHE_DIR=str(work / "tiktoken"),
            EMBEDCLI_CACHE_DIR=str(work / "embedcli"),
            NO_COLOR="1",
        )
        child.pop("PYTHONDONTWRITEBYTECODE", None)  # users' installs have their .pyc files
        prime_tiktoken_cache(work / "tiktoken")
        subprocess.run([python, "-c", WRITE_RANKS, tmp, *ENCODINGS], env=child, check=True)
        (work / "sentence.txt").write_text(SENTENCE + "\n", encoding="utf-8")
        (work / "plain_embed.py").write_text(PLAIN_EMBED, encoding="utf-8")
        (work / "llama-8b").mkdir()
        make_sparse_llama(work / "llama-8b")
        check_counts(env, work, child)

        described = timed([python, "-c", DESCRIBE], child)[1]
        embedcli = str(env / "bin" / "embedcli")
        peaks = {
            "import torch": peak_bytes([python, "-c", "import torch"], child),
            "embed SENTENCE": peak_bytes([embedcli, "embed", SENTENCE], child),
            "inspect-shapes": peak_bytes([embedcli, "inspect-shapes"], child),
        }
        print(f"\n{env}: {described}")
        print("peak memory: " + ", ".join(f"{what} {mib(n)}" for what, n in peaks.items()))
        print(
            f"{'command':<40} {'baseline':<26} {'base s':>7} {'embedcli s':>10} "
            f"{'ratio':>7} {'target':>7}"
        )
        for name, (baseline, commands) in groups(env, work).items():
            picked = {w: a for w, a in commands.items() if only is None or only in w}
            if not picked:
                continue
            base, results = paired((baseline, picked), child, runs)
            target = TARGETS.get(name)
            for what, (seconds, ratio) in results.items():
                aim = (
                    ""
                    if target is None
                    else f"{target:>5.2f}x " + ("ok" if ratio <= target else "OVER")
                )
                print(f"{what:<40} {name:<26} {base:>7.3f} {seconds:>10.3f} {ratio:>6.2f}x {aim}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed pairs of each command")
    parser.add_argument(
        "--env",
        type=Path,
        action="append",
        help="a venv with embedcli installed (repeat; default: this Python's environment)",
    )
    parser.add_argument("--only", help="time only the commands whose name contains this")
    args = parser.parse_args(argv)
    envs = args.env or [Path(sys.prefix)]
    print(
        f"start-up benchmark: {args.runs} pairs each; {os.cpu_count()} CPUs; "
        "ratio = median of (embedcli / baseline) over back-to-back pairs (lower is faster)"
    )
    for env in envs:
        bench_env(env.absolute(), args.runs, args.only)


if __name__ == "__main__":
    main()
