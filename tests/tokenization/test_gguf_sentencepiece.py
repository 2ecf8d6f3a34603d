"""SentencePiece-style GGUF tokenizers (``tokenizer.ggml.model`` "llama", run by
embedcli.tokenization.gguf.spm as llama.cpp runs them) against llama.cpp itself: the real
Gemma 3 270M vocabulary (262,144 tokens) and tiny files written with what llama.cpp reads
otherwise (one score for every token, no prefix space, Phi-3's space-stripping specials)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from support.gemmafile import MISSING, gemma_gguf
from support.ggufvocab import llama2_json, llama2_metadata, through_gguf_file
from support.helpers import assert_cli_leaves_unimported
from support.llamacpp import tools
from support.llamacpp.workers import llama_cpp_ids

from embedcli.tokenization.modeltok import load_tokenizer

pytestmark = pytest.mark.skipif(not tools.runtime(), reason=tools.RUNTIME_MISSING)

CORPORA = Path("/work/shared/corpora")
# every Unicode category, whitespace runs, combining marks, ZWJ emoji, a lone surrogate
HOSTILE = [
    "",
    " ",
    "   ",
    "\n",
    "Hello world",
    "  two  spaces  ",
    "\t\ttabs\r\n\r\nlines\n\n\n",
    "\x0b\x0c\x85\u2028\u2029\u3000\u00a0\u2009",
    "naïve café résumé",
    "e\u0301 a\u0308 \u0915\u093f \u0e01\u0e34",
    "😀👍🏽 👨\u200d👩\u200d👧 🏳️\u200d🌈",
    "東京は日本の首都です。中文字符 한국어 हिन्दी العربية עברית",
    "ABCxyz 0123456789 ½ Ⅻ ① ²",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ¡¿ «» „“ —–",
    "\u00ad\u200b\u200e\ufeff\ue000\U000f0000",
    "\x00\x01\x1f\x7f",
    "lone \ud800 surrogate",
    "<bos>",
    "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    "<unused0><unused12> <eos></s><pad>",
    "a<start_of_turn>b<start_of_turn><start_of_turn>",
    "<0x41> <mask> [multimodal]",
]
ALPHABET = [*"abcXYZ019 !?.,'\"-_<>|$+\n\r\t\x0b\x85\u2028\u3000\u00a0", "😀", "é", "東"]
ALPHABET += ["<bos>", "<start_of_turn>", "<unused3>", "  ", "</s>", "<s>", "<unk>"]


def _random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(ALPHABET, k=rng.randint(0, 40))) for _ in range(count)]


def _corpus_texts(limit: int = 40) -> list[str]:
    if not CORPORA.is_dir():
        return []
    texts = []
    for path in sorted(p for p in CORPORA.rglob("*") if p.is_file())[:limit]:
        try:
            texts.append(path.read_text(encoding="utf-8")[:6000])
        except (UnicodeDecodeError, OSError):
            continue
    return texts


def _as_utf8(text: str) -> str:
    """What embedcli encodes for a text with a lone surrogate (which spells no UTF-8): U+FFFD
    in its place, as tiktoken does; llama.cpp is given that text."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _compare(path: Path, texts: list[str]) -> None:
    tok = load_tokenizer(str(path))
    for special in (False, True):
        theirs = llama_cpp_ids(path, [_as_utf8(t) for t in texts], special=special)["ids"]
        ours = [
            tok.encode(t, allowed_special="all") if special else tok.encode_ordinary(t)
            for t in texts
        ]
        pairs = zip(texts, theirs, ours, strict=True)
        wrong = [(t[:60], a[:12], b[:12]) for t, a, b in pairs if a != b]
        assert not wrong, f"special={special}: {len(wrong)} of {len(texts)} differ: {wrong[:3]}"


@pytest.fixture(scope="module")
def gemma() -> Path:
    path = gemma_gguf()
    if path is None:
        pytest.skip(MISSING)
    return path


def test_gemma_ids_equal_llama_cpp(gemma: Path) -> None:
    texts = HOSTILE + _corpus_texts() + _random_texts(400, seed=3)
    _compare(gemma, texts)


def test_gemma_prefix_and_plain_control_text(gemma: Path) -> None:
    tok = load_tokenizer(str(gemma))
    facts = llama_cpp_ids(gemma, ["x"])
    assert tok.prefix == ((facts["bos"],) if facts["add_bos"] else ())
    assert tok.n_vocab == facts["n_tokens"] == 262_144
    assert tok.encode_ordinary("<start_of_turn>") != [tok.encode_single_token("<start_of_turn>")]
    assert tok.encode("<start_of_turn>", allowed_special="all") == [105]
    with pytest.raises(ValueError, match="disallowed special token '<start_of_turn>'"):
        tok.encode("<start_of_turn>")


def _tiny(tmp_path: Path, name: str, **changes: object) -> Path:
    metadata = llama2_metadata(llama2_json())
    for key, value in changes.items():
        if key == "general_name":
            metadata["general.name"] = value
        else:
            metadata["tokenizer.ggml." + key] = value
    path = tmp_path / f"{name}.gguf"
    through_gguf_file(metadata, path)
    return path


@pytest.mark.parametrize(
    ("name", "changes"),
    [
        ("as-trained", {}),
        # convert_hf_to_gguf.py writes -1000 for every token of a model with only a
        # tokenizer.json: llama.cpp then merges left to right, the leftmost pair first
        ("one-score", {"scores": "one"}),
        ("no-prefix-space", {"add_space_prefix": False}),
        ("phi-3", {"general_name": "Phi-3 mini", "token_type": "user-defined"}),
    ],
)
def test_tiny_files_equal_llama_cpp(tmp_path: Path, name: str, changes: dict) -> None:
    n = len(json.loads(llama2_json())["model"]["vocab"])
    if changes.get("scores") == "one":
        changes["scores"] = [-1000.0] * n
    if changes.get("token_type") == "user-defined":
        metadata = llama2_metadata(llama2_json())
        types = list(metadata["tokenizer.ggml.token_type"])
        tokens = list(metadata["tokenizer.ggml.tokens"])
        types[-1] = 4  # a user-defined token: matched from any text, its spaces stripped
        tokens[-2], types[-2] = "<|endoftext|>", 3  # which llama.cpp needs in a Phi-3 file
        changes.update(token_type=types, tokens=tokens)
    path = _tiny(tmp_path, name, **changes)
    texts = HOSTILE + _random_texts(150, seed=len(name)) + _corpus_texts(8)
    last = load_tokenizer(str(path)).tokens[-1]
    texts += [f"a {last} b", f"{last}  {last}\n x", f"  {last}", "a </s>  b <s> c <unk>  d"]
    texts += ["x <|endoftext|>  y", "</s>\n\t z"]
    _compare(path, texts)


def test_decode_round_trips_through_llama_cpp_text(gemma: Path) -> None:
    tok = load_tokenizer(str(gemma))
    for text in [t for t in HOSTILE if "\ud800" not in t] + _random_texts(100, seed=9):
        ids = tok.encode_ordinary(text)
        prefixed = " " + text if text and tok.add_space_prefix else text
        assert tok.decode(ids) == prefixed
        assert tok.library_decode(ids) == text


def test_tokenize_and_count_of_a_gguf_import_no_torch(tmp_path: Path) -> None:
    path = _tiny(tmp_path, "plain")
    (tmp_path / "a.txt").write_text("Hello world </s>\n", encoding="utf-8")
    # nor the rest of the gguf package, whose vocab module imports sentencepiece and
    # mistral-common where they are installed (0.5 s; embedcli.models.gguf.ggml)
    unused = ("torch", "gguf.vocab", "mistral_common", "sentencepiece")
    assert_cli_leaves_unimported(["tokenize", "Hello", "-e", str(path), "--count"], unused)
    assert_cli_leaves_unimported(["count", str(tmp_path / "a.txt"), "-e", str(path)], unused)
