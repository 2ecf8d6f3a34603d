"""Every ``tokenizer.ggml.pre`` name llama.cpp maps to a pre-tokenizer (``llama_vocab::impl::load``
in ``src/llama-vocab.cpp``) is read by embedcli with llama.cpp's own ids, or refused by name:
byte-level ("gpt2") GGUF files written here, one per name, tokenized by embedcli and by llama.cpp
itself (the llama_cpp package) on llama.cpp's vocab-test texts, a hostile list, the corpora and
random texts; and real vocabularies against the ids llama.cpp publishes for them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import ggufpre
from support.ggufvocab import through_gguf_file
from support.helpers import make_runner
from support.llamacpp import tools
from support.llamacpp.workers import llama_cpp_ids

from embedcli.cli import app
from embedcli.errors import EncodingError
from embedcli.tokenization.gguf import preregex
from embedcli.tokenization.gguf.pre import KNOWN_PRE_NAMES, REFUSED, pre_tokenizer
from embedcli.tokenization.gguf.tokenizer import load_gguf_tokenizer
from embedcli.tokenization.modeltok import load_tokenizer

runner = make_runner()

# Every name llama_vocab::impl::load maps, in its order (llama.cpp of llama_cpp_python 0.3.36).
LLAMA_CPP_NAMES = (
    *("default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1"),
    *("pixtral", "midm-2.0", "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder"),
    *("deepseek-v3", "spark2_5", "youtu", "falcon", "mpt", "starcoder", "gpt-2", "phi-2"),
    *("jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum"),
    *("modern-bert", "jais-2", "gemma4", "granite-embed-multi-311m", "sarvam-moe"),
    *("jina-v1-en", "jina-v2-code", "roberta-bpe", "whitespace", "refact", "command-r"),
    *("qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx"),
    *("smaug-bpe", "poro-chat", "chatglm-bpe", "glm4", "glm5", "viking", "jais", "tekken"),
    *("smollm", "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4", "exaone-moe"),
    *("chameleon", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2", "talkie"),
    *("granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe", "trillion"),
    *("granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan"),
    *("hunyuan-dense", "hy_v4", "joyai-llm", "kimi-k2", "ufakzeka", "grok-2", "afmoe"),
    *("laguna", "minimax-m2", "solar-open", "mellum2"),
)
# The names whose type llama.cpp runs with byte_encode off (raw UTF-8 pieces).
RAW_NAMES = frozenset({"gemma4", "granite-embed-multi-311m", "sarvam-moe", "whitespace"})
READ = [n for n in LLAMA_CPP_NAMES if n not in REFUSED]

_WHITESPACE = "\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_SPACE_RUN = re.compile(f" [{_WHITESPACE}]|[{_WHITESPACE}] ")  # a space beside whitespace


def _texts() -> list[str]:
    """The texts every name is checked on (random ones joined into long ones: llama.cpp's
    std::regex types cost a regex compile per text)."""
    randoms = ggufpre.random_texts(240, seed=7)
    joined = ["".join(randoms[i : i + 24]) for i in range(0, len(randoms), 24)]
    corpus = ggufpre.corpus_texts(limit=4)
    return [
        ggufpre.as_utf8(t) for t in ggufpre.HOSTILE + ggufpre.vocab_test_texts() + corpus + joined
    ]


TEXTS = _texts()
SPECIAL_TEXTS = [t for t in TEXTS if re.search(r"<\|endoftext\|>|\[TOOL\]|<bos>|<eos>|<pad>", t)]


def _llama_cpp_runs() -> None:
    if not tools.runtime():
        pytest.skip(tools.RUNTIME_MISSING)


class Files:
    """One GGUF file per name (the raw vocabulary for llama.cpp's raw names), written once;
    llama.cpp's ids of :data:`TEXTS` for each, asked once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ids: dict[str, list[list[int]]] = {}

    def path(self, name: str, **changes: object) -> Path:
        suffix = "".join(f"-{k}={v}" for k, v in changes.items())
        path = self.folder / f"{name}{suffix}.gguf"
        if not path.exists():
            made = ggufpre.raw_metadata if name in RAW_NAMES else ggufpre.spanning_metadata
            metadata = made(name)
            metadata.update({"tokenizer.ggml." + k: v for k, v in changes.items()})
            ggufpre.write_gguf(metadata, path)
        return path

    def llama_ids(self, name: str, texts: list[str]) -> list[list[int]]:
        if name not in self.ids:
            self.ids[name] = llama_cpp_ids(self.path(name), texts)["ids"]
        return self.ids[name]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    return Files(tmp_path_factory.mktemp("pre"))


def _space_aborts(text: str) -> bool:
    """llama.cpp aborts on the text under the whitespace pre-tokenizer: a whitespace run that
    holds a space and another character (see rawbpe)."""
    return _SPACE_RUN.search(text) is not None


def test_every_name_llama_cpp_maps_is_read_or_refused() -> None:
    assert len(set(LLAMA_CPP_NAMES)) == len(LLAMA_CPP_NAMES) == 91
    assert set(KNOWN_PRE_NAMES) | set(REFUSED) == set(LLAMA_CPP_NAMES)
    assert not set(KNOWN_PRE_NAMES) & set(REFUSED)
    assert {n for n in KNOWN_PRE_NAMES if not pre_tokenizer(n).byte_encode} == RAW_NAMES


@pytest.mark.parametrize("name", ["foo", "gemma5", "Qwen2"])
def test_a_name_llama_cpp_does_not_map_is_refused_in_one_line(files: Files, name: str) -> None:
    with pytest.raises(EncodingError) as caught:
        load_gguf_tokenizer(ggufpre.spanning_metadata(name), name, Path("dir/m.gguf"))
    message = str(caught.value)
    assert message.startswith(f"dir/m.gguf: the tokenizer's pre-tokenizer {name!r} is not one")
    assert "nor llama.cpp" in message and "\n" not in message
    _llama_cpp_runs()
    with pytest.raises(RuntimeError, match="unknown pre-tokenizer type"):
        llama_cpp_ids(files.path(name), ["x"])


@pytest.mark.parametrize("name", sorted(REFUSED) or ["(none)"])
def test_refused_names_say_why_in_one_line(name: str) -> None:
    if name not in REFUSED:
        pytest.skip("every name llama.cpp maps is read")
    with pytest.raises(EncodingError) as caught:
        load_gguf_tokenizer(ggufpre.spanning_metadata(name), name, Path("m.gguf"))
    assert f"pre-tokenizer {name!r} is one embedcli does not read: " in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", READ)
def test_ids_equal_llama_cpp(files: Files, name: str) -> None:
    _llama_cpp_runs()
    path = files.path(name)
    tok = load_tokenizer(str(path))
    texts = [t for t in TEXTS if not (name == "whitespace" and _space_aborts(t))]
    theirs = files.llama_ids(name, texts)
    ours = [tok.encode_ordinary(t) for t in texts]
    wrong = [
        (t[:50], a[:10], b[:10]) for t, a, b in zip(texts, theirs, ours, strict=True) if a != b
    ]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts differ: {wrong[:3]}"
    specials = [t for t in SPECIAL_TEXTS if t in texts]
    facts = llama_cpp_ids(path, specials, special=True)
    assert [tok.encode(t, allowed_special="all") for t in specials] == facts["ids"]
    assert tok.prefix == ((facts["bos"],) if facts["add_bos"] else ())


def test_whitespace_refuses_what_llama_cpp_aborts_on(files: Files) -> None:
    """With spaces unescaped, llama.cpp's BPE session asserts that no symbol holds a space:
    a whitespace run with a space in it kills the process. embedcli says so instead."""
    tok = load_tokenizer(str(files.path("whitespace")))
    aborting = [t for t in TEXTS if _space_aborts(t)]
    assert len(aborting) > 20
    for text in aborting:
        with pytest.raises(EncodingError, match="'whitespace' pre-tokenizer: its BPE session"):
            tok.encode_ordinary(text)
    assert tok.encode_ordinary("a b") and tok.encode_ordinary("a\t\tb")  # no run holds a space
    _llama_cpp_runs()
    with pytest.raises(RuntimeError, match="the worker died"):
        llama_cpp_ids(files.path("whitespace"), ["a  b"])


# One name for each pre-tokenizer embedcli has (names with one type and flags give one ids).
REPRESENTATIVES = list({pre_tokenizer(n): n for n in reversed(READ)}.values())
_CHUNKS = [c for chars in ggufpre.CATEGORIES.values() for c in chars]
_CHUNKS += [*ggufpre.WHITESPACE, " ", "  ", "\n", "\n\n", "'s", "'LL", "12345", "東京", "Ab", "é"]
RANDOM = st.lists(
    st.lists(st.sampled_from(_CHUNKS), max_size=30).map("".join)
    | st.text(st.characters(codec="utf-8"), max_size=20),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("name", REPRESENTATIVES)
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=RANDOM)
def test_random_texts_equal_llama_cpp(files: Files, name: str, texts: list[str]) -> None:
    _llama_cpp_runs()
    path = files.path(name)
    tok = load_tokenizer(str(path))
    texts = [t for t in texts if not (name == "whitespace" and _space_aborts(t))]
    assert [tok.encode_ordinary(t) for t in texts] == llama_cpp_ids(path, texts)["ids"]


@pytest.mark.parametrize(
    ("name", "other", "what"),
    [
        ("llama-bpe", "dbrx", "ignore_merges, one regex"),
        ("glm4", "chatglm-bpe", "ignore_merges, one regex"),
        ("gemma4", "sarvam-moe", "Gemma 4's newline tokens"),
        ("ufakzeka", "qwen2", "Qwen 2's regex without contractions"),
        ("laguna", "qwen2", "newline runs, then Qwen 2's regex"),
        ("afmoe", "deepseek-v3", "AFMoE's digits joined to the text before them"),
    ],
)
def test_the_vocabularies_tell_near_twins_apart(
    files: Files, name: str, other: str, what: str
) -> None:
    """The texts and vocabularies see what the two names differ in (else equal ids above
    would prove little)."""
    _llama_cpp_runs()
    ours = files.llama_ids(name, TEXTS)
    theirs = files.llama_ids(other, TEXTS)
    assert sum(a != b for a, b in zip(ours, theirs, strict=True)) >= 1, what


def test_no_pre_or_an_empty_one_is_llama_cpp_default(files: Files) -> None:
    assert pre_tokenizer("") is pre_tokenizer("default")
    metadata = ggufpre.spanning_metadata("default")
    del metadata["tokenizer.ggml.pre"]
    unnamed = load_gguf_tokenizer(metadata, "m", Path("m.gguf"))
    named = load_tokenizer(str(files.path("default")))
    assert [unnamed.encode_ordinary(t) for t in TEXTS] == [named.encode_ordinary(t) for t in TEXTS]
    _llama_cpp_runs()
    empty = load_tokenizer(str(files.path("")))
    assert [empty.encode_ordinary(t) for t in TEXTS] == files.llama_ids("", TEXTS)
    assert files.llama_ids("", TEXTS) == files.llama_ids("default", TEXTS)


def test_gemma4_adds_bos_whatever_the_file_says(files: Files) -> None:
    path = files.path("gemma4", add_bos_token=False)
    tok = load_tokenizer(str(path))
    assert tok.prefix == (2,)
    _llama_cpp_runs()
    facts = llama_cpp_ids(path, ["x"])
    assert (facts["add_bos"], facts["bos"]) == (True, 2)


@pytest.mark.parametrize("name", ["gemma4", "sarvam-moe", "whitespace"])
def test_raw_pieces_decode_to_their_text(files: Files, name: str) -> None:
    """Raw UTF-8 tokens are their own bytes (a ▁ a space where spaces were escaped), but for
    the byte the vocabulary has no token for (0x9F), which llama.cpp drops."""
    tok = load_tokenizer(str(files.path(name)))
    kept = [t for t in TEXTS if 0x9F not in t.encode("utf-8") and not _space_aborts(t)]
    assert len(kept) > 100
    assert [tok.decode(tok.encode_ordinary(t)) for t in kept] == kept


def test_unicode_16_letters_are_not_letters_to_llama_cpp() -> None:
    """Oniguruma (Unicode 16.0) reads U+1C89 as a letter, llama.cpp (15.1) as undefined."""
    from tokenizers import Regex
    from tokenizers.pre_tokenizers import Split

    def pieces(pattern: str, text: str) -> list[str]:
        return [p for p, _ in Split(Regex(pattern), "isolated").pre_tokenize_str(text)]

    assert pieces(r"\p{L}+", "a\u1c89b") == ["a\u1c89b"]
    assert pieces(preregex.as_llama_tables(r"\p{L}+"), "a\u1c89b") == ["a", "\u1c89", "b"]
    assert pieces(preregex.as_llama_tables(r"[^\s\p{L}]+"), "a\u1c89b") == ["a", "\u1c89", "b"]


def test_the_hostile_texts_hold_every_general_category() -> None:
    every = {a + b for a, bs in (("L", "ultmo"), ("M", "nce"), ("N", "dlo")) for b in bs}
    every |= {"P" + b for b in "cdseifo"} | {"S" + b for b in "mcko"} | {"Z" + b for b in "slp"}
    every |= {"Cc", "Cf", "Co", "Cn", "Cs"}
    assert ggufpre.category_of_every_char() >= every


def test_cli_tokenize_json_gives_llama_cpp_ids(files: Files) -> None:
    _llama_cpp_runs()
    path = files.path("kimi-k2")
    text = "Kimi的中文 tokens: 1234567, it's OK!"
    result = runner.invoke(app, ["tokenize", text, "-e", str(path), "--json"])
    assert result.exit_code == 0, result.output
    ids = [t["id"] for t in json.loads(result.stdout)["tokens"]]
    assert ids == llama_cpp_ids(path, [text])["ids"][0]


# ---------------------------------------------------------------- real vocabularies


def _published(name: str) -> tuple[Path, list[str], list[list[int]]]:
    tree = tools.converter()
    models = tree / "models" if tree is not None else None
    if models is None or not (models / f"ggml-vocab-{name}.gguf.out").is_file():
        pytest.skip(tools.CONVERTER_MISSING)
    path = models / f"ggml-vocab-{name}.gguf"
    texts = path.with_suffix(".gguf.inp").read_text(encoding="utf-8").split(ggufpre.SEPARATOR)
    lines = path.with_suffix(".gguf.out").read_text(encoding="utf-8").split("\n")
    return path, texts[:-1], [[int(i) for i in line.split()] for line in lines[: len(texts) - 1]]


@pytest.mark.parametrize("name", ["gpt-2", "qwen35"])
def test_real_vocabularies_give_llama_cpp_published_ids(name: str) -> None:
    path, texts, published = _published(name)
    tok = load_tokenizer(str(path))
    assert [tok.encode_ordinary(t) for t in texts] == published


def test_gemma4_real_vocabulary_gives_llama_cpp_published_ids() -> None:
    """Gemma 4's own file (262,144 raw UTF-8 tokens, tokenizer.ggml.model "gemma4"), read
    whole, and as a "gpt2" file naming the gemma4 pre-tokenizer: llama.cpp reads them alike."""
    from embedcli.models.gguf.file import open_gguf_file

    path, texts, published = _published("gemma-4")
    tok = load_tokenizer(str(path))
    assert [tok.encode_ordinary(t) for t in texts] == published
    metadata = {k: v.plain() for k, v in open_gguf_file(path).metadata.items()}
    assert metadata["tokenizer.ggml.model"] == "gemma4"
    metadata.update({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "gemma4"})
    as_gpt2 = load_gguf_tokenizer(metadata, "gemma-4", path)
    assert [as_gpt2.encode_ordinary(t) for t in texts] == published
    assert tok.prefix == as_gpt2.prefix


# ---------------------------------------------------------------- the models gemma4, whitespace


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("gemma4", {"model": "gemma4"}),
        ("gemma4", {"model": "gemma4", "pre": "llama-bpe"}),  # llama.cpp reads gemma4's anyway
        ("whitespace", {"model": "whitespace"}),
        ("whitespace", {"model": "whitespace", "normalizer.lowercase": True}),
    ],
    ids=["gemma4", "gemma4-named-llama-bpe", "whitespace", "whitespace-lowercase"],
)
def test_tokenizer_models_gemma4_and_whitespace_equal_llama_cpp(
    files: Files, name: str, changes: dict
) -> None:
    _llama_cpp_runs()
    path = files.path(name, **changes)
    tok = load_tokenizer(str(path))
    theirs = llama_cpp_ids(path, TEXTS)
    wrong = [
        (t[:50], a[:10], b[:10])
        for t, a, b in zip(TEXTS, theirs["ids"], map(tok.encode_ordinary, TEXTS), strict=True)
        if a != b
    ]
    assert not wrong, f"{len(wrong)} of {len(TEXTS)} texts differ: {wrong[:3]}"
    specials = llama_cpp_ids(path, SPECIAL_TEXTS, special=True)
    assert [tok.encode(t, allowed_special="all") for t in SPECIAL_TEXTS] == specials["ids"]
    assert tok.prefix == ((specials["bos"],) if specials["add_bos"] else ())


def test_the_whitespace_model_drops_whitespace_and_says_so(files: Files) -> None:
    tok = load_tokenizer(str(files.path("whitespace", model="whitespace")))
    assert tok.encode_ordinary("a  b\u3000c") == tok.encode_ordinary("a b c")  # whitespace gone
    assert tok.encode_ordinary("AB") != tok.encode_ordinary("ab")
    lower = load_tokenizer(str(files.path("whitespace", model="whitespace", **{
        "normalizer.lowercase": True})))  # fmt: skip
    assert lower.encode_ordinary("AB") == lower.encode_ordinary("ab")


def test_other_tokenizer_models_are_refused_by_name(files: Files) -> None:
    for model, pre in (("hybriddna", "default"), ("plamo2", "default"), ("whitespace", "gpt-2")):
        metadata = {**ggufpre.raw_metadata("whitespace"), "tokenizer.ggml.model": model}
        metadata["tokenizer.ggml.pre"] = pre
        with pytest.raises(EncodingError) as caught:
            load_gguf_tokenizer(metadata, model, Path("m.gguf"))
        message = str(caught.value)
        assert message.startswith(f"m.gguf: the tokenizer model {model!r} ") and "\n" not in message
        assert ("refuses to guess" if model == "whitespace" else "is not one embedcli reads") in (
            message
        )


def test_the_gguf_round_trip_keeps_the_metadata(tmp_path: Path) -> None:
    metadata = ggufpre.raw_metadata("gemma4")
    back = through_gguf_file(metadata, tmp_path / "raw.gguf")
    assert {k: back[k] for k in metadata} == metadata
