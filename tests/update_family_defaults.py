"""Write embedcli/models/familydefaults.json: for every model_type of the registry, the defaults
transformers' own config class gives the fields embedcli reads, so that a config.json that
leaves a field out is read as transformers reads it (never with a generic guess).

    python tests/update_family_defaults.py

tests/test_families.py checks that the file is what this script writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "embedcli" / "models" / "familydefaults.json"
READ = (
    "vocab_size", "hidden_size", "n_embd", "d_model", "max_position_embeddings", "n_positions",
    "n_ctx", "max_seq_len", "pad_token_id", "tie_word_embeddings", "layer_norm_eps",
    "layer_norm_epsilon", "scale_embedding", "embedding_multiplier", "scale_emb",
    "word_embed_proj_dim", "num_attention_heads", "n_head", "n_heads", "num_heads", "head_dim",
    "rotary_dim", "qk_rope_head_dim", "partial_rotary_factor", "rotary_pct", "rope_theta",
    "rotary_emb_base", "rope_local_base_freq", "rope_parameters", "rope_scaling", "alibi",
    "relative_attention_num_buckets", "relative_attention_max_distance",
    "position_embedding_type", "type_vocab_size",
)  # fmt: skip


def defaults_of(model_type: str) -> dict:
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    text = config.get_text_config()
    data = text.to_dict()
    found = {key: data[key] for key in READ if key in data and data[key] is not None}
    if isinstance(data.get("layer_types"), list) and data["layer_types"]:
        found["layer_types"] = data["layer_types"][:1]  # the first block's type is what is read
    if "head_dim" in found and _derived_head_dim(text, data):
        del found["head_dim"]  # the width over the heads when a config leaves it out
    attn = data.get("attn_config")
    if isinstance(attn, dict):
        found["attn_config"] = {k: attn[k] for k in ("alibi", "alibi_bias_max") if k in attn}
    return found


def _derived_head_dim(text: object, data: dict) -> bool:
    """Whether the config class computes head_dim from the width (Llama) rather than having a
    default of its own (Gemma's 256, Qwen 3's 128)."""
    width = next((k for k in ("hidden_size", "n_embd", "d_model") if k in data), None)
    if width is None:
        return False
    try:
        again = type(text)(**{**data, "head_dim": None, width: data[width] * 2}).to_dict()
    except Exception:  # head_dim may not be None: a default of its own
        return False
    return again.get("head_dim") != data["head_dim"]


def render() -> str:
    import json

    from embedcli.models.families import FAMILIES

    table = {t: defaults_of(t) for f in FAMILIES for t in f.model_types}
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render())
    print(f"wrote {TARGET.relative_to(REPO)}", file=sys.stderr)
