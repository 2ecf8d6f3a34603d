"""The special tokens llama.cpp makes of a GGUF vocabulary (embedcli.tokenization.gguf.specials):
bos, eos, pad, sep with the model's defaults, the end-of-turn token found by its text or named
by its key, end-of-message, and the end-of-generation set with llama.cpp's removals; each tiny
vocabulary written with gguf.GGUFWriter, held to literal ids and to llama.cpp itself (its
``llama_vocab_eot``, ``_sep``, ``_pad`` and ``_is_eog``), and the real Gemma 3 270M file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import ggufsessions as sessions
from support.gemmafile import MISSING, gemma_gguf
from support.helpers import make_runner
from support.llamacpp import tools
from support.llamacpp.workers import llama_cpp_ids

from embedcli.cli import app
from embedcli.errors import EncodingError
from embedcli.models.gguf.file import open_gguf_file
from embedcli.tokenization.gguf.specials import SpecialTokens, gguf_special_tokens

pytest.importorskip("gguf")
runner = make_runner()
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6
# a SentencePiece ("llama") vocabulary: <unk> 0, <s> 1, </s> 2, the newline byte 3, then words
BASE = ["<unk>", "<s>", "</s>", "<0x0A>", "▁a", "▁b", "a", "b"]
BASE_TYPES = [UNKNOWN, CONTROL, CONTROL, BYTE, NORMAL, NORMAL, NORMAL, NORMAL]


def metadata(extra: list[str], **keys: Any) -> dict[str, Any]:
    """BASE, then ``extra`` (CONTROL tokens, ids 8 on), then ``tokenizer.ggml.<key>`` keys."""
    tokens = BASE + extra
    return {
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": [0.0] * len(tokens),
        "tokenizer.ggml.token_type": BASE_TYPES + [CONTROL] * len(extra),
        **{f"tokenizer.ggml.{k}": v for k, v in keys.items()},
    }


def read(meta: dict[str, Any], tmp_path: Path) -> tuple[Path, SpecialTokens]:
    """The vocabulary through a real GGUF file, and what embedcli makes of it."""
    path = sessions.write_gguf(meta, tmp_path / "vocab.gguf")
    plain = {k: v.plain() for k, v in open_gguf_file(path).metadata.items()}
    return path, gguf_special_tokens(plain, str(path))


# name: (extra tokens, keys, what embedcli says: eot, eom, eog, undetermined)
CASES: dict[str, tuple[list[str], dict[str, Any], dict[str, Any]]] = {
    "gemma's <end_of_turn>, by its text": (
        ["<end_of_turn>", "<pad>"], {"padding_token_id": 9},
        {"eot": 8, "eom": None, "eog": [2, 8], "pad": 9, "undetermined": {}},
    ),
    "an EOT named by its key": (
        ["<|im_end|>", "<|endoftext|>"], {"eot_token_id": 8},
        {"eot": 8, "eog": [2, 8, 9], "undetermined": {}},
    ),
    "two EOT texts and no key: llama.cpp's hash map picks": (
        ["<|im_end|>", "<|endoftext|>"], {},
        {"eot": None, "eog": [2, 8, 9], "undetermined": {"eot": [8, 9]}},
    ),
    "Llama 3's eot and eom": (
        ["<|eot_id|>", "<|eom_id|>", "<|begin_of_text|>"], {"bos_token_id": 10},
        {"bos": 10, "eot": 8, "eom": 9, "eog": [2, 8, 9]},
    ),
    "the FIM pad, repo and file separator end generation": (
        ["<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<|fim_prefix|>"], {},
        {"eot": None, "eog": [2, 8, 9, 10], "undetermined": {}},
    ),
    "gpt-oss: <|end|> is no EOG beside <|return|> and <|call|>": (
        ["<|end|>", "<|return|>", "<|call|>"], {},
        {"eot": 8, "eog": [2, 9, 10]},
    ),
    "</s> is a normal token beside <|tool_response>": (
        ["<|tool_response>", "<eos>"], {"eos_token_id": 9},
        {"eos": 9, "eog": [8, 9]},
    ),
    "an eos outside the EOG texts joins EOG": (
        ["<|eot_id|>", "<my_eos>"], {"eos_token_id": 9},
        {"eos": 9, "eot": 8, "eog": [2, 8, 9]},
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_special_tokens_are_llama_cpps(case: str, tmp_path: Path) -> None:
    extra, keys, expected = CASES[case]
    _, found = read(metadata(extra, **keys), tmp_path)
    for field, value in expected.items():
        assert getattr(found, field) == value, field
    assert found.texts[found.eos] == (BASE + extra)[found.eos]  # type: ignore[index]


def test_the_models_defaults_and_flags(tmp_path: Path) -> None:
    """A SentencePiece vocabulary without keys: bos 1, eos 2, unk 0, add_bos, a prefix space."""
    _, found = read(metadata(["<end_of_turn>"]), tmp_path)
    assert (found.bos, found.eos, found.unk, found.sep, found.pad) == (1, 2, 0, None, None)
    assert (found.add_bos, found.add_eos, found.add_space_prefix) == (True, False, True)
    _, found = read(metadata([], add_space_prefix=False, add_eos_token=True), tmp_path)
    assert (found.add_eos, found.add_space_prefix) == (True, False)
    assert found.texts == {0: "<unk>", 1: "<s>", 2: "</s>"}


def test_an_eot_id_outside_the_vocabulary_is_refused(tmp_path: Path) -> None:
    meta = metadata(["<end_of_turn>"], eot_token_id=99)
    with pytest.raises(EncodingError, match="eot_token_id is 99, outside the vocabulary of 9"):
        read(meta, tmp_path)


def _none(value: int) -> int | None:
    return None if value < 0 else value


def _against_llama_cpp(path: Path, found: SpecialTokens) -> None:
    theirs = llama_cpp_ids(path, ["a"], specials=True)
    assert found.eog == theirs["eog"]
    assert (found.bos, found.eos) == (_none(theirs["bos"]), _none(theirs["eos"]))
    assert (found.sep, found.pad) == (_none(theirs["sep"]), _none(theirs["pad"]))
    assert (found.add_bos, found.add_eos) == (theirs["add_bos"], theirs["add_eos"])
    if "eot" in found.undetermined:  # llama.cpp took one of them
        assert theirs["eot"] in found.undetermined["eot"]
    else:
        assert found.eot == _none(theirs["eot"])


@pytest.mark.skipif(not tools.runtime(), reason=tools.RUNTIME_MISSING)
@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_each_case_against_llama_cpp(case: str, tmp_path: Path) -> None:
    extra, keys, _ = CASES[case]
    path, found = read(metadata(extra, **keys), tmp_path)
    _against_llama_cpp(path, found)


@pytest.mark.skipif(not tools.runtime(), reason=tools.RUNTIME_MISSING)
def test_gemma_3_270m_against_llama_cpp() -> None:
    path = gemma_gguf()
    if path is None:
        pytest.skip(MISSING)
    plain = {k: v.plain() for k, v in open_gguf_file(path).metadata.items()}
    found = gguf_special_tokens(plain, str(path))
    assert (found.bos, found.eos, found.unk, found.pad, found.eot) == (2, 1, 3, 0, 106)
    assert found.eog == [1, 106, 212] and found.texts[106] == "<end_of_turn>"
    assert (found.add_bos, found.add_eos, found.add_space_prefix) == (True, False, False)
    _against_llama_cpp(path, found)


def _weights_file(tmp_path: Path, extra: list[str], **keys: Any) -> Path:
    """A tiny llama model (2 blocks of width 32) whose vocabulary is ``metadata(extra)``."""
    arch = {"context_length": 64, "embedding_length": 32, "block_count": 2,
            "attention.head_count": 4, "attention.layer_norm_rms_epsilon": 1e-6}  # fmt: skip
    fields = {**metadata(extra, **keys), **{f"llama.{k}": v for k, v in arch.items()}}
    return sessions.write_gguf(fields, tmp_path / "model.gguf")


def test_weights_lists_llama_cpps_special_tokens(tmp_path: Path) -> None:
    path = _weights_file(tmp_path, ["<|im_end|>", "<|endoftext|>", "<|eom_id|>"])
    result = runner.invoke(app, ["weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    gguf = json.loads(result.stdout)["gguf"]
    found = gguf["special_tokens"]
    named = (found["bos"], found["eos"], found["unk"], found["eot"], found["eom"])
    assert named == (1, 2, 0, None, 10)
    assert found["eog"] == [2, 8, 9, 10] and found["undetermined"] == {"eot": [8, 9]}
    assert found["texts"]["10"] == "<|eom_id|>" and gguf["special_tokens_error"] is None
    assert found["add_space_prefix"] is True  # llama.cpp's SentencePiece default
    table = runner.invoke(app, ["weights", str(path)], terminal_width=200)
    assert table.exit_code == 0, table.output
    said = " ".join(table.stdout.split())  # the item wraps
    assert "eom 10 '<|eom_id|>'" in said
    assert "eot one of 8 '<|im_end|>', 9 '<|endoftext|>'" in said
    assert "eog 2 '</s>', 8 '<|im_end|>', 9 '<|endoftext|>', 10 '<|eom_id|>'" in said


def test_weights_says_why_a_vocabulary_has_no_special_tokens(tmp_path: Path) -> None:
    path = _weights_file(tmp_path, ["<end_of_turn>"], eot_token_id=99)
    result = runner.invoke(app, ["weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    gguf = json.loads(result.stdout)["gguf"]
    assert gguf["special_tokens"] is None
    assert "eot_token_id is 99, outside the vocabulary" in gguf["special_tokens_error"]
