"""`embedcli count --engine dask`: the local engine's counts, on a real LocalCluster (loopback).

One cluster of two worker processes serves the module. The oracle for every count is one pass of
tiktoken over the whole file's text, ``len(enc.encode(text, disallowed_special=()))``, and the
local engine's answer for the same tasks.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import socket
import sys
import time
from dataclasses import dataclass, replace
from operator import itemgetter
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from support.helpers import (  # noqa: E402
    assert_python_ok,
    expect_error,
    make_runner,
    run_script,
)
from support.hub import allow_loopback  # noqa: E402

from embedcli.cli import app  # noqa: E402
from embedcli.corpus import count as countjob  # noqa: E402
from embedcli.corpus import engine_dask as countdask  # noqa: E402
from embedcli.corpus import engine_local, selection  # noqa: E402
from embedcli.corpus import pieces as corpus_pieces  # noqa: E402
from embedcli.corpus.count import FileCount  # noqa: E402
from embedcli.corpus.engine_dask import dask_results  # noqa: E402
from embedcli.corpus.pieces import Piece  # noqa: E402
from embedcli.corpus.selection import Found, Skipped  # noqa: E402
from embedcli.errors import EmbedCLIError, MissingExtraError, UsageError  # noqa: E402
from embedcli.tokenization.encodings import get_encoding  # noqa: E402

runner = make_runner()
ENCODINGS = ("gpt2", "o200k_base")
BLOCK = 64 << 10  # large files are cut into blocks of this size here (8 MiB in real runs)
SNIPPETS = (
    "The quick brown fox jumps over the lazy dog. ",
    "héllo wörld, ça va? naïve café ",
    "日本語のテキストと中文文本 ",
    "👩‍💻🚀 emoji and ZWJ sequences 🏳️‍🌈 ",
    "<|endoftext|> special-token text, counted as text <|im_start|> ",
    "line one\r\nline two\r\n",
    "\tindented\n    code = x[i] + 1  # comment\n",
    "x\u3000=\u20281\x85 + 2\n",
    "مرحبا بالعالم ",
    "e\u0301 combining accents ",
    "    \n\n\n   spaces   and blank lines   \n",
)


def text_of(rng: random.Random, size: int) -> str:
    parts, length = [], 0
    while length < size:
        part = rng.choice(SNIPPETS)
        parts.append(part)
        length += len(part)
    return "".join(parts)


@dataclass(frozen=True)
class Corpus:
    root: Path
    oracle: dict[str, dict[str, int]]  # path (as discover shows it from root) -> tokens


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """Three hundred small files of varied UTF-8 (one empty), one large file that is cut into
    blocks, a binary, and a file that is not UTF-8."""
    root = tmp_path_factory.mktemp("corpus")
    rng = random.Random(1234)
    texts = {}
    for number in range(300):
        folder = root / f"part{number % 7}"
        folder.mkdir(exist_ok=True)
        texts[f"part{number % 7}/doc{number:03}.txt"] = text_of(rng, rng.randrange(0, 1500))
    texts["part0/empty.txt"] = ""
    texts["big.txt"] = text_of(rng, 5 * BLOCK)
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8", newline="")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0IHDR")
    (root / "latin1.txt").write_bytes("café crème\n".encode("latin-1"))
    encodings = [get_encoding(name) for name in ENCODINGS]
    oracle = {
        name: {e.name: len(e.encode(text, disallowed_special=())) for e in encodings}
        for name, text in texts.items()
    }
    return Corpus(root, oracle)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """A LocalCluster of two worker processes, one thread each, for the whole module: its
    scheduler and nannies live in this process and speak over loopback."""
    with pytest.MonkeyPatch.context() as patch:
        allow_loopback(patch)
        # Worker processes inherit these: no test reads or writes the user's caches.
        patch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken-cache")))
        patch.setenv("EMBEDCLI_CACHE_DIR", str(tmp_path_factory.mktemp("embedcli-cache")))
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                silence_logs=logging.CRITICAL,
            ) as local,
            distributed.Client(local, set_as_default=False) as client,
        ):
            client.wait_for_workers(2, timeout=60)
            yield local, client


@pytest.fixture(autouse=True)
def _loopback(_isolated: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # conftest refuses every connection; a cluster needs loopback (and nothing else).
    allow_loopback(monkeypatch)


def plan(root: Path, monkeypatch: pytest.MonkeyPatch, task_files: int = 16):
    """Selection, pieces and tasks as count_paths makes them, from inside ``root`` (relative
    paths: the workers' working folder is another one)."""
    monkeypatch.chdir(root)
    monkeypatch.setattr(corpus_pieces, "TASK_FILES", task_files)  # many tasks from a small corpus
    found = selection.discover(["."])
    pieces = corpus_pieces.pieces_of(found.found, block_bytes=BLOCK)
    return found, pieces, corpus_pieces.tasks_of(pieces)


def outcome(found, pieces, results) -> dict[str, dict[str, int] | str]:
    """Each file's tokens, or its skip reason, from one engine's results."""
    items = [*found.skipped, *countjob.gather(found.found, pieces, results, ENCODINGS)]
    out: dict[str, dict[str, int] | str] = {}
    for item in items:
        assert item.path not in out, f"{item.path} reported twice"
        out[item.path] = item.tokens if isinstance(item, FileCount) else item.reason
    return out


def local(found, pieces, tasks) -> dict[str, dict[str, int] | str]:
    return outcome(found, pieces, engine_local.local_results(tasks, ENCODINGS, "skip", workers=1))


def test_importing_the_engine_imports_neither_dask_nor_torch() -> None:
    assert_python_ok(
        "import sys, embedcli.corpus.engine_dask\n"
        "imported = [m for m in ('dask', 'distributed', 'torch') if m in sys.modules]\n"
        "assert not imported, imported\n"
    )


def test_counts_equal_the_local_engine_and_one_pass(corpus, cluster, monkeypatch) -> None:
    found, pieces, tasks = plan(corpus.root, monkeypatch)
    big = [p for p in pieces if p.location.endswith("big.txt")]
    assert len(big) >= 4 and len(tasks) >= 20
    # Relative locations (as a caller may give them) are made absolute for the workers.
    pieces = [replace(p, location=os.path.relpath(p.location)) for p in pieces]
    tasks = corpus_pieces.tasks_of(pieces)
    assert not Path(pieces[0].location).is_absolute()
    address = cluster[0].scheduler_address
    got = outcome(found, pieces, dask_results(tasks, ENCODINGS, "skip", scheduler=address))
    assert got == local(found, pieces, tasks)
    assert {path: got[path] for path in corpus.oracle} == corpus.oracle
    assert got["logo.png"] == "binary"
    assert got["latin1.txt"] == "not UTF-8 (byte 0xE9 at offset 3)"
    assert len(got) == len(corpus.oracle) + 2


def test_a_worker_killed_mid_run_loses_no_file_and_counts_none_twice(
    corpus, cluster, monkeypatch
) -> None:
    local_cluster, client = cluster
    found, pieces, tasks = plan(corpus.root, monkeypatch, task_files=1)
    assert len(tasks) > 250  # one small file a task: the run outlives the kill
    victim = min(client.run(os.getpid).values())
    results = dask_results(tasks, ENCODINGS, "skip", scheduler=local_cluster.scheduler_address)
    batches = [next(results)]
    os.kill(victim, signal.SIGKILL)  # as the OOM killer would: its tasks and results are gone
    batches += list(results)
    assert len(batches) == len(tasks)  # each task's result once
    assert sorted(r.file for batch in batches for r in batch) == sorted(p.file for p in pieces)
    assert outcome(found, pieces, batches) == local(found, pieces, tasks)
    client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker in its place
    assert victim not in client.run(os.getpid).values()


def test_a_task_that_keeps_failing_is_skipped_with_the_reason(corpus, cluster) -> None:
    # A URL the client lists (say through s3fs) whose file system the workers lack: opening it
    # raises there, a real exception in count_task, not an error result.
    good = corpus.root / "part1" / "doc001.txt"
    url = "nosuchfs://bucket/corpus/a.txt"
    found = [Found("part1/doc001.txt", str(good), good.stat().st_size), Found(url, url, 12)]
    pieces = [Piece(0, str(good), 0, found[0].size), Piece(1, url, 0, 12)]
    with pytest.raises(ValueError, match="nosuchfs"):
        corpus_pieces.count_task([pieces[1]], ENCODINGS)
    tasks = [(pieces[0],), (pieces[1],)]
    address = cluster[0].scheduler_address
    results = dask_results(tasks, ENCODINGS, "skip", scheduler=address, retries=1)
    items = list(countjob.gather(found, pieces, results, ENCODINGS))
    assert len(items) == 2
    by_path = {item.path: item for item in items}
    assert by_path["part1/doc001.txt"].tokens == corpus.oracle["part1/doc001.txt"]
    skipped = by_path[url]
    assert isinstance(skipped, Skipped)
    assert skipped.reason.startswith("failed on the Dask cluster: ValueError: ")
    assert "nosuchfs" in skipped.reason


def test_a_task_whose_workers_die_is_skipped_not_lost(corpus, cluster, monkeypatch) -> None:
    local_cluster, client = cluster
    good = corpus.root / "part2" / "doc002.txt"
    deadly = corpus.root / "part3" / "doc003.txt"
    found = [Found(p.name, str(p), p.stat().st_size) for p in (good, deadly)]
    pieces = corpus_pieces.pieces_of(found)

    def crash_on_deadly(task, encoding_names, errors, *fast):  # pickled by value: workers run it
        if any(piece.location.endswith("doc003.txt") for piece in task):
            os._exit(1)
        return corpus_pieces.count_task(task, encoding_names, errors, *fast)

    monkeypatch.setattr(countdask, "count_task", crash_on_deadly)
    scheduler = local_cluster.scheduler
    monkeypatch.setattr(scheduler, "allowed_failures", 0)  # KilledWorker after one death
    results = dask_results(
        [(pieces[0],), (pieces[1],)], ENCODINGS, "skip", scheduler=local_cluster.scheduler_address
    )
    items = {item.path: item for item in countjob.gather(found, pieces, results, ENCODINGS)}
    assert items["doc002.txt"].tokens == corpus.oracle["part2/doc002.txt"]
    assert items["doc003.txt"] == Skipped(
        "doc003.txt", "failed on the Dask cluster: every worker that counted it died (KilledWorker)"
    )
    client.wait_for_workers(2, timeout=60)


def test_an_unreachable_scheduler_is_one_clear_error_quickly(monkeypatch) -> None:
    task = [(Piece(0, "a.txt", 0, 1),)]
    start = time.monotonic()
    with pytest.raises(EmbedCLIError) as caught:
        list(dask_results(task, ENCODINGS, "skip", scheduler="tcp://127.0.0.1:1"))
    assert time.monotonic() - start < 5  # refused: said at once, not after distributed's retries
    assert str(caught.value) == (
        "cannot reach the Dask scheduler at tcp://127.0.0.1:1: Connection refused; "
        "check that it runs there (--scheduler, or DASK_SCHEDULER_ADDRESS)"
    )
    for bad in ("tcp://127.0.0.1", "foo://host:8786", "host:port"):
        with pytest.raises(UsageError, match="is not a Dask scheduler address"):
            list(dask_results(task, ENCODINGS, "skip", scheduler=bad))
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'embedcli\[dask\]'"):
        list(dask_results(task, ENCODINGS, "skip"))
    assert list(dask_results([], ENCODINGS, "skip")) == []  # nothing to count, nothing started


def test_a_peer_that_never_answers_times_out(monkeypatch) -> None:
    # It accepts connections but says nothing: a Client alone would wait for ever.
    monkeypatch.setattr(countdask, "CONNECT_TIMEOUT", 1)
    task = [(Piece(0, "a.txt", 0, 1),)]
    with socket.create_server(("127.0.0.1", 0)) as silent:
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(EmbedCLIError) as caught:
            list(dask_results(task, ENCODINGS, "skip", scheduler=address))
        assert time.monotonic() - start < 5
    assert str(caught.value).startswith(
        f"cannot reach the Dask scheduler at {address}: no answer within 1 s; "
    )


def test_the_environment_names_the_scheduler(corpus, cluster, monkeypatch) -> None:
    def no_local_cluster(**kwargs: object) -> None:
        raise AssertionError("a LocalCluster was started")

    monkeypatch.setattr(distributed, "LocalCluster", no_local_cluster)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster[0].scheduler_address)
    found, pieces, tasks = plan(corpus.root, monkeypatch)
    assert outcome(found, pieces, dask_results(tasks, ENCODINGS, "skip")) == local(
        found, pieces, tasks
    )
    # --scheduler wins over the environment
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:1")
    results = dask_results(tasks[:1], ENCODINGS, "skip", scheduler=cluster[0].scheduler_address)
    assert len(list(results)) == 1


def test_the_cli_counts_on_the_cluster_as_it_does_locally(corpus, cluster, monkeypatch) -> None:
    monkeypatch.chdir(corpus.root)
    args = ["count", ".", "-e", "gpt2", "-e", "o200k_base", "--json"]
    done = runner.invoke(app, [*args, "--engine", "local"])
    assert done.exit_code == 0, done.output
    address = cluster[0].scheduler_address
    dask = runner.invoke(app, [*args, "--engine", "dask", "--scheduler", address])
    assert dask.exit_code == 0, dask.output
    assert dask.stderr == ""
    expected, got = json.loads(done.stdout), json.loads(dask.stdout)
    key = itemgetter("path")
    assert sorted(got["files"], key=key) == sorted(expected["files"], key=key)
    assert sorted(got["skipped"], key=key) == sorted(expected["skipped"], key=key)
    assert got["totals"] == expected["totals"]
    refused = runner.invoke(app, [*args, "--engine", "dask", "--scheduler", "tcp://127.0.0.1:1"])
    expect_error(refused, "cannot reach the Dask scheduler at tcp://127.0.0.1:1")


def test_a_tokenizer_file_keeps_its_given_name_in_the_engines(
    corpus, cluster, monkeypatch, tmp_path
) -> None:
    from support.hub import gpt2_tokenizer_json

    # a folder named gpt2 here: -e gpt2 is still tiktoken's gpt2 on the workers, not that
    (tmp_path / "tok.json").write_bytes(gpt2_tokenizer_json(tmp_path / "gpt2").read_bytes())
    monkeypatch.chdir(tmp_path)  # the workers get the file by its absolute path
    # "tok.json" names an encoding "<folder>/tok.json": the engines keep the name given
    name = "tok.json"
    args = ["count", str(corpus.root), "-e", name, "-e", "gpt2", "--json"]
    for engine in (
        ["--engine", "local"],
        ["--engine", "dask", "--scheduler", cluster[0].scheduler_address],
    ):
        done = runner.invoke(app, [*args, *engine])
        assert done.exit_code == 0, done.output
        got = json.loads(done.stdout)
        assert got["encodings"] == [name, "gpt2"]
        assert [label.split()[0] for label in got["engines"][name]] == ["tokenizers"], engine
        assert [label.split()[0] for label in got["engines"]["gpt2"]] == ["tiktoken"], got[
            "engines"
        ]
        assert got["totals"]["tokens"][name] == got["totals"]["tokens"]["gpt2"]  # the same BPE


def test_a_local_cluster_is_started_and_closed(corpus, monkeypatch, capfd) -> None:
    made = []
    real = distributed.LocalCluster

    def recording(**kwargs: object):
        made.append(real(**kwargs))
        return made[-1]

    monkeypatch.setattr(distributed, "LocalCluster", recording)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    found, pieces, tasks = plan(corpus.root, monkeypatch, task_files=64)
    got = outcome(found, pieces, dask_results(tasks, ENCODINGS, "skip", workers=1))
    assert got == local(found, pieces, tasks)
    assert made[0].status.name == "closed"
    # Stopped early (Ctrl-C while counting): the cluster is closed all the same.
    results = dask_results(tasks, ENCODINGS, "skip", workers=1)
    next(results)
    with pytest.raises(KeyboardInterrupt):
        results.throw(KeyboardInterrupt)
    assert made[1].status.name == "closed"
    # The scheduler gone in the middle (a cluster shut down, a network cut): one clear error.
    monkeypatch.setattr(corpus_pieces, "TASK_FILES", 1)
    results = dask_results(corpus_pieces.tasks_of(pieces), ENCODINGS, "skip", workers=1)
    next(results)
    made[2].close()
    with pytest.raises(EmbedCLIError, match=r"^lost the Dask scheduler at tcp://127\.0\.0\.1:"):
        list(results)
    assert capfd.readouterr().err == ""  # distributed's logs stay off stderr


CTRL_C_WHILE_STARTING = """
import os, signal, sys
import distributed
from embedcli.corpus.engine_dask import dask_results  # noqa: E402
from embedcli.corpus.pieces import Piece  # noqa: E402

made = []
real = distributed.LocalCluster


def starting(**kwargs):
    # Ctrl-C at the terminal: SIGINT to the whole process group, as the cluster starts (sent
    # here, not from a timer, so that it always lands inside the start-up, however fast).
    os.killpg(os.getpgid(0), signal.SIGINT)
    made.append(real(**kwargs))
    return made[-1]


if __name__ == "__main__":
    # A terminal's foreground job: Ctrl-C acts (a parent that ignores or blocks SIGINT passes
    # that on to its children).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    distributed.LocalCluster = starting
    task = [(Piece(0, sys.argv[1], 0, os.path.getsize(sys.argv[1])),)]
    try:
        list(dask_results(task, ("gpt2",), "skip", workers=2))
    except KeyboardInterrupt:
        print("interrupted;", made[0].status.name, os.getpgid(0))
"""


def alive_in_group(group: int) -> list[int]:
    """Processes of a process group that are still running (not zombies), from /proc."""
    alive = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(stat[2]) == group and stat[0] != "Z":
            alive.append(int(entry))
    return alive


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_ctrl_c_while_a_local_cluster_starts_leaves_nothing_behind(corpus, tmp_path) -> None:
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C_WHILE_STARTING)
    done = run_script(
        [sys.executable, str(script), str(corpus.root / "big.txt")],
        tmp_path,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    # Held until the cluster had started, then raised: the cluster closed, its workers with it
    # (they keep SIGINT blocked: no KeyboardInterrupt tracebacks of theirs on stderr).
    assert done.returncode == 0 and done.stderr == "", done.stderr
    said, status, group = done.stdout.split()
    assert (said, status) == ("interrupted;", "closed")
    deadline = time.monotonic() + 10
    while alive_in_group(int(group)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive_in_group(int(group)) == []


def test_a_cluster_without_workers_is_an_error_not_a_hang(corpus, monkeypatch) -> None:
    # Every worker dead (or none ever started): the count says so instead of waiting forever.
    import distributed

    monkeypatch.setattr(countdask, "NO_WORKERS_SECONDS", 1.0)
    _, _, tasks = plan(corpus.root, monkeypatch)
    empty = distributed.LocalCluster(
        n_workers=0, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
    )  # fmt: skip
    with empty, pytest.raises(EmbedCLIError, match="has had no workers for 1 s"):
        list(dask_results(tasks, ENCODINGS, "skip", scheduler=empty.scheduler_address))


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("tcp://127.0.0.1:99999", "port 99999 is not between 1 and 65535"),  # wrapped to 34463
        ("tcp://127.0.0.1:0", "port 0 is not between 1 and 65535"),
        ("inproc://x", "an inproc address names a process and a thread"),
    ],
)
def test_a_scheduler_address_that_cannot_be_is_a_usage_error(
    tmp_path: Path, address: str, said: str
) -> None:
    (tmp_path / "a.txt").write_text("hi\n")
    result = runner.invoke(
        app, ["count", str(tmp_path), "--engine", "dask", "--scheduler", address]
    )
    expect_error(result, said, code=2)
