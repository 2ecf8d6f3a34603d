"""SentencePiece tokenizer.model files (embedcli.tokenization.spmodel) held to the sentencepiece
library: tiny models trained on the shared corpus in every variant (BPE and Unigram, byte
fallback on and off, user-defined and control pieces, no dummy prefix, nmt_nfkc), Mistral's
own models with the ids mistral-common's tests publish, Gemma 3's 262,144 pieces from its GGUF
file (against the library and against embedcli's port of llama.cpp), what transformers adds
for a folder, and every refusal a user can cause."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.gemmafile import MISSING, gemma_gguf
from support.helpers import assert_cli_leaves_unimported, expect_error, make_runner
from support.modeltokenizers import module_env as module_env  # a fixture: pytest finds it here
from support.spmodels import (
    FALLBACK_TEXT,
    GEMMA_CONFIG,
    VARIANTS,
    corpus_text,
    folder,
    gemma_model,
    hostile_texts,
    train,
)

from embedcli.cli import app
from embedcli.errors import EncodingError
from embedcli.tokenization import kinds, modeltok
from embedcli.tokenization.common import without_surrogates
from embedcli.tokenization.spmodel import SentencePieceModel
from embedcli.tokenization.spproto import read_model_spec

sentencepiece = pytest.importorskip("sentencepiece")
runner = make_runner()
CORPUS = corpus_text()
_MISTRAL_SPEC = importlib.util.find_spec("mistral_common")
# the SentencePiece models mistral-common ships (its data folder), when the test extra is here
MISTRAL = Path(_MISTRAL_SPEC.origin).parent / "data" if _MISTRAL_SPEC else Path("/nonexistent")


@pytest.fixture(scope="module")
def trained(module_env: None, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("spmodels")
    return {variant: train(out, variant, CORPUS or FALLBACK_TEXT) for variant in VARIANTS}


@pytest.fixture(scope="module")
def pairs(trained) -> dict[str, tuple[SentencePieceModel, object]]:
    """Each variant: embedcli's tokenizer, and the library's own processor of the file."""
    return {
        v: (
            modeltok.load_model_tokenizer(p),
            sentencepiece.SentencePieceProcessor(model_file=str(p)),
        )
        for v, p in trained.items()
    }


def _texts() -> list[str]:
    paragraphs = [p for p in (CORPUS or "").split("\n\n") if p.strip()][:40]
    return [*hostile_texts(), *paragraphs, CORPUS or FALLBACK_TEXT]


TALLY: dict[str, list[int]] = {}  # variant -> [compared, equal]; printed with -s


def _agree(enc: SentencePieceModel, sp: object, text: str, variant: str) -> None:
    ours, theirs = enc.encode_ordinary(text), list(sp.encode(without_surrogates(text)))
    tally = TALLY.setdefault(variant, [0, 0])
    tally[0] += 1
    tally[1] += ours == theirs
    assert ours == theirs, (variant, text[:80])


# ---------------------------------------------------------------- the library's ids


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_ids_are_the_librarys(pairs, variant: str) -> None:
    enc, sp = pairs[variant]
    for text in _texts():
        _agree(enc, sp, text, variant)
    assert enc.n_vocab == sp.get_piece_size() and not enc.cut_safe
    assert enc.prefix == () and enc.suffix == ()  # a file alone: nothing added, as the library


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(list(VARIANTS)),
    st.lists(
        st.sampled_from([*"ab Z\t\n\u3000é😀中\u0301\u200d▁<>", "  ", "<tool>", "[INST]", "\n\n"]),
        max_size=30,
    ).map("".join),
)
def test_random_text_ids_bytes_and_decode(pairs, variant: str, text: str) -> None:
    enc, sp = pairs[variant]
    _agree(enc, sp, text, variant)
    ids = enc.encode_ordinary(text)
    if not any(enc._is_special_id(t) for t in ids):
        assert enc.library_decode(ids) == sp.decode(ids)
    if variant in ("bpe", "bpe-nodummy"):
        # identity normalization: the tokens spell the text, after the dummy prefix; the
        # library reads a written ▁ as a space
        text = text.replace("\u2581", " ")
        dummy = " " if read_model_spec(enc.path.read_bytes(), "").add_dummy_prefix else ""
        spelled = enc.decode_bytes(ids).decode("utf-8", "replace")
        assert spelled == (dummy + text if text else "")


def test_piece_types_are_the_protobufs(trained) -> None:
    from sentencepiece import sentencepiece_model_pb2 as pb

    files = [*trained.values(), *sorted(MISTRAL.glob("*.model*"))]
    for path in files:
        proto = pb.ModelProto()
        proto.ParseFromString(path.read_bytes())
        spec = read_model_spec(path.read_bytes(), str(path))
        assert list(spec.types) == [p.type for p in proto.pieces], path
        assert spec.add_dummy_prefix == proto.normalizer_spec.add_dummy_prefix
        kind = pb.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type)
        assert spec.model_type.lower() == kind.lower()


def test_special_pieces_and_bytes(pairs) -> None:
    enc, sp = pairs["bpe"]
    assert {"<s>", "</s>", "<unk>", "<ctl>", "[INST]", "[/INST]"} == enc.special_tokens_set
    assert "<tool>" not in enc.special_tokens_set  # user-defined: the library matches it
    tool = sp.piece_to_id("<tool>")
    assert enc.encode_ordinary("a<tool>b").count(tool) == 1
    assert sp.piece_to_id("[INST]") not in enc.encode_ordinary("[INST]")  # control: text
    for token in range(enc.n_vocab):
        data = enc.decode_single_token_bytes(token)
        found = enc.encode_single_token(data)
        assert enc.decode_single_token_bytes(found) == data
        assert found == token or sp.is_byte(token)  # <0x61> and a: the piece of text first
    assert enc.encode_single_token(" ") == sp.piece_to_id("\u2581")
    assert enc.decode_single_token_bytes(sp.piece_to_id("<0xE4>")) == b"\xe4"
    with pytest.raises(KeyError):
        enc.decode_single_token_bytes(enc.n_vocab)
    with pytest.raises(KeyError):
        enc.encode_single_token("no such piece")


# ---------------------------------------------------------------- special tokens


def test_allowed_special_splits_and_encodes_each_fragment(pairs) -> None:
    enc, sp = pairs["bpe"]
    inst, end = sp.piece_to_id("[INST]"), sp.piece_to_id("[/INST]")
    text = "[INST] Hello [/INST]world<s>"
    expected = [inst, *sp.encode(" Hello "), end, *sp.encode("world"), sp.bos_id()]
    assert enc.encode(text, allowed_special="all") == expected
    # a subset: the others are text, where they are not disallowed (tiktoken's semantics)
    assert enc.encode(text, allowed_special={"[INST]"}, disallowed_special=()) == [
        inst,
        *sp.encode(" Hello [/INST]world<s>"),
    ]
    with pytest.raises(ValueError) as caught:
        enc.encode(text, allowed_special={"[INST]"})
    assert str(caught.value) == (
        "Encountered text corresponding to disallowed special token '[/INST]'. Pass it in "
        "allowed_special to encode it as a special token, or disallowed_special=() to encode "
        "it as plain text."
    )
    assert enc.encode(text, disallowed_special=()) == enc.encode_ordinary(text)
    assert enc.encode("lone \ud800 <s>", allowed_special="all")[-1] == sp.bos_id()


@pytest.mark.skipif(not MISTRAL.is_dir(), reason="mistral-common (the test extra) is absent")
def test_mistral_models_give_mistral_commons_published_ids(tmp_path: Path) -> None:
    """tests/test_tokenize_v1.py and test_tokenize_v3.py of mistral-common, literally."""
    v1 = modeltok.load_model_tokenizer(MISTRAL / "tokenizer.model.v1")
    assert v1.encode_ordinary("[INST] SYSTEM\n\na [/INST]") == [
        733, 16289, 28793, 17121, 22526, 13, 13, 28708, 733, 28748, 16289, 28793,
    ]  # fmt: skip
    assert v1.encode_ordinary("[INST] a [/INST]") == [
        733,
        16289,
        28793,
        264,
        733,
        28748,
        16289,
        28793,
    ]
    assert [v1.encode_ordinary(t) for t in "bcd"] == [[287], [277], [281]]
    v3 = MISTRAL / "mistral_instruct_tokenizer_240323.model.v3"
    model = folder(
        tmp_path / "v3", v3, {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True}
    )
    enc = modeltok.load_model_tokenizer(model)
    text = "[INST]a[/INST]b</s>[INST]c[/INST]d</s>"
    assert [*enc.prefix, *enc.encode(text, allowed_special="all")] == [
        1, 3, 1032, 4, 1055, 2, 3, 1045, 4, 1049, 2,
    ]  # fmt: skip
    result = runner.invoke(app, ["tokenize", "-e", str(model), text, "--allow-special", "--encode"])
    assert result.exit_code == 0, result.output
    assert [int(t) for t in result.stdout.split()] == [1, 3, 1032, 4, 1055, 2, 3, 1045, 4, 1049, 2]


def test_added_tokens_of_the_config(trained, tmp_path: Path) -> None:
    sp = sentencepiece.SentencePieceProcessor(model_file=str(trained["bpe"]))
    config = {
        "tokenizer_class": "LlamaTokenizer",
        "add_bos_token": True,
        "added_tokens_decoder": {
            "1": {"content": "<s>", "special": True},
            "4": {"content": sp.id_to_piece(4), "special": False},
            "700": {"content": "<|im_start|>", "special": True, "rstrip": True},
            "701": {"content": "<|im_end|>", "special": True, "lstrip": True},
        },
    }
    enc = modeltok.load_model_tokenizer(folder(tmp_path / "added", trained["bpe"], config))
    assert enc.n_vocab == 702 and enc.prefix == (1,)
    assert {"<|im_start|>", "<|im_end|>"} <= enc.special_tokens_set
    ids = enc.encode("<|im_start|>  hi  <|im_end|>", allowed_special="all")
    assert ids == [700, *sp.encode("hi"), 701]  # the whitespace beside them is theirs
    assert enc.decode_single_token_bytes(700) == b"<|im_start|>"
    assert enc.encode_single_token("<|im_end|>") == 701


# ---------------------------------------------------------------- what a folder adds


@pytest.mark.parametrize(
    ("variant", "config"),
    [
        ("bpe", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True}),
        ("bpe", {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": False}),
        (
            "bpe",
            {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True, "add_eos_token": True},
        ),
        ("bpe-nodummy", {**GEMMA_CONFIG}),
        (
            "bpe-nodummy",
            {"tokenizer_class": "GemmaTokenizer", "add_eos_token": True, "add_bos_token": False},
        ),
        ("unigram-nfkc", {"tokenizer_class": "T5Tokenizer", "extra_ids": 0}),
        (
            "unigram-nfkc",
            {"tokenizer_class": "T5Tokenizer", "add_eos_token": False, "extra_ids": 0},
        ),
    ],
)
def test_what_transformers_adds(trained, tmp_path: Path, variant: str, config: dict) -> None:
    from transformers import AutoTokenizer

    path = folder(tmp_path / "folder", trained[variant], config)
    enc = modeltok.load_model_tokenizer(path)
    theirs = AutoTokenizer.from_pretrained(str(path))
    full, bare = theirs.encode("ab"), theirs.encode("ab", add_special_tokens=False)
    start = next(i for i in range(len(full)) if full[i : i + len(bare)] == bare)
    assert (enc.prefix, enc.suffix) == (tuple(full[:start]), tuple(full[start + len(bare) :]))


def test_class_defaults_and_model_type(trained, tmp_path: Path) -> None:
    """Keys absent: transformers 4's class defaults (bos for Llama and Gemma), as the class
    names them, or as config.json's model_type picks the class."""
    llama = folder(tmp_path / "llama", trained["bpe"], {"tokenizer_class": "LlamaTokenizer"})
    assert modeltok.load_model_tokenizer(llama).prefix == (1,)
    gemma = folder(tmp_path / "gemma", trained["bpe-nodummy"])
    (gemma / "config.json").write_text(json.dumps({"model_type": "gemma3_text"}))
    enc = modeltok.load_model_tokenizer(gemma)
    assert (enc.prefix, enc.suffix, enc.eot_token) == ((2,), (), 0)  # <bos>; <pad> pads
    t5 = folder(tmp_path / "t5", trained["unigram-nfkc"])
    (t5 / "config.json").write_text(json.dumps({"model_type": "t5"}))
    assert modeltok.load_model_tokenizer(t5).suffix == (1,)
    # T5's repositories name the model spiece.model: found in a folder too (a newcomer's trial)
    (t5 / "tokenizer.model").rename(t5 / "spiece.model")
    assert modeltok.find_tokenizer_file(t5) == t5 / "spiece.model"
    named = modeltok.load_model_tokenizer(t5)
    assert named.suffix == (1,) and named.encode_ordinary("Hello") == list(
        sentencepiece.SentencePieceProcessor(model_file=str(t5 / "spiece.model")).encode("Hello")
    )
    (t5 / "tokenizer.model").write_bytes((t5 / "spiece.model").read_bytes())
    assert modeltok.find_tokenizer_file(t5) == t5 / "tokenizer.model"  # the usual name first


# ---------------------------------------------------------------- the command line


def _cli(*args: str):
    return runner.invoke(app, [*args])


def test_tokenize_count_and_windows(trained, tmp_path: Path) -> None:
    path = folder(tmp_path / "m", trained["bpe"], {"tokenizer_class": "LlamaTokenizer"})
    sp = sentencepiece.SentencePieceProcessor(model_file=str(trained["bpe"]))
    text = "Hello, wörld! 😀 <tool>"
    assert modeltok.find_tokenizer_file(path) == path / "tokenizer.model"
    done = _cli("tokenize", "-e", str(path), text, "--encode")
    assert done.exit_code == 0, done.output
    assert [int(t) for t in done.stdout.split()] == [1, *sp.encode(text)]
    shown = json.loads(_cli("tokenize", "-e", str(path / "tokenizer.model"), text, "--json").stdout)
    assert [t["id"] for t in shown["tokens"]] == [1, *sp.encode(text)]
    (trained["bpe"].parent / "in.txt").write_text(text)
    counted = _cli("count", "-e", str(path), str(trained["bpe"].parent / "in.txt"), "--json")
    assert counted.exit_code == 0, counted.output
    assert list(json.loads(counted.stdout)["files"][0]["tokens"].values()) == [len(sp.encode(text))]
    windows = _cli("windows", "-e", str(path), text, "-t", "3", "--keep-last", "--jsonl")
    assert windows.exit_code == 0, windows.output
    rows = [json.loads(line) for line in windows.stdout.splitlines()]
    stream = [1, *sp.encode(text)]
    assert [r["input_ids"] for r in rows] == [
        stream[i : i + 3] for i in range(0, len(stream) - 3, 3)
    ]
    assert_cli_leaves_unimported(["tokenize", "-e", str(path), text], ("torch", "transformers"))


def test_decode_offsets_and_truncate(trained, tmp_path: Path) -> None:
    path = folder(tmp_path / "m", trained["bpe"], {"tokenizer_class": "LlamaTokenizer"})
    for text in ("Hello, wörld! 😀", "  two  spaces", "a\tb\nc"):
        ids = _cli("tokenize", "-e", str(path), text, "--encode", "--no-add-special").stdout
        back = _cli("tokenize", "-e", str(path), "--decode", "--ids", ",".join(ids.split()))
        assert back.exit_code == 0, back.output
        assert back.stdout.rstrip("\n") == text
    shown = json.loads(
        _cli("tokenize", "-e", str(path), "Hello world", "--offsets", "--json").stdout
    )
    pieces = [t["bytes"] for t in shown["tokens"]][1:]
    spans_ = shown["offsets"][1:]
    assert shown["offsets"][0] is None  # <s>, added
    assert "".join(bytes.fromhex(b).decode() for b in pieces) == " Hello world"
    assert spans_[0] in ([0, 5], [0, 0], [0, 1]) and spans_[-1][1] == len("Hello world")
    cut = _cli("tokenize", "-e", str(path), "Hello world", "--truncate", "3")
    assert cut.exit_code == 0, cut.output


def test_embed_with_a_model_folder(trained, tmp_path: Path) -> None:
    """embed --weights FOLDER reads the folder's own SentencePiece tokenizer: bos, then the
    library's ids, each row of the table."""
    import numpy as np
    from safetensors.numpy import save_file

    path = folder(
        tmp_path / "llama",
        trained["bpe"],
        {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True},
    )
    config = {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 600,
        "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 64,
        "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
    }  # fmt: skip
    (path / "config.json").write_text(json.dumps(config))
    table = np.arange(600 * 8, dtype=np.float32).reshape(600, 8)
    save_file({"model.embed_tokens.weight": table}, str(path / "model.safetensors"))
    text = "Hello world"
    done = _cli("embed", "--weights", str(path), text, "--json")
    assert done.exit_code == 0, done.output
    sp = sentencepiece.SentencePieceProcessor(model_file=str(trained["bpe"]))
    assert json.loads(done.stdout)["input_ids"] == [[1, *sp.encode(text)]]


# ---------------------------------------------------------------- refusals


def test_refusals_are_one_line(trained, tmp_path: Path, monkeypatch) -> None:
    broken = tmp_path / "broken" / "tokenizer.model"
    broken.parent.mkdir()
    broken.write_bytes(b"\x0a\x05hello\x15\x00\x00\x00")
    expect_error(_cli("tokenize", "hi", "-e", str(broken)), "is not a SentencePiece model")
    other = folder(tmp_path / "xlmr", trained["bpe"], {"tokenizer_class": "XLMRobertaTokenizer"})
    expect_error(_cli("tokenize", "hi", "-e", str(other)), "names the tokenizer class XLMRoberta")
    wrong = folder(
        tmp_path / "wrong", trained["bpe"], {"added_tokens_decoder": {"1": {"content": "<bos>"}}}
    )
    expect_error(_cli("tokenize", "hi", "-e", str(wrong)), "says token 1 is '<bos>'")
    # a hostile trial's: "³" passed str.isdigit and broke int(); a gap of ids past the pieces
    # made a vocabulary of 10**11 ids (test_added_tokens_of_the_config's gap of 100 is read);
    # a million T5 sentinels took 428 MB
    refusals = {
        "³": "added_tokens_decoder['³'] is not a token",
        "٣": "added_tokens_decoder['٣'] is not a token",
        "99999999999": "past the model's 600 pieces, leaving more than 65,536 ids between",
    }
    for number, (key, said) in enumerate(refusals.items()):
        added = {"added_tokens_decoder": {key: {"content": "<x>"}}}
        odd = folder(tmp_path / f"odd{number}", trained["bpe"], added)
        expect_error(_cli("tokenize", "hi", "-e", str(odd)), said)
    t5 = folder(tmp_path / "t5", trained["unigram-nfkc"], {
        "tokenizer_class": "T5Tokenizer", "extra_ids": 1 << 20})  # fmt: skip
    expect_error(_cli("tokenize", "hi", "-e", str(t5)), "extra_ids is 1048576, not a count from 0")
    legacy = folder(
        tmp_path / "legacy", trained["bpe"], {"tokenizer_class": "LlamaTokenizer", "legacy": False}
    )
    said = _cli("tokenize", "<s>hi", "-e", str(legacy), "--allow-special")
    expect_error(said, "sets legacy: false")
    both = folder(tmp_path / "both", trained["bpe"])
    (both / "tekken.json").write_text("{}")
    expect_error(_cli("tokenize", "hi", "-e", str(both)), "holds both tekken.json and the Sentence")
    with pytest.raises(EncodingError, match="applies only to tiktoken-format files"):
        modeltok.load_model_tokenizer(trained["bpe"], family="qwen")
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # as if the extra were not installed
    expect_error(
        _cli("tokenize", "hi", "-e", str(trained["unigram"])),
        'needs the sentencepiece package; run: pip install "embedcli[sentencepiece]"',
    )


# ---------------------------------------------------------------- Gemma 3, 262,144 pieces


def test_gemma3_pieces_against_the_library_and_llama_cpps_port(tmp_path: Path) -> None:
    gguf = gemma_gguf()
    if gguf is None:
        pytest.skip(MISSING)
    path = folder(tmp_path / "gemma3", gemma_model(tmp_path / "built", gguf), GEMMA_CONFIG)
    enc = modeltok.load_model_tokenizer(path)
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path / "tokenizer.model"))
    port = modeltok.load_model_tokenizer(gguf)
    assert enc.n_vocab == 262_144 and enc.prefix == (2,) and enc.eot_token == 0
    assert enc.encode_ordinary("Hello world") == [9259, 1902]  # as the GGUF's own port gives
    for text in _texts():
        _agree(enc, sp, text, "gemma3")
        # llama.cpp reads a written ▁ as itself, and makes Gemma's user-defined </s> a
        # control token; the library does neither
        if not any(c in text for c in ("\ud800", "\u2581", "</s>")):
            assert enc.encode_ordinary(text) == port.encode_ordinary(text), text[:60]
    turn = "<start_of_turn>user\nhi<end_of_turn>"
    assert enc.encode(turn, allowed_special="all") == port.encode(turn, allowed_special="all")


def test_kinds() -> None:
    assert SentencePieceModel in kinds.MODEL_TOKENIZERS and SentencePieceModel in kinds.SELF_PLACING
