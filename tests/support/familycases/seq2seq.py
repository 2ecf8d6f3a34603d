"""Tiny models of the seq2seq group: see tests/support/familycases/__init__.py."""

from __future__ import annotations

from support.familycases.case import Case

CASES: tuple[Case, ...] = ()

# the group's types of transformers' mappings that no case builds: {model_type: why}
LEFT_OUT: dict[str, str] = {}
