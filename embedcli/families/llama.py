"""Llama, and the families of other makers built on its input layer: ``model.embed_tokens``, rope,
nothing else before the first block.
"""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch
from embedcli.families.params import ATTENTION_BIAS, NULL_KV, RopeDecoder, decoder
from embedcli.families.registry import Layout, Published, register, rope_family

# LlamaConfig: biases where attention_bias (and mlp_bias) say; null heads mean "derive"
_LLAMA = RopeDecoder(
    "LlamaForCausalLM", mlp_bias="mlp_bias", nullable=(*NULL_KV, "head_dim"), **ATTENTION_BIAS
)


_LLAMA_2_7B = Published(
    name="llama-2-7b",
    description="Llama 2 7B",
    hub_id="meta-llama/Llama-2-7b-hf",
    published="6.74B",
    config={
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": "float16",
    },
)

_LLAMA_3_1_8B = Published(
    name="llama-3.1-8b",
    description="Llama 3.1 8B",
    hub_id="meta-llama/Llama-3.1-8B",
    published="8.03B",
    config={
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": 128256,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

_LLAMA_3_1_70B = Published(
    name="llama-3.1-70b",
    description="Llama 3.1 70B",
    hub_id="meta-llama/Llama-3.1-70B",
    published="70.6B",
    config={
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": 128256,
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

_LLAMA_3_1_405B = Published(
    name="llama-3.1-405b",
    description="Llama 3.1 405B",
    hub_id="meta-llama/Llama-3.1-405B",
    published="406B",
    config={
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": 128256,
        "hidden_size": 16384,
        "intermediate_size": 53248,
        "num_hidden_layers": 126,
        "num_attention_heads": 128,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
)

register(
    rope_family(
        "Llama",
        "llama",
        arch="Llama",
        gguf=(GGUFArch(name="llama", rope_freqs=True),),
        parameters=(decoder("llama", _LLAMA),),
        presets=(
            _LLAMA_2_7B,
            _LLAMA_3_1_8B,
            _LLAMA_3_1_70B,
            _LLAMA_3_1_405B,
        ),
        layouts=(
            Layout(
                name="Llama-style (rotary positions)",
                token="model.embed_tokens.weight",
                position=None,
                head="lm_head.weight",
            ),
        ),
    ),
    rope_family("Nemotron", "nemotron", arch="Nemotron", gguf=(GGUFArch(name="nemotron"),)),
    rope_family(
        "StarCoder2", "starcoder2", arch="Starcoder2", gguf=(GGUFArch(name="starcoder2"),)
    ),
    rope_family(
        "EXAONE 4",
        "exaone4",
        arch="Exaone4",
        # llama.cpp's exaone4.cpp: only the 64-block (32B) model slides, 3 layers in 4
        gguf=(GGUFArch(name="exaone4", swa=4, swa_blocks=64, swa_window=4096, rope_freqs=True),),
    ),
    rope_family("Helium", "helium", arch="Helium"),
    rope_family("Arcee", "arcee", arch="Arcee"),
    rope_family("Apertus", "apertus", arch="Apertus"),
    rope_family("Apertus 1.5", "apertus1p5_text", arch="Apertus1p5Text"),
    rope_family("BitNet", "bitnet", arch="BitNet"),
    rope_family(
        "SmolLM3",
        "smollm3",
        arch="SmolLM3",
        gguf=(GGUFArch(name="smollm3", rope_free_every=4),),  # smollm3.cpp: no rope every 4th
    ),
    rope_family("Seed-OSS", "seed_oss", arch="SeedOss"),
    rope_family("DiffLlama", "diffllama", arch="DiffLlama"),
    rope_family("InternLM3", "internlm3", arch="InternLM3"),
    rope_family("CWM", "cwm", arch="Cwm"),
    rope_family("AFMoE", "afmoe", arch="Afmoe"),
    rope_family("Aria (text)", "aria_text", arch="AriaText"),
    rope_family("A.X K1", "axk1", arch="AXK1"),
    rope_family("Doge", "doge", arch="Doge"),
    rope_family("Flint", "flint", arch="Flint"),
    rope_family("Jais 2", "jais2", arch="Jais2"),
    rope_family("LongCat-Flash", "longcat_flash", arch="LongcatFlash"),
    rope_family("A.X K2", "axk2", arch="AXK2", rope_dim="qk_rope"),
    rope_family("Beam", "beam", arch="Beam"),
    # its checkpoints keep the original names (transformers renames them on load, and back)
    rope_family(
        "Ergo",
        "ergo",
        arch="Ergo",
        token=("embed_tokens.weight", "tok_embeddings.weight"),
        head="output.weight",
    ),
    rope_family(
        "Dory",
        "dory",
        arch="Dory",
        token=("embed_tokens.weight", "embeddings.weight"),
        prefixes=("model", "backbone"),
    ),
    rope_family("dots.llm1", "dots1", arch="Dots1"),
    rope_family("HRM (text)", "hrm_text", arch="HrmText", scale="embedding_scale"),
    rope_family("HyperCLOVA X", "hyperclovax", arch="HyperCLOVAX", scale="embedding_multiplier"),
)
