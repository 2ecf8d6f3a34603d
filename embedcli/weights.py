"""Trained checkpoints: find the token and positional tables, safely, reading only what is needed.

Formats are told by content: safetensors (read through ``safe_open``), PyTorch files (loaded with
``weights_only=True``, memory-mapped when they are zip archives) and NumPy ``.npz`` (loaded array
by array, never with pickles). Layouts are matched by key: Hugging Face GPT-2, nanoGPT (also
compiled, ``_orig_mod.``), the "from scratch" GPTModel, TransformerLens, Llama-style models, and
modules with ``token_embedding(s)``/``token_embed`` names.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.errors import ConfigError, WeightsError

if TYPE_CHECKING:
    import torch

    from embedcli.config import EmbedConfig

_STATE_DICT_KEYS = ("model", "state_dict", "model_state_dict")
_PREFIXES = ("_orig_mod.", "module.")  # torch.compile and DistributedDataParallel wrappers


@dataclass(frozen=True)
class Layout:
    """A known way of naming the tables (keys after wrapper prefixes are removed)."""

    name: str
    token: str
    position: str | None  # None: the family has no learned positional table
    head: str | None = None
    head_transposed: bool = False  # TransformerLens stores W_U as (d, vocab)


LAYOUTS = (
    Layout(
        "Hugging Face GPT2LMHeadModel / nanoGPT",
        "transformer.wte.weight",
        "transformer.wpe.weight",
        "lm_head.weight",
    ),
    Layout("Hugging Face GPT2Model", "wte.weight", "wpe.weight"),
    Layout("LLM-from-scratch GPTModel", "tok_emb.weight", "pos_emb.weight", "out_head.weight"),
    Layout("TransformerLens", "embed.W_E", "pos_embed.W_pos", "unembed.W_U", head_transposed=True),
    Layout("Llama-style (rotary positions)", "model.embed_tokens.weight", None, "lm_head.weight"),
    Layout("embedcli InputEmbedding", "token_embedding.weight", "position_embedding.weight"),
)
# Module names matched at the end of a key, for models built by hand.
_SUFFIXES = (
    ("token_embeddings.weight", "position_embeddings.weight"),
    ("token_embedding.weight", "position_embedding.weight"),
    ("token_embed.weight", "position_embed.weight"),
)


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a checkpoint, described without reading its data."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        """Number of elements."""
        count = 1
        for size in self.shape:
            count *= size
        return count


def _strip(name: str) -> str:
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            if name.startswith(prefix):
                name, changed = name[len(prefix) :], True
    return name


class Checkpoint:
    """An opened checkpoint: its tensors' names, shapes and dtypes, and lazy access to each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise WeightsError(f"cannot read {path}: no such file")
        self.format = detect_format(path)
        self.extra: dict[str, Any] = {}  # non-tensor entries of a PyTorch checkpoint
        if self.format == "safetensors":
            self._open_safetensors()
        elif self.format == "numpy":
            self._open_npz()
        else:
            self._open_torch()

    # -- formats

    def _open_safetensors(self) -> None:
        from safetensors import safe_open

        try:
            self._handle = safe_open(str(self.path), framework="pt")
            names = list(self._handle.keys())
            self.tensors = []
            for name in names:
                piece = self._handle.get_slice(name)
                self.tensors.append(
                    TensorInfo(
                        name, tuple(piece.get_shape()), _safetensors_dtype(piece.get_dtype())
                    )
                )
        except WeightsError:
            raise
        except Exception as exc:  # safetensors raises its own error types
            raise WeightsError(f"cannot read {self.path} as safetensors: {exc}") from exc

    def _open_torch(self) -> None:
        import pickle

        import torch

        mmap = zipfile.is_zipfile(self.path)  # mmap needs the zip format of torch.save
        try:
            loaded = torch.load(self.path, map_location="cpu", weights_only=True, mmap=mmap)
        except pickle.UnpicklingError as exc:
            reason = str(exc).split(". ")[0]
            raise WeightsError(
                f"refusing to load {self.path}: it holds Python objects that would run code when "
                f"unpickled ({reason[:120]}); embedcli loads plain tensors only "
                "(torch.load weights_only=True). Convert it with a trusted script to safetensors."
            ) from None
        except Exception as exc:
            raise WeightsError(f"cannot read {self.path} as a PyTorch checkpoint: {exc}") from exc
        state = loaded
        if isinstance(loaded, dict):
            for key in _STATE_DICT_KEYS:
                if isinstance(loaded.get(key), dict):
                    state = loaded[key]
                    self.extra = {k: v for k, v in loaded.items() if k != key}
                    break
        if not isinstance(state, dict):
            raise WeightsError(
                f"{self.path} holds a {type(state).__name__}, not a state dict of tensors"
            )
        self._tensors = {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
        self.tensors = [
            TensorInfo(k, tuple(v.shape), str(v.dtype).removeprefix("torch."))
            for k, v in self._tensors.items()
        ]

    def _open_npz(self) -> None:
        import numpy as np

        try:
            self._npz = np.load(self.path, allow_pickle=False)
            self.tensors = []
            with zipfile.ZipFile(self.path) as archive:
                for member in archive.namelist():
                    if member.endswith(".npy"):
                        with archive.open(member) as handle:
                            version = np.lib.format.read_magic(handle)
                            read_header = (
                                np.lib.format.read_array_header_1_0
                                if version == (1, 0)
                                else np.lib.format.read_array_header_2_0
                            )
                            shape, _, dtype = read_header(handle)
                        self.tensors.append(TensorInfo(member[:-4], tuple(shape), str(dtype)))
        except Exception as exc:
            raise WeightsError(f"cannot read {self.path} as a NumPy .npz archive: {exc}") from exc

    # -- access

    def info(self, name: str) -> TensorInfo:
        """The description of one tensor."""
        for tensor in self.tensors:
            if tensor.name == name:
                return tensor
        raise WeightsError(f"{self.path} has no tensor {name!r}")

    def load(self, name: str) -> torch.Tensor:
        """Read one tensor (only that one) as a CPU torch tensor."""
        import torch

        self.info(name)
        if self.format == "safetensors":
            return self._handle.get_tensor(name)
        if self.format == "numpy":
            array = self._npz[name]
            if array.dtype.kind not in "fiu":
                raise WeightsError(f"{name} in {self.path} is not numeric ({array.dtype})")
            return torch.from_numpy(array)
        return self._tensors[name]

    def shares_storage(self, first: str, second: str) -> bool:
        """Whether two tensors of a PyTorch checkpoint are views of the same memory."""
        if self.format != "pytorch":
            return False
        a, b = self._tensors[first], self._tensors[second]
        return (
            a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
            and a.storage_offset() == b.storage_offset()
            and a.shape == b.shape
            and a.stride() == b.stride()
        )

    def unique_parameters(self) -> int:
        """Elements of all tensors, each shared storage counted once."""
        if self.format != "pytorch":
            return sum(t.numel for t in self.tensors)
        seen: set[tuple[int, int, tuple[int, ...]]] = set()
        total = 0
        for tensor in self._tensors.values():
            key = (
                tensor.untyped_storage().data_ptr(),
                tensor.storage_offset(),
                tuple(tensor.shape),
            )
            if key not in seen:
                seen.add(key)
                total += tensor.numel()
        return total


def _safetensors_dtype(code: str) -> str:
    names = {
        "F64": "float64",
        "F32": "float32",
        "F16": "float16",
        "BF16": "bfloat16",
        "I64": "int64",
        "I32": "int32",
        "I16": "int16",
        "I8": "int8",
        "U8": "uint8",
        "BOOL": "bool",
    }
    return names.get(code, code.lower())


def detect_format(path: Path) -> str:
    """'safetensors', 'pytorch' or 'numpy', from the file's first bytes (not its suffix)."""
    with open(path, "rb") as handle:
        head = handle.read(16)
    if len(head) >= 9 and head[8:9] == b"{":
        header_size = int.from_bytes(head[:8], "little")
        if 0 < header_size <= path.stat().st_size - 8:
            return "safetensors"
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except zipfile.BadZipFile as exc:
            raise WeightsError(f"{path} looks like a zip archive but is damaged: {exc}") from None
        if any(name.endswith("data.pkl") for name in names):
            return "pytorch"
        if names and all(name.endswith(".npy") for name in names):
            return "numpy"
        raise WeightsError(f"{path} is a zip archive, but neither a PyTorch checkpoint nor .npz")
    if head[:1] == b"\x80":  # a pickle: the legacy torch.save format
        return "pytorch"
    raise WeightsError(
        f"cannot tell the format of {path}: it is not safetensors, a PyTorch checkpoint or .npz"
    )


@dataclass(frozen=True)
class TableKeys:
    """Where the tables are in a checkpoint."""

    layout: str
    token: str
    position: str | None
    head: str | None
    head_transposed: bool = False


def find_tables(
    checkpoint: Checkpoint, token_key: str | None = None, position_key: str | None = None
) -> TableKeys:
    """Detect the layout, or follow --token-key/--position-key; errors list the candidates."""
    names = {t.name for t in checkpoint.tensors}
    stripped: dict[str, list[str]] = {}
    for name in names:
        stripped.setdefault(_strip(name), []).append(name)

    def actual(key: str | None) -> str | None:
        found = stripped.get(key, []) if key else []
        return found[0] if len(found) == 1 else None

    if token_key is not None:
        keys = TableKeys(
            "chosen with --token-key",
            _require(checkpoint, token_key),
            _optional_position(checkpoint, position_key),
            None,
        )
        return keys
    matches = []
    for layout in LAYOUTS:
        token = actual(layout.token)
        if token is not None:
            position = actual(layout.position)
            matches.append(
                TableKeys(layout.name, token, position, actual(layout.head), layout.head_transposed)
            )
    if not matches:
        for token_suffix, position_suffix in _SUFFIXES:
            tokens = sorted(n for n in names if n.endswith(token_suffix))
            if len(tokens) > 1:
                raise WeightsError(_candidates(checkpoint, "several token tables match", tokens))
            if tokens:
                positions = sorted(n for n in names if n.endswith(position_suffix))
                matches.append(
                    TableKeys(
                        f"modules named *{token_suffix}",
                        tokens[0],
                        positions[0] if len(positions) == 1 else None,
                        None,
                    )
                )
                break
    if len(matches) > 1:
        raise WeightsError(
            _candidates(
                checkpoint, "the checkpoint matches several layouts", [m.token for m in matches]
            )
        )
    if not matches:
        two_d = [t.name for t in checkpoint.tensors if len(t.shape) == 2]
        raise WeightsError(_candidates(checkpoint, "no token table found", two_d))
    keys = matches[0]
    if position_key is not None:
        keys = TableKeys(
            keys.layout,
            keys.token,
            _optional_position(checkpoint, position_key),
            keys.head,
            keys.head_transposed,
        )
    return keys


def _candidates(checkpoint: Checkpoint, problem: str, names: Iterable[str]) -> str:
    listed = [f"{n} {checkpoint.info(n).shape}" for n in list(names)[:12]]
    return (
        f"{problem} in {checkpoint.path}; candidates: {', '.join(listed) or 'none'}; "
        "pass --token-key (and --position-key)"
    )


def _require(checkpoint: Checkpoint, key: str) -> str:
    info = checkpoint.info(key)
    if len(info.shape) != 2:
        raise WeightsError(f"{key} has shape {info.shape}; an embedding table is 2-D")
    return key


def _optional_position(checkpoint: Checkpoint, key: str | None) -> str | None:
    if key is None or key.lower() == "none":
        return None
    return _require(checkpoint, key)


@dataclass
class LoadedTables:
    """The tables read from a checkpoint, on the CPU, as stored."""

    path: str
    layout: str
    token_key: str
    position_key: str | None
    token: torch.Tensor  # (vocab_size, d_model)
    position: torch.Tensor | None  # (context_length, d_model)


def load_tables(
    path: Path, token_key: str | None = None, position_key: str | None = None
) -> LoadedTables:
    """Open ``path`` and read only its token table and positional table."""
    checkpoint = Checkpoint(path)
    return read_tables(checkpoint, find_tables(checkpoint, token_key, position_key))


def read_tables(checkpoint: Checkpoint, keys: TableKeys) -> LoadedTables:
    """Read the two tables ``keys`` names from an opened checkpoint, and check them."""
    token = checkpoint.load(keys.token)
    position = None if keys.position is None else checkpoint.load(keys.position)
    check_tables(token, position, keys)
    return LoadedTables(
        str(checkpoint.path), keys.layout, keys.token, keys.position, token, position
    )


def check_tables(token: torch.Tensor, position: torch.Tensor | None, keys: TableKeys) -> None:
    """Both tables are 2-D, floating point, and of the same width."""
    for name, table in ((keys.token, token), (keys.position, position)):
        if table is None:
            continue
        if table.dim() != 2 or not table.is_floating_point():
            raise WeightsError(
                f"{name} is a {tuple(table.shape)} {table.dtype} tensor; an embedding table is "
                "a 2-D floating-point tensor"
            )
    if position is not None and position.shape[1] != token.shape[1]:
        raise WeightsError(
            f"the token table {keys.token} is {token.shape[1]} wide but the positional table "
            f"{keys.position} is {position.shape[1]} wide; they must match"
        )


def tables_config(
    token_shape: tuple[int, ...],
    position_shape: tuple[int, ...] | None,
    *,
    dtype: str,
    positional: str | None = None,
    vocab_size: int | None = None,
    d_model: int | None = None,
    context_length: int | None = None,
    default_context: int = 1024,
) -> EmbedConfig:
    """The configuration the tables imply; a flag that disagrees with them is an error."""
    from embedcli.config import EmbedConfig

    vocab, width = token_shape
    implied = {"vocab_size": vocab, "d_model": width}
    if position_shape is not None:
        implied["context_length"] = position_shape[0]
    given = {"vocab_size": vocab_size, "d_model": d_model, "context_length": context_length}
    for name, value in given.items():
        if value is not None and name in implied and value != implied[name]:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} {value} conflicts with the checkpoint, whose tables give {name} "
                f"{implied[name]}; drop {flag}"
            )
    if positional == "learned" and position_shape is None:
        raise ConfigError(
            "--positional learned, but the checkpoint has no learned positional table "
            "(pass --position-key if it has one under another name)"
        )
    family = positional or ("learned" if position_shape is not None else "none")
    return EmbedConfig(
        vocab_size=vocab,
        d_model=width,
        context_length=implied.get("context_length", context_length or default_context),
        positional=family,
        dtype=dtype,
    )
