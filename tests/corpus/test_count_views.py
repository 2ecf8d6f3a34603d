"""`embedcli count` (issue 24) in its views: skips in walk order in every view, totals past a
context window, paths that stay apart at 80 columns (cut in the middle, folded whole where cuts
would look alike, control characters made visible), numbers the tree never cuts, and one CSV
field for a path with a carriage return.

The oracle for every count is one pass of tiktoken over the whole text,
``len(enc.encode(text, disallowed_special=()))``, computed here.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from support.countruns import as_json, run, tokens
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.tokenization.encodings import visible

runner = make_runner()


# ---------------------------------------------------------------- 4: skips in walk order


def test_skips_come_in_walk_order_in_every_view(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    for i in range(12):  # binaries, larger by name: the largest is counted (and found) first
        (root / f"bin{i:02d}.dat").write_bytes(b"\0" * (100 + 1000 * i))
        (root / f"big{i:02d}.txt").write_text("x " * (600 + i))  # over --max-file-size
        (root / f"ok{i:02d}.txt").write_text(f"file {i}\n")
    args = (str(root), "--max-file-size", "1k", "--workers", "1")
    data = as_json(*args)
    skipped = [s["path"] for s in data["skipped"]]
    assert skipped == sorted(skipped) and len(skipped) == 24
    lines = [json.loads(line) for line in run(*args, "--jsonl").stdout.splitlines()]
    assert [r["path"] for r in lines] == sorted(str(p) for p in root.iterdir())  # walk order
    rows = list(csv.reader(io.StringIO(run(*args, "--csv").stdout)))[1:]
    assert [r[0] for r in rows] == [r["path"] for r in lines]
    table = run(*args).stdout.replace("\n", " ")
    positions = [table.index(Path(p).name + ":") for p in skipped[:5]]
    assert positions == sorted(positions)


# ---------------------------------------------------------------- 6: past the context window


def test_a_total_past_the_context_says_how_many_times(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("hello " * 300_000)
    total = tokens(path.read_text(), "o200k_base")
    out = run(str(path), "--share-of", "gpt-4o").stdout
    assert f"{total / 128_000:.2f}× gpt-4o's 128,000-token context (o200k_base)" in out
    assert "%" not in out.split("token context")[0].splitlines()[-1]
    small = run(str(path), "--share-of", "1M").stdout
    assert f"{total / 1_000_000:.1%} of a 1,000,000-token context (o200k_base)" not in small
    assert (
        f"{tokens(path.read_text()) / 1_000_000:.1%} of a 1,000,000-token context (gpt2)" in small
    )
    data = as_json(str(path), "--share-of", "gpt-4o")
    assert data["context"] == {"name": "gpt-4o", "tokens": 128_000,
                               "share": {"o200k_base": total / 128_000}}  # fmt: skip


# ---------------------------------------------------------------- 7: paths at 80 columns

LANGS = ("langbulgarianmodel", "langcyrillicmodel", "langgreekmodel", "langhebrewmodel",
         "langhungarianmodel", "langrussianmodel", "langthaimodel", "langturkishmodel")  # fmt: skip


def test_paths_at_80_columns_keep_their_names(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    root = tmp_path / "usr" / "lib" / "python3" / "dist-packages"
    chardet = root / "pip" / "_vendor" / "chardet"
    chardet.mkdir(parents=True)
    for i, name in enumerate(LANGS):
        (chardet / f"{name}.py").write_text("model = {'a': 1, 'b': 2} " * (200 - i))
    deep = root / "pip" / "_vendor" / "a" / "very" / "deep" / "folder" / "that" / "goes" / "on"
    deep.mkdir(parents=True)
    (deep / "and_on_for_a_long_way_model.py").write_text("deep = 1 " * 1000)
    out = run(str(root), "--top", "9").stdout
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines), out
    rows = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
    assert len(rows) == 9 and len(set(rows)) == 9, out  # rows that can be told apart
    for name in LANGS:
        assert any(row.endswith(f"{name}.py") for row in rows), out
    assert any(row.endswith("…/and_on_for_a_long_way_model.py") for row in rows), out
    said = "".join(lines[:3])  # the folder they share, said once above the table
    assert said.startswith(f"under {root}/pip/_vendor/"), out


def test_control_characters_in_paths_are_visible(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "new\nline.txt").write_text("one\n")
    (root / "tab\there.txt").write_text("two\n")
    (root / "esc\x1bname.txt").write_text("three\n")
    out = run(str(root), "--workers", "1").stdout
    escape = visible("\x1b") if visible("\x1b") != "\x1b" else "\\x1b"
    assert "new↵line.txt" in out and "tab⇥here.txt" in out and f"esc{escape}name.txt" in out
    assert "\x1b" not in out and "\t" not in out
    data = as_json(str(root))  # JSON keeps the real name
    assert {Path(f["path"]).name for f in data["files"]} == {
        "new\nline.txt",
        "tab\there.txt",
        "esc\x1bname.txt",
    }


def test_a_carriage_return_in_a_path_is_one_csv_field(tmp_path: Path) -> None:
    (tmp_path / "e\rf.txt").write_text("hi\n")
    (tmp_path / "plain.txt").write_text("hi\n")
    result = runner.invoke(app, ["count", str(tmp_path), "--csv", "-q"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout, newline="")))
    assert [Path(r[0]).name for r in rows[1:]] == ["e\rf.txt", "plain.txt"]
    assert all(len(r) == 4 for r in rows)


@pytest.mark.parametrize("name_length", [20, 62, 150])
def test_the_tree_never_cuts_a_number_at_80_columns(
    tmp_path: Path, monkeypatch, name_length: int
) -> None:
    """A long name or three encodings cut the numbers themselves (`8,488…`, `100.…`): the path
    gives way now, cut in the middle."""
    monkeypatch.setenv("COLUMNS", "80")
    deep = tmp_path / "component_long_folder_name" / ("n" * name_length)
    deep.mkdir(parents=True)
    (deep / "module.py").write_text("hello there world " * 40)
    encodings = ["-e", "gpt2", "-e", "cl100k_base", "-e", "o200k_base"]
    result = runner.invoke(app, ["count", str(tmp_path), "--tree", "-q", *encodings])
    assert result.exit_code == 0, result.output
    want = [f"{tokens('hello there world ' * 40, e):,}" for e in encodings[1::2]]
    rows = [line for line in result.stdout.splitlines() if line.startswith("│")]
    assert rows and all(len(line) <= 80 for line in rows)
    for line in rows:
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[1:4] == want and cells[4] == "100.0%" and cells[5] == "1", line


def test_rows_whose_cut_paths_would_look_alike_are_folded_whole(
    tmp_path: Path, monkeypatch
) -> None:
    """With four encodings at 80 columns two paths cut in the middle read 'compon…name.py'
    twice: rows that cannot be told apart. They are folded whole then."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)
    tail = "another_long_folder_name/yet_more_depth/module_file_name.py"
    for which, text in (("aaa", "hello world one two"), ("bbb", "hello world one")):
        path = tmp_path / "deep2" / f"component_{which}_long" / tail
        path.parent.mkdir(parents=True)
        path.write_text(text)
    names = ["-e", "gpt2", "-e", "cl100k_base", "-e", "o200k_base", "-e", "r50k_base"]
    result = runner.invoke(app, ["count", "deep2", "-q", *names])
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stdout.splitlines() if x.startswith("│")]
    assert all(len(x) <= 80 for x in lines)
    first_column = "".join(x.split("│")[1].strip() for x in lines)
    assert f"component_aaa_long/{tail}" in first_column
    assert f"component_bbb_long/{tail}" in first_column


@pytest.mark.parametrize("value", ["1.5", "x", "-1%"])
def test_a_bad_min_share_names_its_option(value: str) -> None:
    result = runner.invoke(app, ["count", ".", "--tree", "--min-share", value])
    expect_error(result, "Invalid value for '--min-share'", code=2)
