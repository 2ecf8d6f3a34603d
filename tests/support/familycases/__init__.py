"""The tiny models tests/families/test_families.py builds, one module per group of families
(each group's own fix-ups of a config live beside its cases):

- ``case``: ``Case`` and ``VOCAB``;
- ``base``: the families registered before transformers' whole mappings were taken on;
- ``decoders``: text decoders (rope, MoE, scaled inputs);
- ``decoders2``: more makers' rope decoders, MiniMax, Ministral 3, TrOCR, ModernBERT-decoder;
- ``multimodal``: wrappers whose language model is in ``text_config``, and hybrid stacks;
- ``hybrids``: hybrid stacks (Mamba, linear attention, recurrent blocks), Gemma 3n and 4;
- ``encoders``: masked-LM encoders (segments, projections, task tables);
- ``encoders2``: BERT-shaped encoders beyond BERT and RoBERTa (MPNet, ERNIE, ModernBERT...);
- ``seq2seq``: encoder-decoders (the encoder's first block);

Each group module also has ``LEFT_OUT``: its types of transformers' mappings that no case
builds, each with the reason; ``LEFT_OUT`` here is all of them.
"""

from __future__ import annotations

from support.familycases import (
    base,
    decoders,
    decoders2,
    encoders,
    encoders2,
    hybrids,
    multimodal,
    seq2seq,
)
from support.familycases.case import VOCAB, Case

CASES: tuple[Case, ...] = (
    *base.CASES,
    *decoders.CASES,
    *decoders2.CASES,
    *multimodal.CASES,
    *hybrids.CASES,
    *encoders.CASES,
    *encoders2.CASES,
    *seq2seq.CASES,
)

LEFT_OUT: dict[str, str] = {
    **decoders.LEFT_OUT,
    **decoders2.LEFT_OUT,
    **multimodal.LEFT_OUT,
    **hybrids.LEFT_OUT,
    **encoders.LEFT_OUT,
    **encoders2.LEFT_OUT,
    **seq2seq.LEFT_OUT,
}

__all__ = ["CASES", "LEFT_OUT", "VOCAB", "Case"]
