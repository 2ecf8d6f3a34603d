"""``Case``: one tiny model of a family to build, as tests/support/familymodels.py builds it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

VOCAB = 384  # every tiny model's vocabulary


@dataclass(frozen=True)
class Case:
    """One tiny model to build: its model_type, the fields set on top of SMALL, its class."""

    name: str
    model_type: str
    fields: dict[str, Any] = field(default_factory=dict)
    # causal (AutoModelForCausalLM), masked (AutoModelForMaskedLM), seq2seq
    # (AutoModelForSeq2SeqLM), base (AutoModel), encoder (T5EncoderModel), gemma3 (with vision)
    kind: str = "causal"
    positional: str = "rope"
    dtype: str = "float32"
    # the family's own fix-ups of the config after SMALL and ``fields`` (a layer-type list as
    # long as the layers, a sub-config made small): returns the config to build
    configure: Callable[[Any], Any] | None = field(default=None, compare=False)


def rope(name: str, model_type: str, **fields: Any) -> Case:
    """A rope family's case: the model_type, with ``fields`` set on top of SMALL."""
    return Case(name, model_type, fields)
