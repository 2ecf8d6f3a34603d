"""Long work on a table shows how far it has gone: `stats`, `project` and `neighbors` tell a plain
callback the rows read as they go, the bar on a terminal's stderr moves with it (a few updates a
second at most), and nothing is drawn when stderr is piped or with -q."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import rich.console
import torch
from support.checkpointfiles import write_tables
from support.helpers import make_runner

from embedcli.analysis import projection, stats
from embedcli.analysis.neighbors import nearest_tokens
from embedcli.cli import app
from embedcli.render.workprogress import UPDATES_PER_SECOND, WorkProgress
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()
V, D = 600, 8  # rows: 30 chunks of 20 once CHUNK_ELEMENTS is 160


def recorder() -> tuple[list[tuple[int, int]], object]:
    calls: list[tuple[int, int]] = []
    return calls, lambda done, total: calls.append((done, total))


def assert_moves(calls: list[tuple[int, int]]) -> None:
    """Many calls, the rows done rising, reaching the total only at the end."""
    assert len(calls) >= 10, calls
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[0] > 0
    assert calls[-1][0] == calls[-1][1]
    assert sum(d < t for d, t in calls) >= len(calls) - 1  # before the end, not only at it


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "CHUNK_ELEMENTS", 20 * D)
    monkeypatch.setattr(projection, "CHUNK_ELEMENTS", 20 * D)


def table() -> torch.Tensor:
    return torch.randn(V, D, generator=torch.Generator().manual_seed(3))


def test_stats_tell_the_rows_read_over_its_three_passes(small_chunks: None) -> None:
    calls, on_rows = recorder()
    stats.table_stats("token_embeddings", table(), on_rows)
    assert_moves(calls)
    assert calls[-1] == (3 * V, 3 * V) and len(calls) == 3 * 30


def test_stats_count_a_fourth_pass_where_the_values_are_scaled(small_chunks: None) -> None:
    calls, on_rows = recorder()
    stats.table_stats("token_embeddings", table().double() * 1e200, on_rows)
    assert calls[-1] == (4 * V, 4 * V)


def test_project_tells_its_passes_and_the_pca(small_chunks: None) -> None:
    calls, on_rows = recorder()
    enc = get_encoding("gpt2")
    projection.project(enc, table(), [(1, "top", None)], "t", seeded=False, on_rows=on_rows)
    assert_moves(calls)
    assert calls[-1][1] == V * (3 + projection.PCA_PASSES)


def test_neighbors_tell_the_rows_searched() -> None:
    calls, on_rows = recorder()
    nearest_tokens(table(), [1, 2], 5, chunk_rows=20, on_rows=on_rows)
    assert_moves(calls)
    assert calls[-1] == (V, V) and len(calls) == 30


def terminal() -> rich.console.Console:
    return rich.console.Console(
        file=io.StringIO(), force_terminal=True, width=100, color_system=None
    )


def test_a_terminal_sees_the_work_its_share_its_rows_and_the_time_left() -> None:
    now = [0.0]
    console = terminal()
    with WorkProgress(console, "reading the tables", clock=lambda: now[0]) as progress:
        assert progress.bar is not None
        progress.bar.refresh()
        on_rows = progress.rows("token table")
        assert on_rows is not None
        for step in range(1, 4):
            now[0] += 1.0
            on_rows(step * 1000, 4000)
            progress.bar.refresh()
    drawn = console.file.getvalue()
    assert "reading the tables" in drawn and "0:00:00 elapsed" in drawn
    assert "token table" in drawn and "75%" in drawn and "3,000/4,000 rows read" in drawn
    assert "0:00:01 left" in drawn  # 1,000 rows a second, 1,000 to go


def test_the_bar_is_updated_a_few_times_a_second_however_often_it_is_told() -> None:
    now = [0.0]
    with WorkProgress(terminal(), "work", clock=lambda: now[0]) as progress:
        on_rows = progress.rows("token table")
        assert on_rows is not None and progress.bar is not None
        task = progress.bar.tasks[0]
        on_rows(1, 10_000)
        for done in range(2, 1000):  # 998 calls within one update's interval
            now[0] += 0.1 / UPDATES_PER_SECOND / 1000
            on_rows(done, 10_000)
        assert task.completed == 1 and progress.done == 999
        now[0] += 1 / UPDATES_PER_SECOND
        on_rows(1000, 10_000)
        assert task.completed == 1000
        on_rows(10_000, 10_000)  # the end is never held back
        assert task.completed == 10_000


def test_nothing_drawn_gives_no_callback() -> None:
    with WorkProgress(None, "work") as progress:
        assert progress.rows("token table") is None and progress.bar is None


COMMANDS = {
    "stats": ["stats", "--weights", "{}"],
    "project": ["project", "--first-ids", "5", "--weights", "{}"],
    "neighbors": ["neighbors", "--ids", "1,2", "--weights", "{}", "-e", "gpt2"],
}


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    tables = {"wte.weight": table(), "wpe.weight": table()[:40]}
    return write_tables(tmp_path / "model", "safetensors", tables)


def run(command: str, path: Path, *extra: str):
    args = [a.format(path) for a in COMMANDS[command]] + list(extra)
    result = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_terminal_sees_the_bar_and_the_output_is_unchanged(
    command: str,
    weights: Path,
    small_chunks: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    piped = run(command, weights)  # CliRunner's stderr is no terminal: no bar
    assert piped.stderr == ""
    drawn = terminal()
    monkeypatch.setattr("embedcli.cli.output.watched", lambda: True)
    real = rich.console.Console
    monkeypatch.setattr(  # the bar's console (stderr's) draws as a terminal would
        rich.console, "Console", lambda **kw: drawn if kw.get("stderr") else real(**kw)
    )
    quiet = run(command, weights, "-q")
    assert drawn.file.getvalue() == "" and quiet.stdout == piped.stdout
    watched = run(command, weights)
    assert watched.stdout == piped.stdout and watched.stderr == ""
    shown = drawn.file.getvalue()
    assert "reading the table" in shown and "rows read" in shown, shown


def test_without_a_label_nothing_is_drawn_before_the_first_stage() -> None:
    """project reads its text (perhaps typed on stdin) before the bar is drawn."""
    console = terminal()
    with WorkProgress(console, None) as progress:
        assert progress.bar is None and console.file.getvalue() == ""
        progress.stage("reading the table")
        assert progress.bar is not None
        progress.bar.refresh()
    assert "reading the table" in console.file.getvalue()


def test_tokenize_count_of_a_long_text_shows_the_characters_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tokenize --count of a 20 MB file takes over a second: its chunks are told as they are
    # counted (from every thread), a short text draws nothing, and stdout is unchanged.
    from embedcli.tokenization.encodings import get_encoding
    from embedcli.tokenization.tokens import Parallel, count_tokens

    text = "The keeper counted ships, 1234 of them. caf\u00e9 \u4e2d\u6587\n" * 60_000
    told: list[tuple[int, int]] = []
    enc = get_encoding("gpt2")
    count = count_tokens(
        enc, text, parallel=Parallel(workers=2, on_chars=lambda *d: told.append(d))
    )
    assert count == len(enc.encode_ordinary(text))
    assert len(told) > 4 and told[-1] == (len(text), len(text))
    assert [d for d, _ in told] == sorted(d for d, _ in told) and told[0][0] < len(text)
    path = tmp_path / "long.txt"
    path.write_text(text, encoding="utf-8")
    args = ["tokenize", "-f", str(path), "--count"]
    piped = runner.invoke(app, args)
    drawn = terminal()
    monkeypatch.setattr("embedcli.cli.output.watched", lambda: True)
    real = rich.console.Console
    monkeypatch.setattr(
        rich.console, "Console", lambda **kw: drawn if kw.get("stderr") else real(**kw)
    )
    assert runner.invoke(app, [*args, "-q"]).stdout == piped.stdout
    assert drawn.file.getvalue() == ""
    short = runner.invoke(app, ["tokenize", "hello world", "--count"])
    assert short.exit_code == 0 and drawn.file.getvalue() == ""  # done before a bar could tell
    watched = runner.invoke(app, args)
    assert watched.stdout == piped.stdout == f"{count}\n" and watched.stderr == ""
    assert "counting gpt2" in drawn.file.getvalue() and "characters" in drawn.file.getvalue()


def test_windows_of_a_long_text_are_one_pass_ids_and_show_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A long text is encoded on every core (chunks told as done); the ids are one pass's.
    import json

    from embedcli.tokenization.encodings import get_encoding

    text = "The keeper counted ships, 1234 of them. caf\u00e9 \u4e2d\u6587\n" * 25_000
    path = tmp_path / "long.txt"
    path.write_text(text, encoding="utf-8")
    ids = get_encoding("gpt2").encode_ordinary(text)
    args = ["windows", "-f", str(path), "-t", "64", "--jsonl"]
    piped = runner.invoke(app, args)
    records = [json.loads(line) for line in piped.stdout.splitlines()]
    assert len(records) > 100
    for record in records[:3] + records[-3:]:
        start = record["start"]
        assert record["input_ids"] == ids[start : start + 64]
        assert record["target_ids"] == ids[start + 1 : start + 65]
    drawn = terminal()
    monkeypatch.setattr("embedcli.cli.output.watched", lambda: True)
    real = rich.console.Console
    monkeypatch.setattr(
        rich.console, "Console", lambda **kw: drawn if kw.get("stderr") else real(**kw)
    )
    watched = runner.invoke(app, args)
    assert watched.stdout == piped.stdout and watched.stderr == ""
    assert "encoding with gpt2" in drawn.file.getvalue()
