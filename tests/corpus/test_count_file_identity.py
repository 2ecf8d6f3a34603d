"""`embedcli count` (issue 24) counts each real file once whatever names reach it: a folder or a
file reached twice, hard links, symlinks as ripgrep has them (loops and broken links reported),
names that are not UTF-8, folders that may not be searched, and a folder named outright though
its repository ignores it.

The oracle for every count is one pass of tiktoken over the whole text,
``len(enc.encode(text, disallowed_special=()))``, computed here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.countruns import as_json, run, tokens
from support.helpers import expect_error, make_runner

from embedcli.cli import app

runner = make_runner()


# ---------------------------------------------------------------- 1, 2: each real file once


def test_a_name_that_is_not_utf8_and_its_escape_as_text_are_two_files(tmp_path: Path) -> None:
    root = tmp_path / "names"
    root.mkdir()
    (root / os.fsdecode(b"bad\xff\xfename.txt")).write_text("the bytes\n")
    (root / "bad\\xff\\xfename.txt").write_text("the escape, as text, and more words\n")
    data = as_json(str(root))
    assert data["totals"]["files"] == 2 and data["totals"]["skipped"] == 0
    expected = tokens("the bytes\n") + tokens("the escape, as text, and more words\n")
    assert data["totals"]["tokens"]["gpt2"] == expected
    names = sorted(Path(f["path"]).name for f in data["files"])
    assert names == ["bad\\\\xff\\\\xfename.txt", "bad\\xff\\xfename.txt"]  # never the same
    table = run(str(root)).stdout
    assert "2 files counted · 0 skipped" in table


@pytest.fixture
def overlap(tmp_path: Path) -> Path:
    """ov/a.txt, ov/sub/b.txt and ov/link -> sub, as the issue made them."""
    (tmp_path / "ov" / "sub").mkdir(parents=True)
    (tmp_path / "ov" / "a.txt").write_text("hello\n")
    (tmp_path / "ov" / "sub" / "b.txt").write_text("world\n")
    (tmp_path / "ov" / "link").symlink_to("sub")
    return tmp_path


def test_a_folder_reached_twice_is_counted_once(overlap: Path) -> None:
    truth = tokens("hello\n") + tokens("world\n")
    for args in (["ov", "ov/sub"], ["ov/sub", "ov"], ["ov", "ov/sub", "--follow"], ["ov", "ov"]):
        data = as_json(*args, cwd=overlap)
        assert data["totals"]["files"] == 2, args
        assert data["totals"]["tokens"]["gpt2"] == truth, args
        assert {f["path"] for f in data["files"]} == {"ov/a.txt", "ov/sub/b.txt"}, args
        reasons = [s["reason"] for s in data["skipped"]]
        assert "symlink loop" not in reasons, args  # a duplicate is not a loop
    plain = {s["path"]: s["reason"] for s in as_json("ov", "ov/sub", cwd=overlap)["skipped"]}
    assert plain == {"ov/link": "symlink to a folder, not followed (name it, or --follow)"}
    followed = as_json("ov", "--follow", cwd=overlap)
    assert {s["path"]: s["reason"] for s in followed["skipped"]} == {
        "ov/link": "the same folder as ov/sub"  # the real path is the name kept
    }
    named = as_json("ov/link", "ov/sub", cwd=overlap)  # a link named outright is followed
    assert [f["path"] for f in named["files"]] == ["ov/link/b.txt"]
    assert named["skipped"] == [{"path": "ov/sub", "reason": "the same folder as ov/link"}]
    help_text = run("--help").stdout
    assert "--follow" in help_text and "ripgrep" in help_text


def test_a_file_reached_by_two_names_is_counted_once(overlap: Path) -> None:
    os.link(overlap / "ov" / "a.txt", overlap / "ov" / "hard.txt")
    (overlap / "ov" / "soft.txt").symlink_to("a.txt")
    data = as_json("ov", "ov/a.txt", "ov/soft.txt", cwd=overlap)
    assert data["totals"]["files"] == 2
    assert data["totals"]["tokens"]["gpt2"] == tokens("hello\n") + tokens("world\n")
    reasons = {s["path"]: s["reason"] for s in data["skipped"]}
    assert reasons["ov/hard.txt"] == "the same file as ov/a.txt"
    assert reasons["ov/soft.txt"] == "the same file as ov/a.txt"  # named: followed, once
    paths = [s["path"] for s in data["skipped"]]
    assert paths == ["ov/hard.txt", "ov/link", "ov/soft.txt"]  # the walk left soft.txt to its PATH
    walked = {s["path"]: s["reason"] for s in as_json("ov", cwd=overlap)["skipped"]}
    assert walked["ov/soft.txt"] == "symlink, not followed (name it, or --follow)"
    globbed = as_json("ov/*.txt", "ov/a.txt", cwd=overlap)
    assert globbed["totals"]["files"] == 1


def test_symlink_loops_and_broken_links_are_reported(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    (tree / "src" / "pkg").mkdir(parents=True)
    for name in ("README.md", "src/main.py", "src/pkg/util.py"):
        (tree / name).write_text(f"text of {name}\n")
    (tree / "src" / "loop").symlink_to(tree / "src")
    (tree / "src" / "dangling.txt").symlink_to(tree / "nowhere.txt")
    data = as_json(".", cwd=tree)
    reasons = {s["path"]: s["reason"] for s in data["skipped"]}
    assert reasons["src/loop"] == "symlink to a folder, not followed (name it, or --follow)"
    assert reasons["src/dangling.txt"] == "broken link"
    assert len({f["path"] for f in data["files"]}) == data["totals"]["files"] == 3
    followed = as_json(".", "--follow", cwd=tree)
    reasons = {s["path"]: s["reason"] for s in followed["skipped"]}
    assert reasons["src/loop"] == "symlink loop"  # it points at a folder it is inside
    assert reasons["src/dangling.txt"] == "broken link"
    assert followed["totals"] == data["totals"]


def test_hostile_names_folders_and_files(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / os.fsdecode(b"bad\xff\xfe.txt")).write_text("y\n")  # a name that is not UTF-8
    (root / ".gitignore").write_text("\ufeff*.log\n\\\n[z-a]\n")  # BOM, and lines git drops
    (root / "x.log").write_text("ignored\n")
    (root / "ok.txt").write_text("fine\n")
    for args in ([], ["--csv"], ["--jsonl"], ["--tree"]):
        result = runner.invoke(app, ["count", str(root), *args])
        assert result.exit_code == 0, result.output
    data = json.loads(runner.invoke(app, ["count", str(root), "--json"]).stdout)
    names = {Path(f["path"]).name for f in data["files"]}
    assert names == {"bad\\xff\\xfe.txt", "ok.txt"}  # shown escaped; x.log ignored
    expect_error(runner.invoke(app, ["count", ""]), "an empty PATH")
    expect_error(runner.invoke(app, ["count", "data://x"]), "cannot")
    expect_error(runner.invoke(app, ["count", ".", "--max-file-size", "9" * 400]), "size", code=2)
    expect_error(
        runner.invoke(app, ["count", ".", "--max-file-size", "9" * 15 + "T"]), "2**40", code=2
    )
    expect_error(runner.invoke(app, ["count", ".", "--tree", "--min-share", "x"]), "share", code=2)


def test_a_file_in_a_folder_that_may_not_be_searched_is_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a non-root user, stat of a file in a folder without x fails with EACCES, and
    os.path.lexists says False: the error said "no such file or folder"."""
    import errno

    from embedcli.corpus import selection

    target = str(tmp_path / "nox" / "f.txt")
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", target)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(selection.os, "stat", stat)
    monkeypatch.setattr(
        selection.os.path, "lexists", lambda p: False if str(p) == target else os.path.exists(p)
    )
    result = runner.invoke(app, ["count", target])
    expect_error(result, f"cannot read {target}: Permission denied")


def test_a_second_name_met_twice_is_one_skip(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sym" / "real").mkdir(parents=True)
    (tmp_path / "sym" / "other").mkdir()
    (tmp_path / "sym" / "real" / "a.txt").write_text("hello\n")
    os.link(tmp_path / "sym" / "real" / "a.txt", tmp_path / "sym" / "other" / "hard.txt")
    result = runner.invoke(app, ["count", "sym", "sym/real/a.txt", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["totals"]["files"], data["totals"]["skipped"]) == (1, 1)
    assert data["skipped"] == [
        {"path": "sym/real/a.txt", "reason": "the same file as sym/other/hard.txt"}
    ]


def test_a_folder_named_outright_is_walked_though_its_repository_ignores_it(
    tmp_path: Path, monkeypatch
) -> None:
    """A venv's site-packages inside a project counted 0 files, silently."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(".venv/\n")
    lib = tmp_path / ".venv" / "lib"
    lib.mkdir(parents=True)
    (lib / "mod.py").write_text("hello world\n")
    (lib / ".gitignore").write_text("skip.py\n")
    (lib / "skip.py").write_text("not this\n")
    (tmp_path / "main.py").write_text("hi\n")
    named = json.loads(runner.invoke(app, ["count", ".venv/lib", "--json"]).stdout)
    assert [f["path"] for f in named["files"]] == [".venv/lib/mod.py"]  # its own rules apply
    walked = json.loads(runner.invoke(app, ["count", ".", "--json"]).stdout)
    assert [f["path"] for f in walked["files"]] == ["main.py"]  # ignored when walked into


def test_a_link_to_a_file_that_may_not_be_read_is_not_called_broken(
    tmp_path: Path, monkeypatch
) -> None:
    """As a non-root user, stat through a link into a folder without x fails with EACCES: the
    target is there, so the link is not broken."""
    import errno

    from embedcli.corpus import selection

    target = tmp_path / "nox" / "f.txt"
    target.parent.mkdir()
    target.write_text("t\n")
    (tmp_path / "ok").mkdir()
    link = tmp_path / "ok" / "link"
    link.symlink_to(target)
    real = os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path) in (str(link), str(target)) and kwargs.get("follow_symlinks", True):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(selection.os, "stat", stat)
    result = runner.invoke(app, ["count", str(link), "--json"])
    assert result.exit_code == 0, result.output
    assert [s["reason"] for s in json.loads(result.stdout)["skipped"]] == [
        "unreadable: Permission denied"
    ]


def test_a_folder_whose_git_cannot_be_looked_for_is_walked(tmp_path: Path, monkeypatch) -> None:
    """Path.exists raises PermissionError in a folder that may not be searched: count of such a
    folder named outright failed with an Error naming a .git nobody gave."""
    (tmp_path / "a.txt").write_text("hi\n")
    real = Path.exists

    def exists(self, *args, **kwargs):
        if self.name == ".git" and self.parent == tmp_path:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", exists)
    result = runner.invoke(app, ["count", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["totals"]["files"] == 1


def test_a_glob_in_a_folder_that_may_not_be_searched_names_its_files(
    tmp_path: Path, monkeypatch
) -> None:
    """Path.exists of the pattern itself raises EACCES there: the pattern was listed as the one
    skipped file; each file it matches is judged on its own now."""
    (tmp_path / "f.txt").write_text("hi\n")
    pattern = str(tmp_path / "*.txt")
    real = Path.exists

    def exists(self, *args, **kwargs):
        if str(self) == pattern:
            raise PermissionError(13, "Permission denied", pattern)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "exists", exists)
    result = runner.invoke(app, ["count", pattern, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [Path(f["path"]).name for f in data["files"]] == ["f.txt"] and data["skipped"] == []
