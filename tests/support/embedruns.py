"""`embedcli embed` run through the CLI: ``embed`` (the result, stdout and stderr apart) and
``embed_json`` (its JSON, checked to have succeeded with nothing on stderr), and ``SMALL``, the
flags of a small model on the CPU (d 8, a context of 16)."""

from __future__ import annotations

import json

from embedcli.cli import app
from support.helpers import make_runner

runner = make_runner()


SMALL = ["-d", "8", "--context-length", "16", "--device", "cpu"]


def embed(*args: str, input: bytes | str | None = None):
    return runner.invoke(app, ["embed", *args], input=input)


def embed_json(*args: str, input: bytes | str | None = None) -> dict:
    result = embed(*args, "--json", input=input)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return json.loads(result.stdout)
