"""Decoders whose token rows pass a norm before the first block reads them.

- The Inkling language models (Inkling, Inkling 2, Inkling 2 Loop): an RMSNorm of their own
  (``embed_tokens.embed_norm``). They have no rope and no positional table: each attention layer
  adds a relative bias that it computes from its hidden states, inside attention, so embedcli
  shows no positions for them.
- ModernBERT-decoder: ModernBERT's input layer (a LayerNorm, without a bias unless
  ``norm_bias``), rope in attention, one set per layer type.
- NeoMME: ALBERT's factorised table (``embedding_rank`` wide, then a Linear with no bias to
  hidden_size), then an RMSNorm with no weight written with a power (x × (mean(x²) + eps)^-0.5,
  in float32); rope per layer type over two interleaved axes, each the token's position for
  text alone. Its first and last full-attention layers also add a second token table
  (``value_embeddings``) to their values: named as not shown.
- nanochat: an RMSNorm with no weight at all (``NanoChatModel.norm``, the same module that
  closes the stack), in float32 and cast back; rope in attention.
"""

from __future__ import annotations

from embedcli.families.registry import Family, register, rope_family


def _inkling(name: str, model_type: str, arch: str, **keys: object) -> Family:
    fields: dict[str, object] = {"norm": "embed_tokens.embed_norm", **keys}
    return Family(
        name=name,
        model_types=(model_type,),
        architectures=(f"{arch}TextModel", f"{arch}ForCausalLM"),
        positional="none",
        norm_kind="rmsnorm",
        norm_eps=("rms_norm_eps",),
        **fields,  # type: ignore[arg-type]
    )


# Inkling 2's checkpoints keep the original names, which transformers maps on load and back on
# save: model.llm.embed and model.llm.embed_norm (the head: model.llm.unembed)
_ORIGINAL = {
    "prefixes": ("model.llm",),
    "token": ("embed.weight",),
    "norm": "embed_norm",
    "head": "model.llm.unembed.weight",
}


register(
    _inkling("Inkling", "inkling_text", "Inkling"),
    _inkling("Inkling 2", "inkling2_text", "Inkling2", **_ORIGINAL),
    _inkling("Inkling 2 Loop", "inkling2_loop_text", "Inkling2Loop", **_ORIGINAL),
    # the LayerNorm's bias is read only where the config's norm_bias says it exists: a bias is
    # refused by name, not dropped (the entry reads norm_bias: false)
    Family(
        name="ModernBERT-decoder",
        model_types=("modernbert-decoder",),
        architectures=("ModernBertDecoderModel", "ModernBertDecoderForCausalLM"),
        token=("embeddings.tok_embeddings.weight",),
        norm="embeddings.norm",
        norm_eps=("norm_eps",),
        norm_bias=False,
        head="decoder.weight",
        requires=(("norm_bias", False),),
    ),
    # NanoChatRMSNorm: x.float() * rsqrt(mean(x²) + eps), .type_as(x); eps rms_norm_eps, whose
    # class default (1e-6) is read where config.json leaves it out
    rope_family(
        "nanochat",
        "nanochat",
        arch="NanoChat",
        norm_kind="weightless_rmsnorm",
        norm_eps=("rms_norm_eps",),
        norm_eps_default=1e-6,
    ),
    Family(
        name="NeoMME",
        model_types=("neomme",),
        architectures=("NeoMMEModel", "NeoMMEForMaskedLM"),
        token=("embed_tokens.word_embeddings.weight",),
        project_in="embed_tokens.embedding_projection.weight",
        project_when="always",
        width=("embedding_rank",),
        norm_kind="weightless_rmsnorm_pow",
        norm_eps=("norm_eps",),
        norm_eps_default=1e-6,
        side_inputs=(
            (
                "value_embeddings",
                "a second token table, added to the values of the first and last "
                "full-attention layers",
            ),
        ),
    ),
)
