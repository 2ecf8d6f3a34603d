"""The sample model (``sample:gemma-3-270m``, the sample extra) for the tests that read it: whether
its packages are installed, and one cache of its join per machine (not one per test)."""

from __future__ import annotations

import importlib.util

import pytest

from embedcli.models.sample import SAMPLES
from support.llamacpp.tools import cache_root

SAMPLE = "sample:gemma-3-270m"
SAMPLE_CACHE = cache_root() / "sample-cache"
MISSING = 'the sample model is not installed: pip install "embedcli[sample]"'


def installed() -> bool:
    return all(importlib.util.find_spec(name) for name in SAMPLES["gemma-3-270m"].packages)


needs_sample = pytest.mark.skipif(not installed(), reason=MISSING)
