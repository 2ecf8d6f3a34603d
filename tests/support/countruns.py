"""`embedcli count` run through the CLI (``run``: its output, checked to have succeeded;
``as_json``: its JSON), and the oracle for every count: one pass of tiktoken over the whole text,
``len(enc.encode(text, disallowed_special=()))`` (``tokens``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding
from support.helpers import make_runner

runner = make_runner()


def tokens(text: str, name: str = "gpt2") -> int:
    return len(get_encoding(name).encode(text, disallowed_special=()))


def run(*args: str, cwd: Path | None = None, input: bytes | None = None):
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = runner.invoke(app, ["count", *args], input=input)
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result


def as_json(*args: str, cwd: Path | None = None, input: bytes | None = None) -> dict:
    return json.loads(run(*args, "--json", cwd=cwd, input=input).stdout)
