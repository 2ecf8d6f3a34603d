"""Tiny random models of every registry family, built and saved by transformers itself, and what
their first block really reads (a forward pre-hook on it): the oracle of
tests/families/test_families.py.

``CASES`` names one or more variants per family: the model_type, the config fields that make the
family's input layer do something (a multiplier that is not 1, a projection, alibi: true, two
rope bases), and the class to build. ``build(case, folder)`` saves the model and a tiny
tokenizer of its own; ``first_block_input(folder, ids)`` loads the folder back with
transformers and returns the hidden states the first block receives.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from support.familycases import CASES, Case  # noqa: F401  (CASES: the tests' import)
from support.familycases.case import VOCAB

# Small sizes under every name the families use; a config takes the ones it has.
SMALL: dict[str, Any] = dict(
    hidden_size=64,
    n_embd=64,
    d_model=64,
    num_hidden_layers=2,
    n_layer=2,
    num_layers=2,
    n_layers=2,
    num_attention_heads=4,
    n_head=4,
    n_heads=4,
    num_key_value_heads=2,
    intermediate_size=96,
    ffn_dim=96,
    n_inner=96,
    d_ff=96,
    max_position_embeddings=96,
    n_positions=96,
    n_ctx=96,
    max_seq_len=96,
    head_dim=16,
    num_experts=4,
    num_local_experts=4,
    n_routed_experts=4,
    num_experts_per_tok=2,
    moe_intermediate_size=32,
    vocab_size=VOCAB,
    decoder_layers=2,
    decoder_attention_heads=4,
    decoder_ffn_dim=96,
    encoder_layers=2,
    encoder_attention_heads=4,
    encoder_ffn_dim=96,
    qk_rope_head_dim=8,
    qk_nope_head_dim=8,
    v_head_dim=16,
    kv_lora_rank=16,
    q_lora_rank=16,
    expand=2,
    state_size=8,
)


def tiny_config(case: Case) -> Any:
    """The family's config at SMALL sizes, with the case's fields."""
    from transformers import AutoConfig

    if case.kind == "gemma3":  # Gemma 3 with its vision tower: the text part is read
        from transformers import Gemma3Config

        text = tiny_config(
            Case(
                "text",
                "gemma3_text",
                {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 16},
            )
        )
        vision = {
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "image_size": 28,
            "patch_size": 14,
        }
        return Gemma3Config(
            text_config=text.to_dict(),
            vision_config=vision,
            mm_tokens_per_image=4,
            image_token_index=VOCAB - 1,
            boi_token_index=VOCAB - 2,
            eoi_token_index=VOCAB - 3,
        )

    config = AutoConfig.for_model(case.model_type)
    known = config.to_dict()
    for name, value in SMALL.items():
        if name in known or hasattr(config, name):
            quiet = (AttributeError, ValueError, TypeError, NotImplementedError)
            with contextlib.suppress(*quiet):
                setattr(config, name, value)
    for name in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value >= VOCAB:
            setattr(config, name, 1)
    if "layer_types" in known and isinstance(config.layer_types, list):
        config.layer_types = config.layer_types[: config.num_hidden_layers]
        if len(config.layer_types) < config.num_hidden_layers:
            config.layer_types = ["full_attention"] * config.num_hidden_layers
    for name, value in case.fields.items():
        setattr(config, name, value)
    if case.model_type == "gpt_neo":
        config.attention_layers = ["global", "local"]
    if case.model_type == "mpt":
        config.attn_config.alibi = True
    if case.configure is not None:
        config = case.configure(config)
    return config


def _model_class(case: Case) -> Any:
    import transformers

    if case.kind == "encoder":
        return transformers.T5EncoderModel
    if case.kind == "base":
        return transformers.AutoModel
    if case.kind == "masked":
        return transformers.AutoModelForMaskedLM
    if case.kind == "seq2seq":  # the encoder's first block is the first to run
        return transformers.AutoModelForSeq2SeqLM
    if case.kind == "gemma3":
        return transformers.Gemma3ForConditionalGeneration
    if case.kind == "image_text":  # a wrapper whose causal-LM class is its text model alone
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


def build(case: Case, folder: Path) -> Path:
    """Save the case's tiny model (seeded), and a tokenizer of its own, into ``folder``."""
    torch.manual_seed(0)
    config = tiny_config(case)
    kind = _model_class(case)
    direct = case.kind in ("encoder", "gemma3")
    model = (kind(config) if direct else kind.from_config(config)).eval()
    with torch.no_grad():  # random positional tables and norms, so that every step shows
        for name, parameter in model.named_parameters():
            if "norm" in name.lower() or "ln" in name.split("."):
                parameter.copy_(
                    torch.randn_like(parameter) * 0.1 + (1.0 if "weight" in name else 0.0)
                )
    if case.dtype != "float32":
        model = model.to(getattr(torch, case.dtype))
        model.config.dtype = case.dtype
    model.save_pretrained(folder)
    save_tokenizer(folder)
    return folder


def save_tokenizer(folder: Path) -> None:
    """A byte-level BPE tokenizer of VOCAB - 8 pieces, trained here on a few sentences."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - 8,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    text = ["Hello, world! The quick brown fox jumps over the lazy dog."] * 8
    tokenizer.train_from_iterator(text, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>")
    fast.save_pretrained(folder)


# a wrapper's language-model blocks, named so that its vision or audio tower's come second
LANGUAGE_BLOCKS = ("language_model.layers", "language_model.model.layers", "text_model.layers",
                   "git.encoder.layer")  # fmt: skip


def first_blocks(model: nn.Module) -> nn.Module:
    """The first block: element 0 of the first ModuleList whose elements hold parameters (a
    multimodal model's language model's, not its vision tower's; the first layer of the first
    block where the blocks are lists of layers, as Funnel's)."""
    for name, module in model.named_modules():
        if name.endswith(LANGUAGE_BLOCKS):
            return module[0]
    for module in model.modules():
        if (
            isinstance(module, nn.ModuleList)
            and len(module)
            and next(module[0].parameters(), None) is not None
        ):
            block = module[0]
            while isinstance(block, nn.ModuleList):  # Funnel: blocks of layers
                block = block[0]
            return block
    raise AssertionError("no block list found")


class _Stop(Exception):
    pass


def load(folder: Path, case: Case, dtype: Any = None) -> Any:
    """The saved model, as transformers loads it (in the checkpoint's dtype, or ``dtype``)."""
    kind = _model_class(case)
    extra = {} if dtype is None else {"dtype": dtype}
    return kind.from_pretrained(folder, local_files_only=True, **extra).eval()


def first_block_input(
    model: Any, ids: list[list[int]], mask: list[list[int]] | None = None
) -> torch.Tensor:
    """What the first block of ``model`` receives for ``ids``, from a forward pre-hook."""
    got: dict[str, torch.Tensor] = {}

    def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
        hidden = args[0] if args else kwargs["hidden_states"]
        got["hidden"] = hidden.detach().clone()
        raise _Stop

    # the block, and its children: a stack that calls block.forward directly (SqueezeBERT's)
    # runs no hook of the block, and its first child then receives what the block received
    block = first_blocks(model)
    handles = [m.register_forward_pre_hook(hook, with_kwargs=True)
               for m in (block, *block.children())]  # fmt: skip
    inputs: dict[str, Any] = {"input_ids": torch.tensor(ids)}

    if mask is not None:
        inputs["attention_mask"] = torch.tensor(mask)
    try:
        with torch.no_grad():
            model(**inputs)
    except _Stop:
        pass
    finally:
        for handle in handles:
            handle.remove()
    return got["hidden"]


def rotary_inverse_frequencies(model: Any) -> dict[str, torch.Tensor]:
    """The inverse frequencies of the model's rotary module(s), by buffer name; where each
    layer has its own base, the modules its forward picks, the first block's first."""
    per_layer = _per_layer_bases(model)
    if per_layer:
        return per_layer
    found: dict[str, torch.Tensor] = {}
    for name, buffer in model.named_buffers():
        if name.endswith("inv_freq") and "original" not in name.rsplit(".", 1)[-1]:
            frequencies = buffer.detach().float()
            if not any(torch.equal(frequencies, f) for f in found.values()):  # Moshi: per layer
                found[name] = frequencies
    language = {n: f for n, f in found.items() if "language_model" in n}
    return language or found  # a wrapper's language model's, not its audio tower's


def _per_layer_bases(model: Any) -> dict[str, torch.Tensor] | None:
    """Granite SWA's rotary modules as its forward uses them: layer i's is the one whose
    rope_theta is layer_rope_theta[i] (0: none), in the order the layers first use them, so
    block 0's (or the first rope layer's) comes first; the model's rotary_emb is unused."""
    config = model.config.get_text_config()
    thetas = getattr(config, "layer_rope_theta", None)
    if not thetas:
        return None
    by_base = {
        module.config.rope_parameters["rope_theta"]: (name, module.inv_freq)
        for name, module in model.named_modules()
        if re.search(r"rotary_embs\.\d+$", name)
    }
    used = [t for t in dict.fromkeys(thetas[: config.num_hidden_layers]) if t]
    return {by_base[t][0]: by_base[t][1].detach().float() for t in used}


def config_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "config.json").read_text())
