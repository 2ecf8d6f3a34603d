"""Tiny, seeded models written by transformers' own ``save_pretrained`` (GPT-2, Llama, Gemma, a
pytorch_model.bin folder; optionally sharded), and their tables read back through transformers
as an independent oracle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
from support.hub.tokenizer import GPT2_VOCAB_SIZE, gpt2_tokenizer_json

# --------------------------------------------------------------------------------------------
# Tiny models written by transformers' save_pretrained
# --------------------------------------------------------------------------------------------

_DTYPES = ("float32", "float16", "bfloat16")


def _torch_dtype(dtype: str) -> torch.dtype:
    import torch

    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, not {dtype!r}")
    return getattr(torch, dtype)


def _save_kwargs(max_shard_size: str | int | None) -> dict[str, Any]:
    return {} if max_shard_size is None else {"max_shard_size": max_shard_size}


def _rewrite_config(folder: Path, **changes: Any) -> None:
    """Edit config.json in place: a value of None removes the key."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _legacy_rope(folder: Path) -> None:
    """Rewrite config.json as transformers 4 wrote it: top-level rope_theta and torch_dtype."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    rope = config.get("rope_parameters") or {}
    _rewrite_config(
        folder,
        rope_parameters=None,
        rope_theta=rope.get("rope_theta"),
        dtype=None,
        torch_dtype=config.get("dtype"),
    )


def _untie_head(model: Any) -> None:
    """Give lm_head its own random values: an untied head that really differs from the embedding."""
    import torch

    head = model.get_output_embeddings().weight
    token = model.get_input_embeddings().weight
    if head.data_ptr() == token.data_ptr():
        raise RuntimeError("the output embedding is still tied to the input embedding")
    with torch.no_grad():
        head.normal_(0.0, 0.02)
    if torch.equal(head, token):
        raise RuntimeError("the untied head equals the token embedding")


def _tokenizer_vocab_size(tokenizer_json: Path) -> int:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(tokenizer_json)).get_vocab_size(with_added_tokens=True)


def _gpt2_model(
    *, tied: bool, vocab_size: int, n_embd: int, n_positions: int, dtype: str, seed: int
) -> Any:
    """A seeded GPT2LMHeadModel: 2 layers, 2 heads, MLP width 2 * n_embd."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    special = min(GPT2_VOCAB_SIZE, vocab_size) - 1  # <|endoftext|>, or the last id of a small vocab
    config = GPT2Config(
        vocab_size=vocab_size,
        n_embd=n_embd,
        n_layer=2,
        n_head=2,
        n_inner=2 * n_embd,
        n_positions=n_positions,
        bos_token_id=special,
        eos_token_id=special,
        tie_word_embeddings=tied,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
        if not tied:
            _untie_head(model)
    return model.to(_torch_dtype(dtype)).eval()


def _check_gpt2_args(*, tied: bool, vocab_size: int, tokenizer: bool, bare_keys: bool) -> None:
    if tokenizer and vocab_size < GPT2_VOCAB_SIZE:
        raise ValueError(
            f"GPT-2's tokenizer has 50257 ids but vocab_size is {vocab_size}: pass tokenizer=False"
        )
    if bare_keys and not tied:
        raise ValueError("bare_keys writes a GPT2Model, which has no lm_head: it needs tied=True")


def make_gpt2_folder(
    folder: Path,
    *,
    tied: bool = True,
    vocab_size: int = GPT2_VOCAB_SIZE,
    n_embd: int = 16,
    n_positions: int = 64,
    max_shard_size: str | int | None = None,
    tokenizer: bool = True,
    bare_keys: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """A tiny GPT2LMHeadModel saved by transformers: config.json, model*.safetensors, tokenizer."""
    _check_gpt2_args(tied=tied, vocab_size=vocab_size, tokenizer=tokenizer, bare_keys=bare_keys)
    folder = Path(folder)
    model = _gpt2_model(
        tied=tied,
        vocab_size=vocab_size,
        n_embd=n_embd,
        n_positions=n_positions,
        dtype=dtype,
        seed=seed,
    )
    if bare_keys:
        # Like openai-community/gpt2: keys without "transformer." (wte.weight, wpe.weight, h.0...),
        # no lm_head, while config.json still names GPT2LMHeadModel.
        model.transformer.save_pretrained(folder, **_save_kwargs(max_shard_size))
        _rewrite_config(folder, architectures=["GPT2LMHeadModel"])
    else:
        model.save_pretrained(folder, **_save_kwargs(max_shard_size))
    if tokenizer:
        gpt2_tokenizer_json(folder)
    return folder


def make_pytorch_bin_folder(
    folder: Path,
    *,
    tied: bool = True,
    vocab_size: int = GPT2_VOCAB_SIZE,
    n_embd: int = 16,
    n_positions: int = 64,
    tokenizer: bool = True,
    bare_keys: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """The same tiny GPT-2 as make_gpt2_folder, its weights in pytorch_model.bin (torch.save)."""
    # transformers 5 dropped safe_serialization: save_pretrained(safe_serialization=False) still
    # writes model.safetensors. The .bin is therefore torch.save of the state dict, as transformers
    # 4 wrote it: a zip-format pickle of plain tensors, the tied lm_head.weight left out.
    import torch

    _check_gpt2_args(tied=tied, vocab_size=vocab_size, tokenizer=tokenizer, bare_keys=bare_keys)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = _gpt2_model(
        tied=tied,
        vocab_size=vocab_size,
        n_embd=n_embd,
        n_positions=n_positions,
        dtype=dtype,
        seed=seed,
    )
    source = model.transformer if bare_keys else model
    state = {
        key: tensor.detach().clone().contiguous()
        for key, tensor in source.state_dict().items()
        if not (tied and key == "lm_head.weight")
    }
    torch.save(state, folder / "pytorch_model.bin")
    model.config.save_pretrained(folder)
    if tokenizer:
        gpt2_tokenizer_json(folder)
    return folder


def _llama_like(
    folder: Path,
    config: Any,
    model_class: Any,
    *,
    tied: bool,
    max_shard_size: str | int | None,
    tokenizer_json: Path | None,
    legacy_config: bool,
    dtype: str,
    seed: int,
) -> Path:
    import torch

    folder = Path(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config)
        if not tied:
            _untie_head(model)
    model.to(_torch_dtype(dtype)).eval().save_pretrained(folder, **_save_kwargs(max_shard_size))
    if legacy_config:
        _legacy_rope(folder)
    if tokenizer_json is not None:
        shutil.copyfile(tokenizer_json, folder / "tokenizer.json")
    return folder


def make_llama_folder(
    folder: Path,
    *,
    vocab_size: int | None = None,
    hidden_size: int = 16,
    max_position_embeddings: int = 128,
    rope_theta: float = 500000.0,
    tied: bool = False,
    max_shard_size: str | int | None = None,
    tokenizer_json: Path | None = None,
    legacy_config: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """A tiny LlamaForCausalLM (2 layers, 2 heads, 1 KV head): model.embed_tokens, lm_head, RoPE.

    vocab_size defaults to the size of tokenizer_json (copied in as tokenizer.json), else 512.
    config.json holds rope_parameters={"rope_theta", "rope_type": "default"} as transformers 5
    writes it, or with legacy_config=True a top-level rope_theta (and torch_dtype) as published
    Llama checkpoints have it.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    if vocab_size is None:
        vocab_size = 512 if tokenizer_json is None else _tokenizer_vocab_size(tokenizer_json)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=max_position_embeddings,
        rope_theta=rope_theta,
        tie_word_embeddings=tied,
    )
    return _llama_like(
        folder,
        config,
        LlamaForCausalLM,
        tied=tied,
        max_shard_size=max_shard_size,
        tokenizer_json=tokenizer_json,
        legacy_config=legacy_config,
        dtype=dtype,
        seed=seed,
    )


def make_gemma_folder(
    folder: Path,
    *,
    vocab_size: int | None = None,
    hidden_size: int = 16,
    max_position_embeddings: int = 128,
    rope_theta: float = 10000.0,
    max_shard_size: str | int | None = None,
    tokenizer_json: Path | None = None,
    legacy_config: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """A tiny GemmaForCausalLM: tied head, token embeddings scaled by sqrt(hidden_size) at run time.

    config.json keys written (transformers 5.24): architectures=["GemmaForCausalLM"],
    model_type="gemma", vocab_size, hidden_size, intermediate_size=2*hidden_size,
    num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
    max_position_embeddings, rope_parameters={"rope_theta", "rope_type": "default"} (with
    legacy_config=True: top-level rope_theta and torch_dtype instead of rope_parameters and dtype),
    tie_word_embeddings=true, hidden_act="gelu_pytorch_tanh", rms_norm_eps=1e-06, bos_token_id=2,
    eos_token_id=1, pad_token_id=0 (so row 0 of model.embed_tokens.weight is all zeros),
    attention_bias, attention_dropout, initializer_range, use_bidirectional_attention, use_cache,
    dtype, transformers_version. The scale sqrt(hidden_size) is NOT a config key: GemmaModel
    derives it from hidden_size (a non-persistent embed_scale buffer, absent from the weights).
    vocab_size defaults to the size of tokenizer_json (copied in as tokenizer.json), else 512.
    """
    from transformers import GemmaConfig, GemmaForCausalLM

    if vocab_size is None:
        vocab_size = 512 if tokenizer_json is None else _tokenizer_vocab_size(tokenizer_json)
    config = GemmaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=max_position_embeddings,
        rope_theta=rope_theta,
        tie_word_embeddings=True,
    )
    return _llama_like(
        folder,
        config,
        GemmaForCausalLM,
        tied=True,
        max_shard_size=max_shard_size,
        tokenizer_json=tokenizer_json,
        legacy_config=legacy_config,
        dtype=dtype,
        seed=seed,
    )


def expected_tables(folder: Path) -> dict[str, torch.Tensor | None]:
    """Load folder with AutoModelForCausalLM: its token, position, head tables and embed scale."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype="auto", local_files_only=True)
    embedding = model.get_input_embeddings()
    wpe = getattr(model.base_model, "wpe", None)
    scale = getattr(embedding, "embed_scale", None)

    def copy(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.detach().clone()

    return {
        "token": copy(embedding.weight),
        "position": None if wpe is None else copy(wpe.weight),
        "head": copy(model.get_output_embeddings().weight),
        "scale": None if scale is None else copy(torch.as_tensor(scale)),
    }


def shard_of(folder: Path, key: str) -> str:
    """The weights file in folder that holds tensor key (read from the index when sharded)."""
    folder = Path(folder)
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = folder / index_name
        if index.is_file():
            return json.loads(index.read_text(encoding="utf-8"))["weight_map"][key]
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return name
    raise FileNotFoundError(f"no weights in {folder}")
