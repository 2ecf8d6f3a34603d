"""Tiny models of the encoders group: see tests/support/familycases/__init__.py."""

from __future__ import annotations

from support.familycases.case import Case

CASES: tuple[Case, ...] = ()
