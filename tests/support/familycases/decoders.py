"""Tiny models of the decoders group (rope decoders with MoE, MLA, scaled inputs; CTRL, CPM-Ant,
GPT-NeoX-Japanese, DBRX, gpt-oss): see tests/support/familycases/__init__.py.

SMALL leaves a config's per-layer lists at the real model's length; ``layers`` cuts or
stretches each to the tiny model's layers.
"""

from __future__ import annotations

from typing import Any

from support.familycases.case import Case

# the per-layer lists some configs keep, each as long as the layers
_PER_LAYER = ("layer_types", "mlp_layer_types")


def layers(config: Any) -> Any:
    """``config`` with its per-layer lists as long as its layers (the last entry repeated)."""
    n = config.num_hidden_layers
    for name in _PER_LAYER:
        value = getattr(config, name, None)
        if isinstance(value, list) and value:
            setattr(config, name, (value + value[-1:] * n)[:n])
    return config


def _dory(config: Any) -> Any:
    """Dory's two layers: one input layer and one output layer, none recurrent."""
    config.n_input_layers, config.n_recurrent_layers, config.n_output_layers = 1, 0, 1
    return layers(config)


def _dbrx(config: Any) -> Any:
    """DBRX's attention reads attn_config.rope_theta, which its config class no longer has
    (its rope is rope_parameters): set, and unused; its experts as wide as the tiny model."""
    config.attn_config.rope_theta = config.rope_parameters["rope_theta"]
    config.ffn_config.hidden_size, config.ffn_config.ffn_hidden_size = config.d_model, 96
    return config


def _rope(name: str, model_type: str, configure: Any = layers, **fields: Any) -> Case:
    return Case(name, model_type, fields, configure=configure)


CASES: tuple[Case, ...] = (
    _rope("axk2", "axk2"),
    _rope("cohere2_moe", "cohere2_moe"),
    _rope("deepseek_v32", "deepseek_v32"),
    _rope("dory", "dory", configure=_dory),
    _rope("dots1", "dots1", n_shared_experts=1),
    _rope("exaone", "exaone"),
    _rope("exaone_moe", "exaone_moe"),
    _rope("glm4_moe_lite", "glm4_moe_lite"),
    _rope("glm_moe_dsa", "glm_moe_dsa"),
    _rope("gpt_oss", "gpt_oss"),  # yarn, its default
    _rope(
        "gpt_oss-default-rope",
        "gpt_oss",
        rope_parameters={"rope_type": "default", "rope_theta": 150000.0},
    ),
    _rope("hrm_text", "hrm_text"),
    _rope("hyperclovax", "hyperclovax", embedding_multiplier=3.0),
    _rope("dbrx", "dbrx", configure=_dbrx),
    _rope("gpt_neox_japanese", "gpt_neox_japanese"),
    _rope("gpt_neox_japanese-partial", "gpt_neox_japanese", rotary_pct=0.5),
    Case("ctrl", "ctrl", positional="sinusoidal"),
    Case("ctrl-base", "ctrl", kind="base", positional="sinusoidal"),
    Case("ctrl-bf16", "ctrl", dtype="bfloat16", positional="sinusoidal"),
    Case("hrm_text-bf16", "hrm_text", dtype="bfloat16", configure=layers),
    _rope("beam", "beam"),
    _rope("ergo", "ergo"),
    # layer 0's own base (50000), not rope_theta's 10000: one rotary module per base
    _rope("granite_swa", "granite_swa", embedding_multiplier=3.0, layer_rope_theta=[5e4, 1e4]),
    # layer 0 without rope: the angles are layer 1's (20000)
    _rope("granite_swa-nope0", "granite_swa", embedding_multiplier=3.0, layer_rope_theta=[0, 2e4]),
    Case(
        "granite_swa-bf16",
        "granite_swa",
        {"embedding_multiplier": 3.0, "layer_rope_theta": [5e4, 0]},
        dtype="bfloat16",
        configure=layers,
    ),
    _rope("deepseek_v4", "deepseek_v4"),  # hc_mult streams; rope sets main and compress
    _rope("hy_v4", "hy_v4"),  # hyper-connections: hc_mult copies of each row, (B, T, 4, d)
    Case("hy_v4-bf16", "hy_v4", dtype="bfloat16", configure=layers),
    _rope("granitemoe_swa", "granitemoe_swa", embedding_multiplier=3.0, layer_rope_theta=[2e4, 0]),
    _rope(
        "cohere_compass_text",
        "cohere_compass_text",
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 10000.0}},
    ),
)

# the group's types of transformers' mappings that no case builds: {model_type: why}
LEFT_OUT: dict[str, str] = {
    "cpmant": (
        "its first block reads prompt_length prompt rows put before the ids, and a segment "
        "table's row (2 for an id other than 0) added to each token's: steps embedcli does not "
        "have; refused as a type it does not know"
    ),
    "blt": (
        "its first block (the local encoder's) reads the byte rows plus hashed n-gram rows "
        "(compute_hash_embeddings), a step embedcli does not have (and the survey's generic "
        "small config leaves its sub-configs at full size: out of memory); refused as a type "
        "it does not know"
    ),
    "reformer": (
        "its positions are axial (per-axis factor tables broadcast over a grid and "
        "concatenated, not one table's rows), and its reversible stack hands the first block "
        "the sum twice (hidden_states and prev_attn_output, from torch.cat([x, x]))"
    ),
    "gpt-sw3": (
        "transformers builds it from GPT2Config, so its config.json says model_type gpt2 and "
        "embedcli reads it as GPT-2 (exact: the gpt2 case); the name gpt-sw3 itself is never "
        "in a config.json"
    ),
}
