"""`embedcli count` (issue 24) reads without hanging or failing the run: FIFOs skipped, never
waited for; SIGTERM while a Dask cluster starts held, then acted on; stdin streamed like a file;
the walk scheduled in windows and held bounded; a file that changed after it was listed never
counted as a prefix.

The oracle for every count is one pass of tiktoken over the whole text,
``len(enc.encode(text, disallowed_special=()))``, computed here.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.countruns import as_json, run, tokens
from support.helpers import run_script, script_env

from embedcli.corpus import count as countjob
from embedcli.corpus import pieces as corpus_pieces
from embedcli.corpus import stdin as corpus_stdin


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


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc on this system")
def test_a_file_that_holds_more_than_its_size_is_skipped_not_counted_as_empty(
    tmp_path: Path,
) -> None:
    """/proc's files say they hold 0 bytes and hold more: count trusted the size and counted
    /proc/self/status as 0 bytes, 0 tokens, with exit 0. Each is skipped now, saying why."""
    (tmp_path / "a.txt").write_text("word " * 30)
    data = as_json(str(tmp_path / "a.txt"), "/proc/self/status", "/proc/self/cmdline")
    assert [f["path"] for f in data["files"]] == [str(tmp_path / "a.txt")]
    assert data["totals"]["tokens"]["gpt2"] == tokens("word " * 30)
    reasons = {s["path"]: s["reason"] for s in data["skipped"]}
    assert set(reasons) == {"/proc/self/status", "/proc/self/cmdline"}
    assert all("reads more bytes than its size (0) says" in r for r in reasons.values())
    shown = run(str(tmp_path), "/proc/self/status").stdout
    assert "1 skipped" in shown and "size not its content" in shown
