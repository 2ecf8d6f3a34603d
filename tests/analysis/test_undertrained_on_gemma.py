"""``embedcli undertrained`` on the real trained sample model (Gemma 3 270M, tied head, 6,242
``<unused...>`` tokens): the numbers the manual and the closing note quote."""

from __future__ import annotations

import json

import pytest
from support.helpers import make_runner
from support.samplemodel import SAMPLE, SAMPLE_CACHE, needs_sample

from embedcli.cli import app

runner = make_runner()
pytestmark = needs_sample


@pytest.fixture(scope="module")
def report() -> dict:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EMBEDCLI_CACHE_DIR", str(SAMPLE_CACHE))
        result = runner.invoke(app, ["undertrained", "--weights", SAMPLE, "--top", "30", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_reference_is_gemmas_unused_tokens_in_its_tied_table(report: dict) -> None:
    assert report["matrix"] == "token table" and report["head"] == "tied (GGUF)"
    assert report["shape"] == [262_144, 640]
    reference = report["reference"]
    assert reference["source"] == "names" and len(reference["ids"]) == 6_242
    assert reference["ids"][:3] == [6, 7, 8] and reference["ids"][-1] == 262_143


def test_most_unused_tokens_rank_first_and_the_rest_is_what_the_paper_finds(report: dict) -> None:
    assert report["top_reference"] == 6_242
    assert report["reference_in_top"] == 4_429
    classes = {c["token_class"]: c for c in report["classes"]}
    # byte-fallback tokens of ASCII bytes, which have tokens of their own: never trained
    assert classes["unreachable"] == {"token_class": "unreachable", "tokens": 114, "in_top": 114}
    assert classes["not text"]["tokens"] == 128  # the byte tokens 0x80..0xFF
    first = report["candidates"][0]
    assert (first["id"], first["piece"], first["rank"]) == (54_267, "ExternalTaskPojo", 3)
    assert first["cosine"] == pytest.approx(0.9917, abs=1e-4)
    assert all(c["cosine"] > 0.99 and 1.02 < c["row_norm"] < 1.04 for c in report["candidates"])
