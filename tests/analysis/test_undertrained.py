"""``embedcli undertrained``: the indicator against a plain NumPy reading of Land and Bartolo's
formula (written here, independently), on tables whose untrained rows are planted, through the
command line; and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from support.checkpointfiles import write_safetensors
from support.helpers import expect_error, make_runner
from support.undertrainedoracle import NEVER_UTF8_IDS, numpy_indicator

from embedcli.analysis import undertrained
from embedcli.analysis.vocabclasses import CLASSES, reference_tokens
from embedcli.cli import app
from embedcli.errors import EncodingError, TokenIdError

runner = make_runner()
GPT2_ROWS = 50_257
GLITCHES = [40_000 + 37 * k for k in range(12)]  # planted: trained tables leave these alone


def planted_table(rows: int, width: int, untrained: list[int], seed: int = 0) -> np.ndarray:
    """Trained rows: N(0, 1) plus a strong shared offset (the first component); untrained
    rows: one initial vector plus a little noise (training never moved them)."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, width)) + 4.0 * rng.standard_normal(width)
    start = rng.standard_normal(width) * 0.3
    table[untrained] = start + 0.01 * rng.standard_normal((len(untrained), width))
    return table.astype(np.float32)


@pytest.mark.parametrize("shape", [(300, 8), (1000, 24), (257, 64)])
@pytest.mark.parametrize("chunk", [1 << 21, 64])  # one chunk, and many of them
def test_the_indicator_is_the_papers_formula(shape, chunk, monkeypatch) -> None:
    monkeypatch.setattr(undertrained, "CHUNK_ELEMENTS", chunk)
    rows, width = shape
    planted = list(range(5, 25))
    table = planted_table(rows, width, planted, seed=rows)
    found = undertrained.unused_cosine(torch.from_numpy(table), planted[:8])
    expected = numpy_indicator(table, planted[:8])
    np.testing.assert_allclose(found.cosine, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(found.norms, np.linalg.norm(table.astype(np.float64), axis=1))
    assert 0 < found.first_pc_share < 1


def test_rows_that_are_not_finite_have_no_cosine_and_are_left_out() -> None:
    planted = list(range(10, 30))
    table = planted_table(400, 16, planted)
    broken = table.copy()
    broken[[3, 50]] = np.nan
    broken[7, 2] = np.inf
    found = undertrained.unused_cosine(torch.from_numpy(broken), planted)
    assert found.non_finite == 3
    assert np.isnan(found.cosine[[3, 7, 50]]).all()
    kept = [r for r in range(400) if r not in (3, 7, 50)]
    expected = numpy_indicator(table[kept], [kept.index(p) for p in planted])
    np.testing.assert_allclose(found.cosine[kept], expected, rtol=0, atol=1e-10)


def test_a_table_of_width_one_or_a_reference_along_the_component_is_refused() -> None:
    from embedcli.errors import WeightsError

    with pytest.raises(WeightsError, match="no direction is left"):
        undertrained.unused_cosine(torch.ones(10, 1), [0])
    table = torch.zeros(50, 4)
    table[:, 0] = torch.arange(50.0)  # every row on one line: the component is that line
    with pytest.raises(WeightsError, match="every row lies along one line"):
        undertrained.unused_cosine(table, [1, 2])
    with pytest.raises(WeightsError, match="the rows do not vary"):
        undertrained.unused_cosine(torch.full((50, 4), 0.5), [1, 2])
    axes = torch.tensor([[10.0, 0, 0], [-10, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])
    with pytest.raises(WeightsError, match="no unused direction is left"):
        undertrained.unused_cosine(axes, [0])  # the component is the first axis, row 0 on it


def test_huge_values_zero_rows_and_nan_rows_are_read_or_left_out_honestly() -> None:
    planted = list(range(10, 30))
    table = planted_table(400, 16, planted).astype(np.float64)
    huge = undertrained.unused_cosine(torch.from_numpy(table * 1e200), planted)
    np.testing.assert_allclose(huge.cosine, numpy_indicator(table, planted), atol=1e-10)
    np.testing.assert_allclose(huge.norms, np.linalg.norm(table, axis=1) * 1e200, rtol=1e-12)
    zeroed = table.copy()
    zeroed[[40, 41]] = 0.0
    found = undertrained.unused_cosine(torch.from_numpy(zeroed), planted)
    assert np.isnan(found.cosine[[40, 41]]).all() and found.non_finite == 0
    assert (np.abs(found.cosine[~np.isnan(found.cosine)]) <= 1).all()


def test_the_reference_comes_from_names_then_bytes_then_the_flag() -> None:
    named = [b"a", b"<unused0>", b"b", b"<unused1>", b"\xf5", None]
    assert reference_tokens(named, None, 6).ids == [1, 3]
    assert reference_tokens(named, None, 6).source == "names"
    stray = [b"a", b"\xf5", b"\xc0", b"\xc3", b"<0xF5>", None]
    assert reference_tokens(stray, None, 6).ids == [1, 2]  # 0xC3 begins real characters
    assert reference_tokens(stray, [4, 4, 0], 6).ids == [0, 4]
    said = reference_tokens(stray, [4, 4, 0], 6).described
    assert said == "2 ids given with --reference-ids, 1 repeat left out"
    with pytest.raises(TokenIdError, match="not a row of the table"):
        reference_tokens(stray, [6], 6)
    with pytest.raises(EncodingError, match="pass --reference-ids"):
        reference_tokens([b"a", b"bc", b"<s>"], None, 3)
    tokens = [b"<|reserved_special_token_7|>", b"[unused3]", b"<SPECIAL_20>", b"<madeupword2>"]
    assert reference_tokens([*tokens, b"a"], None, 5).ids == [0, 1, 2, 3]
    with pytest.raises(TokenIdError, match="nothing is left to rank"):
        reference_tokens(tokens, None, 4)


def _gpt2_checkpoint(tmp_path: Path, *, head: bool = False) -> tuple[Path, np.ndarray]:
    """A GPT-2-shaped table (16 wide) whose byte tokens UTF-8 never holds and GLITCHES are
    untrained; with ``head``, an untied output head holds the planted rows instead."""
    planted = NEVER_UTF8_IDS + GLITCHES
    table = planted_table(GPT2_ROWS, 16, planted)
    tensors = {"transformer.wte.weight": torch.from_numpy(table)}
    if head:
        tensors["transformer.wte.weight"] = torch.from_numpy(planted_table(GPT2_ROWS, 16, []))
        tensors["lm_head.weight"] = torch.from_numpy(table)
    return write_safetensors(tmp_path / "model.safetensors", tensors), table


@pytest.mark.parametrize("head", [False, True], ids=["tied", "own head"])
def test_planted_untrained_rows_are_the_top_candidates(tmp_path: Path, head: bool) -> None:
    path, table = _gpt2_checkpoint(tmp_path, head=head)
    result = runner.invoke(
        app, ["undertrained", "--weights", str(path), "-e", "gpt2", "--top", "12", "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["matrix"] == ("output head" if head else "token table")
    assert report["matrix_key"] == ("lm_head.weight" if head else "transformer.wte.weight")
    assert report["reference"]["ids"] == NEVER_UTF8_IDS
    assert report["reference"]["source"] == "bytes never in UTF-8"
    assert sorted(c["id"] for c in report["candidates"]) == GLITCHES
    expected = numpy_indicator(table, NEVER_UTF8_IDS)
    ranks = np.empty(GPT2_ROWS, dtype=int)
    ranks[np.argsort(-expected)] = np.arange(1, GPT2_ROWS + 1)
    assert [c["rank"] for c in report["candidates"]] == sorted(ranks[GLITCHES])
    assert max(ranks[NEVER_UTF8_IDS + GLITCHES]) == 25  # the planted rows are the top 25
    for c in report["candidates"]:
        assert c["cosine"] == pytest.approx(expected[c["id"]], abs=1e-12)
        assert c["token_class"] == "ordinary"
    classes = {c["token_class"]: c for c in report["classes"]}
    in_top = int((ranks[NEVER_UTF8_IDS] <= 13).sum())
    assert classes["reference"] == {"token_class": "reference", "tokens": 13, "in_top": in_top}
    assert sum(c["tokens"] for c in report["classes"]) == GPT2_ROWS
    assert sum(c["in_top"] for c in report["classes"]) == 13
    assert classes["special"]["tokens"] == 1  # <|endoftext|>
    assert report["reference_in_top"] == in_top and report["top_reference"] == 13


def test_the_norm_is_the_token_tables_even_where_the_head_is_compared(tmp_path: Path) -> None:
    path, _ = _gpt2_checkpoint(tmp_path, head=True)
    tokens = planted_table(GPT2_ROWS, 16, [])  # the token table the helper wrote
    result = runner.invoke(app, ["undertrained", "--weights", str(path), "-e", "gpt2", "--json"])
    for c in json.loads(result.stdout)["candidates"]:
        assert c["row_norm"] == pytest.approx(float(np.linalg.norm(tokens[c["id"]])), rel=1e-6)


def test_the_view_names_the_matrix_the_reference_and_each_class(tmp_path: Path) -> None:
    path, _ = _gpt2_checkpoint(tmp_path)
    args = ["undertrained", "--weights", str(path), "-e", "gpt2", "--top", "3"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = result.stdout
    flowed = " ".join(out.split())  # lines wrap at the terminal's width
    assert "the token table transformer.wte.weight (the checkpoint has no output head)" in flowed
    assert "13 single-byte tokens of bytes no UTF-8 text holds" in out
    assert " of the 13 reference tokens rank in the top 13 by the indicator" in out
    for name in CLASSES:
        assert f"│ {name} " in out


def test_a_source_without_a_tokenizer_needs_e(tmp_path: Path) -> None:
    path, _ = _gpt2_checkpoint(tmp_path)
    expect_error(runner.invoke(app, ["undertrained", "--weights", str(path)]),
                 "brings no tokenizer: pass -e", code=2)  # fmt: skip
    expect_error(runner.invoke(app, ["undertrained"]), "pass --weights SOURCE", code=2)


def test_a_tokenizer_larger_than_the_table_is_refused(tmp_path: Path) -> None:
    path, _ = _gpt2_checkpoint(tmp_path)
    result = runner.invoke(app, ["undertrained", "--weights", str(path), "-e", "cl100k_base"])
    expect_error(result, "is not this model's tokenizer")


def test_reference_ids_replace_the_found_ones(tmp_path: Path) -> None:
    path, _ = _gpt2_checkpoint(tmp_path)
    given = ",".join(map(str, GLITCHES[:6]))
    result = runner.invoke(app, ["undertrained", "--weights", str(path), "-e", "gpt2",
                                 "--reference-ids", given, "--top", "19", "--json"])  # fmt: skip
    report = json.loads(result.stdout)
    assert report["reference"]["ids"] == GLITCHES[:6]
    assert {c["id"] for c in report["candidates"]} == set(GLITCHES[6:] + NEVER_UTF8_IDS)
    bad = runner.invoke(app, ["undertrained", "--weights", str(path), "-e", "gpt2",
                              "--reference-ids", "50257"])  # fmt: skip
    expect_error(bad, "--reference-ids 50257 is not a row of the table")
    word = runner.invoke(app, ["undertrained", "--weights", str(path), "--reference-ids", "x"])
    expect_error(word, "--reference-ids", code=2)


def test_the_png_plots_every_token_and_refuses_a_bad_name(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path, _ = _gpt2_checkpoint(tmp_path)
    png = tmp_path / "u.png"
    result = runner.invoke(
        app, ["undertrained", "--weights", str(path), "-e", "gpt2", "--png", str(png)]
    )
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png}" in result.stdout
    bad = runner.invoke(app, ["undertrained", "--weights", str(path), "-e", "gpt2",
                              "--png", str(tmp_path / "u.jpg")])  # fmt: skip
    assert bad.exit_code != 0 and "*.png" in bad.stderr
    over = runner.invoke(app, ["undertrained", "--weights", str(path), "-e", "gpt2",
                               "--png", str(path)])  # fmt: skip
    assert over.exit_code != 0
    assert path.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n"  # the checkpoint is never replaced


def test_a_table_whose_working_copies_do_not_fit_is_refused(tmp_path, monkeypatch) -> None:
    from embedcli.core import memory

    path, _ = _gpt2_checkpoint(tmp_path)
    # the table fits (3.1 MiB), its working copies (28 MB) do not
    monkeypatch.setattr(memory, "host_available_memory", lambda: 10_000_000)
    result = runner.invoke(app, ["undertrained", "--weights", str(path), "-e", "gpt2"])
    expect_error(result, "the undertrained indicator of a 50,257 x 16 table")


def test_a_byte_token_no_text_reaches_is_shown_with_its_byte() -> None:
    from embedcli.pipeline.undertrained import Candidate
    from embedcli.render.undertrained import _piece
    from embedcli.tokenization.display import Token

    letter = Token(121, "y", "79", "y")
    assert _piece(Candidate(7, letter, 0.9, 1.0, "unreachable")) == "y <0x79>"
    assert _piece(Candidate(7, letter, 0.9, 1.0, "ordinary")) == "y"


def test_rows_without_a_cosine_rank_last(tmp_path: Path) -> None:
    table = planted_table(GPT2_ROWS, 16, NEVER_UTF8_IDS + GLITCHES)
    table[[5, 6, 178]] = np.nan
    table[[7, 8]] = 0.0
    path = write_safetensors(
        tmp_path / "holes.safetensors", {"transformer.wte.weight": torch.from_numpy(table)}
    )
    args = ["undertrained", "--weights", str(path), "-e", "gpt2", "--top", "12", "--json"]
    report = json.loads(runner.invoke(app, args).stdout)
    assert sorted(c["id"] for c in report["candidates"]) == GLITCHES
    assert all(c["cosine"] is not None for c in report["candidates"])
    assert (report["non_finite_rows"], report["undefined_rows"]) == (3, 2)
    assert report["reference_in_top"] <= 12  # the NaN reference row is not counted as ranked
    shown = runner.invoke(app, args[:-1])
    assert "2 rows are zero once the component is removed" in " ".join(shown.stdout.split())
