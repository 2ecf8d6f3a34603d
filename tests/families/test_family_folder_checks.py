"""Damaged or unusual model folders of the registry's families: each is refused with one Error
line (exit 1), or read as transformers reads it; never a traceback, a guess, or memory out of
proportion."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from support.helpers import make_runner

from embedcli.cli import app

runner = make_runner()
VOCAB, D = 50, 8


def _folder(root: Path, name: str, config: dict, tensors: dict[str, torch.Tensor]) -> Path:
    folder = root / name
    folder.mkdir()
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _r(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


def _roberta(**tensors: torch.Tensor) -> tuple[dict, dict]:
    e = "roberta.embeddings."
    base = {
        e + "word_embeddings.weight": _r(VOCAB, D),
        e + "position_embeddings.weight": _r(18, D),
        e + "token_type_embeddings.weight": _r(1, D),
        e + "LayerNorm.weight": _r(D),
        e + "LayerNorm.bias": _r(D),
    }
    base.update({e + k.replace("__", "."): v for k, v in tensors.items()})
    config = {"model_type": "roberta", "vocab_size": VOCAB, "hidden_size": D, "pad_token_id": 1,
              "num_attention_heads": 2, "max_position_embeddings": 18}  # fmt: skip
    return config, base


def _refused(folder: Path, said: str, *extra: str) -> None:
    result = runner.invoke(app, ["embed", "--weights", str(folder), "--ids", "2,3,4", *extra])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert said in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("tensor", "value"),
    [
        ("LayerNorm__weight", _r(4)),
        ("LayerNorm__weight", _r(D, D)),
        ("LayerNorm__bias", torch.ones(D, dtype=torch.int8)),
        ("token_type_embeddings__weight", _r(0, D)),
        ("token_type_embeddings__weight", _r(2, D + 1)),
        ("position_embeddings__weight", _r(18, D + 2)),
    ],
)
def test_a_family_tensor_of_the_wrong_shape_or_dtype_is_one_error(
    tmp_path: Path, tensor: str, value: torch.Tensor
) -> None:
    config, tensors = _roberta(**{tensor: value})
    _refused(_folder(tmp_path, "bad", config, tensors), "this model's steps need")


def test_opts_projection_is_checked(tmp_path: Path) -> None:
    d = "model.decoder."
    config = {"model_type": "opt", "vocab_size": VOCAB, "hidden_size": D,
              "word_embed_proj_dim": 4, "max_position_embeddings": 16,
              "num_attention_heads": 2}  # fmt: skip
    tensors = {d + "embed_tokens.weight": _r(VOCAB, 4), d + "embed_positions.weight": _r(18, D),
               d + "project_in.weight": _r(4, D)}  # fmt: skip
    _refused(_folder(tmp_path, "opt", config, tensors), "project_in.weight")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"n_head": 10**9}, "attention heads for a width of 8"),
        ({"model_type": "falcon", "alibi": "true"}, "alibi must be true or false"),
        ({"layer_types": "full_attention"}, "layer_types must be a list"),
        ({"rope_parameters": [1]}, "rope_parameters must be an object"),
        ({"rope_scaling": "linear"}, "rope_scaling must be an object, got 'linear'"),
        ({"n_head": 3}, "hidden size 8 is not a multiple of 3 attention heads"),
    ],
)
def test_config_fields_of_the_wrong_kind_are_refused(
    tmp_path: Path, change: dict, said: str
) -> None:
    config = {"model_type": "bloom", "vocab_size": VOCAB, "hidden_size": D, "n_head": 2, **change}
    prefix = "transformer."
    tensors = {prefix + "word_embeddings.weight": _r(VOCAB, D),
               prefix + "word_embeddings_layernorm.weight": _r(D),
               prefix + "word_embeddings_layernorm.bias": _r(D)}  # fmt: skip
    _refused(_folder(tmp_path, "cfg", config, tensors), said)


def test_a_stray_text_config_is_not_read_and_a_wrapper_is_not_known_through_it(
    tmp_path: Path,
) -> None:
    table = {"model.embed_tokens.weight": _r(VOCAB, D)}
    llama = {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": D,
             "num_attention_heads": 2, "max_position_embeddings": 16, "rope_theta": 5e5,
             "text_config": {"model_type": "llama", "rope_theta": 1e4}}  # fmt: skip
    folder = _folder(tmp_path, "llama", llama, table)
    result = runner.invoke(app, ["embed", "--weights", str(folder), "--ids", "2,3", "--json"])
    config = json.loads(result.stdout)["config"]
    assert (config["rope_theta"], config["context_length"]) == (5e5, 16)
    wrapper = {"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": D}}
    _refused(_folder(tmp_path, "llava", wrapper, table), "model_type 'llava'")


def test_a_config_that_is_not_a_file_is_refused_not_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir()
    save_file({"transformer.wte.weight": _r(VOCAB, D)}, str(folder / "model.safetensors"))
    (folder / "config.json").mkdir()
    _refused(folder, "is not a regular file")
    (folder / "config.json").rmdir()
    os.mkfifo(folder / "config.json")  # read, it would wait for a writer for ever
    _refused(folder, "is not a regular file")
    (folder / "config.json").unlink()
    with (folder / "config.json").open("wb") as handle:
        handle.truncate(200 << 20)  # sparse
    _refused(folder, "not a regular file of at most 64 MiB")


def test_mpts_max_seq_len_is_its_limit(tmp_path: Path) -> None:
    config = {"model_type": "mpt", "vocab_size": VOCAB, "d_model": D, "n_heads": 2,
              "max_seq_len": 4, "attn_config": {"alibi": True}}  # fmt: skip
    folder = _folder(tmp_path, "mpt", config, {"transformer.wte.weight": _r(VOCAB, D)})
    result = runner.invoke(app, ["embed", "--weights", str(folder), "--ids", "1,2,3,4,5"])
    assert result.exit_code == 1 and "exceeds the context length (4)" in result.stderr


def test_no_limit_families_refuse_truncate_to_context(tmp_path: Path) -> None:
    config = {"model_type": "t5", "vocab_size": VOCAB, "d_model": D, "num_heads": 2}
    folder = _folder(tmp_path, "t5", config, {"shared.weight": _r(VOCAB, D)})
    _refused(folder, "no context limit", "--truncate-to-context")


def test_a_huge_context_costs_no_memory(tmp_path: Path) -> None:
    """max_position_embeddings 10^9: the position buffers hold only what a batch reads."""
    from embedcli.core.config import Overrides
    from embedcli.core.embedding import BUFFER_ROWS
    from embedcli.pipeline.sources import embed_source

    config = {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": D,
              "num_attention_heads": 2, "max_position_embeddings": 10**9}  # fmt: skip
    folder = _folder(tmp_path, "huge", config, {"model.embed_tokens.weight": _r(VOCAB, D)})
    from embedcli.core.embedding import build_embedding

    embed_config, tables = embed_source("gpt2", Overrides(), folder)
    module = build_embedding(embed_config, "cpu", (tables.token, tables.position))
    assert module.position_ids.numel() <= BUFFER_ROWS
    result = runner.invoke(app, ["embed", "--weights", str(folder), "--ids", "1,2,3"])
    assert result.exit_code == 0, result.output


def test_verify_agrees_where_both_sides_hold_the_same_nan(tmp_path: Path) -> None:
    table = _r(VOCAB, D)
    table[2, 0] = float("nan")
    config = {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": D,
              "num_attention_heads": 2, "max_position_embeddings": 16}  # fmt: skip
    folder = _folder(tmp_path, "nan", config, {"model.embed_tokens.weight": table})
    result = runner.invoke(app, ["embed", "--weights", str(folder), "--ids", "2,3", "--verify"])
    assert result.exit_code == 0, result.output


def test_position_key_on_a_rope_family_is_refused(tmp_path: Path) -> None:
    config = {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": D,
              "num_attention_heads": 2, "max_position_embeddings": 16}  # fmt: skip
    folder = _folder(tmp_path, "l", config, {"model.embed_tokens.weight": _r(VOCAB, D)})
    _refused(folder, "rope positions, not a learned", "--position-key", "model.embed_tokens.weight")
