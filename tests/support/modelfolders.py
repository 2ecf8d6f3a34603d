"""The tiny model folders the model tests share, built once a module (GPT-2 tied and untied and
sharded, Llama with a BOS-adding tokenizer and with a legacy config, Gemma, a pytorch_model.bin),
and transformers as their oracle: the model it loads, the tensor its first transformer block
reads, the ids its tokenizer gives; ``embed_json`` runs ``embedcli embed --json``.

``folders`` is a fixture: the test modules import it by name (``from support.modelfolders import
folders as folders``), where it stands in for tests/models/conftest.py's own ``folders``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from embedcli.cli import app
from support.helpers import make_runner
from support.hub import (
    gpt2_tokenizer_json,
    make_gemma_folder,
    make_gpt2_folder,
    make_llama_folder,
    make_pytorch_bin_folder,
)

runner = make_runner()
TEXT = "Hello, world! The rotary model reads this."


# ---------------------------------------------------------------- oracles


def _model(folder: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()


def first_block_input(folder: Path, ids: list[int]) -> torch.Tensor:
    """What transformers feeds its first transformer block for these ids: (T, d)."""
    model = _model(folder)
    layers = model.transformer.h if hasattr(model, "transformer") else model.model.layers
    captured: dict[str, torch.Tensor] = {}

    def hook(module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]
        captured["x"] = hidden.detach().clone()

    layers[0].register_forward_pre_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model(torch.tensor([ids]))
    return captured["x"][0]


def hf_ids(folder: Path, text: str) -> list[int]:
    """The ids transformers' tokenizer gives for ``text`` (its default special tokens too)."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    return tokenizer(text)["input_ids"]


def embed_json(*args: str, env: dict[str, str] | None = None) -> dict:
    result = runner.invoke(app, ["embed", *args, "--device", "cpu", "--json"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---------------------------------------------------------------- folders, built once


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    bos = root / "bos-tokenizer.json"
    _bos_tokenizer(gpt2_tokenizer_json(root / "gpt2-tok"), bos)
    return {
        "gpt2": make_gpt2_folder(root / "gpt2"),
        "gpt2-untied-sharded": make_gpt2_folder(
            root / "gpt2-untied", tied=False, max_shard_size="200KB", seed=1
        ),
        "llama": make_llama_folder(root / "llama", max_shard_size="20KB", tokenizer_json=bos),
        "llama-legacy": make_llama_folder(
            root / "llama-legacy", legacy_config=True, rope_theta=1000000.0, seed=2
        ),
        "gemma": make_gemma_folder(root / "gemma", hidden_size=16),
        "bin": make_pytorch_bin_folder(root / "bin"),
    }


def _bos_tokenizer(tokenizer_json: Path, out: Path) -> None:
    """GPT-2's tokenizer.json with a post-processor that adds <|endoftext|> before each text, as
    Llama's adds <|begin_of_text|>."""
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    tokenizer.post_processor = TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", 50256)]
    )
    tokenizer.save(str(out))


def _copy(folder: Path, tmp_path: Path, name: str = "model") -> Path:
    return shutil.copytree(folder, tmp_path / name)
