"""Encoder-decoders outside BART's and T5's kin: the encoder runs first. Marian, Pegasus,
Pegasus-X, M2M100, NLLB-MoE and FSMT (time-major, over its source table) scale their token
embeddings by √d where the config says so and add fixed sinusoids computed from a formula
(never read from the checkpoint), with no norm before the first block; ProphetNet adds learned
positions numbered from its padding row by the attention mask, then a LayerNorm. T5Gemma's
encoder is Gemma 2's input layer (× √d rounded to the tables' dtype, rope in attention), read
from the config's encoder sub-config.
"""

from __future__ import annotations

from typing import Any

from embedcli.families.registry import Family, register

# fairseq's sinusoids (sines, then cosines) numbered from padding_idx + 1, and the √d scale
# where scale_embedding says so: M2M100's, FSMT's, SeamlessM4T's text encoder's
_FAIRSEQ: dict[str, Any] = {
    "positional": "sinusoidal",
    "sinusoid": "halves",
    "position_ids": "padding",
    "scale": "sqrt_d",
    "scale_when": "scale_embedding",
}

_TOKEN = ("encoder.embed_tokens.weight", "shared.weight")  # the encoder's own, or the shared one

register(
    # create_weight: the original Transformer's angles, sines in the first half, from row 0
    Family(
        name="Marian (Pegasus)",
        model_types=("marian", "pegasus"),
        architectures=("MarianModel", "MarianMTModel"),
        token=_TOKEN,
        positional="sinusoidal",
        sinusoid="split",
        scale="sqrt_d",
        scale_when="scale_embedding",
        stacks=("encoder", "decoder"),
    ),
    # fairseq's sinusoids from row 0, no padding row; its encoder pads the sequence with zero
    # rows to a multiple of block_size, and its first block also reads the global tokens'
    # embeddings (embed_global), a stream of their own: embed shows the tokens' rows
    Family(
        name="Pegasus-X",
        model_types=("pegasus_x",),
        architectures=("PegasusXModel", "PegasusXForConditionalGeneration"),
        token=_TOKEN,
        positional="sinusoidal",
        sinusoid="halves_unpadded",
        scale="sqrt_d",
        scale_when="scale_embedding",
        # it computes its sinusoids in the embeddings' dtype: only float32 is the table here
        requires=(("dtype", "float32"), ("torch_dtype", "float32")),
        stacks=("encoder", "decoder"),
    ),
    # positions: cumsum(attention_mask) × mask + padding_idx (pads on row padding_idx), which
    # is OPT's mask numbering from row padding_idx + 1; other padding rows are refused
    Family(
        name="ProphetNet",
        model_types=("prophetnet",),
        architectures=("ProphetNetModel", "ProphetNetForConditionalGeneration"),
        token=("word_embeddings.weight",),
        prefixes=("prophetnet",),
        positional="learned",
        position="position_embeddings.weight",
        position_ids="mask",
        offset=1,
        offset_in_context=True,
        requires=(("pad_token_id", 0),),
        norm="embeddings_layer_norm",
        norm_eps=(),
        stacks=("encoder", "decoder"),
    ),
    # fairseq's sinusoids, numbered from padding_idx + 1 as RoBERTa numbers its positions
    Family(
        name="M2M100 (NLLB-MoE)",
        model_types=("m2m_100", "nllb-moe"),
        architectures=("M2M100Model", "M2M100ForConditionalGeneration"),
        token=_TOKEN,
        **_FAIRSEQ,
        stacks=("encoder", "decoder"),
    ),
    # FSMT: M2M100's input layer over the source table (src_vocab_size rows; vocab_size names
    # the target's), then its encoder turns the sum time-major: block 0 reads (T, B, d)
    Family(
        name="FSMT",
        model_types=("fsmt",),
        architectures=("FSMTModel", "FSMTForConditionalGeneration"),
        token=("encoder.embed_tokens.weight",),
        **_FAIRSEQ,
        stacks=("encoder", "decoder"),
        vocab="src_vocab_size",
        head="model.decoder.output_projection.weight",
        block_layout="time_major",
    ),
    Family(
        name="T5Gemma (encoder)",
        model_types=("t5gemma",),
        architectures=("T5GemmaModel", "T5GemmaForConditionalGeneration"),
        prefixes=("model.encoder", "encoder"),
        scale="sqrt_d",
        scale_rounding="dtype",  # Gemma's normalizer, a tensor in the tables' dtype
        head="lm_head.out_proj.weight",
        text_config=("t5gemma",),
        text_path=("encoder",),
        stacks=("encoder", "decoder"),
    ),
    # T5Gemma 2: Gemma 3's input layer in its encoder's text model (× √d rounded to the
    # tables' dtype, rope per layer type), and then the rows of eoi_token_index replaced by
    # the learned eoi_embedding (T5Gemma2TextScaledWordEmbedding)
    Family(
        name="T5Gemma 2 (encoder)",
        model_types=("t5gemma2",),
        architectures=("T5Gemma2Model", "T5Gemma2ForConditionalGeneration"),
        # saved without text_model (transformers renames the keys on save), read either way
        prefixes=("model.encoder", "encoder", "model.encoder.text_model", "encoder.text_model"),
        scale="sqrt_d",
        scale_rounding="dtype",
        text_config=("t5gemma2",),
        text_path=("encoder", "text_config"),
        stacks=("encoder", "decoder"),
        replaced_row=("eoi_token_index", "embed_tokens.eoi_embedding", 256000),
        head="lm_head.out_proj.weight",
        side_inputs=(("encoder.vision_config", "its image tower, whose rows replace image ids"),),
    ),
    # SeamlessM4T's text-to-text model (the sequence-to-sequence class): its text encoder is
    # M2M100's; the speech encoder, the text-to-unit model and the vocoder are other classes
    Family(
        name="SeamlessM4T (text encoder)",
        model_types=("seamless_m4t", "seamless_m4t_v2"),
        architectures=("SeamlessM4TForTextToText", "SeamlessM4Tv2ForTextToText"),
        token=("text_encoder.embed_tokens.weight", "shared.weight"),
        prefixes=("",),
        **_FAIRSEQ,
        stacks=("text_encoder", "text_decoder"),
    ),
    # EncoderDecoderModel: any encoder with any decoder; its encoder's own family is read,
    # under the key prefix encoder.
    Family(
        name="EncoderDecoderModel",
        model_types=("encoder-decoder",),
        architectures=("EncoderDecoderModel",),
        text_config=("encoder-decoder",),
        text_path=("encoder",),
        composes="encoder",
        stacks=("encoder", "decoder"),
    ),
)
