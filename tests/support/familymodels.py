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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

VOCAB = 384
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


@dataclass(frozen=True)
class Case:
    """One tiny model to build: its model_type, the fields set on top of SMALL, its class."""

    name: str
    model_type: str
    fields: dict[str, Any] = field(default_factory=dict)
    kind: str = "causal"  # causal (AutoModelForCausalLM), base (AutoModel), encoder (T5)
    positional: str = "rope"
    dtype: str = "float32"


def _rope(name: str, model_type: str, **fields: Any) -> Case:
    return Case(name, model_type, fields)


CASES: tuple[Case, ...] = (
    Case("gpt2", "gpt2", positional="learned"),
    Case("gpt2-base", "gpt2", kind="base", positional="learned"),
    Case(
        "gpt_neo", "gpt_neo", {"attention_types": [[["global", "local"], 1]]}, positional="learned"
    ),
    Case("gpt_bigcode", "gpt_bigcode", positional="learned"),
    Case("openai-gpt", "openai-gpt", positional="learned"),
    Case("opt", "opt", {"word_embed_proj_dim": 64}, positional="learned"),
    Case("opt-projected", "opt", {"word_embed_proj_dim": 32}, positional="learned"),
    Case("biogpt", "biogpt", positional="learned"),
    Case("xglm", "xglm", positional="sinusoidal"),
    Case("bart", "bart", {"scale_embedding": True}, positional="learned"),
    Case("bart-full", "bart", {"scale_embedding": True}, kind="seq2seq", positional="learned"),
    Case("mbart", "mbart", {"scale_embedding": True}, positional="learned"),
    Case("plbart", "plbart", {"scale_embedding": False}, positional="learned"),
    Case("bert", "bert", {"is_decoder": True}, positional="learned"),
    Case("bert-base", "bert", kind="base", positional="learned"),
    Case(
        "roberta",
        "roberta",
        {"is_decoder": True, "max_position_embeddings": 98},
        positional="learned",
    ),
    Case(
        "xlm-roberta",
        "xlm-roberta",
        {"is_decoder": True, "max_position_embeddings": 98},
        positional="learned",
    ),
    Case(
        "camembert",
        "camembert",
        {"is_decoder": True, "max_position_embeddings": 98},
        positional="learned",
    ),
    Case(
        "data2vec-text",
        "data2vec-text",
        {"is_decoder": True, "max_position_embeddings": 98},
        positional="learned",
    ),
    Case("bloom", "bloom", positional="alibi"),
    Case("mpt", "mpt", {"n_heads": 6, "d_model": 96}, positional="alibi"),
    Case("falcon", "falcon", {"alibi": False}),
    Case("falcon-alibi", "falcon", {"alibi": True}, positional="alibi"),
    Case("t5", "t5", kind="encoder", positional="relative"),
    Case("t5-full", "t5", kind="seq2seq", positional="relative"),
    Case("mamba", "mamba", positional="none"),
    Case("mamba2", "mamba2", {"num_heads": 8, "head_dim": 16, "n_groups": 1}, positional="none"),
    Case("falcon_mamba", "falcon_mamba", positional="none"),
    Case("mt5", "mt5", kind="encoder", positional="relative"),
    Case(
        "rwkv", "rwkv", {"attention_hidden_size": 64, "intermediate_size": 128}, positional="none"
    ),
    _rope("gpt_neox", "gpt_neox"),
    _rope("gptj", "gptj", rotary_dim=8),
    _rope("codegen", "codegen", rotary_dim=8),
    _rope("llama", "llama"),
    Case("llama-bf16", "llama", {}, dtype="bfloat16"),
    _rope(
        "llama-3.1-scaling",
        "llama",
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 32,
        },
    ),
    _rope("mistral", "mistral"),
    _rope("mixtral", "mixtral"),
    _rope("qwen2", "qwen2"),
    _rope("qwen2_moe", "qwen2_moe", shared_expert_intermediate_size=32),
    _rope("qwen3", "qwen3"),
    _rope("qwen3_moe", "qwen3_moe"),
    _rope("gemma", "gemma"),
    Case("gemma-bf16", "gemma", {"hidden_size": 48}, dtype="bfloat16"),  # √48: not a bf16
    _rope("gemma2", "gemma2"),
    _rope(
        "gemma3_text",
        "gemma3_text",
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=16,
    ),
    Case("gemma3", "gemma3", {}, kind="gemma3"),
    _rope("phi", "phi"),
    _rope("phi3", "phi3", pad_token_id=0),
    _rope("phimoe", "phimoe"),
    _rope("stablelm", "stablelm"),
    _rope("olmo", "olmo"),
    _rope("olmo2", "olmo2"),
    _rope("olmoe", "olmoe"),
    _rope("starcoder2", "starcoder2"),
    _rope("cohere", "cohere"),
    _rope("nemotron", "nemotron"),
    _rope("persimmon", "persimmon"),
    _rope("granite", "granite", embedding_multiplier=2.5),
    Case("granite-bf16", "granite", {"embedding_multiplier": 12.0}, dtype="bfloat16"),
    _rope("granitemoe", "granitemoe", embedding_multiplier=3.5),
    _rope(
        "granitemoeshared",
        "granitemoeshared",
        embedding_multiplier=1.5,
        shared_intermediate_size=32,
    ),
    _rope("minicpm3", "minicpm3", scale_emb=7),
    _rope("deepseek_v2", "deepseek_v2", first_k_dense_replace=1),
    _rope("deepseek_v3", "deepseek_v3", first_k_dense_replace=1, head_dim=8),
    _rope("glm", "glm"),
    _rope("glm4", "glm4"),
    _rope("helium", "helium"),
    _rope("exaone4", "exaone4"),
    _rope("ernie4_5", "ernie4_5"),
    _rope("arcee", "arcee"),
    _rope("apertus", "apertus"),
    _rope("bitnet", "bitnet"),
    _rope("smollm3", "smollm3"),
    _rope("seed_oss", "seed_oss"),
    _rope("diffllama", "diffllama"),
    _rope("cwm", "cwm"),
    _rope("ministral", "ministral"),
    _rope("olmo3", "olmo3"),
    _rope("cohere2", "cohere2"),
    _rope("ernie4_5_moe", "ernie4_5_moe"),
    _rope("hunyuan_v1_dense", "hunyuan_v1_dense"),
    _rope("hunyuan_v1_moe", "hunyuan_v1_moe"),
    _rope("internlm3", "internlm3"),
    _rope("afmoe", "afmoe"),
    _rope("apertus1p5_text", "apertus1p5_text"),
    _rope("aria_text", "aria_text"),
    _rope("axk1", "axk1"),
    _rope("doge", "doge"),
    _rope("flex_olmo", "flex_olmo"),
    _rope("flint", "flint"),
    _rope("hy_v3", "hy_v3"),
    _rope("jais2", "jais2"),
    _rope("longcat_flash", "longcat_flash"),
    _rope("glm4_moe", "glm4_moe"),
    _rope("vaultgemma", "vaultgemma"),
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
            with contextlib.suppress(AttributeError, ValueError, TypeError):
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
    return config


def _model_class(case: Case) -> Any:
    import transformers

    if case.kind == "encoder":
        return transformers.T5EncoderModel
    if case.kind == "base":
        return transformers.AutoModel
    if case.kind == "seq2seq":  # the encoder's first block is the first to run
        return transformers.AutoModelForSeq2SeqLM
    if case.kind == "gemma3":
        return transformers.Gemma3ForConditionalGeneration
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


def first_blocks(model: nn.Module) -> nn.Module:
    """The first block: element 0 of the first ModuleList whose elements hold parameters (a
    multimodal model's language model's, not its vision tower's)."""
    for name, module in model.named_modules():
        if name.endswith("language_model.layers"):
            return module[0]
    for module in model.modules():
        if (
            isinstance(module, nn.ModuleList)
            and len(module)
            and next(module[0].parameters(), None) is not None
        ):
            return module[0]
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

    handle = first_blocks(model).register_forward_pre_hook(hook, with_kwargs=True)
    inputs: dict[str, Any] = {"input_ids": torch.tensor(ids)}

    if mask is not None:
        inputs["attention_mask"] = torch.tensor(mask)
    try:
        with torch.no_grad():
            model(**inputs)
    except _Stop:
        pass
    finally:
        handle.remove()
    return got["hidden"]


def rotary_inverse_frequencies(model: Any) -> dict[str, torch.Tensor]:
    """The inverse frequencies of the model's rotary module(s), by buffer name."""
    found = {}
    for name, buffer in model.named_buffers():
        if name.endswith("inv_freq") and "original" not in name.rsplit(".", 1)[-1]:
            found[name] = buffer.detach().float()
    return found


def config_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "config.json").read_text())
