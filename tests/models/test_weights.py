"""Checkpoints in every supported layout and format, generated here (never downloaded)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from support.checkpoints import LAYOUTS, C, D, V, make, tables, write
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.models.checkpoint import Checkpoint
from embedcli.models.formats import detect_format
from embedcli.models.tables import find_tables, load_tables

runner = make_runner()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_is_detected_and_tables_are_exact(tmp_path: Path, layout: str) -> None:
    path, token, position, name = make(tmp_path, layout)
    loaded = load_tables(path)
    assert loaded.layout == name
    assert torch.equal(loaded.token, token)
    if position is None:
        assert loaded.position is None
    else:
        assert torch.equal(loaded.position, position)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_embed_with_weights_is_table_lookup_plus_positions(tmp_path: Path, layout: str) -> None:
    path, token, position, _ = make(tmp_path, layout)
    result = runner.invoke(
        app, ["embed", "Hello, world!", "Hi", "--weights", str(path), "--device", "cpu", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    ids = torch.tensor(data["input_ids"])
    expected = token[ids] + (0 if position is None else position[: ids.shape[1]])
    assert torch.equal(torch.tensor(data["input_embeddings"]), expected)
    cfg = data["config"]
    assert (cfg["vocab_size"], cfg["d_model"]) == (V, D)
    assert cfg["positional"] == ("none" if position is None else "learned")
    assert cfg["weights"] == str(path) and cfg["seed"] is None


def test_formats_are_told_by_content(tmp_path: Path) -> None:
    path, *_ = make(tmp_path, "hf-gpt2model")
    renamed = path.rename(tmp_path / "weights.bin")  # a safetensors file with a .bin suffix
    assert detect_format(renamed) == "safetensors"
    npz, *_ = make(tmp_path, "token-embed")
    assert detect_format(npz.rename(tmp_path / "x.pt")) == "numpy"
    legacy = tmp_path / "legacy.pt"
    torch.save({"wte.weight": torch.zeros(3, 2)}, legacy, _use_new_zipfile_serialization=False)
    assert detect_format(legacy) == "pytorch"
    assert load_tables(legacy).token.shape == (3, 2)


def test_pytorch_zip_is_memory_mapped(tmp_path: Path) -> None:
    path, token, *_ = make(tmp_path, "hf-lmhead")
    checkpoint = Checkpoint(path)
    table = checkpoint.load("transformer.wte.weight")
    assert torch.equal(table, token)
    assert checkpoint.shares_storage("transformer.wte.weight", "lm_head.weight")


def test_malicious_pickle_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "evil.pt"
    torch.save({"wte.weight": torch.zeros(2, 2), "trap": Payload()}, path)
    for command in (["embed", "hi", "--weights", str(path)], ["weights", str(path)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, result.output
        assert "refusing to load" in result.stderr and "weights_only=True" in result.stderr
        assert not marker.exists()


def test_no_table_lists_candidates(tmp_path: Path) -> None:
    path = write(
        tmp_path / "x.safetensors",
        {"encoder.embed.w": torch.zeros(10, 4), "bias": torch.zeros(4)},
        "safetensors",
    )
    result = runner.invoke(app, ["embed", "hi", "--weights", str(path)])
    assert result.exit_code == 1
    assert "no token table found" in result.stderr
    assert "encoder.embed.w (10, 4)" in result.stderr and "--token-key" in result.stderr


def test_ambiguous_layouts(tmp_path: Path) -> None:
    token, _ = tables()
    path = write(
        tmp_path / "x.safetensors",
        {"wte.weight": token, "tok_emb.weight": token.clone()},
        "safetensors",
    )
    result = runner.invoke(app, ["embed", "hi", "--weights", str(path)])
    assert result.exit_code == 1
    assert "matches several layouts" in result.stderr
    assert "wte.weight" in result.stderr and "tok_emb.weight" in result.stderr


def test_keys_can_be_chosen(tmp_path: Path) -> None:
    token, position = tables()
    path = write(tmp_path / "x.safetensors", {"a.table": token, "b.table": position}, "safetensors")
    result = runner.invoke(
        app,
        [
            "embed",
            "hi",
            "--weights",
            str(path),
            "--token-key",
            "a.table",
            "--position-key",
            "b.table",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config"]["token_key"] == "a.table"
    assert torch.equal(torch.tensor(data["input_embeddings"])[0, 0], token[5303] + position[0])
    result = runner.invoke(app, ["embed", "hi", "--weights", str(path), "--token-key", "nope"])
    assert result.exit_code == 1 and "has no tensor 'nope'" in result.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-d", "16"], "--d-model 16 conflicts with the checkpoint, whose tables give d_model 8"),
        (["--vocab-size", "100"], "--vocab-size 100 conflicts with the checkpoint"),
        (["--context-length", "99"], "--context-length 99 conflicts with the checkpoint"),
    ],
)
def test_conflicting_flags(tmp_path: Path, flags: list[str], message: str) -> None:
    path, *_ = make(tmp_path, "hf-gpt2model")
    result = runner.invoke(app, ["embed", "hi", "--weights", str(path), *flags])
    assert result.exit_code == 1
    assert message in result.stderr


def test_learned_positions_required_but_absent(tmp_path: Path) -> None:
    path, *_ = make(tmp_path, "llama")
    result = runner.invoke(app, ["embed", "hi", "--weights", str(path), "--positional", "learned"])
    assert result.exit_code == 1
    assert "has no learned positional table" in result.stderr


def test_vocabulary_too_small_for_the_text(tmp_path: Path) -> None:
    path = write(tmp_path / "small.safetensors", {"wte.weight": torch.zeros(100, 4)}, "safetensors")
    result = runner.invoke(app, ["embed", "Hello", "--weights", str(path)])
    assert result.exit_code == 1
    assert "token id 15496 (sequence 0, position 0) is out of range for a vocabulary of 100" in (
        result.stderr
    )
    assert "the checkpoint's token table has 100 rows" in result.stderr


def test_tables_of_different_widths(tmp_path: Path) -> None:
    path = write(
        tmp_path / "x.safetensors",
        {"wte.weight": torch.zeros(10, 4), "wpe.weight": torch.zeros(5, 6)},
        "safetensors",
    )
    result = runner.invoke(app, ["embed", "--ids", "1", "--weights", str(path)])
    assert result.exit_code == 1
    assert "is 4 wide but the positional table wpe.weight is 6 wide" in result.stderr


@pytest.mark.parametrize("content", [b"", b"hello, not a checkpoint", b"PK\x03\x04broken"])
def test_unreadable_files(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "x.pt"
    path.write_bytes(content)
    result = runner.invoke(app, ["embed", "hi", "--weights", str(path)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.output


def test_missing_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["embed", "hi", "--weights", str(tmp_path / "none.pt")])
    assert result.exit_code == 1
    assert "no such file" in result.stderr


def test_verify_uses_the_loaded_tables(tmp_path: Path) -> None:
    path, *_ = make(tmp_path, "from-scratch")
    result = runner.invoke(
        app,
        [
            "embed",
            "Hello",
            "--weights",
            str(path),
            "--device",
            "cpu",
            "--verify",
            "--dtype",
            "float16",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verify"]["max_abs_diff"] == 0.0


def test_find_tables_strips_wrapper_prefixes(tmp_path: Path) -> None:
    path, *_ = make(tmp_path, "nanogpt-compiled")
    keys = find_tables(Checkpoint(path))
    assert keys.token == "_orig_mod.transformer.wte.weight"
    assert keys.head == "_orig_mod.lm_head.weight"


# ---------------------------------------------------------------- weights, neighbors, stats


def test_weights_command_lists_tensors_layout_and_tied_head(tmp_path: Path) -> None:
    path, *_ = make(tmp_path, "hf-lmhead")
    result = runner.invoke(app, ["weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["format"] == "pytorch"
    assert data["layout"] == "Hugging Face GPT2LMHeadModel / nanoGPT"
    assert (data["token_key"], data["position_key"], data["head_key"]) == (
        "transformer.wte.weight",
        "transformer.wpe.weight",
        "lm_head.weight",
    )
    assert data["head_tied"] == "same storage"
    names = {t["name"]: t for t in data["tensors"]}
    assert names["transformer.wte.weight"] == {
        "name": "transformer.wte.weight",
        "shape": [V, D],
        "dtype": "float32",
    }
    every = sum(int(np.prod(t["shape"])) for t in data["tensors"])
    assert data["parameters"] == every - V * D  # the tied head counted once
    table = runner.invoke(app, ["weights", str(path)])
    assert "output head (same storage)" in table.stdout and "token table" in table.stdout


@pytest.mark.parametrize(
    ("layout", "tied"),
    [
        ("from-scratch", "equal values"),
        ("transformer-lens", "equal values"),
        ("llama", "not tied"),
        ("hf-gpt2model", "no output head"),
    ],
)
def test_head_tying(tmp_path: Path, layout: str, tied: str) -> None:
    path, *_ = make(tmp_path, layout)
    data = json.loads(runner.invoke(app, ["weights", str(path), "--json"]).stdout)
    assert data["head_tied"] == tied
    every = sum(int(np.prod(t["shape"])) for t in data["tensors"])
    assert data["parameters"] == (every - V * D if tied == "equal values" else every)


def test_weights_command_without_tables_still_lists(tmp_path: Path) -> None:
    path = write(tmp_path / "x.safetensors", {"a": torch.zeros(3, 2)}, "safetensors")
    data = json.loads(runner.invoke(app, ["weights", str(path), "--json"]).stdout)
    assert data["layout"] is None and "no token table found" in data["detection_error"]
    assert data["tensors"] == [{"name": "a", "shape": [3, 2], "dtype": "float32"}]


def brute_force_neighbors(table: torch.Tensor, token: int, k: int) -> list[tuple[int, float]]:
    normed = table.double() / table.double().norm(dim=1, keepdim=True)
    scores = normed @ normed[token]
    scores[token] = -2
    order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))[:k]
    return [(i, float(scores[i])) for i in order]


def test_neighbors_match_brute_force(tmp_path: Path) -> None:
    path, token, *_ = make(tmp_path, "hf-gpt2model")
    result = runner.invoke(
        app, ["neighbors", "Hello world", "--weights", str(path), "-k", "4", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [t["id"] for t in data["tokens"]] == [15496, 995]
    for entry in data["tokens"]:
        expected = brute_force_neighbors(token, entry["id"], 4)
        assert [n["id"] for n in entry["neighbors"]] == [i for i, _ in expected]
        for n, (_, score) in zip(entry["neighbors"], expected, strict=True):
            assert n["score"] == pytest.approx(score, abs=1e-9)


def test_neighbors_are_chunked(tmp_path: Path) -> None:
    from embedcli.analysis.neighbors import nearest_tokens

    token, _ = tables()
    small = token[:1000]
    whole = nearest_tokens(small, [3, 3, 999], 5, chunk_rows=1000)
    chunked = nearest_tokens(small, [3, 3, 999], 5, chunk_rows=7)
    assert [[i for i, _ in row] for row in whole] == [[i for i, _ in row] for row in chunked]
    assert [i for i, _ in whole[0]] == [i for i, _ in brute_force_neighbors(small, 3, 5)]


def test_neighbors_table_and_seeded_default() -> None:
    result = runner.invoke(app, ["neighbors", "Hello", "-k", "2", "-d", "8"])
    assert result.exit_code == 0, result.output
    assert "seeded nn.Embedding tables, seed 123" in result.stdout and "Hello" in result.stdout


def test_neighbors_id_beyond_the_table(tmp_path: Path) -> None:
    path = write(tmp_path / "small.safetensors", {"wte.weight": torch.randn(100, 4)}, "safetensors")
    result = runner.invoke(app, ["neighbors", "Hello", "--weights", str(path)])
    assert result.exit_code == 1
    assert "token id 15496 is out of range for a token table of 100 rows" in result.stderr


def test_stats_match_numpy(tmp_path: Path) -> None:
    path, token, position, _ = make(tmp_path, "from-scratch")
    data = json.loads(runner.invoke(app, ["stats", "--weights", str(path), "--json"]).stdout)
    for entry, table in zip(data["tables"], (token, position), strict=True):
        values = table.numpy().astype(np.float64)
        assert entry["shape"] == list(values.shape)
        assert entry["mean"] == pytest.approx(values.mean(), abs=1e-12)
        assert entry["std"] == pytest.approx(values.std(ddof=1), rel=1e-9)
        assert (entry["min"], entry["max"]) == (
            pytest.approx(values.min()),
            pytest.approx(values.max()),
        )
        norms = np.linalg.norm(values, axis=1)
        for p in (0, 5, 25, 50, 75, 95, 100):
            assert entry["row_norm_percentiles"][f"p{p}"] == pytest.approx(
                np.percentile(norms, p), rel=1e-9
            )
        within = np.mean(np.abs(values - values.mean()) <= values.std(ddof=1))
        assert entry["within_one_std"] == pytest.approx(within)


def test_stats_of_the_seeded_tables_show_a_normal_distribution() -> None:
    result = runner.invoke(app, ["stats", "-d", "64", "--json"])
    data = json.loads(result.stdout)
    token = data["tables"][0]
    assert abs(token["mean"]) < 0.01 and abs(token["std"] - 1) < 0.01
    assert token["within_one_std"] == pytest.approx(0.6827, abs=0.005)  # uniform would be 0.577
    assert "N(0, 1), not from a uniform range" in runner.invoke(app, ["stats", "-d", "8"]).stdout


def test_inspect_shapes_with_weights_reads_only_the_header(tmp_path: Path, monkeypatch) -> None:
    path, *_ = make(tmp_path, "hf-gpt2model")
    from embedcli.models import checkpoint as weights

    monkeypatch.setattr(weights.Checkpoint, "load", lambda self, name: pytest.fail("data read"))
    result = runner.invoke(app, ["inspect-shapes", "--weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config"]["preset"] == "checkpoint"
    assert (data["config"]["vocab_size"], data["config"]["d_model"]) == (V, D)
    assert data["tensors"][-1]["shape"] == [8, 4, D]
    every = V * D + C * D + D * 3 * D + D
    assert data["parameters"]["model_parameters"] == every


def test_inspect_shapes_with_weights_on_cpu(tmp_path: Path) -> None:
    path, *_ = make(tmp_path, "from-scratch")
    data = json.loads(
        runner.invoke(
            app, ["inspect-shapes", "--weights", str(path), "--device", "cpu", "-t", "3", "--json"]
        ).stdout
    )
    assert {t["device"] for t in data["tensors"]} == {"cpu"}
    assert data["parameters"]["total"] == (V + C) * D


def test_inspect_shapes_weights_and_preset_conflict(tmp_path: Path) -> None:
    path, *_ = make(tmp_path, "hf-gpt2model")
    result = runner.invoke(app, ["inspect-shapes", "--weights", str(path), "--preset", "gpt2"])
    assert result.exit_code == 2 and "pass --preset or --weights, not both" in result.stderr


def test_a_checkpoint_saved_from_the_meta_device_is_refused(tmp_path: Path) -> None:
    """Its tensors have shapes but no values: an Error line, not torch's NotImplementedError."""
    path = tmp_path / "meta.pt"
    torch.save({"transformer.wte.weight": torch.zeros(10, 8, device="meta")}, path)
    for args in (["embed", "--ids", "1,2"], ["inspect-shapes", "--device", "cpu"]):
        result = runner.invoke(app, [*args, "--weights", str(path)])
        expect_error(result, "holds no values (it was saved from the meta device)")


@pytest.mark.parametrize("fmt", ["safetensors", "npz", "pt"])
def test_rows_of_a_table_read_alone(tmp_path: Path, fmt: str) -> None:
    from embedcli.models.hub.rows import read_rows
    from embedcli.models.sources import open_source

    token, position = tables()
    path = write(tmp_path / f"model.{fmt}", {"wte.weight": token, "wpe.weight": position}, fmt)
    source = open_source(path)
    assert not source.by_rows("wte.weight")  # a local file: read as it is
    found = read_rows(source.checkpoint, "wte.weight", [5, 3, 5], "wpe.weight", 4)
    assert found.ids == [3, 5] and torch.equal(found.token, token[[3, 5]])
    assert torch.equal(found.position, position[:4])
    assert found.local(torch.tensor([[5, 3, 5]])).tolist() == [[1, 0, 1]]
    with pytest.raises(Exception, match=r"row 50257 is outside wte\.weight"):
        source.checkpoint.load_rows("wte.weight", [V])
