"""llama.cpp's WordPiece ("bert"), Unigram ("t5") and RWKV ("rwkv") GGUF tokenizers, run by
embedcli.tokenization.gguf.wpm, .ugm and .rwkv as llama.cpp runs them, against llama.cpp
itself: its own test vocabularies (BERT's bge with published ids, XLM-RoBERTa's Unigram with its
charsmap), vocabularies trained here and written as its converter writes them, and every code
point its WordPiece Unicode tables decide; with parse_special off and on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ggufsessions as sessions
from support.helpers import assert_cli_leaves_unimported, expect_error, make_runner
from support.llamacpp import tools
from support.llamacpp.workers import llama_cpp_ids

from embedcli.cli import app
from embedcli.errors import EncodingError
from embedcli.tokenization.gguf.tokenizer import gguf_tokenizer_summary, load_gguf_tokenizer
from embedcli.tokenization.modeltok import load_tokenizer

pytestmark = pytest.mark.skipif(not tools.runtime(), reason=tools.RUNTIME_MISSING)
runner = make_runner()


def _as_utf8(text: str) -> str:
    """What embedcli encodes for a text with a lone surrogate (which spells no UTF-8): U+FFFD
    in its place; llama.cpp is given that text."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _texts(seed: int, count: int = 200) -> list[str]:
    return sessions.HOSTILE + sessions.corpus_texts() + sessions.random_texts(count, seed)


def _compare(path: Path, texts: list[str], specials: tuple[bool, ...] = (False, True)) -> None:
    tok = load_tokenizer(str(path))
    for special in specials:
        theirs = llama_cpp_ids(path, [_as_utf8(t) for t in texts], special=special)["ids"]
        ours = [
            tok.encode(t, allowed_special="all") if special else tok.encode_ordinary(t)
            for t in texts
        ]
        pairs = zip(texts, theirs, ours, strict=True)
        wrong = [(t[:60], a[:12], b[:12]) for t, a, b in pairs if a != b]
        assert not wrong, f"special={special}: {len(wrong)} of {len(texts)} differ: {wrong[:3]}"


def _file(tmp_path: Path, name: str, metadata: dict) -> Path:
    return sessions.write_gguf(metadata, tmp_path / f"{name}.gguf")


def _real(name: str) -> Path:
    path = sessions.vocab_file(name)
    if path is None:
        pytest.skip(tools.CONVERTER_MISSING)
    return path


@pytest.fixture(scope="module")
def bge() -> Path:
    return _real("bert-bge")


@pytest.fixture(scope="module")
def nomic() -> Path:
    return _real("nomic-bert-moe")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rwkv")
    return _file(out, "world", sessions.rwkv_metadata(sessions.rwkv_world_lines()))


# ------------------------------------------------------------------ WordPiece


def test_bge_gives_llama_cpps_published_ids(bge: Path) -> None:
    tok = load_tokenizer(str(bge))
    cases = sessions.published(bge)
    assert len(cases) == 47
    for text, ids in cases:
        assert tok.encode_ordinary(text) == ids, text


def test_bge_ids_equal_llama_cpp(bge: Path) -> None:
    _compare(bge, _texts(seed=1) + [t for t, _ in sessions.published(bge)])


@pytest.mark.parametrize(
    ("lowercase", "strip_accents"), [(True, None), (False, False), (True, False), (False, True)]
)
def test_trained_wordpiece_equals_llama_cpp(
    tmp_path: Path, lowercase: bool, strip_accents: bool | None
) -> None:
    metadata = sessions.wordpiece_metadata(lowercase, strip_accents)
    _compare(_file(tmp_path, "wordpiece", metadata), _texts(seed=2, count=120))


@pytest.mark.parametrize(("lowercase", "strip_accents"), [(True, True), (True, False)])
def test_unicode_tables_are_llama_cpps(
    tmp_path: Path, lowercase: bool, strip_accents: bool
) -> None:
    """Each code point's class (whitespace, dropped, a word alone, joined), its simple
    lowercase and its NFD's first code point, as llama.cpp's tables give them: Python 3.11's
    unicodedata (Unicode 14.0) classes 72 code points otherwise, which 15.0 and 15.1 assigned
    (42 marks, 23 punctuation, 7 Egyptian format controls), and its str.lower (the full
    mapping) lowercases U+0130 to two code points, llama.cpp's to ``i``."""
    path = _file(tmp_path, "table", sessions.table_metadata(lowercase, strip_accents))
    _compare(path, sessions.table_texts(), specials=(False,))


def test_wordpiece_adds_cls_and_sep_whatever_the_file_says(bge: Path, tmp_path: Path) -> None:
    tok = load_tokenizer(str(bge))
    facts = llama_cpp_ids(bge, ["x"])
    assert (tok.prefix, tok.suffix) == ((facts["bos"],), (102,)) == ((101,), (102,))
    metadata = sessions.wordpiece_metadata(True, None)
    metadata["tokenizer.ggml.add_bos_token"] = False
    tiny = load_tokenizer(str(_file(tmp_path, "no-bos", metadata)))
    assert (tiny.prefix, tiny.suffix) == ((101,), (metadata["tokenizer.ggml.seperator_token_id"],))


def test_wordpiece_pieces_and_decoding(bge: Path) -> None:
    tok = load_tokenizer(str(bge))
    ids = tok.encode_ordinary("Hello, world's END.")
    assert tok.decode(ids) == " hello , world ' s end ."
    assert tok.library_decode(ids) == " hello, world's end."  # llama.cpp's clean_spaces
    assert tok.decode_single_token_bytes(2088) == b" world"
    assert tok.decode_single_token_bytes(101) == b"[CLS]"


# ------------------------------------------------------------------ Unigram


def test_nomic_ids_equal_llama_cpp(nomic: Path) -> None:
    """XLM-RoBERTa's 250,048 pieces with its charsmap; its architecture makes ``<mask>``
    take the spaces before it."""
    texts = [*_texts(seed=3), "a  <mask>  b", "\t<mask>x", "<mask> <mask>"]
    _compare(nomic, texts)
    tok = load_tokenizer(str(nomic))
    assert tok.encode("a  <mask>", allowed_special="all") == [10, 250001]
    facts = llama_cpp_ids(nomic, ["x"])
    assert (facts["add_bos"], facts["add_eos"]) == (True, True)
    assert (tok.prefix, tok.suffix) == ((facts["bos"],), (facts["eos"],)) == ((0,), (2,))


@pytest.mark.parametrize(
    ("rule", "dummy_prefix", "remove_whitespaces", "byte_fallback"),
    [
        ("nmt_nfkc", True, True, False),  # T5's
        ("nmt_nfkc_cf", False, False, False),
        ("identity", True, False, True),  # no charsmap; BYTE pieces, which Viterbi never picks
        ("nfkc", False, True, False),
    ],
)
def test_trained_unigram_equals_llama_cpp(
    tmp_path: Path, rule: str, dummy_prefix: bool, remove_whitespaces: bool, byte_fallback: bool
) -> None:
    model = sessions.unigram_model(rule, dummy_prefix, remove_whitespaces, byte_fallback)
    metadata = sessions.unigram_metadata(model)
    assert ("tokenizer.ggml.precompiled_charsmap" in metadata) == (rule != "identity")
    path = _file(tmp_path, rule, metadata)
    _compare(path, _texts(seed=4, count=150))
    tok = load_tokenizer(str(path))
    facts = llama_cpp_ids(path, ["x"])
    assert (facts["add_bos"], facts["add_eos"], facts["eos"]) == (False, True, 1)
    assert (tok.prefix, tok.suffix) == ((), (1,))
    assert tok.decode_single_token_bytes(tok.n_vocab - 1) == b""  # an UNUSED [PAD<n>]


def test_unigram_summary_and_decoding(tmp_path: Path) -> None:
    metadata = sessions.unigram_metadata(sessions.unigram_model())
    summary = gguf_tokenizer_summary(metadata)
    assert summary["model"] == "t5" and summary["pre"] is None
    assert (summary["add_bos"], summary["add_eos"], summary["eos_token_id"]) == (False, True, 1)
    tok = load_gguf_tokenizer(metadata, "t5", tmp_path / "t5.gguf")
    ids = tok.encode_ordinary("Hello   world")
    assert tok.decode(ids) == " Hello world"
    assert tok.library_decode(ids) == "Hello world"  # the first space, which it put there


# ------------------------------------------------------------------ RWKV


def test_rwkv_world_equals_llama_cpp(world: Path) -> None:
    _compare(world, [*_texts(seed=5, count=300), "<s>", "[PAD1762]", "\\x41\\n"])


def test_rwkv_pieces_are_the_texts_bytes(world: Path) -> None:
    tok = load_tokenizer(str(world))
    for text in sessions.SPELLED + sessions.random_texts(50, seed=6):
        ids = tok.encode_ordinary(text)
        assert tok.decode_bytes(ids) == text.encode("utf-8")
        assert tok.library_decode(ids) == text
    assert tok.encode_single_token(b"\xe6") == 1 + 0xE6  # the list's bytes come first
    for token in range(tok.n_vocab):
        data = tok.decode_single_token_bytes(token)
        assert tok.decode_single_token_bytes(tok.encode_single_token(data)) == data
    assert tok.encode_single_token("<s>") == 0
    assert tok.decode_single_token_bytes(0) == b"<s>"


def test_rwkv_adds_nothing(tmp_path: Path) -> None:
    metadata = sessions.rwkv_metadata(sessions.rwkv_world_lines(200))
    metadata["tokenizer.ggml.add_bos_token"] = True
    path = _file(tmp_path, "bos", metadata)
    tok = load_tokenizer(str(path))
    assert llama_cpp_ids(path, ["x"])["add_bos"] is True  # said, never added
    assert (tok.prefix, tok.suffix) == ((), ())


# ------------------------------------------------------------------ refusals


def _refused(tmp_path: Path, metadata: dict, message: str, llama_cpp_refuses: bool) -> None:
    path = _file(tmp_path, "bad", metadata)
    with pytest.raises(EncodingError, match=message) as caught:
        load_tokenizer(str(path))
    assert "\n" not in str(caught.value)
    if llama_cpp_refuses:
        with pytest.raises(RuntimeError):
            llama_cpp_ids(path, ["x"])


def test_rwkv_without_every_byte_is_refused(tmp_path: Path) -> None:
    metadata = sessions.rwkv_metadata(sessions.rwkv_world_lines(50))
    metadata["tokenizer.ggml.tokens"][1 + ord("q")] = "qq!"  # no "q" token any more
    _refused(tmp_path, metadata, "no token for the byte 0x71", llama_cpp_refuses=False)


def test_bad_charsmaps_are_refused_as_llama_cpp_refuses_them(tmp_path: Path) -> None:
    metadata = sessions.unigram_metadata(sessions.unigram_model())
    metadata["tokenizer.ggml.precompiled_charsmap"] = b"\x01\x00"
    _refused(tmp_path, metadata, "too small for its size header", llama_cpp_refuses=True)
    metadata["tokenizer.ggml.precompiled_charsmap"] = b"\xff\x00\x00\x00abc"
    _refused(tmp_path, metadata, "says its array has 255 bytes", llama_cpp_refuses=True)


def test_wordpiece_without_cls_or_a_byte_token_is_refused(tmp_path: Path) -> None:
    metadata = sessions.table_metadata(True, True)
    tokens = metadata["tokenizer.ggml.tokens"] = metadata["tokenizer.ggml.tokens"][:90]
    metadata["tokenizer.ggml.token_type"] = metadata["tokenizer.ggml.token_type"][: len(tokens)]
    del metadata["tokenizer.ggml.bos_token_id"]  # llama.cpp's default, 101, is out of range
    _refused(tmp_path, metadata, "no bos id .* default 101", llama_cpp_refuses=False)
    metadata["tokenizer.ggml.bos_token_id"] = 2
    metadata["tokenizer.ggml.token_type"][50] = 6
    _refused(tmp_path, metadata, "types token 50 .* a BYTE token", llama_cpp_refuses=True)


# ------------------------------------------------------------------ the CLI


def _cli(*args: str) -> dict:
    result = runner.invoke(app, ["tokenize", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_cli_tokenizes_decodes_and_places_each_model(bge: Path, nomic: Path, world: Path) -> None:
    shown = _cli("hello world", "-e", str(bge), "--offsets")
    assert [t["id"] for t in shown["tokens"]] == [101, 7592, 2088, 102]
    assert shown["offsets"] == [None, [0, 5], [5, 11], None]
    upper = _cli("Hello world", "-e", str(bge), "--offsets")
    assert upper["offsets"] == [None, None, None, None]  # lowercased: no token is the text's
    assert _cli("--decode", "7592,2088", "-e", str(bge))["text"] == " hello world"
    refused = runner.invoke(app, ["tokenize", "--decode", "7592,1012", "-e", str(bge)])
    expect_error(refused, "own decoder gives ' hello.'")
    shown = _cli("Hello  world", "-e", str(nomic), "--offsets")
    assert [t["id"] for t in shown["tokens"]] == [0, 35378, 8999, 2]
    assert _cli("--decode", "35378,8999", "-e", str(nomic))["text"] == "Hello world"
    text = "Hello, 東京 world"
    shown = _cli(text, "-e", str(world), "--offsets")
    placed = [(t, s) for t, s in zip(shown["tokens"], shown["offsets"], strict=True) if s]
    assert len(placed) >= len(shown["tokens"]) - 3  # all but those inside 東 and 京
    assert all(text[a:b].encode() == bytes.fromhex(t["bytes"]) for t, (a, b) in placed)
    ids = ",".join(str(t["id"]) for t in shown["tokens"])
    assert _cli("--decode", ids, "-e", str(world))["text"] == text


def test_tokenize_with_each_model_imports_no_torch(bge: Path, world: Path) -> None:
    for path in (bge, world):
        assert_cli_leaves_unimported(["tokenize", "Hello world", "-e", str(path), "--count"])
