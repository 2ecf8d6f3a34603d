"""The tiny models tests/families/test_families.py builds, one module per group of families
(each group's own fix-ups of a config live beside its cases):

- ``case``: ``Case`` and ``VOCAB``;
- ``base``: the families registered before transformers' whole mappings were taken on;
- ``decoders``: text decoders (rope, MoE, scaled inputs);
- ``multimodal``: wrappers whose language model is in ``text_config``, and hybrid stacks;
- ``encoders``: masked-LM encoders (segments, projections, task tables);
- ``seq2seq``: encoder-decoders (the encoder's first block);
- ``left_out``: the mappings' types no case builds, each with the reason.
"""

from __future__ import annotations

from support.familycases import base, decoders, encoders, multimodal, seq2seq
from support.familycases.case import VOCAB, Case

CASES: tuple[Case, ...] = (
    *base.CASES,
    *decoders.CASES,
    *multimodal.CASES,
    *encoders.CASES,
    *seq2seq.CASES,
)

__all__ = ["CASES", "VOCAB", "Case"]
