"""Checkpoints in every layout embedcli reads (Hugging Face GPT-2, nanoGPT, TransformerLens,
Llama, named modules...), written here with seeded tables: ``make(tmp_path, layout)`` for each
of ``LAYOUTS``, and the writers they use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

V, D, C = 50257, 8, 16  # the gpt2 vocabulary, so that any gpt2 text has its ids in the table


def tables(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(V, D, generator=generator), torch.randn(C, D, generator=generator)


def block(prefix: str) -> dict[str, torch.Tensor]:
    """A stand-in for the rest of a model: tensors that are not embedding tables."""
    return {
        f"{prefix}h.0.attn.c_attn.weight": torch.randn(D, 3 * D),
        f"{prefix}h.0.ln_1.weight": torch.ones(D),
    }


def write(path: Path, state: dict, fmt: str, wrap: str | None = None, extra: dict | None = None):
    if fmt == "safetensors":
        save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    elif fmt == "npz":
        np.savez(path, **{k: v.numpy() for k, v in state.items()})
    else:
        obj = state if wrap is None else {wrap: state, **(extra or {})}
        torch.save(obj, path)
    return path


def make(tmp_path: Path, layout: str):
    """(checkpoint path, token table, position table or None, expected layout name)."""
    token, position = tables()
    if layout == "hf-gpt2model":
        state = {"wte.weight": token, "wpe.weight": position, **block("")}
        return (
            write(tmp_path / "model.safetensors", state, "safetensors"),
            token,
            position,
            "Hugging Face GPT2Model",
        )
    if layout == "hf-lmhead":
        state = {
            "transformer.wte.weight": token,
            "transformer.wpe.weight": position,
            **block("transformer."),
            "lm_head.weight": token,
        }  # tied: same storage
        return (
            write(tmp_path / "pytorch_model.bin", state, "pt"),
            token,
            position,
            "Hugging Face GPT2LMHeadModel / nanoGPT",
        )
    if layout == "nanogpt-compiled":
        state = {
            "_orig_mod.transformer.wte.weight": token,
            "_orig_mod.transformer.wpe.weight": position,
            **block("_orig_mod.transformer."),
            "_orig_mod.lm_head.weight": token,
        }
        path = write(
            tmp_path / "ckpt.pt",
            state,
            "pt",
            "model",
            {"model_args": {"n_embd": D}, "iter_num": 100, "best_val_loss": 3.2},
        )
        return path, token, position, "Hugging Face GPT2LMHeadModel / nanoGPT"
    if layout == "from-scratch":
        state = {
            "tok_emb.weight": token,
            "pos_emb.weight": position,
            "out_head.weight": token.clone(),
        }
        return (
            write(tmp_path / "model.pth", state, "pt", "model_state_dict"),
            token,
            position,
            "LLM-from-scratch GPTModel",
        )
    if layout == "transformer-lens":
        state = {"embed.W_E": token, "pos_embed.W_pos": position, "unembed.W_U": token.T.clone()}
        return write(tmp_path / "tl.npz", state, "npz"), token, position, "TransformerLens"
    if layout == "llama":
        state = {"model.embed_tokens.weight": token, "lm_head.weight": token.clone() * 2}
        return (
            write(tmp_path / "llama.safetensors", state, "safetensors"),
            token,
            None,
            "Llama-style (rotary positions)",
        )
    if layout == "named-modules":
        state = {
            "embedder.token_embeddings.weight": token,
            "embedder.position_embeddings.weight": position,
        }
        return (
            write(tmp_path / "mine.pt", state, "pt", "state_dict"),
            token,
            position,
            "modules named *token_embeddings.weight",
        )
    if layout == "token-embed":
        state = {"net.token_embed.weight": token, "net.position_embed.weight": position}
        return (
            write(tmp_path / "mine.npz", state, "npz"),
            token,
            position,
            "modules named *token_embed.weight",
        )
    raise AssertionError(layout)


LAYOUTS = [
    "hf-gpt2model",
    "hf-lmhead",
    "nanogpt-compiled",
    "from-scratch",
    "transformer-lens",
    "llama",
    "named-modules",
    "token-embed",
]
