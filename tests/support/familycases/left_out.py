"""The model types of transformers' causal-LM, masked-LM and sequence-to-sequence mappings that
no case builds, each with the reason (tests/families/test_family_coverage.py holds every type
of the mappings to a case or an entry here)."""

from __future__ import annotations

LEFT_OUT: dict[str, str] = {}
