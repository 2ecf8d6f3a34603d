"""Worker processes that stay up for the test session (one of each kind per xdist worker),
spoken to one line of JSON each way: the converter (``convert_worker``, under transformers 5 or
the transformers 4 overlay), llama.cpp's runtime (``probe_worker``) and its tokenizer
(``tokenize_worker``, the oracle of every GGUF tokenizer)."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from support.llamacpp import tools

HERE = Path(__file__).parent


class Worker:
    """One worker process, started on first use; its stderr kept in a file for the failure
    message."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.argv, self.env = argv, env
        self.process: subprocess.Popen | None = None
        self.log = Path(tempfile.mkstemp(prefix="llamacpp-worker-", suffix=".log")[1])

    def ask(self, job: dict[str, Any]) -> dict[str, Any]:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log.open("ab"),
                env=self.env,
                text=True,
            )
            atexit.register(self.close)
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            tail = self.log.read_text(errors="replace")[-3000:]
            self.process = None
            return {"ok": False, "error": f"the worker died: {tail}"}
        return json.loads(line)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()  # type: ignore[union-attr]
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _env(extra_path: Path | None = None) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    env.pop("PYTHONPATH", None)
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    return env


@cache
def converter(transformers4: bool = False) -> Worker:
    tree = tools.converter()
    assert tree is not None
    extra = tools.transformers4() if transformers4 else None
    return Worker([sys.executable, str(HERE / "convert_worker.py"), str(tree)], _env(extra))


@cache
def runtime() -> Worker:
    return Worker([sys.executable, str(HERE / "probe_worker.py")], _env())


@cache
def tokenizer() -> Worker:
    return Worker([sys.executable, str(HERE / "tokenize_worker.py")], _env())


def llama_cpp_ids(
    gguf: Path | str, texts: list[str], special: bool = False, specials: bool = False
) -> dict[str, Any]:
    """llama.cpp's ids of ``texts`` under a GGUF file's vocabulary (``add_special`` off;
    ``special``: llama.cpp's ``parse_special``), with its bos/eos facts (``specials``: its
    eot, sep, pad and EOG set too); raises with llama.cpp's own reason when it refuses the
    file."""
    job = {"gguf": str(gguf), "texts": texts, "special": special, "specials": specials}
    reply = tokenizer().ask(job)
    if not reply["ok"]:
        raise RuntimeError(reply["error"])
    return reply
