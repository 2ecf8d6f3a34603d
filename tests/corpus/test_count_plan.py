"""What `count` chooses from the text it will count: a pool of processes, and fastokens, are
bought by text, never by the bytes of binaries it skips (a Python installation holds more bytes
of compiled modules than of source). The oracle for each count is one pass of tiktoken."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from embedcli.corpus import count as countjob
from embedcli.corpus import engine_local, plan
from embedcli.corpus.listing import Found
from embedcli.corpus.pieces import pieces_of
from embedcli.tokenization import engines
from embedcli.tokenization.encodings import get_encoding

TEXT = "The keeper counted ships, 1234 of them. caf\u00e9 \u4e2d\u6587\n"


@pytest.fixture(autouse=True)
def fresh_engines():
    engines._reset()
    yield
    engines._reset()


def mixed_tree(root: Path, binary_bytes: int, text_bytes: int) -> int:
    """Binaries (a NUL in the first block, as .pyc and .so files have) beside text files;
    returns the tokens of the text under cl100k_base."""
    root.mkdir()
    for i in range(8):
        (root / f"mod{i}.so").write_bytes(
            b"\x7fELF\0" + bytes(range(256)) * (binary_bytes // 8 // 256)
        )
    body = TEXT * max(1, text_bytes // 4 // len(TEXT.encode()))
    for i in range(4):
        (root / f"page{i}.txt").write_text(body, encoding="utf-8")
    return 4 * len(get_encoding("cl100k_base").encode_ordinary(body))


def no_pool(*args, **kwargs):
    raise AssertionError("a pool of processes was started for this job")


def test_binaries_buy_neither_a_pool_nor_a_build(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("fastokens")
    # 8 MiB of binaries, 64 KiB of text: bound of the build at 1 MiB a process, of a pool at
    # 4 MiB; the bytes would have bought both.
    expected = mixed_tree(tmp_path / "t", 8 << 20, 64 << 10)
    monkeypatch.setattr(engines, "MIN_CHARS", {"cl100k_base": 1 << 20})
    monkeypatch.setattr(engine_local, "_pool", no_pool)
    items = list(countjob.count_paths([str(tmp_path / "t")], ["cl100k_base"], workers=2))
    assert sum(i.tokens["cl100k_base"] for i in items if hasattr(i, "tokens")) == expected
    assert sum(1 for i in items if getattr(i, "reason", "") == "binary") == 8
    assert engines.used() == {"cl100k_base": [engines.tiktoken_label()]}


def test_text_buys_the_build_and_the_pool(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("fastokens")
    # The same tree with the text past both bounds: fastokens counts, in a pool of 2.
    expected = mixed_tree(tmp_path / "t", 1 << 20, 6 << 20)
    monkeypatch.setattr(engines, "MIN_CHARS", {"cl100k_base": 1 << 20})
    started = []
    real_pool = engine_local._pool

    def pool(source, names, errors, size, chosen):
        started.append((size, chosen))
        yield from real_pool(source, names, errors, size, chosen)

    monkeypatch.setattr(engine_local, "_pool", pool)
    items = list(countjob.count_paths([str(tmp_path / "t")], ["cl100k_base"], workers=2))
    assert sum(i.tokens["cl100k_base"] for i in items if hasattr(i, "tokens")) == expected
    assert started == [(2, (True,))]
    assert engines.used() == {"cl100k_base": [engines.fast_label()]}


def test_a_small_text_job_stays_in_this_process(tmp_path: Path, monkeypatch) -> None:
    # Under POOL_TEXT of text and nothing else: no pool, whatever the cores.
    expected = mixed_tree(tmp_path / "t", 0, 256 << 10)
    monkeypatch.setattr(engine_local, "_pool", no_pool)
    monkeypatch.setattr(engine_local.os, "cpu_count", lambda: 8)
    items = list(countjob.count_paths([str(tmp_path / "t")], ["cl100k_base"], workers=8))
    assert sum(i.tokens["cl100k_base"] for i in items if hasattr(i, "tokens")) == expected


def test_the_plan_reads_only_what_settles_it(tmp_path: Path, monkeypatch) -> None:
    # Largest first, and it stops once the answer is sure either way.
    sizes = [5000, 4000, 3000, 200, 100]
    files = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"f{i}"
        path.write_bytes((b"\0" if i == 1 else b"a") * size)
        files.append(Found(str(path), str(path), size))
    read = []
    real = plan._binary
    monkeypatch.setattr(plan, "_binary", lambda location: read.append(location) or real(location))
    window = plan.FirstWindow()
    window.plan(files, complete=True)
    assert window.text_at_least(5000) and read == [files[0].location]
    assert window.text_at_least(8000) and len(read) == 3  # 5000 + 3000, the binary 4000 between
    assert not window.text_at_least(9000)  # 8,300 at most: the last two are never read
    assert len(read) == 3
    window.plan(files[:1], complete=True)  # planned once: later windows change nothing
    assert window.text_at_least(8000)


def test_a_file_gone_or_unreadable_counts_as_text_for_the_plan(tmp_path: Path) -> None:
    # Its worker says why it was not counted; the plan only chooses how.
    gone = Found("gone", str(tmp_path / "gone"), 10 << 20)
    window = plan.FirstWindow()
    window.plan([gone], complete=True)
    assert window.text_at_least(1 << 20) and window.pooled()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    other = plan.FirstWindow()
    other.plan([Found("fifo", str(fifo), 10 << 20)], complete=True)
    assert other.text_at_least(1)  # a FIFO is read without blocking


def test_a_job_past_its_first_window_is_pooled() -> None:
    window = plan.FirstWindow()
    window.plan([], complete=False)
    assert window.pooled() and not window.text_at_least(1)


def test_one_file_is_counted_in_blocks_on_every_core(tmp_path: Path, monkeypatch) -> None:
    # 5 MiB, under the 16 MiB cut of a tree's large files: a job of one file is cut so that
    # both processes count, and the count is one pass's.
    path = tmp_path / "one.txt"
    path.write_text("The keeper counted ships. \u3000Then\u2028more. " * 120_000, encoding="utf-8")
    tasks = []
    real_pool = engine_local._pool

    def pool(source, names, errors, size, chosen):
        def seen():
            for task in source:
                tasks.append(task)
                yield task

        yield from real_pool(seen(), names, errors, size, chosen)

    monkeypatch.setattr(engine_local, "_pool", pool)
    (item,) = countjob.count_paths([str(path)], ["gpt2"], workers=2)
    text = path.read_text(encoding="utf-8")
    assert item.tokens["gpt2"] == len(get_encoding("gpt2").encode_ordinary(text))
    assert len(tasks) >= 4 and all(len(task) == 1 for task in tasks)


def test_a_binary_file_cut_finely_is_still_binary(tmp_path: Path) -> None:
    # Cut into blocks, a binary's later blocks are not UTF-8: it must be skipped as binary,
    # never as "not UTF-8" (which --errors strict refuses).
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\x7fELF\0" + (bytes(range(128, 256)) + b"x ") * (5 << 13))
    (item,) = countjob.count_paths([str(path)], ["gpt2"], workers=2, errors="strict")
    assert item.reason == "binary"
    # and it is one piece: its first block tells, wherever the blocks' results arrive
    found = Found(str(path), str(path), path.stat().st_size)
    assert [(p.start, p.end) for p in pieces_of([found], 1 << 20)] == [(0, found.size)]


def test_progress_follows_what_is_finished_not_walk_order(tmp_path: Path) -> None:
    # Files are counted largest first: the first file in walk order (a.txt, small) is done
    # last, so a bar that followed walk order said 0 of N until the end.
    root = tmp_path / "t"
    root.mkdir()
    (root / "a.txt").write_text("tiny\n", encoding="utf-8")
    for name in ("b.txt", "c.txt", "d.txt"):
        (root / name).write_text(TEXT * 90_000, encoding="utf-8")  # 4.5 MiB: a task each
    seen: list[tuple[int, int, int]] = []  # (items handed on, files done, bytes done)
    handed = []
    def done(n: int, size: int) -> None:
        seen.append((len(handed), n, size))

    items = countjob.count_paths([str(root)], ["gpt2"], workers=1, on_done=done)
    for item in items:
        handed.append(item)
    assert [i.path.rsplit("/", 1)[-1] for i in handed] == ["a.txt", "b.txt", "c.txt", "d.txt"]
    early = [(n, size) for count, n, size in seen if count == 0]
    assert early and early[0][0] >= 1 and early[0][1] >= 4 << 20  # said before a.txt was done
    assert seen[-1][1:] == (4, sum(p.stat().st_size for p in root.iterdir()))


def test_the_count_bar_shows_files_and_bytes_done() -> None:
    from io import StringIO

    from rich.console import Console

    from embedcli.render.progress import CountProgress

    out = StringIO()
    bar = CountProgress(Console(file=out, force_terminal=True, width=80))
    bar.plan(4, 1000)
    bar.done(3, 750)
    bar.bar.refresh()
    list(bar.follow([]))
    assert "3/4 files found so far" in out.getvalue() and "75%" in out.getvalue()  # of bytes
