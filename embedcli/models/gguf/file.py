"""A GGUF file's header, read and checked: its metadata and where each tensor's bytes are.

GGUF (llama.cpp's format) is a little-endian header: magic ``GGUF``, a version (2 or 3), the
tensor and metadata counts, the metadata (typed key/value pairs: scalars, strings, arrays), then
one record per tensor (name, dimensions in ggml's order, the fastest first; GGML type; offset
into the data section), then the data section, aligned to ``general.alignment`` (32 by default).

The format's constants (value types, GGML types and their block sizes) come from the ``gguf``
package, llama.cpp's own Python library; the reading is this module's, because a hostile header
must cost no more than its size: every count is checked against the bytes left before it is
used (``gguf.GGUFReader`` loops over whatever count a file declares and builds a NumPy object
for every string, a vocabulary's 150,000 tokens included). Numeric arrays stay views of the
mapped file; strings are decoded as UTF-8 or refused. Every tensor must lie inside the data
section, on the alignment, and overlap no other. Nothing here reads a tensor's values.
"""

from __future__ import annotations

import itertools
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedcli.errors import WeightsError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_STRINGS = 1 << 22  # strings in one array: the largest vocabularies hold about 260,000
MAX_STRING = 1 << 24  # bytes in one string (a chat template is tens of KB)
DEFAULT_ALIGNMENT = 32

# GGUF value types: (struct code, size) of the scalars; 8 is a string, 9 an array
_SCALARS = {
    0: ("B", 1),
    1: ("b", 1),
    2: ("H", 2),
    3: ("h", 2),
    4: ("I", 4),
    5: ("i", 4),
    6: ("f", 4),
    7: ("?", 1),
    10: ("Q", 8),
    11: ("q", 8),
    12: ("d", 8),
}
_NUMPY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?"}
_NUMPY |= {10: "<u8", 11: "<i8", 12: "<f8"}
TYPE_NAMES = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32"}
TYPE_NAMES |= {6: "float32", 7: "bool", 8: "string", 9: "array", 10: "uint64", 11: "int64"}
TYPE_NAMES |= {12: "float64"}
STRING, ARRAY = 8, 9


@dataclass(frozen=True)
class Value:
    """One metadata value: its GGUF type (an array's element type in ``element``) and value.
    A numeric array is a read-only NumPy view of the mapped file; a string array a list."""

    type: int
    value: Any
    element: int | None = None

    @property
    def type_name(self) -> str:
        """'uint32', 'string', 'array of float32', ..."""
        if self.type == ARRAY and self.element is not None:
            return f"array of {TYPE_NAMES[self.element]}"
        return TYPE_NAMES[self.type]

    def plain(self) -> Any:
        """The value as Python objects (a numeric array as a list)."""
        if self.type == ARRAY and self.element != STRING:
            return self.value.tolist()
        return self.value


@dataclass(frozen=True)
class TensorRecord:
    """One tensor of a GGUF file, from its header record."""

    name: str
    dims: tuple[int, ...]  # ggml's order: dims[0] is a row's width
    ggml_type: int
    start: int  # absolute offset of its first byte
    nbytes: int

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape in PyTorch's order: (rows, width) for a table."""
        return tuple(reversed(self.dims))

    @property
    def numel(self) -> int:
        count = 1
        for size in self.dims:
            count *= size
        return count


def ggml_type_name(ggml_type: int) -> str:
    """'Q8_0', 'F16', ... for a GGML type number (the gguf package's names)."""
    from embedcli.models.gguf.ggml import constants  # light: see ggml.py

    return constants().GGMLQuantizationType(ggml_type).name


def block_sizes(ggml_type: int) -> tuple[int, int]:
    """(elements per block, bytes per block) of a GGML type."""
    from embedcli.models.gguf.ggml import constants  # light: see ggml.py

    ggml = constants()
    return ggml.GGML_QUANT_SIZES[ggml.GGMLQuantizationType(ggml_type)]


class _Cursor:
    """Reads a header from the mapped file, refusing to read past its end."""

    def __init__(self, data: Any, where: str, raw: Any = None) -> None:
        self.data, self.where, self.at = data, where, 0
        self.raw = data if raw is None else raw  # the mmap itself: slicing it gives bytes

    def left(self) -> int:
        return len(self.data) - self.at

    def need(self, count: int, what: str) -> None:
        if count > self.left():
            raise WeightsError(
                f"{self.where} ends inside its header ({what} at byte {self.at:,} needs "
                f"{count:,} bytes, {self.left():,} are left): the file is truncated or damaged"
            )

    def scalar(self, kind: int, what: str) -> Any:
        code, size = _SCALARS[kind]
        self.need(size, what)
        (value,) = struct.unpack_from("<" + code, self.data, self.at)
        self.at += size
        return value

    def u32(self, what: str) -> int:
        return int(self.scalar(4, what))

    def u64(self, what: str) -> int:
        return int(self.scalar(10, what))

    def string(self, what: str) -> str:
        length = self.u64(f"the length of {what}")
        if length > MAX_STRING:
            raise WeightsError(
                f"{self.where}: {what} claims {length:,} bytes, more than any GGUF string "
                f"holds ({MAX_STRING:,}): the header is damaged or forged"
            )
        self.need(length, what)
        raw = bytes(self.data[self.at : self.at + length])
        self.at += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WeightsError(f"{self.where}: {what} is not UTF-8 text") from None


_LENGTH = struct.Struct("<Q")


def _strings(cursor: _Cursor, count: int, key: str) -> list[str]:
    """``count`` strings (a vocabulary: 100,000 and more), read in one tight loop; any string
    that runs past the file or is not UTF-8 is refused as ``cursor.string`` would."""
    raw, at, end = cursor.raw, cursor.at, len(cursor.data)
    unpack = _LENGTH.unpack_from
    items: list[bytes] = []
    append = items.append
    for _ in range(count):
        if at + 8 > end:
            break
        (length,) = unpack(raw, at)
        if length > MAX_STRING or at + 8 + length > end:
            break
        append(raw[at + 8 : at + 8 + length])
        at += 8 + length
    else:
        try:
            found = [item.decode("utf-8") for item in items]
        except UnicodeDecodeError:
            found = None
        if found is not None:
            cursor.at = at
            return found
    # something is wrong: find it, and say so, the slow way from the first string
    return [cursor.string(f"string {i} of {key}") for i in range(count)]


def _value(cursor: _Cursor, kind: int, key: str) -> Value:
    if kind in _SCALARS:
        return Value(kind, cursor.scalar(kind, f"the value of {key}"))
    if kind == STRING:
        return Value(kind, cursor.string(f"the value of {key}"))
    if kind != ARRAY:
        raise WeightsError(f"{cursor.where}: {key} has the unknown GGUF value type {kind}")
    element = cursor.u32(f"the element type of {key}")
    count = cursor.u64(f"the length of {key}")
    if element == STRING:
        if count > min(MAX_STRINGS, cursor.left() // 8):
            raise WeightsError(
                f"{cursor.where}: {key} claims {count:,} strings, more than the file can hold: "
                "it is truncated, or its header is damaged"
            )
        return Value(ARRAY, _strings(cursor, count, key), STRING)
    if element not in _SCALARS:
        what = "arrays of arrays" if element == ARRAY else f"the unknown value type {element}"
        raise WeightsError(f"{cursor.where}: {key} holds {what}, which embedcli does not read")
    import numpy as np

    size = _SCALARS[element][1]
    if count > cursor.left() // size:
        raise WeightsError(
            f"{cursor.where}: {key} claims {count:,} values, more than the file can hold: it "
            "is truncated, or its header is damaged"
        )
    view = np.frombuffer(cursor.data, dtype=_NUMPY[element], count=count, offset=cursor.at)
    cursor.at += count * size
    return Value(ARRAY, view, element)


class GGUFFile:
    """The header of a GGUF file: ``metadata`` (key -> Value) and ``tensors`` (records in the
    file's order), checked; the file stays mapped for reading tensors' bytes (``view``)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        where = str(path)
        try:
            with open(self.path, "rb") as handle:
                self.size = handle.seek(0, 2)
                if self.size < 24:
                    raise WeightsError(f"{where} is too short to be a GGUF file")
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as exc:
            raise WeightsError(f"cannot read {where}: {exc.strerror or exc}") from None
        if hasattr(self._map, "madvise"):
            self._map.madvise(mmap.MADV_RANDOM)  # the header and the rows used, no read-ahead
        cursor = _Cursor(memoryview(self._map), where, self._map)
        if bytes(cursor.data[:4]) != MAGIC:
            raise WeightsError(f"{where} is not a GGUF file (it does not start with 'GGUF')")
        cursor.at = 4
        self.version = cursor.u32("the version")
        if self.version not in VERSIONS:
            swapped = int.from_bytes(self.version.to_bytes(4, "little"), "big")
            if swapped in VERSIONS:
                raise WeightsError(
                    f"{where} is a big-endian GGUF file, which embedcli does not read"
                )
            raise WeightsError(
                f"{where} is GGUF version {self.version}; embedcli reads versions 2 and 3"
            )
        tensor_count = cursor.u64("the tensor count")
        kv_count = cursor.u64("the metadata count")
        if kv_count > cursor.left() // 13 or tensor_count > cursor.left() // 24:
            raise WeightsError(
                f"{where} claims {kv_count:,} metadata entries and {tensor_count:,} tensors, "
                "more than the file can hold: it is truncated, or its header is damaged"
            )
        self.metadata: dict[str, Value] = {}
        for index in range(kv_count):
            key = cursor.string(f"metadata key {index}")
            if key in self.metadata:
                raise WeightsError(f"{where} holds the metadata key {key!r} twice")
            self.metadata[key] = _value(cursor, cursor.u32(f"the type of {key}"), key)
        records = [_record(cursor, index) for index in range(tensor_count)]
        self.alignment = self._alignment()
        self.data_start = -(-cursor.at // self.alignment) * self.alignment
        self.tensors = self._placed(records)
        self._by_name = {t.name: t for t in self.tensors}

    def _alignment(self) -> int:
        found = self.metadata.get("general.alignment")
        if found is None:
            return DEFAULT_ALIGNMENT
        value = found.value
        if found.type != 4 or value == 0 or value & (value - 1):
            raise WeightsError(
                f"{self.path}: general.alignment must be a uint32 power of two, got "
                f"{found.type_name} {value!r}"
            )
        return int(value)

    def _placed(self, records: list[tuple[str, tuple[int, ...], int, int]]) -> list[TensorRecord]:
        where = str(self.path)
        placed: list[TensorRecord] = []
        seen: set[str] = set()
        for name, dims, ggml_type, offset in records:
            if name in seen:
                raise WeightsError(f"{where} holds two tensors named {name!r}")
            seen.add(name)
            try:
                type_name = ggml_type_name(ggml_type)
                per_block, block_bytes = block_sizes(ggml_type)
            except (ValueError, KeyError):
                raise WeightsError(
                    f"{where}: tensor {name!r} has the GGML type {ggml_type}, which the gguf "
                    "package does not know (a newer llama.cpp type, or a damaged header)"
                ) from None
            if dims and dims[0] % per_block:
                raise WeightsError(
                    f"{where}: tensor {name!r} has rows of {dims[0]:,} values, not a whole "
                    f"number of {type_name} blocks of {per_block}"
                )
            count = 1
            for size in dims:
                count *= size
            nbytes = count // per_block * block_bytes
            start = self.data_start + offset
            if offset % self.alignment or start + nbytes > self.size:
                problem = (
                    "is not on the file's alignment"
                    if offset % self.alignment
                    else f"runs past the end of the file ({start + nbytes:,} > {self.size:,})"
                )
                raise WeightsError(
                    f"{where}: the data of tensor {name!r} {problem}: the file is truncated, "
                    "or its header lies"
                )
            placed.append(TensorRecord(name, dims, ggml_type, start, nbytes))
        ordered = sorted(placed, key=lambda t: t.start)
        for before, after in itertools.pairwise(ordered):
            if before.nbytes and after.start < before.start + before.nbytes:
                raise WeightsError(
                    f"{where}: the data of tensors {before.name!r} and {after.name!r} overlap: "
                    "the header is damaged or forged"
                )
        return placed

    def tensor(self, name: str) -> TensorRecord:
        """The record of one tensor."""
        found = self._by_name.get(name)
        if found is None:
            raise WeightsError(f"{self.path} has no tensor {name!r}")
        return found

    def view(self, start: int, end: int) -> bytes:
        """Bytes of the file (the caller keeps within a tensor's record), read with pread:
        unlike the mapped pages, they leave this process's memory once used."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        parts, at = [], start
        while at < end:  # one read returns at most about 2 GiB on Linux
            part = os.pread(self._fd, min(end - at, 1 << 30), at)
            if not part:
                raise WeightsError(f"{self.path} ended while it was read: was it cut short?")
            parts.append(part)
            at += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def __del__(self, close: Any = os.close, error: Any = OSError) -> None:
        # the defaults hold os.close even while Python shuts down and clears module globals
        if getattr(self, "_fd", None) is not None:
            try:
                close(self._fd)
            except error:
                return

    def get(self, key: str) -> Value | None:
        """One metadata value, or None."""
        return self.metadata.get(key)


def _record(cursor: _Cursor, index: int) -> tuple[str, tuple[int, ...], int, int]:
    name = cursor.string(f"the name of tensor {index}")
    n_dims = cursor.u32(f"the dimension count of {name}")
    if not 1 <= n_dims <= MAX_DIMS:
        raise WeightsError(
            f"{cursor.where}: tensor {name!r} has {n_dims} dimensions; GGUF allows 1 to {MAX_DIMS}"
        )
    dims = tuple(cursor.u64(f"a dimension of {name}") for _ in range(n_dims))
    count = 1
    for size in dims:
        count *= size
    if count >= 1 << 62:
        raise WeightsError(f"{cursor.where}: tensor {name!r} claims the absurd shape {dims}")
    ggml_type = cursor.u32(f"the type of {name}")
    offset = cursor.u64(f"the offset of {name}")
    return name, dims, ggml_type, offset


def looks_like_gguf(path: Path) -> bool:
    """Whether a file starts with GGUF's magic."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == MAGIC
    except OSError:
        return False


_OPENED: dict[tuple[str, int, int], GGUFFile] = {}


def open_gguf_file(path: Path) -> GGUFFile:
    """A GGUF file's header, parsed once per process for the same file (a command reads the
    tables and the tokenizer of one file)."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise WeightsError(f"cannot read {path}: {exc.strerror or exc}") from None
    key = (str(Path(path).absolute()), stat.st_mtime_ns, stat.st_size)
    if key not in _OPENED:
        if len(_OPENED) >= 2:
            _OPENED.clear()
        _OPENED[key] = GGUFFile(Path(path))
    return _OPENED[key]
