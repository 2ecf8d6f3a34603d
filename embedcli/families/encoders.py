"""Encoders whose input layer goes past BERT's (token type 0 and learned positions, then a
LayerNorm): a Linear after the norm from a narrower table (ALBERT, ELECTRA, ConvBERT, RemBERT;
FNet's between equal widths), DeBERTa's positions-then-projection and its float32 LayerNorm and
attention mask, DistilBERT's fixed eps, BigBird's optional √d scale; Funnel's LayerNorm of the
token rows alone (its positions and token types live inside attention); XLNet's time-major
token rows.
"""

from __future__ import annotations

from typing import Any

from embedcli.families.registry import Family, register

_TABLES: dict[str, Any] = {  # BERT's embeddings module, as most of them keep it
    "token": ("embeddings.word_embeddings.weight",),
    "positional": "learned",
    "position": "embeddings.position_embeddings.weight",
    "token_type": "embeddings.token_type_embeddings.weight",
    "norm": "embeddings.LayerNorm",
}

register(
    Family(
        name="ALBERT",
        model_types=("albert",),
        architectures=("AlbertModel", "AlbertForMaskedLM"),
        prefixes=("albert",),
        project_in="encoder.embedding_hidden_mapping_in.weight",
        projection="after_norm",
        project_bias=True,
        project_when="always",  # the Linear from embedding_size exists whatever the widths
        width=("embedding_size",),
        head="predictions.decoder.weight",
        **_TABLES,
    ),
    Family(
        name="ELECTRA",
        model_types=("electra",),
        architectures=("ElectraModel", "ElectraForMaskedLM"),
        prefixes=("electra",),
        project_in="embeddings_project.weight",  # only where embedding_size != hidden_size
        projection="after_norm",
        project_bias=True,
        width=("embedding_size",),
        head="generator_lm_head.weight",
        **_TABLES,
    ),
    Family(
        name="ConvBERT",
        model_types=("convbert",),
        architectures=("ConvBertModel", "ConvBertForMaskedLM"),
        prefixes=("convbert",),
        positions_first=True,  # word + positions + token types, in that order
        project_in="embeddings_project.weight",
        projection="after_norm",
        project_bias=True,
        width=("embedding_size",),
        head="generator_lm_head.weight",
        **_TABLES,
    ),
    Family(
        name="RemBERT",
        model_types=("rembert",),
        architectures=("RemBertModel", "RemBertForMaskedLM"),
        prefixes=("rembert",),
        project_in="encoder.embedding_hidden_mapping_in.weight",
        projection="after_norm",
        project_bias=True,
        project_when="always",
        width=("input_embedding_size",),
        head="cls.predictions.decoder.weight",
        **_TABLES,
    ),
    Family(
        name="FNet",
        model_types=("fnet",),
        architectures=("FNetModel", "FNetForMaskedLM"),
        prefixes=("fnet",),
        project_in="embeddings.projection.weight",  # a Linear(d, d) after the LayerNorm
        projection="after_norm",
        project_bias=True,
        project_when="always",
        width=(),
        head="cls.predictions.decoder.weight",
        **_TABLES,
    ),
    Family(
        name="DistilBERT",
        model_types=("distilbert",),
        architectures=("DistilBertModel", "DistilBertForMaskedLM"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("distilbert",),
        positional="learned",  # sinusoidal_pos_embds: the sinusoids are the stored table's rows
        position="embeddings.position_embeddings.weight",
        norm="embeddings.LayerNorm",
        norm_eps=(),
        norm_eps_default=1e-12,  # nn.LayerNorm(dim, eps=1e-12), whatever the config
        head="vocab_projector.weight",
    ),
    Family(
        name="BigBird",
        model_types=("big_bird",),
        architectures=("BigBirdModel", "BigBirdForMaskedLM"),
        prefixes=("bert",),
        scale="sqrt_d",  # inputs_embeds * hidden_size**0.5, a Python float
        scale_when="rescale_embeddings",
        head="cls.predictions.decoder.weight",
        **_TABLES,
    ),
    *(
        Family(
            name=name,
            model_types=(model_type,),
            architectures=(f"{arch}Model", f"{arch}ForMaskedLM"),
            token=("embeddings.word_embeddings.weight",),
            prefixes=("deberta",),
            positional="relative",  # disentangled attention: nothing added before block 0
            relative_buckets=False,
            project_in="embeddings.embed_proj.weight",  # only where embedding_size differs
            projection="before_norm",
            width=("embedding_size",),
            norm="embeddings.LayerNorm",
            norm_kind=kind,
            mask_multiply=True,
            head="lm_predictions.lm_head.decoder.weight",
            # as every published DeBERTa: positions only inside attention, no token types;
            # position_biased_input (a learned table added) and type_vocab_size are refused
            requires=(
                ("position_biased_input", False),
                ("relative_attention", True),
                ("type_vocab_size", 0),
            ),
        )
        for name, model_type, arch, kind in (
            ("DeBERTa", "deberta", "Deberta", "float32"),
            ("DeBERTa-v2 and v3", "deberta-v2", "DebertaV2", "layernorm"),
        )
    ),
)

register(
    *(
        Family(
            name=name,
            model_types=(model_type,),
            architectures=(f"{arch}Model", f"{arch}WithLMHeadModel"),
            token=("embeddings.weight",),
            prefixes=("transformer",),
            positional="learned",  # sinusoidal_embeddings: the sinusoids are the stored rows
            position="position_embeddings.weight",
            norm="layer_norm_emb",
            mask_multiply=True,  # tensor *= mask: the pads' rows are zeros
            head="pred_layer.proj.weight",
            # language embeddings are added only where a caller passes langs: embed passes none
        )
        for name, model_type, arch in (
            ("XLM", "xlm", "XLM"),
            ("FlauBERT", "flaubert", "Flaubert"),
        )
    ),
)

register(
    Family(
        name="RoFormer",
        model_types=("roformer",),
        architectures=("RoFormerModel", "RoFormerForMaskedLM"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("roformer",),
        positional="rope",  # sines of position x 10000^(-2i/head_dim), rotated in attention
        token_type="embeddings.token_type_embeddings.weight",
        norm="embeddings.LayerNorm",
        project_in="embeddings_project.weight",  # only where embedding_size != hidden_size
        projection="after_norm",
        project_bias=True,
        width=("embedding_size",),
        head="cls.predictions.decoder.weight",
    ),
)

register(
    Family(
        name="MobileBERT",
        model_types=("mobilebert",),
        architectures=("MobileBertModel", "MobileBertForMaskedLM"),
        prefixes=("mobilebert",),
        trigram=True,  # [next, this, previous] rows of the narrow table, side by side
        project_in="embeddings.embedding_transformation.weight",  # Linear(3 x embedding_size, d)
        project_bias=True,
        project_when="always",
        width=("embedding_size",),
        positions_first=True,  # + positions + token types
        norm_kind="nonorm",  # weight * x + bias
        head="cls.predictions.decoder.weight",
        # a LayerNorm instead of NoNorm, or no trigram, is not computed: refused by name
        requires=(("trigram_input", True), ("normalization_type", "no_norm")),
        **_TABLES,
    ),
)

register(
    Family(
        name="ESM",
        model_types=("esm",),
        architectures=("EsmModel", "EsmForMaskedLM"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("esm",),
        positional="rope",  # ESM-2's rotary positions over one head, base 10000
        token_dropout="token_dropout",
        mask_multiply=True,  # (embeddings * attention_mask).to(dtype)
        head="lm_head.decoder.weight",
        # ESM-1's learned positions (numbered from padding_idx) and its LayerNorm before the
        # first block are not computed: refused by name
        requires=(("position_embedding_type", "rotary"), ("emb_layer_norm_before", False)),
    ),
)

register(
    Family(
        name="ESM C",
        model_types=("esmc",),
        architectures=("EsmcModel", "EsmcForMaskedLM"),
        prefixes=("esmc",),  # embed_tokens, then rope inside attention: nothing before block 0
        head="lm_head.decoder.weight",
    ),
)

register(
    Family(
        name="Funnel Transformer",
        model_types=("funnel",),
        architectures=("FunnelModel", "FunnelForMaskedLM"),
        token=("embeddings.word_embeddings.weight",),
        prefixes=("funnel",),
        # relative positions (relative_shift or factorized) and the token types' segment
        # matrix are built inside attention: the first block reads LayerNorm(token rows)
        positional="relative",
        relative_buckets=False,
        norm="embeddings.layer_norm",  # eps: layer_norm_eps (1e-9 by default)
        context=(),  # positional encodings are computed for any length
        head="lm_head.weight",
    ),
)

register(
    # XLNet: the batch turned time-major (input_ids.transpose(0, 1)) before the lookup, so its
    # first block reads the token rows as (T, B, d); its relative sinusoid encodings go to
    # attention beside them, and its query stream (mask_emb) runs only with a target mapping
    Family(
        name="XLNet",
        model_types=("xlnet",),
        architectures=("XLNetModel", "XLNetLMHeadModel"),
        token=("word_embedding.weight",),
        prefixes=("transformer",),
        positional="relative",
        relative_buckets=False,
        context=(),  # relative encodings are computed for any length
        head="lm_loss.weight",
        block_layout="time_major",
    ),
)
