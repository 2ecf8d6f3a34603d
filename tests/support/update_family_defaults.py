"""Write embedcli/families/defaults.json: for every model_type of the registry, the defaults
transformers' own config class gives the fields embedcli reads, so that a config.json that
leaves a field out is read as transformers reads it (never with a generic guess); and what its
config class does with other names: ``aliases`` (a key the class stores under another name:
GPT-2's ``hidden_size`` is ``n_embd``, BLOOM's legacy ``n_embed`` is ``hidden_size``) and
``derived`` (a field whose default follows another: OPT's ``word_embed_proj_dim`` is the
``hidden_size`` given). Both are observed, by giving the class each name and reading back what
it stored.

    python tests/support/update_family_defaults.py

tests/families/test_families.py checks that the file is what this script writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = REPO / "embedcli" / "families" / "defaults.json"
READ = (
    "vocab_size", "hidden_size", "n_embd", "d_model", "max_position_embeddings", "n_positions",
    "n_ctx", "max_seq_len", "pad_token_id", "tie_word_embeddings", "layer_norm_eps",
    "layer_norm_epsilon", "scale_embedding", "embedding_multiplier", "scale_emb",
    "word_embed_proj_dim", "num_attention_heads", "n_head", "n_heads", "num_heads", "head_dim",
    "rotary_dim", "qk_rope_head_dim", "partial_rotary_factor", "rotary_pct", "rope_theta",
    "rotary_emb_base", "rope_local_base_freq", "rope_parameters", "rope_scaling", "alibi",
    "relative_attention_num_buckets", "relative_attention_max_distance",
    "position_embedding_type", "type_vocab_size", "hc_mult", "hc_count", "src_vocab_size",
    "type_vocab_sizes", "attention_window", "max_encoder_position_embeddings",
    "shape_embed_dim", "pronunciation_embed_dim", "enable_shape", "enable_pronunciation",
    "concat_input", "altup_num_inputs",
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


LEGACY = ("n_embed",)  # names a config class pops in its own code (BLOOM's, Falcon's)


def names_of(model_type: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """({alias: the READ field the class stores it as}, {READ field: the fields it follows}),
    observed by passing each name a probe value (a multiple of the default head count, so that
    the class accepts it) and reading back which READ field changed."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    mapped = getattr(CONFIG_MAPPING[model_type], "attribute_map", {})
    base = AutoConfig.for_model(model_type).get_text_config().to_dict()
    heads = next(
        (base[k] for k in ("num_attention_heads", "n_head", "n_heads", "num_heads")
         if isinstance(base.get(k), int)),
        1,
    )  # fmt: skip
    probe = heads * 960
    aliases: dict[str, str] = {}
    derived: dict[str, list[str]] = {}
    for name in sorted({*READ, *LEGACY, *mapped, *mapped.values()}):
        if isinstance(base.get(name), bool) or not isinstance(base.get(name, 0), int):
            continue
        try:
            data = AutoConfig.for_model(model_type, **{name: probe}).get_text_config().to_dict()
        except Exception:  # a value the class refuses: no alias observed
            continue
        for key in READ:
            if key in (name, "head_dim", "rope_parameters") or data.get(key) == base.get(key):
                continue
            if name not in base and data.get(key) == probe:
                aliases[name] = key
            elif name in base and key in base:
                derived.setdefault(key, []).append(name)
    return aliases, derived


def render() -> str:
    import json
    import warnings

    from transformers.utils import logging

    from embedcli.families.registry import FAMILIES

    logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    # a family read from GGUF files only has no transformers config class to read
    types = [t for f in FAMILIES if not f.gguf_only for t in f.model_types]
    names = {t: names_of(t) for t in types}
    table = {
        "aliases": {t: names[t][0] for t in types if names[t][0]},
        "defaults": {t: defaults_of(t) for t in types},
        "derived": {t: names[t][1] for t in types if names[t][1]},
    }
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render())
    print(f"wrote {TARGET.relative_to(REPO)}", file=sys.stderr)
