"""Rows, not tables: a job that needs a few rows of a hub checkpoint's token table fetches those
rows alone (in blocks it keeps and checks), gives the numbers the whole table gives, and a
whole-table job refuses above a GiB before it fetches anything unless told to download it all.

Every test talks to a FakeHub on 127.0.0.1 whose ``intercept`` hook can play the parts that go
wrong, and drives the real command line where the command line can show the behaviour. The
405B-shaped repo is sparse: 4 GB tables on paper, a few known rows written, so that a fetch of the
wrong row reads as a different number.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from support.helpers import expect_error, make_runner
from support.hub import (
    Answer,
    FakeHub,
    expected_tables,
    point_hub_at,
    shard_of,
)
from support.hub.sparse import (
    BIG,
    BIG_FIRST,
    BIG_IDS,
    BIG_LAST,
    BIG_SHAPE,
    LLAMA_TABLE,
    MIB,
    big_row,
    cached_files,
)

from embedcli.cli import app
from embedcli.core import memory
from embedcli.models.hub import rows, session
from embedcli.models.hub.session import HubAccess

runner = make_runner()


# ---------------------------------------------------------------- repos


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


# ---------------------------------------------------------------- 1: Content-Range


# ---------------------------------------------------------------- 2: repos without a tokenizer


# ---------------------------------------------------------------- 3: rows, not tables


def test_rows_of_a_405b_shaped_table_are_fetched_alone_and_kept(
    hub, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from embedcli.models.sources import open_source
    from embedcli.models.tables import find_tables
    from embedcli.tokenization.encodings import encode, get_encoding, with_specials

    online = HubAccess(download=True)  # this command's --download
    enc = get_encoding(f"hf:{BIG}", online)
    ids = with_specials(enc, encode(enc, "Hello"), True)
    assert ids == BIG_IDS
    source = open_source(f"hf:{BIG}", online)
    keys = find_tables(source.checkpoint, None, None, source.config)
    rows = source.checkpoint.load_rows(keys.token, ids)  # (2, 16384) bfloat16
    assert rows.dtype == torch.bfloat16 and torch.equal(
        rows, torch.stack([big_row(i) for i in ids])
    )
    served = hub.served_bytes
    assert served < 2 * MIB, served  # tokenizer, config, index, a header and two row blocks
    assert hub.bytes_for(BIG_FIRST) <= (1 << 13) + 2 * (1 << 16)
    assert hub.bytes_for(BIG_LAST) <= 1 << 13
    print(f"\n405B-shaped lookup of 'Hello': {served:,} bytes served")  # the figure
    # The blocks are kept, checked by size, and never taken for the whole table.
    blocks = cached_files(".bin")
    assert blocks and all(".rows-" in p.parent.name for p in blocks)
    store = source.checkpoint.shard(keys.token).store
    assert store.tensor(keys.token, 2 * BIG_SHAPE[0] * BIG_SHAPE[1]) is None
    assert source.by_rows(keys.token)  # what the pipeline asks before a lookup
    # Offline, the same rows come from the cache, and nothing is asked of the hub.
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.reset_counts()
    offline = open_source(f"hf:{BIG}")
    assert torch.equal(offline.checkpoint.load_rows(LLAMA_TABLE, ids), rows)
    assert hub.served_bytes == 0
    with pytest.raises(Exception, match="is not in the Hugging Face cache"):
        offline.checkpoint.load_rows(LLAMA_TABLE, [7])  # a row never fetched: no zeros


def test_a_damaged_row_block_is_fetched_again(hub, folders: dict[str, Path]) -> None:
    from embedcli.models.sources import open_source

    source = open_source(f"hf:{BIG}", HubAccess(download=True))
    first = source.checkpoint.load_rows(LLAMA_TABLE, [15496])
    block = cached_files(".bin")[0]
    block.write_bytes(block.read_bytes()[:-2])  # a block cut short
    again = open_source(f"hf:{BIG}", HubAccess(download=True))
    again = again.checkpoint.load_rows(LLAMA_TABLE, [15496])
    assert torch.equal(first, again) and block.stat().st_size == 1 << 16


def test_row_reads_check_their_content_range(hub, folders: dict[str, Path]) -> None:
    from embedcli.models.sources import open_source

    big = folders["big"] / BIG_FIRST

    def shifted_rows(asked):
        if asked.filename != BIG_FIRST or not asked.headers.get("Range", "").startswith("bytes="):
            return None
        first, last = (int(v) for v in asked.headers["Range"][6:].split("-"))
        if first < 1 << 13:
            return None
        by = 2 * BIG_SHAPE[1]  # one row on
        with big.open("rb") as handle:
            handle.seek(first + by)
            body = handle.read(last - first + 1)
        size = big.stat().st_size
        return Answer(206, {"Content-Range": f"bytes {first + by}-{last + by}/{size}"}, body)

    hub.intercept = shifted_rows
    source = open_source(f"hf:{BIG}", HubAccess(download=True))
    with pytest.raises(Exception, match="with bytes"):
        source.checkpoint.load_rows(LLAMA_TABLE, [15496])
    assert cached_files(".bin") == []


@pytest.mark.parametrize("command", [["stats"], ["neighbors", "Hello"]])
def test_whole_table_commands_refuse_above_a_gib_before_fetching(
    hub, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # as on a machine with room for the table: the download's refusal is under test, and a
    # busy machine (under 3.9 GiB available) refused the table's memory first
    monkeypatch.setattr(memory, "host_available_memory", lambda: 1 << 40)
    result = runner.invoke(app, [*command, "--weights", f"hf:{BIG}", "--download"])
    expect_error(result, "would download 3.9 GiB (4,202,692,608 bytes)")
    assert "pass --download-all" in result.stderr
    assert hub.bytes_for(BIG_FIRST) <= 1 << 13  # its header, never the table


def test_a_whole_fetch_is_said_before_it_starts(
    hub, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[tuple[str, int]] = []
    real = HubAccess.tell

    def noted(access: HubAccess, line: str) -> None:
        said.append((line, len(hub.requests)))
        real(access, line)

    monkeypatch.setattr(HubAccess, "tell", noted)
    result = runner.invoke(app, ["stats", "--weights", "hf:org/llama", "--download", "--json"])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"{said[0][0]}\n"  # the notice, on stderr
    table = expected_tables(folders["llama"])["token"].numel() * 4
    ((line, before),) = said
    assert f"({table:,} bytes)" in line and LLAMA_TABLE in line
    assert not any(table_read(r, folders["llama"]) for r in _asked(hub.requests[:before]))


def _asked(served):
    from support.hub import Asked

    return [
        Asked(r.method, r.path, {}, {"Range": r.range or ""}, None, None, r.path.rsplit("/", 1)[-1])
        for r in served
    ]


def test_download_all_lifts_the_limit(hub, folders: dict[str, Path], monkeypatch) -> None:
    from embedcli.models.sources import open_source

    monkeypatch.setattr(session, "WHOLE_FETCH_LIMIT", 1 << 20)  # the tiny tables are 3 MiB
    limited = open_source("hf:org/llama", HubAccess(download=True))
    with pytest.raises(Exception, match="pass --download-all"):
        limited.checkpoint.load(LLAMA_TABLE)
    allowed = open_source("hf:org/llama", HubAccess(download=True, download_all=True))
    token = expected_tables(folders["llama"])["token"]
    assert torch.equal(allowed.checkpoint.load(LLAMA_TABLE), token)
    source = open_source("hf:org/gpt2", HubAccess(download_all=True))  # the network too
    found = source.checkpoint.load("transformer.wte.weight")
    assert torch.equal(found, expected_tables(folders["gpt2"])["token"])


def test_embed_of_a_405b_shaped_repo_fetches_its_rows_only(hub) -> None:
    result = runner.invoke(
        app, ["embed", "Hello", "--weights", f"hf:{BIG}", "--download", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert hub.served_bytes < 2 * MIB


def embed_json(spec: str, *args: str) -> dict:
    result = runner.invoke(app, ["embed", *args, "--weights", spec, "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_embed_by_rows_reports_the_real_vocabulary_ids_and_rows(hub) -> None:
    report = embed_json(f"hf:{BIG}", "Hello", "--download")
    served = hub.served_bytes
    print(f"\n405B-shaped embed 'Hello' through the CLI: {served:,} bytes served")
    assert served < 2 * MIB
    assert hub.bytes_for(BIG_FIRST) <= (1 << 13) + 2 * (1 << 16)  # a header and two row blocks
    assert report["config"]["vocab_size"] == BIG_SHAPE[0]  # the table's, never the rows read
    assert report["config"]["d_model"] == BIG_SHAPE[1]
    assert report["input_ids"] == [BIG_IDS]
    expected = torch.stack([big_row(i) for i in BIG_IDS]).float()
    assert torch.equal(torch.tensor(report["token_embeddings"][0]), expected)
    assert torch.equal(torch.tensor(report["input_embeddings"][0]), expected)  # rope adds nothing
    shapes = {step["name"]: step["shape"] for step in report["steps"]}
    assert shapes["input_ids"] == [1, 2] and shapes["token_embeddings"] == [1, 2, BIG_SHAPE[1]]
    table = runner.invoke(app, ["embed", "Hello", "--weights", f"hf:{BIG}", "--device", "cpu"])
    assert table.exit_code == 0, table.output
    assert "128,256" in table.stdout or "128256" in table.stdout


def test_embed_by_rows_verifies_on_the_rows(hub) -> None:
    report = embed_json(f"hf:{BIG}", "Hello", "--download", "--verify")
    assert report["verify"]["ok"] and report["verify"]["max_abs_diff"] == 0.0
    assert "rows, read again" in report["verify"]["reference"]
    assert hub.served_bytes < 2 * MIB


def test_offline_embed_by_rows_reads_the_kept_blocks_and_never_invents_a_row(
    hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    online = embed_json(f"hf:{BIG}", "Hello", "--download")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub.reset_counts()
    assert embed_json(f"hf:{BIG}", "Hello") == online
    assert hub.served_bytes == 0
    told = runner.invoke(app, ["embed", "--ids", "7", "--weights", f"hf:{BIG}"])
    expect_error(told, f"part of the tensor {LLAMA_TABLE} of hf:{BIG} is not in")
    assert hub.served_bytes == 0


def test_a_flag_against_the_header_is_refused_before_any_row(hub) -> None:
    told = runner.invoke(
        app, ["embed", "Hello", "--weights", f"hf:{BIG}", "--download", "--vocab-size", "7"]
    )
    expect_error(told, "--vocab-size 7 conflicts with the model's config.json")
    assert hub.bytes_for(BIG_FIRST) <= 1 << 13  # its header, never a row


def test_a_job_that_needs_the_whole_table_still_refuses_above_a_gib(hub) -> None:
    told = runner.invoke(
        app, ["embed", "--lines", "--weights", f"hf:{BIG}", "--download"], input="Hello\n"
    )
    expect_error(told, "would download 3.9 GiB (4,202,692,608 bytes)")
    assert hub.bytes_for(BIG_FIRST) <= 1 << 13


def test_lines_and_windows_read_the_whole_table_of_a_row_source(hub, tmp_path: Path) -> None:
    batch = embed_json("hf:org/llama", "Hello world", "--download")["input_embeddings"][0]
    lines = runner.invoke(
        app, ["embed", "--lines", "--weights", "hf:org/llama", "--download", "--device", "cpu"],
        input="Hello world\n",
    )  # fmt: skip
    assert lines.exit_code == 0, lines.output
    assert json.loads(lines.stdout)["input_embeddings"] == batch
    out = tmp_path / "windows.npy"
    args = ["-t", "2", "-o", str(out), "--weights", "hf:org/llama", "--device", "cpu"]
    windows = runner.invoke(app, ["embed", *args], input="Hello world")
    assert windows.exit_code == 0, windows.output
    import numpy as np

    assert np.load(out)[0].tolist() == batch


ROW_IDS = [[5, 17, 200, 42, 9, 383, 77, 1], [3, 8, 1, 300]]  # padded with --pad-id 1


def _id_args(ids: list[list[int]] = ROW_IDS) -> list[str]:
    return [arg for row in ids for arg in ("--ids", ",".join(map(str, row)))] + ["--pad-id", "1"]


SOURCE_FIELDS = ("weights", "model", "encoding")  # name the source: hf:ORG/NAME or its folder


def _numbers(report: dict) -> dict:
    """A report without the fields that name its source."""
    config = {k: v for k, v in report["config"].items() if k not in SOURCE_FIELDS}
    return {**report, "config": config, "verify": None}


@pytest.mark.parametrize("repo", ["org/llama", "org/gpt2"])
def test_rows_and_the_whole_table_give_the_same_report(
    hub, folders: dict[str, Path], repo: str
) -> None:
    from embedcli.models.sources import open_source

    spec = f"hf:{repo}"
    by_rows = embed_json(spec, *_id_args(), "--download", "--verify")
    assert by_rows["verify"]["ok"] and by_rows["verify"]["max_abs_diff"] == 0.0
    source = open_source(spec, HubAccess(download=True))
    key = "transformer.wte.weight" if repo == "org/gpt2" else LLAMA_TABLE
    assert source.by_rows(key) and cached_files(".bin")  # rows were read, as row blocks
    assert not any(p.name.endswith(".bin") and ".rows-" not in str(p) for p in cached_files(""))
    warmed = runner.invoke(app, ["stats", "--weights", spec, "--download", "--json"])
    assert warmed.exit_code == 0, warmed.output  # the whole tables, fetched and kept
    assert not open_source(spec, HubAccess(download=True)).by_rows(key)
    whole = embed_json(spec, *_id_args(), "--download", "--verify")
    assert by_rows == {**whole, "verify": by_rows["verify"]}  # every number, bit for bit
    folder = {"org/llama": "llama", "org/gpt2": "gpt2"}[repo]
    local = embed_json(str(folders[folder]), *_id_args())
    assert _numbers(by_rows) == _numbers(local)
    assert by_rows["config"]["vocab_size"] == expected_tables(folders[folder])["token"].shape[0]
    assert by_rows["input_ids"][1] == [3, 8, 1, 300, 1, 1, 1, 1]


def test_positions_fetches_the_positional_rows_it_shows_and_no_token_table(
    hub, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """positions shows the positional table alone: never the token table (a limit below its
    size refused the command, naming the token table), only the rows shown where fewer are
    asked for, and for a rope model no table at all."""
    monkeypatch.setattr(session, "WHOLE_FETCH_LIMIT", 1 << 20)  # wte is 3.1 MiB, wpe 4 KiB
    monkeypatch.setattr(rows, "ROW_BLOCK_BYTES", 4 * 16 * 4)  # blocks of 4 rows of wpe
    wpe = expected_tables(folders["gpt2"])["position"]
    assert wpe is not None

    def drawn(*more: str) -> tuple[torch.Tensor, str]:
        argv = ["positions", "--weights", "hf:org/gpt2", "--json", *more]
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
        matrix = json.loads(result.stdout)["matrix"]
        return torch.tensor(matrix, dtype=torch.float64), result.stderr

    first, said = drawn("--context-length", "8", "--download")
    assert torch.equal(first, wpe[:8].double()) and said == ""  # rows are not announced
    assert hub.bytes_for("model.safetensors", "org/gpt2") == (1 << 13) + 8 * 16 * 4
    whole, said = drawn("--download-all")
    assert torch.equal(whole, wpe.double())
    fetched = f"hf:org/gpt2: 4.0 KiB ({wpe.numel() * 4:,} bytes)"
    assert said == f"fetching transformer.wpe.weight (64, 16) float32 of {fetched}\n"
    hub.reset_counts()
    rope = runner.invoke(app, ["positions", "--weights", "hf:org/llama", "--download", "--json"])
    assert rope.exit_code == 0, rope.output
    reads = [r.range for r in hub.requests if r.path.endswith(".safetensors")]
    assert reads and set(reads) == {"bytes=0-8191"}  # a header, never a table


FAMILY_CASES = ("roberta", "opt-projected", "bert", "xglm", "gemma-bf16", "granite")


@pytest.mark.parametrize("name", FAMILY_CASES)
def test_rows_of_each_family_give_the_whole_tables_numbers(
    name: str, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, monkeypatch
) -> None:
    """Counted positions (RoBERTa's over the ids, OPT's over the mask), a projection, token
    types and a LayerNorm, sinusoids, a scale: by rows as from the whole table, bit for bit."""
    pytest.importorskip("transformers")
    from support.familymodels import CASES, build

    case = next(c for c in CASES if c.name == name)
    folder = build(case, tmp_path_factory.mktemp("rowfamilies") / name)
    with FakeHub({"org/family": folder}) as fake:
        point_hub_at(monkeypatch, fake.endpoint, cache_dir=tmp_path / "hub")
        by_rows = embed_json("hf:org/family", *_id_args(), "--download", "--verify")
    assert by_rows["verify"]["ok"] and by_rows["verify"]["max_abs_diff"] == 0.0
    assert "rows, read again" in by_rows["verify"]["reference"]
    local = embed_json(str(folder), *_id_args())
    assert _numbers(by_rows) == _numbers(local)


# ---------------------------------------------------------------- 4: a branch that moved


# ---------------------------------------------------------------- 5: no signed URL in errors


# ---------------------------------------------------------------- 6: retries
