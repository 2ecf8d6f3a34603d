"""Every golden file's numbers, read back and checked against computations made in the test
(tests/support/golden_oracle.py): a golden file is never the only check of a number it shows."""

from __future__ import annotations

import pytest
from support.golden_oracle import CHECKERS, check
from support.helpers import GOLDEN

FILES = sorted(p.name for p in GOLDEN.glob("*.txt"))


@pytest.mark.parametrize("name", FILES)
def test_golden_numbers_hold(name: str) -> None:
    check(name, (GOLDEN / name).read_text(encoding="utf-8"))


def test_every_golden_file_has_a_checker_and_every_checker_a_file() -> None:
    import re

    stems = {re.sub(r"(_80|_120)?\.txt$", "", name) for name in FILES}
    assert stems == set(CHECKERS)


def test_a_golden_file_regenerated_over_a_bug_fails() -> None:
    # The vectors of embed_batch with one value changed in the fourth decimal place.
    text = (GOLDEN / "embed_batch_80.txt").read_text(encoding="utf-8")
    broken = text.replace("-0.5312", "-0.5313", 1)
    assert broken != text
    with pytest.raises(AssertionError):
        check("embed_batch_80.txt", broken)
