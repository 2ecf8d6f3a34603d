"""bench/mutate stays runnable: each mutation's line is in its file once, and its tests exist."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys

from support.helpers import REPO


def load_mutate():
    loader = importlib.machinery.SourceFileLoader("mutate", str(REPO / "bench" / "mutate"))
    spec = importlib.util.spec_from_loader("mutate", loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate"] = module  # dataclasses look their module up while it runs
    loader.exec_module(module)
    return module


def test_every_mutation_applies_once_and_names_real_tests() -> None:
    mutate = load_mutate()
    assert len(mutate.MUTATIONS) >= 20
    assert len({m.name for m in mutate.MUTATIONS}) == len(mutate.MUTATIONS)
    for mutation in mutate.MUTATIONS:
        text = (REPO / mutation.path).read_text(encoding="utf-8")
        assert text.count(mutation.before) == 1, mutation.name
        assert mutation.after != mutation.before
        assert all((REPO / test).is_file() for test in mutation.tests), mutation.name
