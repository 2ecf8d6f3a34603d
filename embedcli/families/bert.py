"""The BERT encoders: token type 0 and learned positions added, then a LayerNorm (RoBERTa counts
its positions from padding_idx + 1).
"""

from __future__ import annotations

from typing import Any

from embedcli.families.ggufarch import GGUFArch, Key
from embedcli.families.params import Fields, Formula, ParameterCount, dense, layer_norm, linear, mlp
from embedcli.families.registry import Family, Published, register


def _bert(f: Fields) -> ParameterCount:
    vocab, d = f.size("vocab_size"), f.size("hidden_size")
    layers, heads = f.size("num_hidden_layers"), f.size("num_attention_heads")
    inner, positions = f.size("intermediate_size"), f.size("max_position_embeddings")
    types = f.size("type_vocab_size", default=2)  # BertConfig: 2 token types
    f.head_dim(d, heads)
    f.choice(
        "position_embedding_type",
        "absolute",
        ("absolute",),
        "relative position embeddings are not counted",
    )
    f.choice("add_cross_attention", False, (False,), "cross-attention blocks are not counted")
    layer = 4 * linear(d, d) + mlp(d, inner) + 2 * layer_norm(d)
    embeddings = (vocab + positions + types) * d + layer_norm(d)
    return dense(embeddings + layers * layer + linear(d, d))  # the pooler last


_BERT_BASE = Published(
    name="bert-base",
    description="BERT base, uncased (the encoder, with its pooler)",
    hub_id="google-bert/bert-base-uncased",
    published="110M",
    config={
        "model_type": "bert",
        "architectures": ["BertModel"],
        "vocab_size": 30522,
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
        "torch_dtype": "float32",
    },
)

# how llama.cpp reads a BERT-shaped encoder's epsilon and its count of token types
BERT_GGUF: dict[str, Any] = {
    "eps": "layer_norm_epsilon",
    "keys": (Key("type_vocab_size", ".tokenizer.ggml.token_type_count", 2, integer=True),),
}

register(
    Family(
        name="BERT",
        model_types=("bert",),
        architectures=("BertModel", "BertLMHeadModel"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("bert",),
        positional="learned",
        position="embeddings.position_embeddings.weight",
        token_type="embeddings.token_type_embeddings.weight",
        norm="embeddings.LayerNorm",
        head="cls.predictions.decoder.weight",
        requires=(("position_embedding_type", "absolute"),),
        # bert.cpp: the lookup, type 0's row, the learned position, then the LayerNorm
        gguf=(GGUFArch(name="bert", **BERT_GGUF, fixed={"position_embedding_type": "absolute"}),),
        parameters=(Formula("bert", "BertModel", _bert),),
        presets=(_BERT_BASE,),
    ),
    Family(
        name="RoBERTa (XLM-R, CamemBERT, Data2Vec-text)",
        model_types=("roberta", "xlm-roberta", "camembert", "data2vec-text"),
        architectures=("RobertaModel", "RobertaForCausalLM"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("roberta", "data2vec_text"),
        positional="learned",
        position="embeddings.position_embeddings.weight",
        position_ids="padding",
        token_type="embeddings.token_type_embeddings.weight",
        norm="embeddings.LayerNorm",
        head="lm_head.decoder.weight",
        requires=(("position_embedding_type", "absolute"),),
    ),
)


def _encoder(name: str, model_type: str, arch: str, prefix: str, **more: object) -> Family:
    """A BERT-shaped encoder: ``{prefix}.embeddings.*`` tables, learned positions, the masked-LM
    class's head (``cls.predictions``, or ``lm_head`` where ``more`` says so)."""
    fields: dict[str, object] = {
        "token": ("embeddings.word_embeddings.weight",),
        "positional": "learned",
        "position": "embeddings.position_embeddings.weight",
        "token_type": "embeddings.token_type_embeddings.weight",
        "norm": "embeddings.LayerNorm",
        "head": "cls.predictions.decoder.weight",
        **more,
    }
    return Family(
        name=name,
        model_types=(model_type,),
        architectures=(f"{arch}Model", f"{arch}ForMaskedLM"),
        prefixes=(prefix,),
        **fields,  # type: ignore[arg-type]
    )


_ROBERTA_LIKE = {"position_ids": "padding", "head": "lm_head.decoder.weight"}

register(
    # Megatron moves the embedding LayerNorm into each layer: the sum is what block 0 reads
    _encoder("Megatron-BERT", "megatron-bert", "MegatronBert", "bert", norm=None),
    _encoder(
        "RoBERTa-PreLayerNorm",
        "roberta-prelayernorm",
        "RobertaPreLayerNorm",
        "roberta_prelayernorm",
        **_ROBERTA_LIKE,
    ),
    # pre-LayerNorm layers: no LayerNorm of the sum
    _encoder(
        "XLM-RoBERTa-XL", "xlm-roberta-xl", "XLMRobertaXL", "roberta", norm=None, **_ROBERTA_LIKE
    ),
    # positions from row 2 (a table of max_position_embeddings + 2 rows), counted 0..T-1
    _encoder("MRA", "mra", "Mra", "mra", offset=2),
    _encoder("YOSO", "yoso", "Yoso", "yoso", offset=2),
    _encoder("Nyströmformer", "nystromformer", "Nystromformer", "nystromformer", offset=2),
    Family(
        name="BERT-Generation",
        model_types=("bert-generation",),
        architectures=("BertGenerationEncoder", "BertGenerationDecoder"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("bert",),
        positional="learned",
        position="embeddings.position_embeddings.weight",
        norm="embeddings.LayerNorm",
        head="lm_head.decoder.weight",
    ),
    # ERNIE 1-3's task-type table is added only with use_task_id
    _encoder("ERNIE", "ernie", "Ernie", "ernie", requires=(("use_task_id", False),)),
    # MPNet's relative buckets bias attention; its absolute positions count as RoBERTa's
    _encoder("MPNet", "mpnet", "MPNet", "mpnet", token_type=None, **_ROBERTA_LIKE),
    # LUKE adds the token type after the positions; its entity stream joins only where
    # entity ids are given (embed gives token ids alone)
    _encoder("LUKE", "luke", "Luke", "luke", positions_first=True, **_ROBERTA_LIKE),
    # SqueezeBERT: BERT's sum (positions before the token type), then its encoder permutes it
    # to (B, d, T) for its 1-D convolutions: what the first block (called by .forward) reads
    _encoder(
        "SqueezeBERT",
        "squeezebert",
        "SqueezeBert",
        "transformer",
        positions_first=True,
        block_layout="channels_first",
    ),
    # TAPAS: BERT's sum with seven token-type tables (segment, column, row, previous label,
    # column rank, inverse rank, numeric relation: one per type_vocab_sizes entry), row 0 of
    # each added in turn after the positions; with no table given every token is in cell
    # (0, 0), so reset_position_index_per_cell numbers positions 0..T-1 as well
    _encoder(
        "TAPAS",
        "tapas",
        "Tapas",
        "tapas",
        token_type=None,
        row0_tables=("embeddings.token_type_embeddings_{i}.weight",),
        row0_count="type_vocab_sizes",
    ),
    # LayoutLM: BERT's sum with the rows of an all-zero box, x and y of its two corners (each
    # table read twice), its height and width, after the positions; the token type last
    _encoder(
        "LayoutLM",
        "layoutlm",
        "LayoutLM",
        "layoutlm",
        positions_first=True,
        row0_tables=tuple(
            f"embeddings.{axis}_position_embeddings.weight"
            for axis in ("x", "y", "x", "y", "h", "w")
        ),
    ),
    # Longformer: RoBERTa's input layer over the ids padded with pad_token_id to a multiple of
    # attention_window (the largest of its layers'): the pads take row padding_idx; the
    # positions are added before the token type
    _encoder(
        "Longformer",
        "longformer",
        "Longformer",
        "longformer",
        positions_first=True,
        window="attention_window",
        **_ROBERTA_LIKE,
    ),
    # RoCBERT with concat_input (its default and its published model's): each token's row
    # beside row 0 of its shape and pronunciation tables (no such ids given), a Linear with a
    # bias back to hidden_size, then BERT's sum and LayerNorm
    _encoder(
        "RoCBERT",
        "roc_bert",
        "RoCBert",
        "roc_bert",
        project_in="embeddings.map_inputs_layer.weight",
        project_bias=True,
        project_when="always",
        width=(),
        concat_tables=(
            ("embeddings.shape_embed.weight", "shape_embed_dim", "enable_shape"),
            (
                "embeddings.pronunciation_embed.weight",
                "pronunciation_embed_dim",
                "enable_pronunciation",
            ),
        ),
        requires=(("concat_input", True),),
    ),
    # X-MOD's language adapters sit in the layers; its input layer is RoBERTa's
    _encoder("X-MOD", "xmod", "Xmod", "roberta", **_ROBERTA_LIKE),
    # I-BERT without quant_mode: RoBERTa's sum, then IntLayerNorm's formula written out,
    # (x - mean) / sqrt(eps + var), which it computes in the tables' own dtype: the float32
    # statistics here are exact in float32, one rounding off in float16 or bfloat16 (--verify
    # says so); quant_mode, which quantizes every table and the norm, is refused by name
    _encoder(
        "I-BERT",
        "ibert",
        "IBert",
        "ibert",
        norm_kind="float32",
        requires=(("quant_mode", False),),
        **_ROBERTA_LIKE,
    ),
)
