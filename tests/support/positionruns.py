"""The positions command run on small model folders (a config.json and a zero token table),
shared by the tests of learned, rope and ALiBi positions: its JSON, its text at a wide terminal,
and the memory Python held while it ran."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import torch

from embedcli.cli import app
from support.helpers import make_runner

runner = make_runner()

LLAMA = {
    "model_type": "llama",
    "vocab_size": 16,
    "hidden_size": 16,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "max_position_embeddings": 64,
}

TOKEN_KEY = {
    "llama": "model.embed_tokens.weight",
    "gemma3_text": "model.embed_tokens.weight",
    "gpt_neox": "gpt_neox.embed_in.weight",
}


def folder(tmp_path: Path, config: dict, width: int | None = None) -> str:
    """A model folder: config.json and a zero token table (``width`` columns)."""
    from safetensors.torch import save_file

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps(config))
    width = width or config.get("hidden_size", 16)
    tensors = {TOKEN_KEY[config["model_type"]]: torch.zeros(config["vocab_size"], width)}
    save_file(tensors, str(tmp_path / "model.safetensors"))
    return str(tmp_path)


def run(*args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=env)


def positions_json(*args: str) -> dict:
    result = run("positions", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def text_of(*args: str) -> str:
    result = run(*args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split())


def peak_bytes(*args: str) -> int:
    """The most memory Python and numpy held while the command ran (tracemalloc)."""
    tracemalloc.start()
    try:
        result = run(*args)
        assert result.exit_code == 0, result.output
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
