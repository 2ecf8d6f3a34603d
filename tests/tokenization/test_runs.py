"""A whitespace run tiktoken cannot split (embedcli/tokenization/runs.py): refused with one
line by every command that tokenizes, skipped with its reason by `count`, and never a Rust
panic on stderr; the sampled search finds exactly what a plain search finds."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import expect_error, make_runner, script_env

from embedcli.cli import app
from embedcli.tokenization import runs
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()
SCRIPT = str(Path(sys.executable).parent / "embedcli")
LONG = " " * 1_200_000 + "x\n"  # tiktoken itself panics on this (1,000,194 spaces do)


def naive(text: str, limit: int) -> tuple[int, int] | None:
    spans = (m.span() for m in re.finditer(r"\s+", text) if m.end() - m.start() >= limit)
    # Unicode White_Space: Python's \s also takes U+001C-U+001F, which tiktoken does not
    return next(
        (s for s in spans if not any(c in "\x1c\x1d\x1e\x1f" for c in text[s[0] : s[1]])), None
    )


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(" \t\n\u3000\x1c\u00a0"), st.integers(0, 400)), max_size=12),
    st.integers(1, 40),
)
def test_the_sampled_search_finds_what_a_plain_one_does(parts, gap) -> None:
    # small limits, so every boundary case fits: runs just under, at and over the limit,
    # across sample points or between them, at either end of the text
    text = "".join(("ab" * gap)[: 1 + gap % 7] + ch * n for ch, n in parts)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runs, "MAX_WHITESPACE_RUN", 100)
        patch.setattr(runs, "_STRIDE", 8)
        assert runs.longest_run(text) == naive(text, 100)


def test_tiktoken_fails_where_embedcli_refuses_and_splits_just_under() -> None:
    enc = get_encoding("cl100k_base")
    short = " " * (runs.MAX_WHITESPACE_RUN - 1) + "x"
    assert runs.longest_run(short) is None
    assert len(enc.encode_ordinary(short)) > 0  # what embedcli still counts, tiktoken splits
    assert runs.longest_run(LONG) == (0, 1_200_000)


def test_separators_that_tiktoken_splits_are_no_run() -> None:
    text = "a" + "\x1c" * 1_100_000 + "b"  # Python's whitespace, not tiktoken's: it splits them
    assert runs.longest_run(text) is None
    result = runner.invoke(app, ["tokenize", "-", "--count", "-e", "cl100k_base"], input=text)
    assert result.exit_code == 0, result.output
    assert int(result.stdout) == len(get_encoding("cl100k_base").encode_ordinary(text))


@pytest.mark.parametrize("encoding", ["gpt2", "o200k_base"])
@pytest.mark.parametrize(
    "args",
    [
        ["tokenize", "-", "--count"],
        ["tokenize", "-", "--encode"],
        ["tokenize", "-"],
        ["tokenize", "-", "--count", "--allow-special"],
    ],
)
def test_every_tokenizing_command_refuses_it_in_one_line(args, encoding) -> None:
    result = runner.invoke(app, [*args, "-e", encoding], input=LONG)
    expect_error(result, "a run of 1,200,000 whitespace characters: tiktoken's regex gives up")


def test_count_skips_the_file_and_counts_the_rest(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text(LONG, encoding="utf-8")
    (tmp_path / "ok.txt").write_text("hello world\n", encoding="utf-8")
    import json

    done = runner.invoke(app, ["count", str(tmp_path), "-e", "cl100k_base", "--json"])
    assert done.exit_code == 0, done.output
    got = json.loads(done.stdout)
    assert [f["path"] for f in got["files"]] == [str(tmp_path / "ok.txt")]
    (skip,) = got["skipped"]
    assert skip["path"] == str(tmp_path / "long.txt")
    assert skip["reason"].startswith("a run of 1,200,000 whitespace characters")
    shown = runner.invoke(app, ["count", str(tmp_path), "-e", "cl100k_base"])
    assert "skipped (1 whitespace run)" in shown.stdout


def test_the_fast_engine_refuses_it_too(monkeypatch) -> None:
    pytest.importorskip("fastokens")
    monkeypatch.setenv("EMBEDCLI_COUNT_ENGINE", "fastokens")  # fastokens could count it
    result = runner.invoke(app, ["tokenize", "-", "--count", "-e", "o200k_base"], input=LONG)
    expect_error(result, "a run of 1,200,000 whitespace characters")


def test_no_panic_reaches_the_terminal(tmp_path: Path) -> None:
    """tiktoken's panic prints from Rust, past Python: only a refusal before it keeps stderr
    to one line."""
    source = tmp_path / "long.txt"
    source.write_text(LONG, encoding="utf-8")
    done = subprocess.run(
        [SCRIPT, "tokenize", "--count", "-f", str(source)],
        capture_output=True,
        text=True,
        env={**script_env(tmp_path), "RUST_BACKTRACE": "1"},
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("Error: a run of 1,200,000 whitespace characters")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
