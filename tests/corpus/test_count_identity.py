"""`embedcli count` (issue 24): each real file counted once whatever names reach it, symlinks as
ripgrep has them, nothing that hangs or fails the run, skips in walk order, stdin streamed like a
file, totals past a context window, paths that stay apart at 80 columns, and memory that follows
the view rather than the tree.

The oracle for every count is one pass of tiktoken over the whole text,
``len(enc.encode(text, disallowed_special=()))``, computed here.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner, run_script, script_env

from embedcli.cli import app
from embedcli.corpus import count as countjob
from embedcli.corpus import pieces as corpus_pieces
from embedcli.corpus import stdin as corpus_stdin
from embedcli.tokenization.encodings import get_encoding, visible

runner = make_runner()


def tokens(text: str, name: str = "gpt2") -> int:
    return len(get_encoding(name).encode(text, disallowed_special=()))


def run(*args: str, cwd: Path | None = None, input: bytes | None = None):
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = runner.invoke(app, ["count", *args], input=input)
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result


def as_json(*args: str, cwd: Path | None = None, input: bytes | None = None) -> dict:
    return json.loads(run(*args, "--json", cwd=cwd, input=input).stdout)


@pytest.fixture
def no_hang():
    """A test that would wait forever (a FIFO opened for reading) fails after 20 s instead."""

    def expired(*args: object) -> None:
        raise TimeoutError("count waited for a FIFO")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


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


# ---------------------------------------------------------------- 3: never fail, never hang


def test_a_fifo_swapped_in_is_skipped_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    result = corpus_pieces.count_task([corpus_pieces.Piece(0, str(fifo), 0, 10)], ("gpt2",))
    assert result[0].counts is None and "not a regular file" in result[0].error


def test_a_dangling_link_and_a_fifo_under_a_url_are_skipped(tmp_path: Path, no_hang) -> None:
    pytest.importorskip("fsspec")
    root = tmp_path / "u"
    root.mkdir()
    (root / "a.txt").write_text("counted\n")
    (root / "dangling.txt").symlink_to(root / "nowhere.txt")
    os.mkfifo(root / "pipe")
    data = as_json(f"file://{root}")
    assert [Path(f["path"]).name for f in data["files"]] == ["a.txt"]
    assert data["totals"]["tokens"]["gpt2"] == tokens("counted\n")
    reasons = {Path(s["path"]).name: s["reason"] for s in data["skipped"]}
    assert reasons == {"dangling.txt": "broken link", "pipe": "not a regular file"}
    named = as_json(f"file://{root}/pipe")  # named outright: skipped, not opened
    assert named["skipped"][0]["reason"] == "not a regular file"


def test_a_fifo_is_skipped_with_its_kind_never_waited_for(tmp_path: Path, no_hang) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a.txt").write_text("counted\n")
    for target in (str(tmp_path), str(tmp_path / "pipe")):
        data = as_json(target)
        assert data["skipped"] == [
            {"path": str(tmp_path / "pipe"), "reason": "not a regular file (a FIFO)"}
        ]


# ---------------------------------------------------------------- 9: Dask and signals


SIGTERM_WHILE_STARTING = """
import os, signal, sys, threading
import distributed
from embedcli.corpus.engine_dask import dask_results  # noqa: E402
from embedcli.corpus.pieces import Piece  # noqa: E402


class Terminated(BaseException):  # as the command's own SIGTERM handler raises
    pass


def terminate(signum, frame):
    raise Terminated(signum)


made = []
real = distributed.LocalCluster


def starting(**kwargs):
    # timeout(1), systemd, Kubernetes: SIGTERM while the cluster starts (it takes seconds)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM)).start()
    made.append(real(**kwargs))
    return made[-1]


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, terminate)
    distributed.LocalCluster = starting
    task = [(Piece(0, sys.argv[1], 0, os.path.getsize(sys.argv[1])),)]
    try:
        list(dask_results(task, ("gpt2",), "skip", workers=2))
    except Terminated:
        print("terminated;", made[0].status.name if made else "half-started")
"""


def test_sigterm_while_a_local_cluster_starts_is_held_then_acts(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    # SIGTERM was not held as Ctrl-C is: it cut the start-up short, and the half-started
    # cluster logged its shutdown on stderr as the interpreter exited.
    script = tmp_path / "sigterm.py"
    script.write_text(SIGTERM_WHILE_STARTING)
    (tmp_path / "text.txt").write_text("The keeper counted ships. " * 100)
    done = run_script([sys.executable, str(script), str(tmp_path / "text.txt")], tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    assert done.stdout.split() == ["terminated;", "closed"]


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


# ---------------------------------------------------------------- 5: stdin, streamed

PEAK = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr)\n"
    "sys.exit(done.returncode)\n"
)


def test_stdin_over_64_mib_is_counted_streamed(tmp_path: Path) -> None:
    unit = "The keeper counted ships. "
    n = (65 << 20) // len(unit) + 1  # a little over 64 MiB
    data = (unit * n).encode()
    a, b = tokens(unit * 3), tokens(unit * 4)  # one pass: a run of units adds b - a each
    argv = [sys.executable, "-c", PEAK, str(Path(sys.executable).parent / "embedcli"), "count",
            "-", "--json", "--quiet"]  # fmt: skip
    done = subprocess.run(
        argv, input=data, capture_output=True, env=script_env(tmp_path), timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    result = json.loads(done.stdout)
    assert result["files"] == [
        {"path": "-", "bytes": len(data), "tokens": {"gpt2": a + (b - a) * (n - 3)}}
    ]
    peak = int(done.stderr.decode().split()[-1])
    assert peak < 130 << 20, f"{peak / 2**20:.0f} MiB for 65 MiB of stdin: it was held whole"


@pytest.mark.parametrize("block", [64, 1000])
def test_stdin_cut_into_blocks_counts_as_one_pass(block: int, monkeypatch) -> None:
    monkeypatch.setattr(corpus_stdin, "STDIN_BLOCK", block)
    monkeypatch.setattr(corpus_stdin, "READ_BYTES", 77)
    rng = random.Random(block)
    parts = ["word", " ", "  ", "\n", "\r\n", "\t", "\x85", "\u2028", "\u3000", "é", "日本",
             "😀", "<|endoftext|>", "123", "'s", "!!"]  # fmt: skip
    text = "".join(rng.choice(parts) for _ in range(20_000))
    for name in ("gpt2", "o200k_base"):
        data = as_json("-", "-e", name, input=text.encode())
        assert data["files"][0]["tokens"][name] == tokens(text, name)
    latin = ("word " * 500).encode() + "café".encode("latin-1") + b" more"
    skipped = as_json("-", input=latin)["skipped"]
    assert skipped == [{"path": "-", "reason": "not UTF-8 (byte 0xE9 at offset 2,503)"}]
    assert as_json("-", input=b"text\0binary")["skipped"][0]["reason"] == "binary"


# ---------------------------------------------------------------- 6: past the context window


def test_a_total_past_the_context_says_how_many_times(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text("hello " * 300_000)
    total = tokens(path.read_text(), "o200k_base")
    out = run(str(path), "--context", "gpt-4o").stdout
    assert f"{total / 128_000:.2f}× gpt-4o's 128,000-token context (o200k_base)" in out
    assert "%" not in out.split("token context")[0].splitlines()[-1]
    small = run(str(path), "--context", "1M").stdout
    assert f"{total / 1_000_000:.1%} of a 1,000,000-token context (o200k_base)" not in small
    assert (
        f"{tokens(path.read_text()) / 1_000_000:.1%} of a 1,000,000-token context (gpt2)" in small
    )
    data = as_json(str(path), "--context", "gpt-4o")
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


# ---------------------------------------------------------------- 8: memory follows the view


def test_the_walk_is_scheduled_in_windows_and_held_bounded(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "many"
    for i in range(3000):
        folder = root / f"d{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i:04d}.txt").write_text(f"file number {i} says hello\n" * (1 + i % 5))
    monkeypatch.setattr(countjob, "WINDOW_FILES", 50)
    monkeypatch.setattr(countjob, "HELD_FILES", 100)
    most = [0]
    real = countjob.InOrder.register

    def register(self, item):
        most[0] = max(most[0], self.waiting + 1)
        return real(self, item)

    monkeypatch.setattr(countjob.InOrder, "register", register)
    lines = run(str(root), "--jsonl", "--workers", "2").stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["path"] for r in records] == sorted(str(p) for p in root.rglob("*.txt"))
    assert 0 < most[0] <= 100 + 50  # never the whole tree
    total = sum(r["tokens"]["gpt2"] for r in records)
    assert total == sum(tokens(p.read_text()) for p in root.rglob("*.txt"))
    kept = []
    from embedcli.corpus import report

    real_add = report.CountReport.add

    def add(self, item):
        real_add(self, item)
        kept.append(len(self.files))

    monkeypatch.setattr(report.CountReport, "add", add)
    table = run(str(root), "--top", "3").stdout
    assert f"{total:,} tokens (gpt2)" in table and "showing 3 of 3,000 files" in table
    assert max(kept) <= 2 * 3 + 64  # the table holds the rows it can show, not every file


# ---------------------------------------------------------------- a file that changes after listing


def _listed(path: Path) -> corpus_pieces.Piece:
    from embedcli.corpus.selection import Found

    info = path.stat()
    found = Found(path.name, str(path), info.st_size, (info.st_ino, info.st_mtime_ns))
    (piece,) = corpus_pieces.pieces_of([found])
    return piece


@pytest.mark.parametrize("change", ["longer", "same-size", "symlink", "shorter"])
def test_a_file_changed_after_listing_is_never_counted_as_a_prefix(
    tmp_path: Path, change: str
) -> None:
    """A file rewritten longer was counted as the prefix of its new text (a count true of no
    state of it); one swapped for a link was read through it (another file's bytes, counted
    twice). Both are skipped now, saying so."""
    path, other = tmp_path / "v.txt", tmp_path / "big.txt"
    path.write_text("word " * 300)
    other.write_text("beta " * 600)
    piece = _listed(path)
    if change == "longer":
        path.write_text("Z" * 1000 + " completely different text" * 100)
    elif change == "same-size":
        stamp = path.stat().st_mtime_ns
        path.write_text("xyzw " * 300)
        os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    elif change == "symlink":
        path.unlink()
        path.symlink_to(other)
    else:
        path.write_text("word")
    (result,) = corpus_pieces.count_task([piece], ("gpt2",))
    assert result.counts is None
    assert result.error.startswith("changed after it was listed")


def test_an_unchanged_file_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "v.txt"
    path.write_text("word " * 300)
    (result,) = corpus_pieces.count_task([_listed(path)], ("gpt2",))
    assert result.counts == (tokens("word " * 300),)


def test_a_carriage_return_in_a_path_is_one_csv_field(tmp_path: Path) -> None:
    (tmp_path / "e\rf.txt").write_text("hi\n")
    (tmp_path / "plain.txt").write_text("hi\n")
    result = runner.invoke(app, ["count", str(tmp_path), "--csv", "-q"])
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout, newline="")))
    assert [Path(r[0]).name for r in rows[1:]] == ["e\rf.txt", "plain.txt"]
    assert all(len(r) == 4 for r in rows)


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
