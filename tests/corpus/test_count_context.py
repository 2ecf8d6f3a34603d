"""count --share-of N: a window written as a number of tokens (200000, 200,000, 200k, 1.5M) or a
model's name; what is not a whole count in ASCII digits, grouped by three, is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner

from embedcli.cli import app

runner = make_runner()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("A short file to count. " * 3, encoding="utf-8")
    return tmp_path


def test_a_context_is_a_whole_number_of_tokens_in_ascii_digits(tree: Path) -> None:
    """1.5k is 1,500 tokens; 1.9 tokens is no count (it was floored to 1), and full-width digits
    are not a number embedcli reads (they were called out of range)."""
    half = runner.invoke(app, ["count", str(tree / "README.md"), "--share-of", "1.5k"])
    assert "of a 1,500-token context" in half.stdout
    for fraction in ("1.9", "0.5", "1.0001k"):
        result = runner.invoke(app, ["count", str(tree / "README.md"), "--share-of", fraction])
        expect_error(result, f"whole number of tokens, got {fraction}", code=2)
    wide = runner.invoke(
        app, ["count", str(tree / "README.md"), "--share-of", "\uff11\uff12\uff18"]
    )
    expect_error(wide, "takes the digits 0-9", code=2)


@pytest.mark.parametrize("written", ["1,5k", "12,5", "1,00", "1,0000", "_1", "1_", "1__0", "1."])
def test_a_context_separator_is_only_between_groups_of_three(tree: Path, written: str) -> None:
    """Every comma and underscore was dropped: a decimal comma (1,5k, meant 1,500) counted as
    15,000 tokens, with exit 0. Now 1,000 and 1_000 are read, and what is not grouped by three
    is refused, saying how a count is written."""
    result = runner.invoke(app, ["count", str(tree / "README.md"), "--share-of", written])
    expect_error(
        result, f"written 200000, 200,000, 200k or 1.5M (or a model's name), got {written}", code=2
    )
    for grouped, tokens in (("1,000", "1,000"), ("1_000", "1,000"), ("1,000,000", "1,000,000")):
        shown = runner.invoke(app, ["count", str(tree / "README.md"), "--share-of", grouped])
        assert f"of a {tokens}-token context" in shown.stdout, shown.output


def test_the_old_spelling_still_works_with_a_warning(tree: Path) -> None:
    # --context was renamed --share-of (--context-length is a table's rows everywhere else).
    new = runner.invoke(app, ["count", str(tree / "README.md"), "--share-of", "1k", "--json"])
    old = runner.invoke(app, ["count", str(tree / "README.md"), "--context", "1k", "--json"])
    assert old.exit_code == 0 and old.stdout == new.stdout and new.stderr == ""
    assert old.stderr == "Warning: --context is deprecated and will be removed; use --share-of\n"
    both = ["count", str(tree / "README.md"), "--context", "1k", "--share-of", "2k"]
    expect_error(runner.invoke(app, both), "pass --share-of or the old --context, not both", 2)
