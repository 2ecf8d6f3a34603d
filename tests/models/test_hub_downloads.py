"""Downloads from the hub: its answers checked (a range answered for other bytes, a 206 without
Content-Range), nothing fetched that a job does not need (no tokenizer for ids), a branch that
moved followed, failures retried with bounds, and errors that name the repo, file and status,
never a signed link.

Every test talks to a FakeHub on 127.0.0.1 whose ``intercept`` hook plays the parts that go wrong
(a range shifted by a row, a 500, a 429 with Retry-After, a dropped connection, a redirect to a
signed link), and drives the real command line where the command line can show the behaviour.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from support.helpers import expect_error, make_runner
from support.hub import (
    DROP,
    Answer,
    expected_tables,
    point_hub_at,
    shard_of,
)
from support.hub.sparse import (
    LLAMA_TABLE,
    cached_files,
)

from embedcli.cli import app

runner = make_runner()


def embed_ids(ids: str, spec: str = "hf:org/llama", *more: str) -> torch.Tensor:
    result = runner.invoke(
        app, ["embed", "--ids", ids, "--weights", spec, "--device", "cpu", "--json", *more]
    )
    assert result.exit_code == 0, result.output
    return torch.tensor(json.loads(result.stdout)["token_embeddings"][0])


def table_rows(folder: Path, ids: list[int]) -> torch.Tensor:
    return expected_tables(folder)["token"][ids]


def table_start(folder: Path, name: str = LLAMA_TABLE) -> int:
    """The file offset of a tensor's first byte, from the shard's own header."""
    with (folder / shard_of(folder, name)).open("rb") as handle:
        length = struct.unpack("<Q", handle.read(8))[0]
        header = json.loads(handle.read(length))
    return 8 + length + header[name]["data_offsets"][0]


def table_read(asked, folder: Path) -> bool:
    """Whether a request reads the token table's bytes (not the header) of the llama repo."""
    spans = asked.headers.get("Range") or ""
    return (
        asked.method == "GET"
        and asked.filename == shard_of(folder, LLAMA_TABLE)
        and spans.startswith("bytes=")
        and int(spans[6:].split("-")[0]) >= table_start(folder)
    )


def shifted(folder: Path, by: int):
    """An intercept that answers table reads with the range ``by`` bytes off: the same
    length, the wrong bytes, a Content-Range that says so."""
    data_file = folder / shard_of(folder, LLAMA_TABLE)

    def answer(asked):
        if not table_read(asked, folder):
            return None
        first, last = (int(v) for v in asked.headers["Range"][6:].split("-"))
        with data_file.open("rb") as handle:
            handle.seek(first + by)
            body = handle.read(last - first + 1)
        size = data_file.stat().st_size
        content_range = f"bytes {first + by}-{last + by}/{size}"
        return Answer(206, {"Content-Range": content_range}, body)

    return answer


def test_a_range_answered_for_other_bytes_is_refused_and_never_cached(
    hub, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.intercept = shifted(folders["llama"], -16 * 4)  # a row back: same length, wrong bytes
    refused = runner.invoke(
        app, ["embed", "--ids", "1,2", "--weights", "hf:org/llama", "--download"]
    )
    expect_error(refused, f"of hf:org/llama with bytes {table_start(folders['llama']) - 64}-")
    assert "refused (nothing of it was kept)" in refused.stderr
    assert cached_files(".bin") == []  # no table published
    assert all(p.stat().st_size == 0 for p in cached_files(".part"))
    monkeypatch.delenv("HF_HUB_OFFLINE")  # offline: nothing wrong can be served from the cache
    offline = runner.invoke(app, ["embed", "--ids", "1,2", "--weights", "hf:org/llama"])
    expect_error(offline, f"the tensor {LLAMA_TABLE} of hf:org/llama is not in")
    hub.intercept = None
    right = embed_ids("1,2", "hf:org/llama", "--download")
    assert torch.allclose(right, table_rows(folders["llama"], [1, 2]))


def test_a_206_without_content_range_is_refused(hub, folders: dict[str, Path]) -> None:
    answer = shifted(folders["llama"], 0)

    def bare(asked):
        found = answer(asked)
        return None if found is None else Answer(206, {}, found.body)

    hub.intercept = bare
    refused = runner.invoke(app, ["embed", "--ids", "1", "--weights", "hf:org/llama", "--download"])
    expect_error(refused, "no Content-Range")
    assert cached_files(".bin") == []


def test_ids_need_no_tokenizer_and_fetch_none(hub, folders: dict[str, Path]) -> None:
    got = embed_ids("0,5", "hf:org/notok", "--download")
    assert torch.allclose(got, table_rows(folders["notok"], [0, 5]))
    assert hub.bytes_for("tokenizer.json") == 0


def test_offline_a_repo_the_hub_said_has_no_tokenizer_is_told_so(hub) -> None:
    from embedcli.models.hub.cache import not_cached
    from embedcli.models.hub.spec import AbsentOnHub, HubSpec
    from embedcli.tokenization.modeltok import TOKENIZER_FILES

    assert embed_ids("0,5", "hf:org/notok", "--download").shape == (2, 16)
    error = not_cached(HubSpec("org/notok"), "the tokenizer", files=TOKENIZER_FILES)
    assert isinstance(error, AbsentOnHub)  # an EncodingError too: --ids goes on without one
    assert "has none of tokenizer.json, " in str(error)
    assert "the hub said so at commit" in str(error)
    assert "--download cannot bring the tokenizer" in str(error)
    other = not_cached(HubSpec("org/llama"), "the tokenizer", files=TOKENIZER_FILES)
    assert not isinstance(other, AbsentOnHub) and "pass --download" in str(other)


def test_offline_ids_on_a_repo_without_a_tokenizer(hub, monkeypatch) -> None:
    assert embed_ids("0,5", "hf:org/notok", "--download").shape == (2, 16)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert embed_ids("0,5", "hf:org/notok").shape == (2, 16)
    told = runner.invoke(app, ["embed", "Hello", "--weights", "hf:org/notok"])
    expect_error(told, "--download cannot bring the tokenizer; pass -e")


def test_a_text_on_a_repo_without_a_tokenizer_fetches_no_table(
    hub, folders: dict[str, Path]
) -> None:
    told = runner.invoke(app, ["embed", "Hello", "--weights", "hf:org/notok", "--download"])
    expect_error(told, "no tokenizer files")
    assert hub.bytes_for("model.safetensors") == 0


def _asked(served):
    from support.hub import Asked

    return [
        Asked(r.method, r.path, {}, {"Range": r.range or ""}, None, None, r.path.rsplit("/", 1)[-1])
        for r in served
    ]


def test_download_follows_a_branch_that_moved(
    hub, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.repos["org/moving"] = folders["llama"]
    hub.commits["org/moving"] = "a" * 40
    first = embed_ids("1,2", "hf:org/moving", "--download")
    assert torch.allclose(first, table_rows(folders["llama"], [1, 2]))
    hub.repos["org/moving"] = folders["llama-v2"]  # main moves on
    hub.commits["org/moving"] = "b" * 40
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert torch.equal(embed_ids("1,2", "hf:org/moving"), first)  # offline: the cached ref
    moved = embed_ids("1,2", "hf:org/moving", "--download")
    assert torch.allclose(moved, table_rows(folders["llama-v2"], [1, 2]))
    assert not torch.allclose(moved, first)
    assert torch.equal(embed_ids("1,2", "hf:org/moving"), moved)  # the ref follows


def test_a_pinned_commit_answered_with_another_is_refused_before_any_file(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.hub import FakeHub

    pinned, other = "e" * 40, "f" * 40
    # a hub that serves the pinned revision, saying it is another commit
    with FakeHub({"org/gpt2": folders["gpt2"]}, commit=other, revision=pinned) as fake:
        point_hub_at(monkeypatch, fake.endpoint, cache_dir=tmp_path / "hub")
        spec = f"hf:org/gpt2@{pinned}"
        for argv in (
            ["embed", "--ids", "1", "--weights", spec, "--download"],
            ["tokenize", "hi", "-e", spec, "--download"],
            ["positions", "--weights", spec, "--download"],
        ):
            result = runner.invoke(app, argv)
            expect_error(result, f"answered for {spec} with commit {other}, not the commit asked")
            assert f"({pinned}); refused" in result.stderr
        assert not [r for r in fake.requests if r.method == "GET" and "/resolve/" in r.path]
    assert not list((tmp_path / "hub").glob("*/snapshots/*"))  # nothing cached
    assert cached_files("") == []


def test_an_unreachable_hub_with_a_cached_branch_says_how_to_use_it(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.hub import REFUSED_ENDPOINT, place_in_hf_cache

    point_hub_at(monkeypatch, REFUSED_ENDPOINT, cache_dir=tmp_path / "hub")
    place_in_hf_cache(folders["llama"], tmp_path / "hub", "org/cached", commit="d" * 40)
    told = runner.invoke(app, ["embed", "--ids", "1", "--weights", "hf:org/cached", "--download"])
    expect_error(told, f"cannot reach {REFUSED_ENDPOINT} for hf:org/cached")
    assert f"drop --download to use what the cache holds (commit {'d' * 12} of main)" in told.stderr
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert torch.allclose(embed_ids("1", "hf:org/cached"), table_rows(folders["llama"], [1]))


def test_a_small_file_larger_than_its_limit_is_refused_before_any_byte(
    hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size the hub gives (its HEAD) is checked before a whole file is downloaded: a
    config.json said to be 10 GiB, a tokenizer.json above the limit, never fetched."""
    from embedcli.models.hub import remote

    huge = 10 << 30
    commit = hub.commits["org/llama"]

    def hostile(asked):
        if asked.filename == "config.json" and asked.method == "HEAD":
            headers = {"X-Repo-Commit": commit, "ETag": '"e"', "X-Linked-Etag": '"e"'}
            return Answer(200, {**headers, "X-Linked-Size": str(huge)})
        return None

    hub.intercept = hostile
    result = runner.invoke(app, ["weights", "hf:org/llama", "--download"])
    expect_error(result, f"says config.json of hf:org/llama is 10.0 GiB ({huge:,} bytes)")
    assert "refused before fetching any of it" in result.stderr
    assert hub.bytes_for("config.json") == 0
    hub.intercept = None
    monkeypatch.setattr(remote, "SMALL_FILE_LIMIT", 1 << 20)  # GPT-2's tokenizer.json: 2 MiB
    result = runner.invoke(app, ["tokenize", "hi", "-e", "hf:org/llama", "--download"])
    expect_error(result, "says tokenizer.json of hf:org/llama is ")
    assert "more than the 1.0 MiB embedcli reads of such a file" in result.stderr
    assert hub.bytes_for("tokenizer.json") == 0


def signed_redirect(filename: str, status: int):
    """Redirect a file's GET to a signed link (as the hub does to its CDN), which fails."""

    def answer(asked):
        if asked.filename == filename and asked.method == "GET":
            location = "/cdn/blob?X-Amz-Signature=SECRETSIG&Expires=99"
            return Answer(302, {"Location": location, "X-Repo-Commit": "c" * 40})
        if asked.path.startswith("/cdn/"):
            return Answer(status, {"Content-Type": "text/plain"}, b"denied for SECRETSIG")
        return None

    return answer


@pytest.mark.parametrize(
    ("filename", "status"), [("config.json", 403), ("shard", 403), ("shard", 500)]
)
def test_errors_name_repo_file_and_status_never_a_signed_url(
    hub, folders: dict[str, Path], filename: str, status: int
) -> None:
    filename = shard_of(folders["llama"], LLAMA_TABLE) if filename == "shard" else filename
    hub.intercept = signed_redirect(filename, status)
    result = runner.invoke(app, ["embed", "--ids", "1", "--weights", "hf:org/llama", "--download"])
    expect_error(result, f"cannot fetch {filename} of hf:org/llama")
    assert f"HTTP {status}" in result.stderr
    assert "SECRETSIG" not in result.output and "?" not in result.stderr


def failing(when, answers: list):
    """An intercept that gives ``answers`` (in turn) to the requests ``when`` picks."""

    def answer(asked):
        if answers and when(asked):
            return answers.pop(0)
        return None

    return answer


def test_one_500_is_retried(hub, folders: dict[str, Path], slept: list[float]) -> None:
    hub.intercept = failing(lambda a: table_read(a, folders["llama"]), [Answer(500)])
    assert torch.allclose(
        embed_ids("1", "hf:org/llama", "--download"), table_rows(folders["llama"], [1])
    )
    assert slept == [1.0]


def test_retry_after_and_dropped_connections(hub, folders: dict[str, Path], slept) -> None:
    busy = Answer(429, {"Retry-After": "3"})
    hub.intercept = failing(lambda a: table_read(a, folders["llama"]), [busy, DROP])
    assert torch.allclose(
        embed_ids("2", "hf:org/llama", "--download"), table_rows(folders["llama"], [2])
    )
    assert slept == [3.0, 2.0]  # Retry-After honoured, then the backoff's second step


def test_a_long_retry_after_is_capped_and_said_before_the_wait(hub, slept) -> None:
    busy = Answer(429, {"Retry-After": "3600"})
    hub.intercept = failing(lambda a: a.filename == "config.json", [busy])
    result = runner.invoke(
        app, ["embed", "--ids", "1", "--weights", "hf:org/llama", "--download", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert slept == [60.0]
    said = (
        f"waiting 60 s before asking again for config.json of hf:org/llama from {hub.endpoint}: "
        "it answered HTTP 429 (Too Many Requests) with Retry-After: 3,600 s (embedcli waits at "
        "most 60 s)"
    )
    assert said in result.stderr.splitlines()
    assert json.loads(result.stdout)["token_embeddings"]  # stdout holds the JSON alone


def test_a_small_file_is_retried_too(hub, folders: dict[str, Path], slept) -> None:
    answers = [Answer(503), Answer(502)]
    hub.intercept = failing(lambda a: a.filename == "config.json" and a.method == "GET", answers)
    assert embed_ids("3", "hf:org/llama", "--download").shape == (1, 16)
    assert slept == [1.0, 2.0]


def test_a_hub_that_keeps_failing_is_named_after_bounded_tries(
    hub, folders: dict[str, Path], slept: list[float]
) -> None:
    hub.intercept = lambda a: Answer(503) if table_read(a, folders["llama"]) else None
    result = runner.invoke(app, ["embed", "--ids", "1", "--weights", "hf:org/llama", "--download"])
    holder = shard_of(folders["llama"], LLAMA_TABLE)
    expect_error(result, f"cannot fetch {holder} of hf:org/llama from {hub.endpoint}")
    assert "HTTP 503 (Service Unavailable), on each of 6 attempts" in result.stderr
    assert slept == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert sum(table_read(a, folders["llama"]) for a in _asked(hub.requests)) == 6


def test_the_download_all_flag_lifts_the_limit_on_the_command_line(hub, monkeypatch) -> None:
    """--download-all, given to the command, lets a whole table past the limit (and only for
    that command: the next one is limited again)."""
    from embedcli.models.hub import session

    monkeypatch.setattr(session, "WHOLE_FETCH_LIMIT", 1000)
    args = ["stats", "--weights", "hf:org/llama", "--json"]
    refused = runner.invoke(app, [*args, "--download"])
    expect_error(refused, "pass --download-all")
    allowed = runner.invoke(app, [*args, "--download-all"])
    assert allowed.exit_code == 0, allowed.output
    assert allowed.stderr.startswith("fetching ")  # said before it was fetched
    again = runner.invoke(app, ["stats", "--weights", "hf:org/gpt2", "--download", "--json"])
    expect_error(again, "pass --download-all")
