"""A family whose first block takes the input embeddings arranged otherwise says so: the
layout in ``--json`` (``config.model.block_input``), and a stream count it cannot read is
refused by name, never guessed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support.checkpointfiles import write_safetensors
from support.helpers import make_runner

from embedcli.cli import app
from embedcli.errors import ConfigError
from embedcli.models.config import parse_config

_HY_V4 = {
    "model_type": "hy_v4",
    "vocab_size": 384,
    "hidden_size": 64,
    "max_position_embeddings": 96,
    "num_attention_heads": 4,
    "qk_rope_head_dim": 8,
}


def test_the_streams_are_read_from_the_config() -> None:
    summary = parse_config({**_HY_V4, "hc_mult": 3}, "config.json").summary()
    assert summary["block_input"]["layout"] == "streams"
    assert summary["block_input"]["streams"] == 3
    assert "(B, T, 3, d)" in summary["block_input"]["how"]


def test_the_default_stream_count_is_transformers() -> None:
    assert parse_config(dict(_HY_V4), "config.json").streams == 4  # HYV4Config's hc_mult


@pytest.mark.parametrize("bad", [0, -1, "4", 2.5, True])
def test_a_stream_count_it_cannot_read_is_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="hc_mult"):
        parse_config({**_HY_V4, "hc_mult": bad}, "config.json")


def test_a_time_major_family_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "xlnet"
    folder.mkdir()
    config = {"model_type": "xlnet", "vocab_size": 384, "d_model": 64, "n_head": 4}
    (folder / "config.json").write_text(json.dumps(config))
    table = {"transformer.word_embedding.weight": torch.randn(384, 64)}
    write_safetensors(folder / "model.safetensors", table)
    result = make_runner().invoke(app, ["inspect-shapes", "--weights", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    tensors = {t["name"]: t["shape"] for t in json.loads(result.stdout)["tensors"]}
    batch, tokens = tensors["input_ids"]
    assert tensors["block_input"] == [tokens, batch, 64]


def test_a_bad_stream_count_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    folder = tmp_path / "hy"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**_HY_V4, "hc_mult": 0}))
    result = make_runner().invoke(app, ["inspect-shapes", "--weights", str(folder)])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert "hc_mult" in result.stderr


def test_streams_count_toward_the_memory_an_embed_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """block_input's copies are held too: with 1 MiB free, one stream fits, 1,024 do not, and
    the refusal names the activations, before any allocation."""
    import embedcli.pipeline.embed as embed
    from embedcli import EmbedConfig
    from embedcli.errors import MemoryLimitError

    monkeypatch.setattr(embed, "host_available_memory", lambda: 1 << 20)
    sizes = {"vocab_size": 384, "d_model": 64, "context_length": 96, "positional": "rope"}
    one = EmbedConfig(**sizes, block_layout="streams", streams=1)
    embed.check_memory(one, torch.device("cpu"), 1, 96)
    many = EmbedConfig(**sizes, block_layout="streams", streams=1024)
    with pytest.raises(MemoryLimitError, match="the activations"):
        embed.check_memory(many, torch.device("cpu"), 1, 96)


def test_a_stream_count_past_any_model_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="hc_mult 1,000,000,000,000 is more than"):
        parse_config({**_HY_V4, "hc_mult": 10**12}, "config.json")


def test_o_writes_block_input_under_its_own_name(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    folder = tmp_path / "hy"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**_HY_V4, "hc_mult": 3}))
    table = torch.randn(384, 64)
    write_safetensors(folder / "model.safetensors", {"model.embed_tokens.weight": table})
    out = tmp_path / "out.safetensors"
    args = ["embed", "--weights", str(folder), "--ids", "1,2", "-o", str(out)]
    result = make_runner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "out.safetensors: block_input (1,2,3,64) float32" in result.stdout
    written = load_file(out)
    assert list(written) == ["block_input"]
    assert torch.equal(written["block_input"][0, 1, 2], table[2])
    report = json.loads(make_runner().invoke(app, [*args[:5], "--json"]).stdout)
    assert torch.equal(torch.tensor(report["block_input"])[0, :, 0], table[[1, 2]])


def test_a_replaced_row_shows_as_its_own_input_row(tmp_path: Path) -> None:
    """T5Gemma 2: the EOI id's row is the learned row, not the scaled one; the per-token table
    says so (an input row of its own), where the others' scaled row is the input."""
    folder = tmp_path / "t5g2"
    folder.mkdir()
    text = {"model_type": "t5gemma2_text", "vocab_size": 384, "hidden_size": 64,
            "num_attention_heads": 4, "head_dim": 16, "max_position_embeddings": 96,
            "layer_types": ["sliding_attention", "full_attention"],
            "num_hidden_layers": 2}  # fmt: skip
    config = {"model_type": "t5gemma2", "eoi_token_index": 7,
              "encoder": {"model_type": "t5gemma2_encoder", "eoi_token_index": 7,
                          "text_config": text},
              "decoder": {"model_type": "t5gemma2_decoder", "vocab_size": 384}}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    row = torch.full((64,), 0.5)
    tensors = {"model.encoder.embed_tokens.weight": torch.randn(384, 64),
               "model.encoder.embed_tokens.eoi_embedding": row}  # fmt: skip
    write_safetensors(folder / "model.safetensors", tensors)
    result = make_runner().invoke(app, ["embed", "--weights", str(folder), "--ids", "5,7"],
                                  env={"COLUMNS": "120"})  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if "= input" in line]
    assert len(lines) == 2  # id 5: "× 8 = input"; id 7: its own "= input" row of 0.5s
    assert "× 8 = input" in lines[0] and "+0.5000" in lines[1]


def test_qwen4_exp_needs_two_streams_at_least() -> None:
    config = {"model_type": "qwen4_exp_text", "vocab_size": 384, "hidden_size": 64,
              "num_attention_heads": 4, "head_dim": 16, "max_position_embeddings": 96,
              "hc_count": 1}  # fmt: skip
    with pytest.raises(ConfigError, match="hc_count above 1"):
        parse_config(config, "config.json")


def test_more_altup_projections_than_the_config_says_are_refused(tmp_path: Path) -> None:
    config = {"model_type": "gemma3n_text", "vocab_size": 384, "hidden_size": 64,
              "num_attention_heads": 4, "head_dim": 16, "max_position_embeddings": 96,
              "altup_num_inputs": 2}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    tensors = {"model.embed_tokens.weight": torch.randn(384, 64)}
    tensors |= {f"model.altup_projections.{i}.weight": torch.randn(64, 64) for i in range(3)}
    write_safetensors(tmp_path / "model.safetensors", tensors)
    result = make_runner().invoke(app, ["embed", "--weights", str(tmp_path), "--ids", "1,2"])
    assert result.exit_code == 1
    assert "more AltUp projections than 1" in result.stderr and result.stderr.count("\n") == 1
