"""``undertrained`` on the sources embedcli reads: a transformers model folder (tied, and with an
own head in shards), and a GGUF file whose own output head is quantized; each compared with the
NumPy reading of the formula on the tables as transformers or the gguf package read them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from support.helpers import make_runner
from support.hub.tinymodels import make_gpt2_folder
from support.undertrainedoracle import NEVER_UTF8_IDS, numpy_indicator

from embedcli.cli import app

runner = make_runner()


def _run(*args: str) -> dict:
    result = runner.invoke(app, ["undertrained", *args, "--top", "5", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("tied", [True, False])
def test_a_model_folder_uses_its_own_head_and_its_tokenizer(tmp_path: Path, tied: bool) -> None:
    from transformers import GPT2LMHeadModel

    folder = make_gpt2_folder(tmp_path / "gpt2", tied=tied, max_shard_size="200KB", seed=3)
    report = _run("--weights", str(folder))  # the folder's tokenizer.json: no -e needed
    model = GPT2LMHeadModel.from_pretrained(folder)
    head = model.lm_head.weight.detach().numpy()
    tokens = model.transformer.wte.weight.detach().numpy()
    assert report["matrix"] == ("token table" if tied else "output head")
    assert report["head"] == ("tied (config.json)" if tied else "not tied (config.json)")
    assert report["reference"]["ids"] == NEVER_UTF8_IDS
    expected = numpy_indicator(tokens if tied else head, NEVER_UTF8_IDS)
    best = [int(t) for t in np.argsort(-expected) if t not in NEVER_UTF8_IDS][:5]
    assert [c["id"] for c in report["candidates"]] == best
    for c in report["candidates"]:
        assert c["cosine"] == pytest.approx(expected[c["id"]], abs=1e-9)
        assert c["row_norm"] == pytest.approx(float(np.linalg.norm(tokens[c["id"]])), rel=1e-6)


def test_a_gguf_file_with_an_own_quantized_head(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    from gguf.constants import GGMLQuantizationType

    letters = [chr(c) for c in range(0x61, 0x7B)]
    names = ["<unk>", *letters, "ab", *(f"<unused{i}>" for i in range(6))]  # one merge: a b
    rng = np.random.default_rng(7)
    rows, width = len(names), 32
    tokens = rng.standard_normal((rows, width)).astype(np.float32)
    head = rng.standard_normal((rows, width)).astype(np.float32) + 3 * rng.standard_normal(width)
    head[-6:] = head[-6] + 0.01 * rng.standard_normal((6, width))  # the <unused...> rows
    path = tmp_path / "own-head.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    for add, value in ((writer.add_context_length, 64), (writer.add_embedding_length, width),
                       (writer.add_block_count, 1), (writer.add_head_count, 4),
                       (writer.add_feed_forward_length, 64)):  # fmt: skip
        add(value)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(names)
    writer.add_token_merges(["a b"])
    writer.add_token_types([3] + [1] * 27 + [3] * 6)  # control, normal, control
    writer.add_tensor("token_embd.weight", tokens)
    quantized = gguf.quants.quantize(head, GGMLQuantizationType.Q8_0)
    writer.add_tensor("output.weight", quantized, raw_dtype=GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    report = _run("--weights", str(path))
    assert (report["matrix"], report["matrix_key"]) == ("output head", "output.weight")
    assert report["reference"]["ids"] == list(range(28, 34))
    stored = gguf.quants.dequantize(quantized, GGMLQuantizationType.Q8_0)  # llama.cpp's values
    expected = numpy_indicator(stored.reshape(rows, width), list(range(28, 34)))
    for c in report["candidates"]:
        assert c["cosine"] == pytest.approx(expected[c["id"]], abs=1e-6)
        assert c["row_norm"] == pytest.approx(float(np.linalg.norm(tokens[c["id"]])), rel=1e-6)
    assert torch.tensor(expected[28:]).min() > 0.99  # the planted rows point one way


def test_a_hub_model_from_the_cache_is_the_folder_it_holds(tmp_path: Path, monkeypatch) -> None:
    from support.hub import place_in_hf_cache

    folder = make_gpt2_folder(tmp_path / "gpt2", tied=False, seed=4)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    place_in_hf_cache(folder, tmp_path / "hub", "org/tiny-gpt2")
    from_hub = _run("--weights", "hf:org/tiny-gpt2")  # offline: the cached snapshot
    from_folder = _run("--weights", str(folder))
    assert from_hub["source"] == "hf:org/tiny-gpt2"
    assert from_hub["candidates"] == from_folder["candidates"]
    assert from_hub["matrix"] == "output head"
