"""The rope encoders: BERT-shaped masked-LM models whose positions are rotary, inside attention
(ModernBERT, NomicBERT, GTE, Jina embeddings v3, EuroBERT, UltraBERT). What block 0 reads is the
token row, with token type 0 added where the family has types, and a LayerNorm where it has one.
"""

from __future__ import annotations

from embedcli.families.bert import BERT_GGUF
from embedcli.families.ggufarch import GGUFArch
from embedcli.families.registry import Family, register, rope_family


def _typed(name: str, model_type: str, arch: str, prefix: str, **more: object) -> Family:
    """A BERT-shaped rope encoder: word row + token type 0, then a LayerNorm; rope in attention."""
    fields: dict[str, object] = {
        "token": ("embeddings.word_embeddings.weight",),
        "token_type": "embeddings.token_type_embeddings.weight",
        "norm": "embeddings.LayerNorm",
        "head": "lm_head.decoder.weight",
        **more,
    }
    return Family(
        name=name,
        model_types=(model_type,),
        architectures=(f"{arch}Model", f"{arch}ForMaskedLM"),
        prefixes=(prefix,),
        **fields,  # type: ignore[arg-type]
    )


register(
    # the LayerNorm of ModernBERT's token rows has no bias (norm_bias: false, every published
    # ModernBERT's); one with a bias is refused by name
    Family(
        name="ModernBERT",
        model_types=("modernbert",),
        architectures=("ModernBertModel", "ModernBertForMaskedLM"),
        token=("embeddings.tok_embeddings.weight",),
        norm="embeddings.norm",
        norm_eps=("norm_eps",),
        norm_bias=False,
        head="decoder.weight",
        requires=(("norm_bias", False),),
    ),
    # transformers saves the LayerNorm of NomicBERT and Jina v3 under its first name, emb_ln
    _typed(
        "NomicBERT",
        "nomic_bert",
        "NomicBert",
        "nomic_bert",
        norm="emb_ln",
        head="cls.predictions.decoder.weight",
        # bert.cpp runs NomicBERT too: the lookup, type 0's row, the LayerNorm; rope inside
        gguf=(GGUFArch(name="nomic-bert", **BERT_GGUF),),
    ),
    _typed("GTE", "gte", "Gte", "gte"),
    _typed(
        "Jina embeddings v3", "jina_embeddings_v3", "JinaEmbeddingsV3", "roberta", norm="emb_ln"
    ),
    rope_family("EuroBERT", "eurobert", arch="EuroBert"),
    rope_family(
        "UltraBERT", "ultrabert", arch="Ultrabert", prefixes=("ultrabert",), head="cls.weight"
    ),
)
