"""Cut-safety: every tokenizer modeltok calls cut-safe (tiktoken-format files, tokenizer.json
files, and their NFC and split-pattern variants) gives, for any cut of a text into chunks, the
ids of one pass over the whole text; the variants that would break that are not called cut-safe.
Big files are loaded once per module."""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.ggufvocab import split_then_bytes
from support.modeltokenizers import EXAMPLES, LLAMA3_FILE, TEXT
from support.modeltokenizers import gpt2_folder as gpt2_folder  # fixtures: pytest finds them here
from support.modeltokenizers import gpt2_json as gpt2_json
from support.modeltokenizers import llama3 as llama3
from support.modeltokenizers import llama3_json as llama3_json
from support.modeltokenizers import llama3_reference as llama3_reference
from support.modeltokenizers import llama4 as llama4
from support.modeltokenizers import module_env as module_env

from embedcli.tokenization import common, hfjson, modeltok, tiktokenfile
from embedcli.tokenization.tokens import chunks


def _gpt2_variant(folder: Path, out: Path, **changes: object) -> hfjson.HFTokenizer:
    spec = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    spec.update(changes)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    return modeltok.load_model_tokenizer(out / "tokenizer.json", name=out.name)


SPLIT_PATTERNS = {
    "gpt2": common.GPT2_PATTERN,
    "llama3": common.LLAMA3_PATTERN,
    "qwen": common.QWEN_PATTERN,
    "llama4": common.LLAMA4_PATTERN,
}


@pytest.fixture(scope="module")
def cut_safe_tokenizers(
    llama3, llama4, llama3_json, gpt2_json, gpt2_folder, tmp_path_factory
) -> dict[str, object]:
    """Every kind of tokenizer modeltok calls cut-safe, under a name."""
    out = tmp_path_factory.mktemp("variants")
    found: dict[str, object] = {
        "llama3": llama3,
        "llama4": llama4,
        "qwen (on Llama 3's ranks)": tiktokenfile.load_tiktoken_file(
            LLAMA3_FILE, "q", family="qwen"
        ),
        "llama3 tokenizer.json": llama3_json,
        "gpt2 tokenizer.json": gpt2_json,
        "gpt2 tokenizer.json + NFC": _gpt2_variant(
            gpt2_folder, out / "nfc", normalizer={"type": "NFC"}
        ),
    }
    for key, pattern in SPLIT_PATTERNS.items():
        found[f"gpt2 vocab, {key} split"] = _gpt2_variant(
            gpt2_folder, out / key, pre_tokenizer=split_then_bytes(pattern)
        )
    return found


# ---------------------------------------------------------------- cut-safety


@pytest.mark.parametrize(
    "name",
    [
        "llama3",
        "llama4",
        "qwen (on Llama 3's ranks)",
        "llama3 tokenizer.json",
        "gpt2 tokenizer.json",
        "gpt2 tokenizer.json + NFC",
        *(f"gpt2 vocab, {key} split" for key in SPLIT_PATTERNS),
    ],
)
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=TEXT, size=st.integers(1, 10))
@example(text="e\u0301 \u0301x a \u0301 \u3000 y", size=1)
@example(text="it's 'LL 12345 x\x85 y\u2028 z \r\n w <|endoftext|> <|eot_id|>", size=1)
def test_cut_safe_chunks_give_one_pass_ids(cut_safe_tokenizers, name: str, text: str, size: int):
    enc = cut_safe_tokenizers[name]
    assert enc.cut_safe
    parts = chunks(text, size)
    assert "".join(parts) == text
    assert [t for p in parts for t in enc.encode_ordinary(p)] == enc.encode_ordinary(text)
    joined = [t for p in parts for t in enc.encode(p, allowed_special="all")]
    assert joined == enc.encode(text, allowed_special="all")


def test_nfc_keeps_the_cut_rule() -> None:
    """NFC is cut-safe because of three facts about Unicode, checked for every code point: a
    non-whitespace character never decomposes to end in whitespace, no whitespace character is
    a composite (so nothing composes into one), and U+0020 composes with neither neighbour."""
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code < 0xE000:
            continue
        char = chr(code)
        nfd = unicodedata.normalize("NFD", char)
        assert len(nfd) == 1 if char.isspace() else not nfd[-1].isspace(), hex(code)
        assert unicodedata.normalize("NFC", char + " ") == unicodedata.normalize("NFC", char) + " "
        assert unicodedata.normalize("NFC", " " + char)[0] == " "


def test_qwen_normalizes_to_nfc(cut_safe_tokenizers) -> None:
    qwen = cut_safe_tokenizers["qwen (on Llama 3's ranks)"]
    assert qwen.encode_ordinary("cafe\u0301") == qwen.encode_ordinary("café")
    assert qwen.encode("e\u0301<|im_end|>", allowed_special="all")[-1] == 128002


@pytest.mark.parametrize(
    "changes",
    [
        {
            "pre_tokenizer": {
                "type": "ByteLevel",
                "add_prefix_space": True,
                "trim_offsets": True,
                "use_regex": True,
            }
        },
        {"pre_tokenizer": split_then_bytes(r"\S+\s*")},
        {"normalizer": {"type": "Lowercase"}},
        {"normalizer": {"type": "NFKC"}},
        {
            "added_tokens": [
                {
                    "id": 50256,
                    "content": "<|endoftext|>",
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": True,
                    "normalized": False,
                    "special": True,
                }
            ]
        },
        {
            "added_tokens": [
                {
                    "id": 50257,
                    "content": "a b",
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": True,
                }
            ]
        },
    ],
    ids=["prefix space", "unknown split", "lowercase", "NFKC", "rstrip token", "spaced token"],
)
def test_not_cut_safe(gpt2_folder: Path, tmp_path: Path, changes: dict[str, object]) -> None:
    assert not _gpt2_variant(gpt2_folder, tmp_path / "variant", **changes).cut_safe
