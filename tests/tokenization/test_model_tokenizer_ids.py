"""The ids of real models' tokenizers (embedcli.tokenization.modeltok) equal their references':
Llama 3 and Llama 4's own tokenizer.model files (shipped by the llama_models package) against the
ids of that package's tests and Meta's Tokenizer classes, tokenizer.json files made with
transformers' converters against the tiktoken path and the bundled GPT-2 encoding, and
tokenize --explain's replay of them. Nothing here touches the network; big files are loaded once
per module."""

from __future__ import annotations

import hashlib
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import example, given, settings
from support.helpers import unsure_unicode
from support.modeltokenizers import EXAMPLES, LLAMA3_FILE, LLAMA4_FILE, TEXT
from support.modeltokenizers import gpt2_folder as gpt2_folder  # fixtures: pytest finds them here
from support.modeltokenizers import gpt2_json as gpt2_json
from support.modeltokenizers import gpt2_tiktoken as gpt2_tiktoken
from support.modeltokenizers import llama3 as llama3
from support.modeltokenizers import llama3_json as llama3_json
from support.modeltokenizers import llama3_reference as llama3_reference
from support.modeltokenizers import llama4 as llama4
from support.modeltokenizers import llama4_reference as llama4_reference
from support.modeltokenizers import module_env as module_env

from embedcli.errors import InputTextError
from embedcli.tokenization import common, hfjson, tiktokenfile
from embedcli.tokenization.encodings import encode, get_encoding, token_piece

LLAMA3_SHA256 = "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55"

# llama_models/llama3/tests/api/test_tokenizer.py: its literal ids.
LLAMA3_SENTENCE = "This is a test sentence."
LLAMA3_SENTENCE_IDS = [128000, 2028, 374, 264, 1296, 11914, 13, 128001]  # bos=True, eos=True
LLAMA3_MESSAGE = "<|start_header_id|>user<|end_header_id|>\n\nThis is a test sentence.<|eot_id|>"
LLAMA3_MESSAGE_IDS = [128006, 882, 128007, 271, 2028, 374, 264, 1296, 11914, 13, 128009]
LLAMA3_DIALOG = (
    "<|begin_of_text|>"
    "<|start_header_id|>system<|end_header_id|>\n\nThis is a test sentence.<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nThis is a response.<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)
LLAMA3_DIALOG_IDS = [
    *(128000, 128006, 9125, 128007, 271, 2028, 374, 264, 1296, 11914, 13, 128009),
    *(128006, 882, 128007, 271, 2028, 374, 264, 2077, 13, 128009),
    *(128006, 78191, 128007, 271),
]

# Llama 4's package has no tokenizer test with literal ids; these are the ids its tokenizer.py
# comments give (200005, 200080, 201134, ...) and transformers' Llama4Config defaults
# (boi_token_index 200080, eoi_token_index 200081, and image_token_index 200092, the token
# repeated for each image patch: <|patch|>).
LLAMA4_SPECIAL_IDS = [
    ("<|begin_of_text|>", 200000),
    ("<|end_of_text|>", 200001),
    ("<|header_start|>", 200005),
    ("<|text_post_train_reserved_special_token_68|>", 200079),
    ("<|image_start|>", 200080),
    ("<|image_end|>", 200081),
    ("<|patch|>", 200092),
    ("<|vision_reserved_special_token_1047|>", 201133),
    ("<|reasoning_reserved_special_token_0|>", 201134),
    ("<|reasoning_thinking_end|>", 201143),
]


# ---------------------------------------------------------------- Llama 3 and Llama 4 files


def test_llama3_file_is_the_published_one(llama3: tiktokenfile.ModelTiktoken) -> None:
    assert hashlib.sha256(LLAMA3_FILE.read_bytes()).hexdigest() == LLAMA3_SHA256
    assert llama3.sha256 == LLAMA3_SHA256
    assert llama3.family == "llama3"


@pytest.mark.parametrize("which", ["llama3", "llama3_json"])
def test_llama3_ids_of_its_package_tests(which: str, request: pytest.FixtureRequest) -> None:
    enc = request.getfixturevalue(which)
    assert enc.encode_single_token("<|begin_of_text|>") == 128000
    end = enc.encode_single_token("<|end_of_text|>")
    assert [*enc.prefix, *enc.encode_ordinary(LLAMA3_SENTENCE), end] == LLAMA3_SENTENCE_IDS
    assert enc.encode(LLAMA3_MESSAGE, allowed_special="all") == LLAMA3_MESSAGE_IDS
    assert enc.encode(LLAMA3_DIALOG, allowed_special="all") == LLAMA3_DIALOG_IDS
    assert enc.decode(LLAMA3_SENTENCE_IDS) == (
        "<|begin_of_text|>This is a test sentence.<|end_of_text|>"
    )
    assert (enc.n_vocab, enc.eot_token, enc.prefix, enc.suffix) == (128256, 128001, (128000,), ())
    assert len(enc.special_tokens_set) == 256 and enc.cut_safe


@pytest.mark.parametrize(("token", "token_id"), LLAMA4_SPECIAL_IDS)
def test_llama4_special_ids(llama4: tiktokenfile.ModelTiktoken, token: str, token_id: int) -> None:
    assert llama4.encode_single_token(token) == token_id
    assert llama4.decode_single_token_bytes(token_id) == token.encode()
    assert llama4.encode(f"hi{token}", allowed_special="all")[-1] == token_id


def test_llama4_attributes(llama4: tiktokenfile.ModelTiktoken) -> None:
    assert (llama4.family, llama4.n_vocab, llama4.eot_token) == ("llama4", 202048, 200001)
    assert (llama4.prefix, llama4.suffix, llama4.cut_safe) == ((200000,), (), True)
    assert len(llama4.special_tokens_set) == 2048
    assert llama4.sha256 == hashlib.sha256(LLAMA4_FILE.read_bytes()).hexdigest()


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=TEXT)
@example(text=LLAMA3_DIALOG)
def test_llama_files_match_meta_reference(llama3, llama4, llama3_reference, llama4_reference, text):
    """Meta's own Tokenizer classes (bos=True: what transformers adds) give the same ids."""
    for enc, reference in ((llama3, llama3_reference), (llama4, llama4_reference)):
        expected = reference.encode(text, bos=True, eos=False)
        assert [*enc.prefix, *enc.encode_ordinary(text)] == expected
        everything = reference.encode(text, bos=False, eos=False, allowed_special="all")
        assert enc.encode(text, allowed_special="all") == everything


# ---------------------------------------------------------------- tokenizer.json = tiktoken


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=TEXT)
@example(text="<|begin_of_text|> <|eot_id|>x")
@example(text="  \n\n\t12345678 don't 漢字🙂\u3000\u2028")
def test_llama3_json_matches_tiktoken_path(llama3, llama3_json, text: str) -> None:
    assert llama3_json.encode_ordinary(text) == llama3.encode_ordinary(text)
    assert llama3_json.encode(text, allowed_special="all") == llama3.encode(
        text, allowed_special="all"
    )


def test_llama3_json_has_the_same_tokens(llama3, llama3_json) -> None:
    assert llama3_json.family == hfjson.BYTE_LEVEL
    assert llama3_json.special_tokens_set == llama3.special_tokens_set
    for token_id in range(llama3.n_vocab):
        assert llama3_json.decode_single_token_bytes(token_id) == (
            llama3.decode_single_token_bytes(token_id)
        )


def test_encode_ordinary_splits_special_text(llama3_json) -> None:
    """tokenizers' encode_special_tokens: special text becomes ordinary tokens, as tiktoken's."""
    ids = llama3_json.encode_ordinary("<|begin_of_text|>")
    assert 128000 not in ids and len(ids) > 1
    assert llama3_json.decode(ids) == "<|begin_of_text|>"
    assert llama3_json.encode("<|begin_of_text|>", allowed_special="all") == [128000]


# ---------------------------------------------------------------- GPT-2


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=TEXT)
@example(text="Hello, do you like tea? <|endoftext|> In the sunlit terraces")
def test_gpt2_json_matches_bundled_gpt2(gpt2_json, gpt2_tiktoken, text: str) -> None:
    assert gpt2_json.encode_ordinary(text) == gpt2_tiktoken.encode_ordinary(text)
    assert gpt2_json.encode(text, allowed_special="all") == gpt2_tiktoken.encode(
        text, allowed_special="all"
    )


def test_gpt2_json_every_token(gpt2_json, gpt2_tiktoken) -> None:
    assert gpt2_json.n_vocab == gpt2_tiktoken.n_vocab == 50257
    for token_id in range(50257):
        data = gpt2_tiktoken.decode_single_token_bytes(token_id)
        assert gpt2_json.decode_single_token_bytes(token_id) == data
    for token_id in (15496, 31373, 50256, 0, 255, 220, 198):
        data = gpt2_json.decode_single_token_bytes(token_id)
        assert gpt2_json.encode_single_token(data) == token_id


def test_gpt2_json_attributes(gpt2_json, gpt2_tiktoken) -> None:
    assert (gpt2_json.prefix, gpt2_json.suffix, gpt2_json.cut_safe) == ((), (), True)
    assert gpt2_json.eot_token == gpt2_tiktoken.eot_token == 50256  # tokenizer_config's eos
    assert gpt2_json.special_tokens_set == gpt2_tiktoken.special_tokens_set
    assert gpt2_json.name == gpt2_json.path.parent.name
    assert gpt2_json.decode_single_token_bytes(31373) == b"hello"
    assert gpt2_json.decode_single_token_bytes(23748) == b" hello"
    assert gpt2_json.encode_single_token(" hello") == 23748
    with pytest.raises(KeyError):
        gpt2_json.encode_single_token(" hello world")


def test_gpt2_byte_alphabet_is_transformers_own() -> None:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    assert list(common.char_of_byte()) == [bytes_to_unicode()[b] for b in range(256)]


@pytest.mark.parametrize("which", ["gpt2_json", "llama3", "llama3_json"])
def test_ids_outside_the_vocabulary(which: str, request: pytest.FixtureRequest) -> None:
    enc = request.getfixturevalue(which)
    for bad_id in (-1, enc.n_vocab, enc.n_vocab + 10**12):
        with pytest.raises((KeyError, ValueError, OverflowError)):
            enc.decode_single_token_bytes(bad_id)
        assert token_piece(enc, bad_id).display == "<unknown>"


def test_encode_specials_like_tiktoken(gpt2_json, gpt2_tiktoken) -> None:
    text = "a <|endoftext|> b"
    for enc in (gpt2_json, gpt2_tiktoken):
        with pytest.raises(ValueError, match="disallowed special token"):
            enc.encode(text)
        assert enc.encode(text, disallowed_special=()) == enc.encode_ordinary(text)
        assert enc.encode(text, allowed_special={"<|endoftext|>"})[1:3] == [220, 50256]
    assert encode(gpt2_json, text, allow_special=True) == encode(
        gpt2_tiktoken, text, allow_special=True
    )


def test_special_text_all_or_nothing(llama3, llama3_json) -> None:
    """tokenizers encodes special text all as ids or all as text; tiktoken can mix them."""
    text = "a<|eot_id|>b<|begin_of_text|>"
    only_eot = {"allowed_special": {"<|eot_id|>"}, "disallowed_special": ()}
    assert llama3.encode(text, **only_eot)[1] == 128009
    with pytest.raises(ValueError, match="all as special ids or all as text"):
        llama3_json.encode(text, **only_eot)
    alone = "a<|eot_id|>b"
    assert llama3_json.encode(alone, **only_eot) == llama3.encode(alone, **only_eot)
    none_present = {"allowed_special": {"<|begin_of_text|>"}}
    assert llama3_json.encode(alone, **none_present, disallowed_special=()) == (
        llama3.encode_ordinary(alone)
    )
    with pytest.raises(ValueError, match=re.escape("disallowed special token '<|eot_id|>'")):
        llama3_json.encode(alone, **none_present)


def test_lone_surrogates_as_tiktoken(gpt2_json, gpt2_tiktoken) -> None:
    text = "a\ud800b"
    assert gpt2_json.encode_ordinary(text) == gpt2_tiktoken.encode_ordinary(text)


def test_threads_share_a_tokenizer(llama3, llama3_json) -> None:
    texts = [f"{i} <|eot_id|> word{i} 漢字 {'x' * i}" for i in range(64)]
    with ThreadPoolExecutor(8) as pool:
        special = list(pool.map(lambda t: llama3_json.encode(t, allowed_special="all"), texts))
        ordinary = list(pool.map(llama3_json.encode_ordinary, texts))
    assert special == [llama3.encode(t, allowed_special="all") for t in texts]
    assert ordinary == [llama3.encode_ordinary(t) for t in texts]


# ---------------------------------------------------------------- tokenize --explain


def _replays(enc: object, text: str) -> None:
    from embedcli.tokenization.explain import explain

    if any(token in text for token in enc.special_tokens_set):
        return  # refused without --allow-special, as encode refuses it (tested elsewhere)
    if not hasattr(enc, "_ordinary") and unsure_unicode(text):  # cut with regex's Unicode tables
        with pytest.raises(InputTextError, match="cannot be sure how tiktoken's splitter"):
            explain(enc, text, limit=10**9)
        return
    explained = explain(enc, text, limit=10**9)
    assert [i for c in explained.chunks for i in c.ids] == enc.encode_ordinary(text)
    assert explained.total_chunks == len(explained.chunks)


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=TEXT)
@example(text="Hello, unbelievable world!! 12345 ")
def test_explain_replays_byte_level_tokenizer_json(
    gpt2_json: hfjson.HFTokenizer, llama3_json: hfjson.HFTokenizer, text: str
) -> None:
    """--explain's chunks (the tokenizer.json's own pre-tokenizer) and merges (its merges
    list) give the tokenizer's ids: GPT-2's, and Llama 3's (which ignores merges for whole
    words in its vocabulary)."""
    _replays(gpt2_json, text)
    _replays(llama3_json, text)


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=TEXT)
def test_explain_replays_llama3_tiktoken_file(text: str) -> None:
    _replays(get_encoding(str(LLAMA3_FILE)), text)


def test_explain_of_a_long_chunk_in_a_tokenizer_json(gpt2_json: hfjson.HFTokenizer) -> None:
    """The byte-level path shares the heap and its limits: a chunk of 4,096 letters replays
    the tokenizer's ids with a few merges kept; one byte more is refused."""
    from embedcli.tokenization.explain import MAX_CHUNK_BYTES, explain

    text = " " + "b" * (MAX_CHUNK_BYTES - 1)
    (chunk,) = explain(gpt2_json, text).chunks
    assert chunk.ids == gpt2_json.encode_ordinary(text)
    assert chunk.total_steps == MAX_CHUNK_BYTES - len(chunk.ids) and len(chunk.steps) < 10
    with pytest.raises(InputTextError, match=f"is {MAX_CHUNK_BYTES + 1:,} bytes"):
        explain(gpt2_json, text + "b")
