"""The counting engine as users meet it: `count --engine-info`, `count --json`'s "engines", the
EMBEDCLI_COUNT_ENGINE switch, and the same totals from every engine, in this process, in a pool
of processes and on Dask workers (through the installed console script).

tests/tokenization/test_engines.py proves fastokens exact; here the oracle is the same command with
EMBEDCLI_COUNT_ENGINE=tiktoken, and one pass of tiktoken computed here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner, script_env

from embedcli.cli import app
from embedcli.tokenization import engines
from embedcli.tokenization.encodings import get_encoding

pytest.importorskip("fastokens")
runner = make_runner()
SCRIPT = str(Path(sys.executable).parent / "embedcli")
NAME = "cl100k_base"
PIECE = "The keeper counted ships, 1234 of them. caf\u00e9 \u4e2d\u6587 \U0001f44d\U0001f3fd\n"


@pytest.fixture(autouse=True)
def fresh_engines():
    engines._reset()
    yield
    engines._reset()


def test_engine_info_names_the_engine_and_why() -> None:
    args = ["count", "--engine-info", "-e", "gpt2", "-e", "cl100k_base", "-m", "gpt-4o", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = {r["encoding"]: r for r in json.loads(result.stdout)["engines"]}
    assert set(rows) == {"gpt2", "cl100k_base", "o200k_base"}
    assert rows["cl100k_base"]["engine"] == engines.fast_label()
    assert rows["cl100k_base"]["min_chars"] == engines.MIN_CHARS["cl100k_base"]
    assert rows["o200k_base"]["engine"] == engines.tiktoken_label()
    assert "disagrees with tiktoken" in rows["o200k_base"]["reason"]
    assert rows["gpt2"]["engine"] == engines.tiktoken_label()
    assert rows["gpt2"]["reason"] == "fastokens disagrees with tiktoken on ' \\u180e1'"
    assert rows["gpt2"]["min_chars"] is None
    shown = runner.invoke(app, ["count", "--engine-info", "-e", "cl100k_base"])
    assert shown.exit_code == 0 and "fastokens" in shown.stdout and "11 Mi chars" in shown.stdout


def test_engine_info_of_what_fastokens_does_not_serve(monkeypatch) -> None:
    monkeypatch.setenv(engines.ENV, "tiktoken")
    result = runner.invoke(app, ["count", "--engine-info", "--json", "-e", "cl100k_base"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["engines"]
    assert row["engine"] == engines.tiktoken_label()
    assert row["reason"] == f"{engines.ENV}=tiktoken" and row["min_chars"] is None
    monkeypatch.setenv(engines.ENV, "fastokens")
    (row,) = json.loads(
        runner.invoke(app, ["count", "--engine-info", "--json", "-e", "cl100k_base"]).stdout
    )["engines"]
    assert row["engine"] == engines.fast_label() and row["min_chars"] == 0
    monkeypatch.delenv(engines.ENV)
    monkeypatch.setattr(engines, "PROVEN", {"0.0.1": ("cl100k_base",)})
    args = ["count", "--engine-info", "--json", "-e", "cl100k_base"]
    (row,) = json.loads(runner.invoke(app, args).stdout)["engines"]
    assert "is not proven exact for cl100k_base (proven: 0.0.1)" in row["reason"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["count", "--engine-info", "."], "--engine-info counts nothing: drop PATH"),
        (["count", "--engine-info", "--csv"], "--engine-info counts nothing: drop --csv"),
        (["count", "--engine-info", "--engine", "dask"], "workers: drop --engine dask"),
        (["count", "--engine-info", "--scheduler", "tcp://127.0.0.1:1"], "drop --scheduler"),
        (["count", "--engine-info", "--list-models"], "model table: drop --engine-info"),
    ],
)
def test_engine_info_refuses_what_it_does_not_do(args: list[str], message: str) -> None:
    expect_error(runner.invoke(app, args), message, code=2)


def test_engine_info_of_a_context_model_is_its_encoding() -> None:
    args = ["count", "--engine-info", "--json", "--share-of", "gpt-4o"]
    rows = json.loads(runner.invoke(app, args).stdout)["engines"]
    assert [row["encoding"] for row in rows] == ["o200k_base"]


@pytest.mark.parametrize(
    "args",
    [
        ["count", "-"],
        ["tokenize", "--count", "-"],
        # refused here, before the scheduler is dialled (it is not there) or a worker sees it
        ["count", ".", "--engine", "dask", "--scheduler", "tcp://127.0.0.1:1"],
    ],
)
def test_an_unknown_engine_setting_is_one_error_line(args: list[str], monkeypatch) -> None:
    monkeypatch.setenv(engines.ENV, "fast")
    result = runner.invoke(app, [*args, "-e", NAME], input="hello world")
    message = f"{engines.ENV} must be one of auto, tiktoken, fastokens, got 'fast'"
    expect_error(result, message, code=2)


def _tree(root: Path) -> None:
    """Small files and a few large ones."""
    root.mkdir()
    for i in range(40):
        (root / f"f{i:02d}.txt").write_text(PIECE * (i + 1), encoding="utf-8")
    for i in range(4):
        (root / f"big{i}.txt").write_text(f"{i} {PIECE * 20_000}", encoding="utf-8")


def _count(tmp_path: Path, root: Path, *args: str, engine: str = "fastokens") -> dict:
    env = {**script_env(tmp_path), engines.ENV: engine}
    argv = [SCRIPT, "count", str(root), "-e", NAME, "--json", "--quiet", *args]
    done = subprocess.run(argv, env=env, capture_output=True, timeout=240)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


@pytest.mark.parametrize("where", [["--workers", "1"], ["--workers", "2"]])
def test_count_totals_do_not_depend_on_the_engine(tmp_path: Path, where: list[str]) -> None:
    """In this process (one worker) and in a pool of two: fastokens counts (the json says so),
    and every file's count is tiktoken's; by default, on a tree this small, tiktoken counts."""
    root = tmp_path / "tree"
    _tree(root)
    fast = _count(tmp_path, root, *where)
    reference = _count(tmp_path, root, *where, engine="tiktoken")
    assert fast["files"] == reference["files"] and fast["totals"] == reference["totals"]
    assert reference["engines"] == {NAME: [engines.tiktoken_label()]}
    assert fast["engines"] == {NAME: [engines.fast_label()]}
    assert _count(tmp_path, root, *where, engine="auto")["engines"] == reference["engines"]
    enc = get_encoding(NAME)
    text = (root / "big1.txt").read_text(encoding="utf-8")
    (big,) = [f for f in fast["files"] if f["path"].endswith("big1.txt")]
    assert big["tokens"][NAME] == len(enc.encode_ordinary(text))


def test_dask_workers_count_with_the_fast_engine(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    root = tmp_path / "tree"
    _tree(root)
    fast = _count(tmp_path, root, "--engine", "dask", "--workers", "2")
    reference = _count(tmp_path, root, engine="tiktoken")
    key = lambda f: f["path"]  # noqa: E731
    assert sorted(fast["files"], key=key) == sorted(reference["files"], key=key)
    assert fast["totals"] == reference["totals"]
    assert fast["engines"] == {NAME: [engines.fast_label()]}


def test_tokenize_count_of_a_large_text_is_tiktoken_s(tmp_path: Path) -> None:
    """Past MIN_CHARS per thread the calling thread builds the fast tables while the others
    count (forced here with EMBEDCLI_COUNT_ENGINE=fastokens): tiktoken's one-pass count."""
    path = tmp_path / "big.txt"
    path.write_text(PIECE * 40_000, encoding="utf-8")
    expected = len(get_encoding(NAME).encode_ordinary(path.read_text(encoding="utf-8")))
    for engine in ("fastokens", "auto", "tiktoken"):
        env = {**script_env(tmp_path), engines.ENV: engine}
        argv = [SCRIPT, "tokenize", "--count", "-e", NAME, "-f", str(path)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        assert int(done.stdout.strip().replace(",", "")) == expected
