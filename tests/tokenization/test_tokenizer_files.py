"""Tokenizer files as a user gives them (embedcli.tokenization.modeltok): Qwen's known by its
size, the ranks cache keyed by the file's hash (a forged entry is parsed again), the order in
which a model folder is searched, and every error a user can cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.helpers import assert_python_ok, expect_error, make_runner
from support.modeltokenizers import gpt2_folder as gpt2_folder  # fixtures: pytest finds them here
from support.modeltokenizers import module_env as module_env
from support.tinytokenizers import byte_level_json, edited

from embedcli.cli import app
from embedcli.errors import EncodingError
from embedcli.tokenization import modeltok, tiktokenfile
from embedcli.tokenization.bpe import dump_tiktoken_bpe

runner = make_runner()


def _write_ranks(path: Path, count: int) -> Path:
    """A synthetic tiktoken-format file: the 256 single bytes, then made-up tokens."""
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({b"t%d" % i: 256 + i for i in range(count - 256)})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dump_tiktoken_bpe(ranks))
    return path


SENTENCEPIECE_BYTES = b"\n\x0b\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02\n\x07\n\x03<s>\x15\x00\x00"


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


def test_truncated_sentencepiece_model_file(tmp_path: Path) -> None:
    """A file cut short inside a piece is taken for a SentencePiece model (it is not in
    tiktoken format) and refused as one, from the file and from its folder alike; whole
    models are tests/tokenization/test_sentencepiece_model_files.py's."""
    path = tmp_path / "tokenizer.model"
    path.write_bytes(SENTENCEPIECE_BYTES)
    expected = (
        f"{path} is not a SentencePiece model (its bytes are not a protobuf message); download "
        "it again, or pass the model's tokenizer.json"
    )
    assert _error(path) == expected
    assert _error(tmp_path) == expected


def test_unknown_rank_count(tmp_path: Path) -> None:
    path = _write_ranks(tmp_path / "tokenizer.model", 300)
    message = _error(path)
    assert message.startswith(f"{path} holds 300 tokens, which matches no tokenizer family")
    assert "(Llama 3: 128,000; Llama 4: 200,000; Qwen: 151,643), so its special" in message
    assert "unknown tokenizer family 'gpt5'; choose one of: llama3, llama4, qwen" in _error(
        path, family="gpt5"
    )


def test_damaged_tiktoken_files(tmp_path: Path) -> None:
    path = _write_ranks(tmp_path / "a.tiktoken", 300)
    path.write_bytes(path.read_bytes() + b"dGVzdA== three-hundred\n")
    assert "file: line 301 is not `<base64 token> <rank>`" in _error(path, family="qwen")
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
        "tokenizer.model (tiktoken format or SentencePiece), *.tiktoken, tekken.json and "
        "spiece.model; pass the tokenizer file itself, or download the model's tokenizer.json "
        "into the folder"
    )
    _write_ranks(tmp_path / "a.tiktoken", 300)
    _write_ranks(tmp_path / "b.tiktoken", 300)
    assert "holds several .tiktoken files (a.tiktoken, b.tiktoken)" in _error(tmp_path)
    (tmp_path / "vocab.txt").write_text("a\n", encoding="utf-8")
    neither = "is neither a tokenizer.json, a tekken.json, a tiktoken-format"
    assert neither in _error(tmp_path / "vocab.txt")


def test_family_with_a_tokenizer_json(gpt2_folder: Path) -> None:
    message = _error(gpt2_folder / "tokenizer.json", family="llama3")
    assert "applies only to tiktoken-format files" in message


def test_import_stays_light() -> None:
    assert_python_ok(
        "import sys, embedcli.tokenization.modeltok\n"
        "heavy = {'torch', 'tokenizers', 'tiktoken', 'transformers'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )


def _one_id_twice(spec: dict) -> None:
    spec["model"]["vocab"]["i"] = spec["model"]["vocab"]["h"]  # "h" and "i" both id 104


def _added_on_a_vocabulary_id(spec: dict) -> None:
    spec["added_tokens"][0]["id"] = spec["model"]["vocab"]["%"]  # tokenizers moves it silently


@pytest.mark.parametrize(
    ("edit", "where", "tokens"),
    [
        (_one_id_twice, "in its vocabulary, id 104", "'h' and 'i'"),
        (_added_on_a_vocabulary_id, "in its vocabulary and its added tokens, id 37", "'%' and"),
    ],
)
@pytest.mark.parametrize(
    "command",
    [
        ["tokenize", "hi this"],
        ["tokenize", "hi this", "--explain"],  # was a KeyError traceback from the replay
        ["tokenize", "--ids", "104", "--decode"],
        ["count", "-"],
    ],
)
def test_a_tokenizer_json_giving_one_id_to_two_tokens_is_refused(
    tmp_path: Path, edit, where: str, tokens: str, command: list[str]
) -> None:
    path = edited(byte_level_json(tmp_path / "model"), edit)
    for source in (path, path.parent):  # the file, and the model folder that holds it
        result = runner.invoke(app, [*command, "-e", str(source)], input="hi this")
        expect_error(result, f"{path} is damaged: {where} stands for two tokens, {tokens}")


@pytest.mark.parametrize(
    "token",
    [
        b"!!!!",  # no base64 at all: Python's lenient decoding made it an empty token
        b"dGVz!dA==",  # a character outside the alphabet, which lenient decoding drops
        b"dGVzdA===",  # padding past the end, which lenient decoding ignores
        b"dGVzdA==dGVzdA==",  # data after the padding: lenient decoding kept the first half
    ],
)
def test_a_token_not_in_strict_base64_is_refused_by_its_line(tmp_path: Path, token: bytes) -> None:
    path = _write_ranks(tmp_path / "tokenizer.model", 300)
    path.write_bytes(path.read_bytes() + token + b" 300\n")
    result = runner.invoke(app, ["tokenize", "hi", "-e", str(path)])
    expect_error(
        result, f"{path} is not a tiktoken-format BPE file: line 301 holds a token that is not "
    )
    assert "strict base64" in result.stderr


def test_an_unknown_tiktoken_size_says_what_the_user_can_do(tmp_path: Path) -> None:
    """The hint once said to "name its family", which no option of the command line does."""
    path = _write_ranks(tmp_path / "tokenizer.model", 300)
    result = runner.invoke(app, ["tokenize", "hi", "-e", str(path)])
    expect_error(result, "(no option names it): pass the model's tokenizer.json instead")
    assert "name its family" not in result.stderr


def test_a_fifo_named_tokenizer_model_is_refused_not_waited_on(tmp_path: Path) -> None:
    """A hostile trial's: opening a FIFO to sniff its format blocked until killed."""
    import os

    fifo = tmp_path / "tokenizer.model"
    os.mkfifo(fifo)
    assert _error(fifo) == f"{fifo} is not a tokenizer file (not a regular file)"
