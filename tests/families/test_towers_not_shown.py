"""A multimodal wrapper's image and audio towers are named as not shown: in embed's header and
in ``--json`` (``config.model.not_shown``: each sub-config key with its model_type)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from support.familycases.multimodal import CASES
from support.familymodels import build
from support.helpers import make_runner

from embedcli.cli import app
from embedcli.models.config import parse_config


@pytest.fixture(scope="module")
def qwen2_audio(tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = next(c for c in CASES if c.name == "qwen2_audio")
    return build(case, tmp_path_factory.mktemp("qwen2_audio"))


def test_the_audio_tower_is_named_in_the_json(qwen2_audio: Path) -> None:
    result = make_runner().invoke(app, ["embed", "--weights", str(qwen2_audio), "--ids", "1,2",
                                        "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    model = json.loads(result.stdout)["config"]["model"]
    assert model["not_shown"] == {"audio_config": "qwen2_audio_encoder"}


def test_the_audio_tower_is_named_in_the_header(qwen2_audio: Path) -> None:
    result = make_runner().invoke(app, ["embed", "--weights", str(qwen2_audio), "--ids", "1,2"])
    assert result.exit_code == 0, result.output
    header = " ".join(result.stdout.split("Pipeline")[0].split())
    assert "not shown: audio_config (qwen2_audio_encoder)" in header


def test_every_sub_config_but_the_language_models_is_named() -> None:
    config = {
        "model_type": "mllama",
        "text_config": {"model_type": "mllama_text_model", "vocab_size": 128256,
                        "hidden_size": 4096, "max_position_embeddings": 131072},
        "vision_config": {"model_type": "mllama_vision_model", "hidden_size": 1280},
    }  # fmt: skip
    summary = parse_config(config, "config.json").summary()
    assert summary["not_shown"] == {"vision_config": "mllama_vision_model"}
    assert summary["model_type"] == "mllama"


def test_a_side_input_of_the_first_block_is_named_as_not_shown() -> None:
    """NeoMME's first full-attention layer also adds a second token table to its values."""
    config = {"model_type": "neomme", "vocab_size": 384, "hidden_size": 64,
              "embedding_rank": 24, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 16, "max_position_embeddings": 96}  # fmt: skip
    summary = parse_config(config, "config.json").summary()
    assert list(summary["not_shown"]) == ["value_embeddings"]
    assert "values" in summary["not_shown"]["value_embeddings"]


def test_a_text_model_names_nothing_as_not_shown() -> None:
    config = {"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
              "max_position_embeddings": 4096}  # fmt: skip
    assert "not_shown" not in parse_config(config, "config.json").summary()


def test_multimodal_rope_says_what_token_ids_alone_give() -> None:
    """Qwen 3.5's three position streams are each the token's position for text alone: the
    angles are plain rope's (test_families holds them to the model's own inv_freq)."""
    config = {
        "model_type": "qwen3_5",
        "text_config": {"model_type": "qwen3_5_text", "vocab_size": 1024, "hidden_size": 64,
                        "max_position_embeddings": 96,
                        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                            "partial_rotary_factor": 0.25,
                                            "mrope_section": [2, 1, 1]}},
        "vision_config": {"model_type": "qwen3_5_vision"},
    }  # fmt: skip
    mrope = parse_config(config, "config.json").summary()["mrope"]
    assert mrope["section"] == [2, 1, 1]  # the config's, not the default
    assert mrope["streams"] == ["temporal", "height", "width"]
    del config["text_config"]["rope_parameters"]["mrope_section"]
    assert parse_config(config, "config.json").summary()["mrope"]["section"] == [11, 11, 10]


def test_one_stream_rope_says_nothing_of_streams() -> None:
    config = {"model_type": "qwen2", "vocab_size": 1024, "hidden_size": 64,
              "max_position_embeddings": 96}  # fmt: skip
    assert "mrope" not in parse_config(config, "config.json").summary()


@pytest.mark.parametrize(
    ("flags", "free", "first"),
    [(None, [3, 7], True), ([0, 1, 1, 1, 0, 1, 1, 1], [0, 4], False)],
)
def test_llama4_says_which_layers_use_no_rope(flags: list | None, free: list, first: bool) -> None:
    """no_rope_layers (1: rope, 0: none), or by default one rope-free layer in every
    no_rope_layer_interval (4), as Llama4TextConfig makes it; and whether layer 0 uses rope."""
    text = {"model_type": "llama4_text", "vocab_size": 1024, "hidden_size": 64,
            "num_hidden_layers": 8, "max_position_embeddings": 96,
            "no_rope_layers": flags}  # fmt: skip
    summary = parse_config({"model_type": "llama4", "text_config": text}, "config.json").summary()
    assert summary["rope_free_layers"] == free
    assert summary["layer_0_rope"] is first


def test_the_top_levels_dtype_is_the_wrappers_as_transformers_loads_it() -> None:
    """A wrapper whose config.json says float32 at the top and bfloat16 in text_config loads
    in float32 (embedcli's default output was bfloat16: values off by up to 9.7e-4)."""
    data = {
        "model_type": "gemma3",
        "dtype": "float32",
        "text_config": {"model_type": "gemma3_text", "vocab_size": 64, "hidden_size": 32,
                        "num_attention_heads": 2, "head_dim": 16, "dtype": "bfloat16"},
    }  # fmt: skip
    assert parse_config(data, "config.json").dtype == "float32"
    del data["dtype"]
    assert parse_config(data, "config.json").dtype == "bfloat16"
