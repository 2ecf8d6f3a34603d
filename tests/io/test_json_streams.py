"""JSON output is streamed from the report's tensors, row by row, never built whole in memory, and
NaN and infinity are written as null (they are not JSON)."""

from __future__ import annotations

import json

import torch
from support.helpers import make_runner

from embedcli.cli import app

runner = make_runner()


SMALL = ("-d", "4", "--device", "cpu")


def test_report_keeps_tensors_and_json_streams_them() -> None:
    """The tables show 64 positions; nothing converts the whole batch to Python lists."""
    from embedcli.core.config import Overrides
    from embedcli.pipeline.embed import run_embed
    from embedcli.pipeline.sources import embed_source

    config, _ = embed_source("gpt2", Overrides(d_model=4))
    report = run_embed(config, "gpt2", texts=["a b c"], device="cpu").report
    assert isinstance(report.input_embeddings, torch.Tensor)
    data = json.loads(runner.invoke(app, ["embed", "a b c", *SMALL, "--json"]).stdout)
    assert torch.equal(torch.tensor(data["input_embeddings"]), report.input_embeddings)


def test_json_writes_nan_and_infinity_as_null() -> None:
    from embedcli.io.jsonstream import json_chunks

    value = {"m": torch.tensor([[1.0, float("nan")], [float("inf"), -2.0]]), "x": float("nan")}
    assert json.loads("".join(json_chunks(value))) == {"m": [[1.0, None], [None, -2.0]], "x": None}
