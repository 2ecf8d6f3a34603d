"""Tiny models of the seq2seq group: see tests/support/familycases/__init__.py."""

from __future__ import annotations

from typing import Any

from support.familycases.case import VOCAB, Case


def _learned(name: str, model_type: str, **fields: object) -> Case:
    return Case(name, model_type, dict(fields), kind="seq2seq", positional="learned")


def _relative(name: str, model_type: str, **fields: object) -> Case:
    return Case(name, model_type, dict(fields), kind="seq2seq", positional="relative")


def _sinusoidal(name: str, model_type: str, **fields: object) -> Case:
    return Case(name, model_type, dict(fields), kind="seq2seq", positional="sinusoidal")


def _t5gemma(config: Any) -> Any:
    """T5Gemma's sizes live in its encoder and decoder sub-configs (SMALL reaches neither)."""
    for stack in (config.encoder, config.decoder):
        for name, value in SMALL_STACK.items():
            setattr(stack, name, value)
        stack.layer_types = ["sliding_attention", "full_attention"]
    config.decoder.cross_attention_hidden_size = config.encoder.hidden_size
    config.vocab_size = VOCAB
    return config


def _t5gemma2(config: Any) -> Any:
    """T5Gemma 2 small: its encoder's text model and its decoder at SMALL_STACK's sizes, its
    image tower a tower's; the EOI id among the ids embedded (its rows become eoi_embedding,
    zeros as transformers initialises it, where the scaled row would not be)."""
    from support.familycases.multimodal import small

    small(config.encoder)
    for stack in (config.encoder.text_config, config.decoder):
        for name, value in SMALL_STACK.items():
            setattr(stack, name, value)
        stack.layer_types = ["sliding_attention", "full_attention"]
        stack.vocab_size = VOCAB
    config.decoder.cross_attention_hidden_size = config.encoder.text_config.hidden_size
    config.eoi_token_index = config.encoder.eoi_token_index = 200
    config.vocab_size = VOCAB
    return config


def _encoder_decoder(config: Any) -> Any:
    """EncoderDecoderModel's default: BERT with a BERT decoder, each made small."""
    for stack in (config.encoder, config.decoder):
        for name, value in BERT_STACK.items():
            setattr(stack, name, value)
    return config


BERT_STACK = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    max_position_embeddings=96,
)

SMALL_STACK = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    query_pre_attn_scalar=16,
    max_position_embeddings=96,
    sliding_window=16,
    pad_token_id=0,
)


CASES: tuple[Case, ...] = (
    _learned("mvp", "mvp", scale_embedding=True),
    # 7 ids padded to 8 (attention_window 4) before the lookup
    _learned("led", "led", attention_window=4, max_encoder_position_embeddings=96),
    _learned("blenderbot", "blenderbot", scale_embedding=True),
    _learned("blenderbot-unscaled", "blenderbot", scale_embedding=False),
    _learned("blenderbot-small", "blenderbot-small", scale_embedding=True),
    _learned("bigbird-pegasus", "bigbird_pegasus", attention_type="original_full"),
    _sinusoidal("marian", "marian", scale_embedding=True),
    _sinusoidal("marian-unscaled", "marian", scale_embedding=False),
    _sinusoidal(
        "marian-unshared",
        "marian",
        share_encoder_decoder_embeddings=False,
        decoder_vocab_size=200,
        tie_word_embeddings=False,
    ),
    _sinusoidal("pegasus", "pegasus", scale_embedding=True),
    # in bfloat16: the fixed tables rounded to the tables' dtype, as the models round them
    Case("marian-bf16", "marian", {"scale_embedding": True}, "seq2seq", "sinusoidal", "bfloat16"),
    Case("m2m-100-bf16", "m2m_100", {"scale_embedding": True}, "seq2seq", "sinusoidal", "bfloat16"),
    Case(
        "blenderbot-bf16", "blenderbot", {"scale_embedding": True}, "seq2seq", "learned", "bfloat16"
    ),
    _sinusoidal("m2m-100", "m2m_100", scale_embedding=True),
    # the source table is src_vocab_size rows; block 0 reads (T, B, d)
    _sinusoidal("fsmt", "fsmt", src_vocab_size=384, tgt_vocab_size=300, langs=["en", "de"]),
    _sinusoidal("nllb-moe", "nllb-moe", scale_embedding=True),
    # block_size 1: no zero rows padded on (their sequence is not the tokens')
    _sinusoidal("pegasus-x", "pegasus_x", scale_embedding=True, block_size=1),
    Case(
        "prophetnet",
        "prophetnet",
        {"num_encoder_layers": 2, "num_decoder_layers": 2, "ngram": 2},
        kind="seq2seq",
        positional="learned",
    ),
    Case("t5gemma", "t5gemma", kind="seq2seq", configure=_t5gemma),
    Case("t5gemma2", "t5gemma2", kind="seq2seq", configure=_t5gemma2),
    _sinusoidal("seamless-m4t", "seamless_m4t", scale_embedding=True),
    _sinusoidal("seamless-m4t-v2", "seamless_m4t_v2", scale_embedding=True),
    Case(
        "encoder-decoder",
        "encoder-decoder",
        kind="seq2seq",
        positional="learned",
        configure=_encoder_decoder,
    ),
    _relative("umt5", "umt5"),
    _relative("longt5", "longt5"),
    _relative("longt5-tglobal", "longt5", encoder_attention_type="transient-global"),
    _relative("switch-transformers", "switch_transformers"),
)

# the group's types of transformers' mappings that no case builds: {model_type: why}
LEFT_OUT: dict[str, str] = {
    "whisper": (
        "its encoder, the first stack to run, reads log-mel audio features through two "
        "convolutions, not token ids; only its decoder reads ids"
    ),
    # these build, and embedcli refuses them by name (a type it does not know) until it has
    # their step: never a guess
}
