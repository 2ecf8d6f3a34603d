"""Reading checkpoint files safely: safetensors, PyTorch (``weights_only``) and NumPy ``.npz``.

Formats are told by content. Every tensor is described from the file's header first, and read
only when asked for, after its size is checked against free memory; nothing in a file is ever
run (PyTorch files load with ``weights_only=True``, ``.npz`` members are read without pickles).
Which tensors are the embedding tables is tables.py's business.

An ``.npz`` member stored uncompressed (``np.savez``) is memory-mapped where it lies in the zip,
as safetensors is: a lookup brings in the pages of the rows it reads, not the table. A compressed
member (``np.savez_compressed``) cannot be read by offset: a lookup inflates it in one pass, a
chunk of ``_NPY_CHUNK`` bytes at a time, keeping only the rows asked for (``reads_rows``), and
a whole table is inflated into memory once, after its size is checked against free memory.
"""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.core.memory import ensure_host_fits
from embedcli.errors import WeightsError, not_a_file
from embedcli.models.formats import (
    MAX_SAFETENSORS_HEADER,
    TensorInfo,
    detect_format,
    first_line,
    parse_safetensors_header,
)

if TYPE_CHECKING:
    import torch


_STATE_DICT_KEYS = ("model", "state_dict", "model_state_dict")


_NPY_CHUNK = 1 << 22  # bytes read from an .npz member at a time: reading stays in bounded memory
_NPY_VERSIONS = ((1, 0), (2, 0), (3, 0))
# numpy dtypes torch.from_numpy takes (a big-endian array is byte-swapped in place first)
_NPY_LOADABLE = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")


@dataclass(frozen=True)
class _NpyMember:
    """Where one array of an .npz archive is, and what its header declares."""

    member: zipfile.ZipInfo
    dtype: Any  # numpy.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    data_offset: int  # bytes of magic and header before the data

    @property
    def stored(self) -> bool:
        """Stored uncompressed: its bytes lie in the file as they are, to be mapped."""
        return self.member.compress_type == zipfile.ZIP_STORED


class Checkpoint:
    """An opened checkpoint: its tensors' names, shapes and dtypes, and lazy access to each."""

    is_gguf = False

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            raise WeightsError(f"cannot read {path}: {not_a_file(path)}")
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
        # The header alone, read with two small reads: listing a shard of a model folder touches
        # a few KiB, never the data (safe_open maps the file and pages in megabytes).
        size = self.path.stat().st_size
        with open(self.path, "rb", buffering=0) as handle:
            if hasattr(os, "posix_fadvise"):  # no read-ahead: only the header's pages
                os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
            length = int.from_bytes(os.pread(handle.fileno(), 8, 0), "little")
            if not 0 < length <= min(MAX_SAFETENSORS_HEADER, size - 8):
                raise WeightsError(f"{self.path} has a damaged safetensors header length")
            raw = os.pread(handle.fileno(), length, 8)
        self._entries = parse_safetensors_header(raw, size, str(self.path))
        self.tensors = [self._entries[name].info for name in sorted(self._entries)]
        self._nbytes = {n: e.end - e.start for n, e in self._entries.items()}
        self._handle: Any = None  # safe_open, on the first tensor read

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
                f"cannot read {self.path} as a PyTorch checkpoint: {first_line(exc)}"
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
                f"{self.path} holds a Python {type(state).__name__}, not a state dict of tensors"
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
            ensure_host_fits(
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
        ensure_host_fits(
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
                f"cannot read {self.path} as a NumPy .npz archive: {first_line(exc)}"
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
        """One whole array of the .npz: a stored member memory-mapped (a copy only where its
        byte order must be swapped), a compressed one inflated a chunk at a time into an array
        allocated once."""
        import numpy as np

        found = self._npy[name]
        if found.stored and self.info(name).numel:
            mapped = self._map_npy(name)
            return mapped if found.dtype.isnative else _native(np.array(mapped))
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
            raise WeightsError(f"cannot read {name} from {self.path}: {first_line(exc)}") from None
        flat = _native(flat)
        if found.fortran_order:
            return flat.reshape(found.shape[::-1]).transpose()
        return flat.reshape(found.shape)

    def _map_npy(self, name: str) -> Any:
        """A stored member's array, memory-mapped copy-on-write where its data lies in the zip
        (after the member's local header and the .npy header): nothing is read until used."""
        import numpy as np

        found = self._npy[name]
        member = found.member
        try:
            with open(self.path, "rb") as handle:
                local = os.pread(handle.fileno(), 30, member.header_offset)
            signature, name_length, extra_length = struct.unpack("<4s22xHH", local)
            if signature != b"PK\x03\x04" or member.compress_size != member.file_size:
                raise ValueError("its zip entry is damaged")
            start = member.header_offset + 30 + name_length + extra_length + found.data_offset
            if start + member.file_size - found.data_offset > self.path.stat().st_size:
                raise ValueError("its data runs past the end of the file")
            order = "F" if found.fortran_order else "C"
            return np.memmap(
                self.path, dtype=found.dtype, mode="c", offset=start, shape=found.shape, order=order
            )
        except Exception as exc:
            raise WeightsError(f"cannot read {name} from {self.path}: {first_line(exc)}") from None

    def _stream_npy_rows(self, name: str, rows: list[int]) -> Any:
        """Rows of a compressed (C-order) member, in the order asked: inflated in one pass, a
        chunk at a time, keeping only those rows; read to the end, so damage is found."""
        import numpy as np

        found = self._npy[name]
        width = found.shape[1] * found.dtype.itemsize
        held = sorted(set(rows))
        out = np.empty((len(held), found.shape[1]), dtype=found.dtype)
        target = memoryview(out.view(np.uint8).reshape(-1))
        try:
            with self._zip.open(found.member) as handle:
                position = -found.data_offset  # bytes of data read so far
                for slot, row in enumerate(held):
                    while position < row * width:  # skip to the row, a chunk at a time
                        skipped = len(handle.read(min(_NPY_CHUNK, row * width - position)))
                        if not skipped:
                            raise EOFError(f"the data ends before row {row:,}")
                        position += skipped
                    done = 0
                    while done < width:
                        got = handle.readinto(target[slot * width + done : (slot + 1) * width])
                        if not got:
                            raise EOFError(f"the data ends inside row {row:,}")
                        done += got
                    position += width
                while handle.read(_NPY_CHUNK):  # to the end, where zipfile checks the CRC
                    pass
        except Exception as exc:
            raise WeightsError(f"cannot read {name} from {self.path}: {first_line(exc)}") from None
        where = {row: slot for slot, row in enumerate(held)}
        return _native(out)[[where[row] for row in rows]]

    # -- access

    @property
    def names(self) -> list[str]:
        """Every tensor's name."""
        return [t.name for t in self.tensors]

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
        if self.format == "numpy":
            self._check_loadable(info)
        ensure_host_fits(f"the values of {name} {info.shape} {info.dtype}", self._nbytes[name])
        if self.format == "numpy":
            return torch.from_numpy(self._read_npy(name))
        try:
            if self._handle is None:
                from safetensors import safe_open

                self._handle = safe_open(str(self.path), framework="pt")
            return self._handle.get_tensor(name)
        except Exception as exc:
            raise WeightsError(f"cannot read {name} from {self.path}: {first_line(exc)}") from None

    def load_rows(self, name: str, rows: Sequence[int]) -> torch.Tensor:
        """Rows of a 2-D table, (len(rows), d): from a safetensors file only those rows are
        read; from other formats the table is read, then indexed."""
        import torch

        info = self.info(name)
        if len(info.shape) != 2:
            raise WeightsError(f"{name} in {self.path} is {info.shape}, not a (rows, d) table")
        wanted = [int(row) for row in rows]
        bad = [row for row in wanted if not 0 <= row < info.shape[0]]
        if bad:
            raise WeightsError(f"row {bad[0]} is outside {name}, which has {info.shape[0]:,} rows")
        if self.format == "numpy":
            return self._npy_rows(name, wanted)
        if self.format != "safetensors":
            return self.load(name)[torch.tensor(wanted, dtype=torch.long)]
        try:
            if self._handle is None:
                from safetensors import safe_open

                self._handle = safe_open(str(self.path), framework="pt")
            table = self._handle.get_slice(name)
            picked = [table[row : row + 1] for row in wanted]
        except Exception as exc:
            raise WeightsError(f"cannot read {name} from {self.path}: {first_line(exc)}") from None
        if not picked:
            return torch.empty(0, info.shape[1], dtype=getattr(torch, info.dtype))
        return torch.cat(picked)

    def _check_loadable(self, info: TensorInfo) -> None:
        if info.dtype not in _NPY_LOADABLE:
            raise WeightsError(
                f"{info.name} in {self.path} is a {info.dtype} array, not one torch reads"
            )

    def _npy_rows(self, name: str, wanted: list[int]) -> torch.Tensor:
        """Rows of an .npz table: from a stored member, only their pages are read; from a
        compressed one, inflated in one pass, keeping only them."""
        import torch

        info = self.info(name)
        self._check_loadable(info)
        found = self._npy[name]
        if self.reads_rows(name):
            return torch.from_numpy(self._stream_npy_rows(name, wanted))
        if found.stored and info.numel:
            return torch.from_numpy(_native(self._map_npy(name)[wanted]))
        return self.load(name)[torch.tensor(wanted, dtype=torch.long)]

    def reads_rows(self, name: str) -> bool:
        """Whether a lookup reads its rows alone (``load_rows``): a table stored compressed in
        an .npz, which cannot be mapped (a stored one is mapped, as safetensors is); other
        local tables are mapped or read whole."""
        if self.format != "numpy":
            return False
        found = self._npy[name]
        return not found.stored and not found.fortran_order and len(found.shape) == 2

    def local_files(self) -> list[Path]:
        """The one file."""
        return [self.path]

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


def _native(array: Any) -> Any:
    """An array in the machine's byte order (a big-endian one is swapped in place)."""
    if array.dtype.isnative:
        return array
    return array.byteswap(inplace=True).view(array.dtype.newbyteorder("="))


def _strided(tensor: torch.Tensor) -> bool:
    import torch

    return tensor.layout == torch.strided


def _torch_dtype(tensor: torch.Tensor) -> str:
    """'float32', or 'float32 (sparse_coo)' for a tensor that is not a plain strided one."""
    name = str(tensor.dtype).removeprefix("torch.")
    return name if _strided(tensor) else f"{name} ({str(tensor.layout).removeprefix('torch.')})"
