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


_NPY_CHUNK = 1 << 22  # bytes read from an .npz member at a time: reading stays in bounded memory
_NPY_VERSIONS = ((1, 0), (2, 0), (3, 0))
# numpy dtypes torch.from_numpy takes (a big-endian array is byte-swapped in place first)
_NPY_LOADABLE = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")
_SAFETENSORS_SIZES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "C128": 16,
    "C64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
}  # every other safetensors dtype takes a byte or less


@dataclass(frozen=True)
class _NpyMember:
    """Where one array of an .npz archive is, and what its header declares."""

    member: zipfile.ZipInfo
    dtype: Any  # numpy.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    data_offset: int  # bytes of magic and header before the data


def _ensure_memory(what: str, needed: int) -> None:
    """Refuse (MemoryLimitError) before allocating ``needed`` bytes this machine does not have."""
    from embedcli import devices

    devices.ensure_fits(
        what,
        needed,
        devices.host_available_memory(),
        "this machine",
        "free some memory, or use a machine with more",
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


class Checkpoint:
    """An opened checkpoint: its tensors' names, shapes and dtypes, and lazy access to each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise WeightsError(f"cannot read {path}: no such file")
        self.format = detect_format(path)
        self.extra: dict[str, Any] = {}  # non-tensor entries of a PyTorch checkpoint
        self._nbytes: dict[str, int] = {}  # bytes a safetensors or .npz tensor takes once read
        if self.format == "safetensors":
            self._open_safetensors()
        elif self.format == "numpy":
            self._open_npz()
        else:
            self._open_torch()

    # -- formats

    def _open_safetensors(self) -> None:
        from safetensors import safe_open

        try:  # safe_open checks the header: JSON, dtypes, shapes against byte ranges, file size
            self._handle = safe_open(str(self.path), framework="pt")
            names = list(self._handle.keys())
            self.tensors = []
            for name in names:
                piece = self._handle.get_slice(name)
                code = piece.get_dtype()
                info = TensorInfo(name, tuple(piece.get_shape()), _safetensors_dtype(code))
                self.tensors.append(info)
                self._nbytes[name] = info.numel * _SAFETENSORS_SIZES.get(code, 1)
        except WeightsError:
            raise
        except Exception as exc:  # safetensors raises its own error types
            raise WeightsError(f"cannot read {self.path} as safetensors: {exc}") from None

    def _open_torch(self) -> None:
        import pickle

        import torch

        mmap = self._mappable()
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
            raise WeightsError(
                f"cannot read {self.path} as a PyTorch checkpoint: {_first_line(exc)}"
            ) from None
        state = loaded
        if isinstance(loaded, dict):
            for key in _STATE_DICT_KEYS:
                if isinstance(loaded.get(key), dict):
                    state = loaded[key]
                    self.extra = {str(k): v for k, v in loaded.items() if k != key}
                    break
        if not isinstance(state, dict):
            raise WeightsError(
                f"{self.path} holds a {type(state).__name__}, not a state dict of tensors"
            )
        self._tensors = {
            k: v for k, v in state.items() if isinstance(k, str) and isinstance(v, torch.Tensor)
        }
        self.tensors = [
            TensorInfo(k, tuple(v.shape), _torch_dtype(v)) for k, v in self._tensors.items()
        ]

    def _mappable(self) -> bool:
        """Whether torch can memory-map the file; where it cannot, reading it whole must fit.

        torch.save stores a zip's records uncompressed, and mmap maps them in place; compressed
        records (a zip bomb, or a re-packed file) are inflated into memory whole, and a legacy
        (non-zip) file is read whole."""
        if not zipfile.is_zipfile(self.path):
            _ensure_memory(
                f"the contents of the legacy PyTorch file {self.path}", self.path.stat().st_size
            )
            return False
        try:
            with zipfile.ZipFile(self.path) as archive:
                members = archive.infolist()
        except Exception as exc:
            raise WeightsError(
                f"{self.path} looks like a zip archive but is damaged: {exc}"
            ) from None
        if all(m.compress_type == zipfile.ZIP_STORED for m in members):
            return True
        _ensure_memory(
            f"the compressed records of {self.path}, inflated,", sum(m.file_size for m in members)
        )
        return False

    def _open_npz(self) -> None:
        try:
            self._zip = zipfile.ZipFile(self.path)
            self._npy: dict[str, _NpyMember] = {}
            self.tensors = []
            for member in self._zip.infolist():
                name = member.filename[:-4]
                if name in self._npy:
                    raise WeightsError(f"{self.path} holds two arrays named {name!r}")
                found = self._npy_header(name, member)
                self._npy[name] = found
                self.tensors.append(TensorInfo(name, found.shape, found.dtype.name))
                self._nbytes[name] = found.member.file_size - found.data_offset
        except WeightsError:
            raise
        except Exception as exc:
            raise WeightsError(
                f"cannot read {self.path} as a NumPy .npz archive: {_first_line(exc)}"
            ) from None

    def _npy_header(self, name: str, member: zipfile.ZipInfo) -> _NpyMember:
        """Read one member's header, and check that its data is exactly what it declares."""
        import numpy as np

        with self._zip.open(member) as handle:
            version = np.lib.format.read_magic(handle)
            if version not in _NPY_VERSIONS:
                raise WeightsError(f"{name} in {self.path} has an unknown .npy version {version}")
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(handle)
            offset = handle.tell()
        shape = tuple(shape)
        if dtype.hasobject:
            raise WeightsError(
                f"refusing to load {self.path}: its array {name!r} holds Python objects, which "
                "would run code when unpickled; embedcli reads plain numeric arrays only "
                "(numpy allow_pickle=False)"
            )
        if any(size < 0 for size in shape):
            raise WeightsError(f"{name} in {self.path} declares a negative shape {shape}")
        declared = TensorInfo(name, shape, dtype.name).numel * dtype.itemsize
        held = member.file_size - offset
        if declared != held:
            raise WeightsError(
                f"{name} in {self.path} declares shape {shape} of {dtype.name} ({declared:,} "
                f"bytes), but holds {held:,} bytes of data: the file is damaged or forged"
            )
        return _NpyMember(member, dtype, shape, bool(fortran_order), offset)

    def _read_npy(self, name: str) -> Any:
        """One array of the .npz, read a chunk at a time into an array allocated once."""
        import numpy as np

        found = self._npy[name]
        count = self.info(name).numel
        flat = np.empty(count, dtype=found.dtype)
        buffer = memoryview(flat.view(np.uint8))
        try:
            with self._zip.open(found.member) as handle:
                handle.read(found.data_offset)
                done = 0
                while done < len(buffer):
                    got = handle.readinto(buffer[done : done + _NPY_CHUNK])
                    if not got:
                        raise EOFError(f"the data ends after {done:,} of {len(buffer):,} bytes")
                    done += got
        except Exception as exc:
            raise WeightsError(f"cannot read {name} from {self.path}: {_first_line(exc)}") from None
        if not found.dtype.isnative:
            flat = flat.byteswap(inplace=True).view(found.dtype.newbyteorder("="))
        if found.fortran_order:
            return flat.reshape(found.shape[::-1]).transpose()
        return flat.reshape(found.shape)

    # -- access

    def info(self, name: str) -> TensorInfo:
        """The description of one tensor."""
        for tensor in self.tensors:
            if tensor.name == name:
                return tensor
        raise WeightsError(f"{self.path} has no tensor {name!r}")

    def load(self, name: str) -> torch.Tensor:
        """Read one tensor (only that one) as a CPU torch tensor, once its size is known to fit."""
        import torch

        info = self.info(name)
        if self.format == "pytorch":
            return self._tensors[name]  # already loaded, or memory-mapped
        if self.format == "numpy" and info.dtype not in _NPY_LOADABLE:
            raise WeightsError(
                f"{name} in {self.path} is a {info.dtype} array, not one torch reads"
            )
        _ensure_memory(f"the values of {name} {info.shape} {info.dtype}", self._nbytes[name])
        if self.format == "numpy":
            return torch.from_numpy(self._read_npy(name))
        try:
            return self._handle.get_tensor(name)
        except Exception as exc:
            raise WeightsError(f"cannot read {name} from {self.path}: {_first_line(exc)}") from None

    def shares_storage(self, first: str, second: str) -> bool:
        """Whether two tensors of a PyTorch checkpoint are views of the same memory."""
        if self.format != "pytorch":
            return False
        a, b = self._tensors[first], self._tensors[second]
        if not _strided(a) or not _strided(b):
            return False
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
            if not _strided(tensor):  # sparse tensors have no storage to share
                total += tensor.numel()
                continue
            key = (
                tensor.untyped_storage().data_ptr(),
                tensor.storage_offset(),
                tuple(tensor.shape),
            )
            if key not in seen:
                seen.add(key)
                total += tensor.numel()
        return total


def _strided(tensor: torch.Tensor) -> bool:
    import torch

    return tensor.layout == torch.strided


def _torch_dtype(tensor: torch.Tensor) -> str:
    """'float32', or 'float32 (sparse_coo)' for a tensor that is not a plain strided one."""
    name = str(tensor.dtype).removeprefix("torch.")
    return name if _strided(tensor) else f"{name} ({str(tensor.layout).removeprefix('torch.')})"


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
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
        size = path.stat().st_size
    except OSError as exc:
        raise WeightsError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(head) >= 9 and head[8:9] == b"{":
        header_size = int.from_bytes(head[:8], "little")
        if 0 < header_size <= size - 8:
            return "safetensors"
        raise WeightsError(
            f"{path} looks like safetensors, but its header claims {header_size:,} bytes and the "
            f"file has {size:,}: the file is truncated or damaged"
        )
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except Exception as exc:  # BadZipFile, or a damaged directory that zipfile trips over
            raise WeightsError(
                f"{path} looks like a zip archive but is damaged: {_first_line(exc)}"
            ) from None
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
    """Detect the layout, or follow --token-key/--position-key; errors list the candidates.

    The tables found are checked from the header alone (2-D, floating point, no empty
    dimension, equal widths), so that every command refuses a bad table before reading it."""
    keys = _detect_tables(checkpoint, token_key, position_key)
    check_table_headers(checkpoint, keys)
    return keys


def _detect_tables(
    checkpoint: Checkpoint, token_key: str | None, position_key: str | None
) -> TableKeys:
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
    checkpoint.info(key)  # an unknown key is an error naming it
    return key


TABLE_DTYPES = ("float32", "float16", "bfloat16", "float64")


def _table_problem(name: str, shape: tuple[int, ...], dtype: str) -> str | None:
    """Why a tensor of this shape and dtype cannot be an embedding table, or None."""
    if len(shape) != 2 or dtype not in TABLE_DTYPES:
        return (
            f"{name} is a {shape} {dtype} tensor; an embedding table is a 2-D floating-point "
            f"tensor ({', '.join(TABLE_DTYPES)})"
        )
    if 0 in shape:
        return f"{name} has shape {shape}: an embedding table needs at least one row and one column"
    return None


def _width_problem(keys: TableKeys, token_width: int, position_width: int) -> str | None:
    if token_width == position_width:
        return None
    return (
        f"the token table {keys.token} is {token_width} wide but the positional table "
        f"{keys.position} is {position_width} wide; they must match"
    )


def check_table_headers(checkpoint: Checkpoint, keys: TableKeys) -> None:
    """The tables ``keys`` names, as the header describes them, can be embedding tables."""
    infos = [checkpoint.info(keys.token)]
    if keys.position is not None:
        infos.append(checkpoint.info(keys.position))
    for info in infos:
        problem = _table_problem(info.name, info.shape, info.dtype)
        if problem:
            raise WeightsError(problem)
    if len(infos) == 2:
        problem = _width_problem(keys, infos[0].shape[1], infos[1].shape[1])
        if problem:
            raise WeightsError(problem)


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
    """Both tables are dense, 2-D, floating point, not empty, and of the same width."""
    import torch

    for name, table in ((keys.token, token), (keys.position, position)):
        if table is None:
            continue
        dtype = str(table.dtype).removeprefix("torch.")
        if table.layout != torch.strided:
            dtype = f"{dtype} ({str(table.layout).removeprefix('torch.')})"
        problem = _table_problem(name, tuple(table.shape), dtype)
        if problem:
            raise WeightsError(problem)
    if position is not None:
        problem = _width_problem(keys, token.shape[1], position.shape[1])
        if problem:
            raise WeightsError(problem)


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
