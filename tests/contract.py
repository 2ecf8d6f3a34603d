"""The contract every command keeps, whatever its command line, and a fuzzer that tries to break it.

The contract (README, "Flags that mean the same everywhere" and "Errors"), for every command:

- the exit code is 0, 1 (bad input or data), 2 (bad usage) or 130 (Ctrl-C);
- no traceback anywhere, on stdout or stderr;
- a failure prints exactly one ``Error: `` line on stderr and nothing on stdout; only
  ``embed --lines`` and ``windows --jsonl`` stream records, so they may have printed whole JSON
  lines before failing (``Warning:`` lines belong to successes only);
- a success with ``--json`` prints exactly one JSON document (no NaN or Infinity, which are not
  JSON); the streamed records are one JSON document a line;
- no file appears in the working folder but the requested output (``-o``, ``--png``), no
  temporary ``.*.tmp`` file is left, and every input file is byte for byte what it was;
- memory stays under a bound (2 GiB) for the small tables drawn here.

Command lines are built from each command's own click parameters (names, flags, repeatable
options, int, str or path values, hidden ones), so a new option is fuzzed without a change here.
Values are mostly small and valid (so the commands run deep and fast), with extremes (0, -1,
2**63, 10**30, 5000 digits), empty and unicode strings, rich markup, option-looking values and
hostile files (a directory, /dev/null, a missing path, non-UTF-8 text, an empty file, a tiny
checkpoint) mixed in. Each case runs in a fresh folder holding copies of the input files.

Used by tests/test_contract.py (a bounded run) and bench/fuzz (long runs).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
from hypothesis import assume
from hypothesis import strategies as st

from embedcli.cli import app

BOUND_BYTES = 2 * 2**30  # peak memory of a case: a subprocess's RSS, or growth in process
# Address space a case may reserve (in process: beyond what the process has): a safety net for
# this machine, so that a runaway allocation fails instead of swapping; not the bound itself.
GUARD_BYTES = 6 * 2**30
SCRIPT_GUARD_BYTES = 8 * 2**30
CASE_SECONDS = 60
EXIT_CODES = (0, 1, 2, 130)
TRACEBACK_MARKS = ("Traceback", 'File "')
SHELLS = ("pipe", "head", "closed", "full")  # how a subprocess's stdout is connected
# command -> the flags that stream records (JSON Lines, CSV rows)
STREAMING = {"embed": ("lines",), "windows": ("as_jsonl",), "count": ("as_jsonl", "as_csv")}

# ---------------------------------------------------------------- the input files

TEXT = "Hello, world! The quick brown fox jumps over the lazy dog.\n"
TEXT_FILES: dict[str, bytes] = {
    "in.txt": TEXT.encode(),
    "lines.txt": b"Hello, world!\nThe cat sat on the mat.\nA third line\n",
    "special.txt": b"first line\na <|endoftext|> b\nlast\n",
    "long.txt": ("The keeper of the lighthouse counted ships. " * 40).encode(),
    "ids.txt": b"15496 11 995 0\n",
    "crlf.txt": b"Hello\r\nworld\r\n",
    "bom.txt": b"\xef\xbb\xbfHello, world!\n",
    "bad-utf8.txt": b"Hello \xff\xfe world\n",
    "empty.txt": b"",
    "notes.npy": b"these are notes, not an array\n",  # a text whose name says .npy
}
STDIN_FILES = ("", "in.txt", "lines.txt", "special.txt", "ids.txt", "crlf.txt", "bom.txt",
               "bad-utf8.txt", "empty.txt")  # fmt: skip


@functools.lru_cache(maxsize=1)
def _checkpoints() -> dict[str, bytes]:
    """A tiny GPT-2-shaped checkpoint (50257 x 8 tokens, 32 x 8 positions) in three formats,
    and two broken ones."""
    import numpy as np
    import torch
    from safetensors.torch import save

    generator = torch.Generator().manual_seed(0)
    wte = torch.randn(50257, 8, generator=generator)
    wpe = torch.randn(32, 8, generator=generator)
    tables = {"transformer.wte.weight": wte, "transformer.wpe.weight": wpe}
    pt, npz = io.BytesIO(), io.BytesIO()
    torch.save({"model": {**tables, "lm_head.weight": wte}, "iter_num": 1}, pt)
    np.savez(npz, **{key: value.numpy() for key, value in tables.items()})
    safetensors = save(tables)
    return {
        "tiny.safetensors": safetensors,
        "tiny.pt": pt.getvalue(),
        "tiny.npz": npz.getvalue(),
        "trunc.safetensors": safetensors[:100],
        "bad.safetensors": b"this is not a checkpoint\n",
    }


def make_fixtures(folder: Path) -> Path:
    """Write every input file a case may name into ``folder`` (and an empty folder, adir/), and
    three model folders: GPT-2-style with its tokenizer.json, Llama-style (rope theta 500000,
    no tokenizer), and one whose config.json is damaged."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in {**TEXT_FILES, **_checkpoints()}.items():
        (folder / name).write_bytes(data)
    (folder / "adir").mkdir(exist_ok=True)
    _model_folders(folder)
    return folder


def _model_folders(folder: Path) -> None:
    from hubfixtures import gpt2_tokenizer_json

    checkpoint = _checkpoints()["tiny.safetensors"]
    gpt2 = folder / "model-gpt2"
    gpt2.mkdir(exist_ok=True)
    (gpt2 / "model.safetensors").write_bytes(checkpoint)
    config = {"model_type": "gpt2", "vocab_size": 50257, "n_embd": 8, "n_positions": 32}
    (gpt2 / "config.json").write_text(json.dumps(config))
    gpt2_tokenizer_json(gpt2)
    llama = folder / "model-llama"
    llama.mkdir(exist_ok=True)
    import torch
    from safetensors.torch import save_file

    table = torch.randn(50257, 8, generator=torch.Generator().manual_seed(1))
    save_file({"model.embed_tokens.weight": table}, str(llama / "model.safetensors"))
    config = {"model_type": "llama", "vocab_size": 50257, "hidden_size": 8, "rope_theta": 5e5,
              "num_attention_heads": 2, "max_position_embeddings": 64}  # fmt: skip
    (llama / "config.json").write_text(json.dumps(config))
    broken = folder / "model-broken"
    broken.mkdir(exist_ok=True)
    (broken / "model.safetensors").write_bytes(checkpoint)
    (broken / "config.json").write_text('{"n_embd": "wide"')
    _family_folders(folder)
    _gguf_files(folder)


def _gguf_files(folder: Path) -> None:
    """tiny.gguf: samples/make-gguf.py's (a llama GGUF, a tokenizer of 453 tokens, a Q8_0
    token table); trunc.gguf, cut inside its vocabulary; lying.gguf, cut inside its table."""
    import contextlib
    import io
    import runpy

    path = folder / "tiny.gguf"
    sample = Path(__file__).resolve().parent.parent / "samples" / "make-gguf.py"
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_path(str(sample), run_name="sample")["main"](path)
    data = path.read_bytes()
    table = 453 * 64 // 32 * 34  # Q8_0: 34 bytes a block of 32
    (folder / "trunc.gguf").write_bytes(data[:2000])  # cut inside the vocabulary
    (folder / "lying.gguf").write_bytes(data[: len(data) - table + 1000])  # and in the table


def _family_folders(folder: Path) -> None:
    """Model folders of the registry's other families (no tokenizer: --ids, or a refusal):
    BERT (token types, LayerNorm), OPT (offset 2), BLOOM (alibi, LayerNorm), T5 (relative),
    Mamba (none), Gemma 3 (two rope bases), Granite (a multiplier); an unknown model_type with
    GPT-2's keys, and a BERT folder without its LayerNorm."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(2)
    vocab, d = 50257, 8

    def table(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    norm = {"weight": table(d), "bias": table(d)}
    folders: dict[str, tuple[dict, dict]] = {
        "model-bert": ({"model_type": "bert", "hidden_size": d, "max_position_embeddings": 16,
                        "num_attention_heads": 2, "type_vocab_size": 2, "vocab_size": vocab}, {
            "bert.embeddings.word_embeddings.weight": table(vocab, d),
            "bert.embeddings.position_embeddings.weight": table(16, d),
            "bert.embeddings.token_type_embeddings.weight": table(2, d),
            **{f"bert.embeddings.LayerNorm.{k}": v for k, v in norm.items()}}),
        "model-opt": ({"model_type": "opt", "hidden_size": d, "word_embed_proj_dim": d,
                       "max_position_embeddings": 16, "num_attention_heads": 2,
                       "vocab_size": vocab}, {
            "model.decoder.embed_tokens.weight": table(vocab, d),
            "model.decoder.embed_positions.weight": table(18, d)}),
        "model-bloom": ({"model_type": "bloom", "hidden_size": d, "n_head": 2,
                         "vocab_size": vocab}, {
            "transformer.word_embeddings.weight": table(vocab, d),
            **{f"transformer.word_embeddings_layernorm.{k}": v for k, v in norm.items()}}),
        "model-t5": ({"model_type": "t5", "d_model": d, "num_heads": 2, "vocab_size": vocab},
                     {"shared.weight": table(vocab, d)}),
        "model-mamba": ({"model_type": "mamba", "hidden_size": d, "vocab_size": vocab},
                        {"backbone.embeddings.weight": table(vocab, d)}),
        "model-gemma3": ({"model_type": "gemma3_text", "hidden_size": d, "head_dim": 4,
                          "num_attention_heads": 2, "vocab_size": vocab, "dtype": "bfloat16",
                          "max_position_embeddings": 64,
                          "layer_types": ["sliding_attention", "full_attention"],
                          "rope_parameters": {
                              "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                              "full_attention": {"rope_type": "default", "rope_theta": 1e6}}},
                         {"model.embed_tokens.weight": table(vocab, d).bfloat16()}),
        "model-granite": ({"model_type": "granite", "hidden_size": d, "num_attention_heads": 2,
                           "vocab_size": vocab, "embedding_multiplier": 12.0,
                           "max_position_embeddings": 64},
                          {"model.embed_tokens.weight": table(vocab, d)}),
        "model-unknown": ({"model_type": "mystery", "n_embd": d, "vocab_size": vocab}, {
            "transformer.wte.weight": table(vocab, d), "transformer.wpe.weight": table(16, d)}),
        "model-bert-missing-norm": ({"model_type": "bert", "hidden_size": d,
                                     "vocab_size": vocab, "max_position_embeddings": 16}, {
            "bert.embeddings.word_embeddings.weight": table(vocab, d),
            "bert.embeddings.position_embeddings.weight": table(16, d),
            "bert.embeddings.token_type_embeddings.weight": table(2, d)}),
    }  # fmt: skip
    for name, (config, tensors) in folders.items():
        (folder / name).mkdir(exist_ok=True)
        save_file(tensors, str(folder / name / "model.safetensors"))
        (folder / name / "config.json").write_text(json.dumps(config))


def make_hub_cache(fixtures: Path, cache: Path) -> Path:
    """The GPT-2-style model folder as hf:org/tiny in a Hugging Face cache."""
    from hubfixtures import place_in_hf_cache

    place_in_hf_cache(fixtures / "model-gpt2", cache, "org/tiny")
    return cache


# ---------------------------------------------------------------- values, by parameter

IDS_OF_TEXT = "15496,11,995,0"
INT_EXTREMES = ("0", "-1", str(2**31 - 1), str(2**31), str(2**63 - 1), str(2**63), str(2**64),
                str(10**30), "9" * 5000, f"-{2**63}")  # fmt: skip
NOT_INTS = ("", " ", "abc", "1.5", "1e3", "0x10", "1_000", "٣", " 7", "NaN", "inf")
LOOKS_LIKE_OPTIONS = ("--json", "-d", "--", "-", "--bogus", "-h")
MARKUP = ("[/x]", "[bold]", "[bold red]hi[/]", "[link=file:///etc/passwd]x[/link]")
TEXTS = ("Hello, world!", "hi", "The quick brown fox", " king", "a <|endoftext|> b",
         "<|endoftext|>", "", " ", "\n", "\r\n", "\t", "😀", "Hi 😀", "Ω≈ç√", "\u200b", "e\u0301",
         "\x1b[31mred\x1b[0m", "caf\udce9", "%s %d {0}", "15496 11 995", "99999", "-1",
         "word " * 300, "ab" * 60)  # fmt: skip
SHAPES = ("8,4,256", "4,256", "(8,4,256)", "(3,256)", "[8, 4, 256]", "8x1x6x1", "7x1x5", "()",
          "1", "0", "-1", "0,3", "2,0", ",", "1,,2", "(", "a,b", "٣,4", "8;4", "1e3",
          str(2**63), f"{2**63},2", f"{10**30}x1", "9" * 5000, "1," * 40 + "1")  # fmt: skip
IDS = ("15496,11,995,0", "50256", "0", "1 2 3", "[15496, 11]", "100276")
BAD_IDS = ("", "-1", "50257", "200019", str(2**31), str(2**63 - 1), str(2**63), str(10**30),
           "9" * 5000, "a,b", "1,,2", "٣", "1.5", "0x10", "[]", ",")  # fmt: skip

TEXT_INPUTS = ("in.txt", "lines.txt", "long.txt", "special.txt", "ids.txt", "crlf.txt",
               "bom.txt", "notes.npy")  # fmt: skip
HOSTILE_INPUTS = ("bad-utf8.txt", "empty.txt", "adir", "missing.txt", "/dev/null", "-", "",
                  "tiny.safetensors", "adir/")  # fmt: skip
CHECKPOINTS = ("tiny.safetensors", "tiny.pt", "tiny.npz", "./tiny.safetensors", "model-gpt2",
               "model-llama", "hf:org/tiny", "model-gpt2/model.safetensors", "model-bert",
               "model-opt", "model-bloom", "model-t5", "model-mamba", "model-gemma3",
               "model-granite", "tiny.gguf", "./tiny.gguf")  # fmt: skip
BAD_CHECKPOINTS = ("bad.safetensors", "trunc.safetensors", "in.txt", "empty.txt", "adir",
                   "missing.safetensors", "/dev/null", "", "notes.npy", "model-broken",
                   "model-unknown", "model-bert-missing-norm",
                   "hf:org/absent", "hf:", "hf:a/b/c", "hf:org/x@", "hf:org/../x",
                   "model-gpt2/tokenizer.json", "trunc.gguf", "lying.gguf", "ollama:absent",
                   "ollama:", "ollama:../x", "ollama:a:b:c")  # fmt: skip
TOKENIZERS = ("model-gpt2", "model-gpt2/tokenizer.json", "hf:org/tiny", "tiny.gguf")
BAD_TOKENIZERS = ("model-llama", "model-broken/config.json", "hf:org/absent", "missing.json",
                  "tiny.safetensors", "adir", "in.txt", "trunc.gguf", "ollama:absent")  # fmt: skip
# Outputs are relative paths only: nothing is ever written outside the case's own folder.
OUTPUTS = ("out.npy", "out.pt", "out.safetensors", "OUT.NPY", "sub/../out.npy")
BAD_OUTPUTS = ("out.txt", "out", "adir", "adir/", "adir/out.npy", "nodir/out.npy", "in.txt",
               "notes.npy", "./notes.npy", "tiny.safetensors", "./tiny.pt", "", ".npy",
               "ü [bold].npy", "-", "--json", "long.txt")  # fmt: skip
PNGS = ("out.png", "OUT.PNG")
PROJECTOR_DIRS = ("proj", "adir", "proj/", "adir/proj")
BAD_PROJECTOR_DIRS = ("in.txt", "nodir/proj", "", "/dev/null", "tiny.safetensors", "-")
BAD_ID_FILES = ("in.txt", "empty.txt", "bad-utf8.txt", "adir", "missing.txt", "/dev/null", "",
                "tiny.safetensors")  # fmt: skip
BAD_PNGS = ("out.jpg", "adir", "adir/x.png", "nodir/x.png", "in.txt", "", "notes.npy", ".png",
            "[bold].png")  # fmt: skip

# Small valid sizes keep every case fast; the extremes above test the refusals.
SMALL_INTS = {"d_model": (1, 16), "context_length": (1, 64), "vocab_size": (1, 60000),
              "seq_len": (1, 16), "batch_size": (1, 8), "stride": (1, 16), "truncate": (0, 20),
              "show": (1, 8), "max_positions": (1, 70), "limit": (1, 5), "k": (1, 20),
              "seed": (0, 2**64 - 1), "pad_id": (0, 60000), "window": (1, 16),
              "max_length": (1, 16), "top": (1, 300), "heads": (1, 16),
              "head": (0, 12)}  # fmt: skip
# Options drawn more often than the rest: a default d of 768 is slow, and --json is checked.
OFTEN = {"d_model": 0.7, "as_json": 0.5}
# Sets of options that lead deep into a command (streaming, checkpoints, ...).
FOCUS = {
    "embed": (("seq_len", "output", "file"), ("lines", "file"), ("lines",), ("output",),
              ("weights",), ("ids",), ("verify", "dtype"), ("texts",)),
    "tokenize": (("decode",), ("count",), ("file",), ("encode",), ("texts",), ("encoding",),
                 ("explain", "texts"), ("explain", "file"), ("offsets", "texts"),
                 ("offsets", "file", "as_json")),
    "windows": (("file",), ("as_jsonl",), ("as_json",), ("texts",)),
    "neighbors": (("weights",), ("ids",), ("texts",)),
    "project": (("texts",), ("top",), ("ids_file",), ("weights", "top"), ("export_projector",),
                ("png", "texts"), ("top", "ids_file", "as_json")),
    "stats": (("weights",),),
    "positions": (("weights",), ("png",), ("similarity",), ("positional",), ("preset",),
                  ("preset", "head"), ("preset", "as_json"), ("positional", "heads", "head"),
                  ("positional", "rope_theta", "rope_scaling"), ("positional", "similarity"),
                  ("weights", "positional"), ("list_presets",), ("positional", "png")),
    "inspect-shapes": (("preset",), ("weights",), ("device",), ("train", "optimizer")),
    "weights": (("path",), ("path", "download")),
    "broadcast": (("shapes",),),
    "count": (("paths",), ("paths", "as_jsonl"), ("paths", "tree"), ("paths", "as_csv"),
              ("paths", "encoding"), ("engine_info",), ("engine_info", "encoding", "as_json")),
}  # fmt: skip
COUNT_PATHS = (".", "in.txt", "adir", "*.txt", "-", "model-gpt2", "**/*.txt", "long.txt")
BAD_COUNT_PATHS = ("missing", "adir/", "/dev/null", "[", "nodir/*.txt", "", "s3://bucket/x",
                   "file:///nonexistent", "tiny.safetensors", "bad-utf8.txt")  # fmt: skip


def _ints(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(str)


def _odd_strings() -> st.SearchStrategy[str]:
    """Empty, unicode, markup, option-looking: what a careless or hostile user types."""
    return st.one_of(
        st.sampled_from(("", " ", "\t", "😀", "Ω", "caf\udce9", *MARKUP, *LOOKS_LIKE_OPTIONS)),
        _free_text(12),
    )


def _free_text(size: int) -> st.SearchStrategy[str]:
    chars = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
    return st.text(chars, max_size=size).filter(
        lambda text: not any(mark in text for mark in TRACEBACK_MARKS)
    )


Values = tuple[st.SearchStrategy[str], st.SearchStrategy[str]]  # (usual, odd)


@functools.lru_cache(maxsize=1)
def _named_values() -> dict[str, Values]:
    """(usual, odd) values for the parameters whose names say what they hold."""
    from tiktoken.model import MODEL_TO_ENCODING

    from embedcli.core.config import DTYPES, POSITIONAL_FAMILIES
    from embedcli.models.presets import preset_names
    from embedcli.tokenization.encodings import BUNDLED_ENCODINGS

    # Only models whose encoding is bundled: any other would be downloaded.
    models = sorted(m for m, e in MODEL_TO_ENCODING.items() if e in BUNDLED_ENCODINGS)
    odd = _odd_strings()

    def pair(usual: tuple[str, ...], unusual: tuple[str, ...] = ()) -> Values:
        return st.sampled_from(usual), st.one_of(st.sampled_from(unusual), odd) if unusual else odd

    id_lists = st.lists(st.integers(0, 50256), min_size=1, max_size=6)
    return {
        "encoding": (
            st.sampled_from((*BUNDLED_ENCODINGS, *TOKENIZERS)),
            st.one_of(st.sampled_from(("GPT2", "gtp2", "o200k", "p50k", *BAD_TOKENIZERS)), odd),
        ),
        "model": pair((*models, "gpt-4o-2024-08-06", "gpt-4-0613"), ("GPT-4", "bogus", "gpt-3")),
        "positional": pair(POSITIONAL_FAMILIES, ("Learned", "rop", "alibi")),
        "dtype": pair((*DTYPES, "fp16", "bf16", "half", "torch.float16"), ("float64", "int8")),
        "device": pair(("auto", "cpu", "meta"), ("CPU", " cpu ", "gpu", "cpu:0", "meta:0")),
        "pool": pair(("none", "mean", "last"), ("max",)),
        "preset": pair(preset_names(), ("gpt-2", "GPT2", "Llama-3.1-8B", "llama3")),
        "token_key": pair(
            ("transformer.wte.weight",),
            ("transformer.wpe.weight", "lm_head.weight", "nope", "none"),
        ),
        "position_key": pair(("transformer.wpe.weight", "none"), ("transformer.wte.weight", "x")),
        "ids": (
            st.one_of(st.sampled_from(IDS), id_lists.map(lambda ids: ",".join(map(str, ids)))),
            st.one_of(st.sampled_from(BAD_IDS), st.sampled_from(BAD_IDS), odd),
        ),
        "shapes": (st.sampled_from(SHAPES[:8]), st.one_of(st.sampled_from(SHAPES), odd)),
        "texts": (st.sampled_from(TEXTS[:6]), st.one_of(st.sampled_from(TEXTS), odd)),
        "file": (st.sampled_from(TEXT_INPUTS), st.sampled_from(HOSTILE_INPUTS)),
        "weights": (st.sampled_from(CHECKPOINTS), st.sampled_from(BAD_CHECKPOINTS)),
        "output": (st.sampled_from(OUTPUTS), st.sampled_from(BAD_OUTPUTS)),
        "png": (st.sampled_from(PNGS), st.sampled_from(BAD_PNGS)),
        "export_projector": (st.sampled_from(PROJECTOR_DIRS), st.sampled_from(BAD_PROJECTOR_DIRS)),
        "ids_file": (st.sampled_from(("ids.txt", "-")), st.sampled_from(BAD_ID_FILES)),
        "paths": (st.sampled_from(COUNT_PATHS), st.sampled_from(BAD_COUNT_PATHS)),
        "ignore": pair(("*.txt", "adir/", "!in.txt", "*.safetensors"), ("[", "**/**/", "\\")),
        "include": pair(("*.txt", "*.md", "in.*"), ("[", "")),
        "max_file_size": pair(("10k", "1M", "100", "2G"), ("big", "-1", "1e9", "", "10Q")),
        "min_share": pair(("0.1", "5%", "0"), ("2", "-1%", "x", "nan")),
        "context": pair(("1000", "gpt-4o", "o3"), ("0", "gpt-9", "-5", "1e3")),
        "errors": pair(("skip", "replace", "strict"), ("ignore", "SKIP")),
        "sort": pair(("tokens", "path", "bytes"), ("size",)),
        "optimizer": pair(("adamw", "sgd", "adam", "SGD"), ("lion", "adagrad")),
        "engine": pair(("local",), ("dask", "spark")),
        "scheduler": pair(("tcp://127.0.0.1:1",), ("nonsense", "tcp://127.0.0.1:9")),
    }


@functools.lru_cache(maxsize=1)
def _command_values() -> dict[str, dict[str, Values]]:
    """command -> (usual, odd) values of the parameters that mean something of their own there."""
    from embedcli.models.presets import preset_names

    odd = _odd_strings()

    def pair(usual: tuple[str, ...], unusual: tuple[str, ...]) -> Values:
        return st.sampled_from(usual), st.one_of(st.sampled_from(unusual), odd)

    return {
        "positions": {
            # every preset: rope (llama3 scaling, two bases), ALiBi (112 heads), learned, T5
            "preset": pair(preset_names(), ("gpt-2", "GPT2 ", "llama", "t5")),
            "rope_theta": pair(("10000", "500000", "1e6", "2.5"),
                               ("1", "0", "-5", "nan", "inf", "1e400", "abc", "")),
            "rope_scaling": pair(
                ("linear:8", "llama3:8", "llama3:8:1:4:8192", "linear:1", "LLAMA3:2"),
                ("yarn:4", "linear", "linear:", "linear:0.5", "llama3:8:4:1:8192",
                 "llama3:8:1:4", "linear:nan", "linear:1e400", ":", "llama3:8:1:4:0",
                 "llama3:8:1:4:81.5", "dynamic:2", "linear:2:3"),
            ),
        },
    }  # fmt: skip


def value_strategies(param: Any, command: str | None = None) -> Values:
    """(usual, odd) values for ``param`` (of ``command``): by its name where it says what it
    holds, else by its type. Odd ints are mostly extremes that parse (2**63, 10**30), so they
    reach the code."""
    named = _named_values()
    name, kind = param.name, param.type.name
    if name in _command_values().get(command or "", {}):
        return _command_values()[command][name]
    if name == "path":  # `weights SOURCE`
        return named["weights"]
    if name in named:
        return named[name]
    extremes = st.sampled_from(INT_EXTREMES)
    odd_ints = st.one_of(extremes, extremes, extremes, st.sampled_from(NOT_INTS), _odd_strings())
    if kind in ("int", "int range", "integer", "integer range"):
        low, high = SMALL_INTS.get(name, (0, 20))
        return _ints(low, high), odd_ints
    if kind == "path":
        return named["file"]
    if kind == "float":
        return st.floats(0, 10, allow_nan=False).map(str), odd_ints
    if kind == "choice":
        return st.sampled_from([str(c) for c in param.type.choices]), _odd_strings()
    return named["texts"]


# ---------------------------------------------------------------- cases


@functools.lru_cache(maxsize=1)
def commands() -> dict[str, Any]:
    """{name: click command} of the app."""
    return dict(typer.main.get_command(app).commands)


@dataclass(frozen=True)
class Case:
    """One command line, its standard input (a file of the case folder, or '' for none) and how
    its stdout is connected when it runs as a process."""

    command: str
    args: tuple[str, ...]
    stdin: str = ""
    shell: str = "pipe"

    def __repr__(self) -> str:
        return f"Case({self.line()!r})"

    def line(self) -> str:
        """The shell line that reproduces the case, run in a folder holding the input files."""
        words = " ".join(shell_quote(arg) for arg in ("embedcli", self.command, *self.args))
        stdin = f"< {self.stdin}" if self.stdin else "< /dev/null"
        tail = {"pipe": "", "head": " | head -1", "closed": " >&-", "full": " > /dev/full"}
        prefix = "set -o pipefail; " if self.shell == "head" else ""
        return f"{prefix}{words} {stdin}{tail[self.shell]}"

    @functools.cached_property
    def params(self) -> dict[str, Any]:
        """The values click reads from this command line (what the command really gets:
        '--json' given as a TEXT is still the flag)."""
        try:
            command = commands()[self.command]
            ctx = command.make_context(self.command, list(self.args), resilient_parsing=True)
            return dict(ctx.params)
        except Exception:  # the real run reports what is wrong with the line
            return {}

    @property
    def asks_for_help(self) -> bool:
        return any(arg in ("-h", "--help") for arg in self.args)

    def outputs(self) -> set[str]:
        """The files the command was asked to write, relative to its folder."""
        found = set()
        for name in ("output", "png"):
            value = self.params.get(name)
            if value is not None and str(value) not in ("", "."):
                found.add(os.path.normpath(str(value)))
        folder = self.params.get("export_projector")
        if folder is not None and str(folder) not in ("", "."):
            found.add(os.path.normpath(str(folder)))
            found.update(os.path.join(os.path.normpath(str(folder)), name) for name in (
                "tensors.tsv", "metadata.tsv", "projector_config.pbtxt"))  # fmt: skip
        return found

    def inputs(self) -> set[str]:
        """The files the command reads, relative to its folder (standard input included)."""
        found = {self.stdin} if self.stdin else set()
        for name in ("file", "weights", "path", "paths", "ids_file"):
            value = self.params.get(name)
            for one in value if isinstance(value, list) else [value]:
                if one is not None and str(one) not in ("", ".", "-"):
                    found.add(os.path.normpath(str(one)))
        return found

    def streams(self) -> bool:
        """True for embed --lines and windows --jsonl, which may fail after whole records."""
        return any(self.params.get(flag) for flag in STREAMING.get(self.command, ()))


def shell_quote(arg: str) -> str:
    """One word for bash: long repeats as a printf, bytes that are not UTF-8 or control
    characters with $'...', the rest with shlex."""
    for size in range(1, 11):
        unit, count = arg[:size], len(arg) // size
        if count >= 20 and unit * count == arg and re.fullmatch(r"[\w ,.<>|-]+", unit):
            return f"\"$(printf '{unit}%.0s' $(seq {count}))\""
    if all(ch.isprintable() and not 0xDC80 <= ord(ch) <= 0xDCFF for ch in arg):
        return shlex.quote(arg)
    out = []
    for ch in arg:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in "\\'":
            out.append("\\" + ch)
        elif not ch.isprintable():
            out.append("".join(f"\\x{b:02x}" for b in ch.encode()))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def _estimated_elements(command: str, params: dict[str, Any]) -> int:
    """The largest table (or batch tensor) the command line asks for, in elements."""
    from embedcli.errors import EmbedCLIError
    from embedcli.models.presets import get_preset

    quiet = ("tokenize", "windows", "weights", "broadcast", "devices")  # build no tables
    if params.get("weights") is not None or command in quiet:
        return 0
    if command == "inspect-shapes" and str(params.get("device") or "meta").startswith("meta"):
        return 0
    try:
        preset = get_preset(str(params.get("preset") or "gpt2").strip().lower()).config
    except EmbedCLIError:  # a bad name: refused before any table
        preset = get_preset("gpt2").config
    d = params.get("d_model") or (64 if command == "positions" else preset.d_model)
    vocab = params.get("vocab_size") or (
        preset.vocab_size
        if command == "inspect-shapes"
        else _vocab_size(params.get("encoding"), params.get("model"))
    )
    context = params.get("context_length") or preset.context_length
    batch = (params.get("batch_size") or 8) * (params.get("seq_len") or 4)
    return max(vocab * d, context * d, batch * d)


def _vocab_size(encoding: Any, model: Any) -> int:
    """Rows of the default token table for --encoding/--model (the largest if unknown)."""
    from tiktoken.model import encoding_name_for_model

    sizes = {"gpt2": 50257, "r50k_base": 50257, "cl100k_base": 100277, "o200k_base": 200019}
    if model:
        with suppress(KeyError):
            encoding = encoding_name_for_model(str(model))
    return sizes.get(str(encoding or "gpt2"), max(sizes.values()))


def _fits_this_harness(case: Case) -> bool:
    """False for tables between 1e8 and 1e11 elements (0.4 to 400 GB in float32): whether those
    are built or refused depends on the machine's free memory, and building them is slow, not a
    contract question (o200k_base's default table, 200,019 x 768, is one). Smaller ones are
    cheap; larger ones must be refused everywhere."""
    try:
        elements = _estimated_elements(case.command, case.params)
    except (TypeError, ValueError, OverflowError):
        return True
    return not 1e8 < elements < 1e11


@st.composite
def cases(draw: st.DrawFn, command: str | None = None, shells: tuple[str, ...] = ("pipe",)) -> Case:
    """A command line for ``command`` (or any command), built from its own parameters."""
    name = command or draw(st.sampled_from(sorted(commands())))
    params = [p for p in commands()[name].params if p.name != "help"]
    focus = set(draw(st.sampled_from(((), *FOCUS.get(name, ())))))
    share = draw(st.sampled_from((0.0, 0.05, 0.1, 0.25)))  # of the other options, given
    odd_tenths = draw(st.sampled_from((0, 1, 3, 6)))  # of the values, odd

    def value(param: Any) -> str:
        usual, odd = value_strategies(param, name)
        return draw(odd if draw(st.integers(0, 9)) >= 10 - odd_tenths else usual)

    chunks: list[tuple[str, ...]] = []
    for param in params:
        is_argument = param.param_type_name == "argument"
        if param.name in focus:
            chance = 1.0
        elif is_argument:  # TEXT beside a focus on --ids or -f is mostly a usage error
            chance = 0.9 if param.required else 0.15 if focus else 0.5
        else:
            chance = OFTEN.get(param.name, share) * (0.2 if getattr(param, "hidden", False) else 1)
        if draw(st.integers(0, 99)) < (1 - chance) * 100:  # shrinks to leaving it out
            continue
        if getattr(param, "is_flag", False):
            chunks.append((draw(st.sampled_from([*param.opts, *param.secondary_opts])),))
            continue
        if is_argument:
            count = 1 if param.nargs == 1 else draw(st.integers(1, 3))
            chunks.extend((value(param),) for _ in range(count))
            continue
        times = draw(st.integers(1, 2)) if param.multiple else 1
        for _ in range(times):
            chunks.append((draw(st.sampled_from(param.opts)), value(param)))
    if draw(st.integers(0, 19)) == 19:  # now and then, a word the command does not know
        chunks.append((draw(st.sampled_from(("--bogus", "-Z", "--jsn", "--", "-"))),))
    if draw(st.booleans()):
        chunks = list(draw(st.permutations(chunks)))
    case = Case(
        command=name,
        args=tuple(word for chunk in chunks for word in chunk),
        stdin=draw(st.sampled_from(STDIN_FILES)),
        shell=draw(st.sampled_from(shells)),
    )
    assume(_fits_this_harness(case))
    return case


# ---------------------------------------------------------------- what a run left


@dataclass
class Outcome:
    """What one case did: its exit, its output, and what changed in its folder."""

    exit_code: int | None  # None: it did not finish in time
    stdout: bytes = b""
    stderr: bytes = b""
    exception: BaseException | None = None  # in process: what escaped the command
    seconds: float = 0.0
    peak_rss: int | None = None  # bytes: a subprocess's peak RSS, or the growth in process
    guard: int = GUARD_BYTES  # the address-space limit the case ran under
    new_files: list[str] = field(default_factory=list)
    changed_files: list[str] = field(default_factory=list)  # modified or removed
    temp_files: list[str] = field(default_factory=list)
    stdout_seen: bool = True  # False where stdout was closed, full or cut by head


def snapshot(folder: Path) -> dict[str, str]:
    """{relative path: content hash, 'dir' or 'link -> target'} of everything in ``folder``."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            key = str(path.relative_to(folder))
            if path.is_symlink():
                found[key] = f"link -> {os.readlink(path)}"
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = hashlib.sha1(path.read_bytes()).hexdigest()
    return found


def _holds_output(folder: str, outputs: set[str]) -> bool:
    """True if ``folder`` is on the way to a requested output (made to hold it)."""
    return any(out.startswith(folder + os.sep) for out in outputs)


def _compare(case: Case, before: dict[str, str], after: dict[str, str], outcome: Outcome) -> None:
    outputs = case.outputs()
    inputs = case.inputs()
    for key in sorted(after):
        if Path(key).name.startswith(".") and key.endswith(".tmp"):
            outcome.temp_files.append(key)
        elif key not in before and key not in outputs and not _holds_output(key, outputs):
            outcome.new_files.append(key)
    for key, digest in sorted(before.items()):
        if after.get(key) != digest and (key in inputs or key not in outputs):
            outcome.changed_files.append(key)


# ---------------------------------------------------------------- running a case


class CaseTimeout(BaseException):
    """Raised by the alarm inside a case that runs too long (not an Exception, so no handler
    in the command mistakes it for its own error)."""


@contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum: int, frame: object) -> None:
        raise CaseTimeout

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _status(field: str) -> int | None:
    """A size from /proc/self/status (VmSize, VmRSS), in bytes; None where there is none."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _rss() -> int | None:
    return _status("VmRSS")


def _high_water() -> int:
    """This process's peak RSS so far, in bytes (Linux counts KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@contextmanager
def _memory_guard(extra: int) -> Iterator[None]:
    """Limit this process's address space to what it has now plus ``extra``, meanwhile: a case
    that tries to allocate more fails instead of eating the machine."""
    now = _status("VmSize")
    if now is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = now + extra if hard == resource.RLIM_INFINITY else min(now + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextmanager
def _working_folder(folder: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def new_runner() -> Any:
    """A CliRunner that keeps stdout and stderr apart (older Click needs mix_stderr=False)."""
    from typer.testing import CliRunner

    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def refuse_network() -> None:
    """No case may reach the network (pytest's conftest does the same for the test suite)."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("the contract fuzzer must not touch the network")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.getaddrinfo = refuse  # type: ignore[assignment]
    socket.create_connection = refuse  # type: ignore[assignment]


class Workspace:
    """Where cases run: pristine input files, a fresh folder a case, private caches."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fixtures = make_fixtures(root / "fixtures")
        self.scratch = root / "cases"
        self.scratch.mkdir(exist_ok=True)
        self.env = {
            "COLUMNS": "100",
            "NO_COLOR": "1",
            "TIKTOKEN_CACHE_DIR": str(root / "tiktoken-cache"),
            "EMBEDCLI_CACHE_DIR": str(root / "embedcli-cache"),
            # hf:org/tiny is cached; --download goes to a port nothing listens on (never out)
            "HF_HUB_CACHE": str(make_hub_cache(self.fixtures, root / "hub")),
            "HF_HOME": str(root / "hf-home"),
            "HF_ENDPOINT": "http://127.0.0.1:9",
            "HF_HUB_DISABLE_TELEMETRY": "1",
        }
        self.runner = new_runner()

    @contextmanager
    def folder(self) -> Iterator[Path]:
        """A fresh copy of the input files, removed afterwards."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(dir=self.scratch))
        try:
            shutil.copytree(self.fixtures, folder, dirs_exist_ok=True)
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def run_in_process(self, case: Case) -> Outcome:
        """Run ``case`` through CliRunner in this process (its stdout is a pipe, never cut)."""
        assert case.shell == "pipe", "only a subprocess can have a closed or full stdout"
        with self.folder() as folder:
            stdin = (folder / case.stdin).read_bytes() if case.stdin else None
            before = snapshot(folder)
            rss, high_water = _rss(), _high_water()
            start = time.perf_counter()
            try:
                with _working_folder(folder), _memory_guard(GUARD_BYTES), _alarm(CASE_SECONDS):
                    result = self.runner.invoke(
                        app, [case.command, *case.args], input=stdin, env=self.env
                    )
            except CaseTimeout:
                outcome = Outcome(exit_code=None, seconds=time.perf_counter() - start)
            else:
                escaped = result.exception
                outcome = Outcome(
                    exit_code=result.exit_code,
                    stdout=result.stdout_bytes,
                    stderr=result.stderr_bytes or b"",
                    exception=None if isinstance(escaped, SystemExit) else escaped,
                    seconds=time.perf_counter() - start,
                )
            if rss is not None and _high_water() > high_water:  # a new peak, made by this case
                outcome.peak_rss = _high_water() - rss
            _compare(case, before, snapshot(folder), outcome)
        return outcome

    def script_env(self) -> dict[str, str]:
        env = {**os.environ, **self.env}
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        return env

    def run_script(self, case: Case) -> Outcome:
        """Run ``case`` as the user would: the console script, under bash, real pipes."""
        with self.folder() as folder:
            before = snapshot(folder)
            line = f"ulimit -v {SCRIPT_GUARD_BYTES // 1024}; {case.line()}"
            start = time.perf_counter()
            process = subprocess.Popen(
                ["bash", "-c", line],
                cwd=folder,
                env=self.script_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            streams: dict[str, bytes] = {}
            readers = [
                threading.Thread(target=lambda n=n, s=s: streams.__setitem__(n, s.read()))
                for n, s in (("out", process.stdout), ("err", process.stderr))
            ]
            for reader in readers:
                reader.start()
            status, usage = _wait(process, CASE_SECONDS)
            for reader in readers:
                reader.join()
            process.stdout.close()
            process.stderr.close()
            outcome = Outcome(
                exit_code=None if status is None else os.waitstatus_to_exitcode(status),
                stdout=streams.get("out", b""),
                stderr=streams.get("err", b""),
                seconds=time.perf_counter() - start,
                peak_rss=usage.ru_maxrss * 1024,  # KiB on Linux
                guard=SCRIPT_GUARD_BYTES,
                stdout_seen=case.shell == "pipe",
            )
            _compare(case, before, snapshot(folder), outcome)
        return outcome


def _wait(process: subprocess.Popen, seconds: float) -> tuple[int | None, Any]:
    """(wait status or None on a timeout, resource usage of the process and its children)."""
    deadline = time.monotonic() + seconds
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            _, _, usage = os.wait4(process.pid, 0)
            process.returncode = -9
            return None, usage
        time.sleep(0.01)


# ---------------------------------------------------------------- the contract


@dataclass(frozen=True)
class Violation:
    """One broken promise: ``rule`` names it, ``detail`` says what was seen, ``key`` tells two
    apart (an exception's type, or the Error line with its numbers blanked)."""

    rule: str
    detail: str
    key: str = ""

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _json_problem(text: bytes) -> str | None:
    """Why ``text`` is not one JSON document, or None."""
    try:
        json.loads(text.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:120]}"
    return None


def _first_error_line(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("Error: "):
            return line
    return stderr.strip().splitlines()[-1] if stderr.strip() else ""


def _exception_type(outcome: Outcome, stderr: str) -> str:
    if outcome.exception is not None:
        return type(outcome.exception).__name__
    pattern = r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Interrupt|Exit|Warning))\b"
    names = re.findall(pattern, stderr, flags=re.MULTILINE)
    return names[-1] if names else "traceback"


def normalized(line: str) -> str:
    """An Error line with its numbers and quoted values blanked, so one bug is one key."""
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", line)
    return re.sub(r"\d+", "N", line)[:100]


_ALLOCATION_FAILED = re.compile(
    r"can't allocate memory|Cannot allocate memory|MemoryError|bad_alloc|out of memory", re.I
)


def _memory_problem(outcome: Outcome, text: str) -> str | None:
    if outcome.peak_rss is not None and outcome.peak_rss > BOUND_BYTES:
        return f"peak RSS {outcome.peak_rss / 2**20:,.0f} MiB is over {BOUND_BYTES / 2**30:g} GiB"
    # An allocation that failed under the guard asked for more than the bound: a table that
    # should have been refused before it was allocated.
    exception = outcome.exception
    hit = isinstance(exception, MemoryError) or _ALLOCATION_FAILED.search(text) is not None
    if not hit:
        return None
    asked = re.search(r"tried to allocate (\d+) bytes", text)
    if asked and int(asked.group(1)) > _total_memory():
        return None  # more than this machine has: it fails anywhere, and it failed cleanly
    return (
        f"an allocation failed under the {outcome.guard / 2**30:g} GiB address-space guard "
        "(the command tried to use more memory than the bound, instead of refusing first)"
    )


@functools.lru_cache(maxsize=1)
def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 2**40


def check_contract(result: Outcome, case: Case) -> list[Violation]:
    """Every way ``result`` breaks the contract (see the module docstring); [] if none."""
    found: list[Violation] = []
    stdout = result.stdout.decode("utf-8", "replace")
    stderr = result.stderr.decode("utf-8", "replace")
    error_line = _first_error_line(stderr)
    if result.exit_code is None:
        return [Violation("timeout", f"did not finish within {CASE_SECONDS} s", "timeout")]
    if result.exit_code not in EXIT_CODES:
        found.append(
            Violation(
                "exit code",
                f"{result.exit_code} is not one of {EXIT_CODES}",
                f"{result.exit_code} {normalized(error_line)}",
            )
        )
    if result.exception is not None or any(m in stdout + stderr for m in TRACEBACK_MARKS):
        kind = _exception_type(result, stderr)
        message = " ".join(str(result.exception).split())  # torch's run over several lines
        shown = f"{kind}: {message[:160]}" if result.exception else error_line
        found.append(Violation("traceback", shown or "traceback text in the output", kind))
    memory = _memory_problem(result, stderr + str(result.exception or ""))
    if memory:
        found.append(Violation("memory", memory, "memory"))
    if result.exit_code != 0:
        found.extend(_failure_problems(result, case, stderr, error_line))
    else:
        found.extend(_success_problems(result, case, stderr))
    for rule, paths in (
        ("stray file", result.new_files),
        ("temporary file left", result.temp_files),
        ("input changed", result.changed_files),
    ):
        if paths:
            found.append(Violation(rule, ", ".join(paths), normalized(error_line) or rule))
    return found


def _failure_problems(result: Outcome, case: Case, stderr: str, error_line: str) -> list[Violation]:
    found = []
    key = normalized(error_line)
    lines = stderr.split("\n")
    one_line = len(lines) == 2 and lines[1] == ""
    starts = ("Error: ", "Interrupted") if result.exit_code == 130 else ("Error: ",)
    traceback = result.exception is not None or TRACEBACK_MARKS[0] in stderr  # said already
    if not (one_line and lines[0].startswith(starts)) and not traceback:
        shown = " | ".join(stderr.strip().splitlines()[:3])[:200] or "(empty)"
        count = len(stderr.splitlines())
        found.append(
            Violation("stderr on failure", f"not one Error: line ({count} lines): {shown}", key)
        )
    if result.stdout_seen or case.shell == "head":
        if case.streams():
            if result.stdout and not result.stdout.endswith(b"\n"):
                found.append(Violation("stdout on failure", "a half-written JSON line", key))
            for line in result.stdout.splitlines():
                problem = _record_problem(case, line)
                if problem:
                    found.append(Violation("stdout on failure", f"a bad record: {problem}", key))
                    break
        elif result.stdout:
            shown = result.stdout[:80].decode("utf-8", "replace")
            found.append(
                Violation("stdout on failure", f"exit {result.exit_code} after {shown!r}", key)
            )
    return found


def _record_problem(case: Case, line: bytes) -> str | None:
    """What is wrong with one streamed record: a JSON line, or (count --csv) a CSV row of
    path, bytes, a column per encoding, skipped."""
    if not case.params.get("as_csv"):
        return _json_problem(line)
    import csv

    try:
        rows = list(csv.reader([line.decode("utf-8")]))
    except (UnicodeDecodeError, csv.Error) as exc:
        return f"{type(exc).__name__}: {exc}"
    encodings = case.params.get("encoding") or []
    models = case.params.get("model") or []
    wanted = 3 + max(1, len(encodings) + len(models))
    if (
        len(rows) != 1
        or len(rows[0]) < 4
        or (not encodings and not models and len(rows[0]) != wanted)
    ):
        return f"not a CSV row of path, bytes, counts, skipped: {line[:60]!r}"
    return None


def _success_problems(result: Outcome, case: Case, stderr: str) -> list[Violation]:
    found = []
    others = [line for line in stderr.splitlines() if line and not line.startswith("Warning: ")]
    if others:
        found.append(
            Violation("stderr on success", " | ".join(others[:3])[:200], normalized(others[0]))
        )
    if not result.stdout_seen or case.asks_for_help:
        return found
    if case.streams():
        for line in result.stdout.splitlines():
            problem = _record_problem(case, line)
            if problem:
                found.append(Violation("json", f"a bad record: {problem}", problem[:40]))
                break
    elif case.params.get("as_json"):
        problem = _json_problem(result.stdout)
        if problem:
            found.append(
                Violation("json", f"stdout is not one JSON document: {problem}", problem[:40])
            )
    return found


def describe(case: Case, outcome: Outcome, violations: list[Violation]) -> str:
    """A report of one broken case: its reproducer, its exit, and what it broke."""
    stderr = outcome.stderr.decode("utf-8", "replace").strip()
    lines = [
        f"  $ {case.line()}",
        f"  exit {outcome.exit_code}; stderr: {' | '.join(stderr.splitlines()[:2])[:200]}",
    ]
    if outcome.exception is not None:
        message = " ".join(str(outcome.exception).split())
        lines.append(f"  exception: {type(outcome.exception).__name__}: {message}"[:240])
    lines.extend(f"  - {v}" for v in violations)
    return "\n".join(lines)


class Findings:
    """Broken cases, one per distinct violation (command, rule, key), the shortest kept."""

    def __init__(self) -> None:
        self.tried = 0
        self.broken = 0
        self.distinct: dict[tuple[str, str, str], tuple[Case, Outcome, list[Violation], int]] = {}

    def add(self, case: Case, outcome: Outcome, violations: list[Violation]) -> None:
        self.tried += 1
        if not violations:
            return
        self.broken += 1
        for violation in violations:
            signature = (case.command, violation.rule, violation.key)
            seen = self.distinct.get(signature)
            count = seen[3] + 1 if seen else 1
            if seen is None or len(case.line()) < len(seen[0].line()):
                self.distinct[signature] = (case, outcome, violations, count)
            else:
                self.distinct[signature] = (*seen[:3], count)

    def __bool__(self) -> bool:
        return bool(self.distinct)

    def report(self) -> str:
        parts = [
            f"cases tried: {self.tried}, contract kept: {self.tried - self.broken}, "
            f"broken: {self.broken}"
        ]
        for (command, rule, key), (case, outcome, violations, count) in sorted(
            self.distinct.items()
        ):
            parts.append(f"\n[{command}] {rule} ({key}) x{count}")
            parts.append(describe(case, outcome, violations))
        return "\n".join(parts)
