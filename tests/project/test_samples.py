"""The sample scripts run as a script author would run them, and print what an independent
computation says they should."""

from __future__ import annotations

from pathlib import Path

import torch
from support.helpers import REPO, run_script
from torch import nn

from embedcli.tokenization.encodings import get_encoding

SAMPLES = REPO / "samples"


def test_shapes_script(tmp_path: Path) -> None:
    first, second = "one two three four five", "six"
    done = run_script(["bash", str(SAMPLES / "shapes.sh"), first, second], tmp_path)
    assert done.returncode == 0, done.stderr
    enc = get_encoding("gpt2")
    lengths = [len(enc.encode(first)), len(enc.encode(second))]
    t = max(lengths)
    lines = done.stdout.splitlines()
    assert lines[0] == "encoding=gpt2 d_model=16 device=cpu"
    assert [line.split()[:2] for line in lines[1:6]] == [
        ["input_ids", f"2x{t}"],
        ["token_embeddings", f"2x{t}x16"],
        ["position_ids", f"{t}"],
        ["position_embeddings", f"{t}x16"],
        ["input_embeddings", f"2x{t}x16"],
    ]
    assert lines[6] == f"padding per sequence: {[t - n for n in lengths]}"


def test_token_norms_script(tmp_path: Path) -> None:
    text_file = SAMPLES / "lighthouse.txt"
    done = run_script(["bash", str(SAMPLES / "token-norms.sh"), str(text_file), "4"], tmp_path)
    assert done.returncode == 0, done.stderr

    ids = get_encoding("gpt2").encode(text_file.read_text(encoding="utf-8"))[:256]
    torch.manual_seed(123)
    token, position = nn.Embedding(50257, 32), nn.Embedding(256, 32)
    with torch.no_grad():
        vectors = token(torch.tensor(ids)) + position(torch.arange(len(ids)))
    norms = vectors.norm(dim=1)
    top = sorted(range(len(ids)), key=lambda i: -float(norms[i]))[:4]

    lines = done.stdout.splitlines()
    assert lines[0] == f"{len(ids)} tokens, vectors of 32 dimensions, truncated 0"
    assert [int(line.split()[0]) for line in lines[1:]] == top
    for line, index in zip(lines[1:], top, strict=True):
        assert abs(float(line.split()[1]) - float(norms[index])) < 1e-3


def test_samples_are_utf8_texts() -> None:
    for path in SAMPLES.glob("*.txt"):
        assert path.read_text(encoding="utf-8").strip(), path
