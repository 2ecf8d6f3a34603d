"""Checkpoint formats, told by content: tensors described without reading them, safetensors headers
parsed and checked, wrapper prefixes stripped from keys.

Nothing here reads a tensor's data; checkpoint.py does that, one tensor at a time.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedcli.errors import WeightsError

_PREFIXES = ("_orig_mod.", "module.")  # torch.compile and DistributedDataParallel wrappers


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


def strip_prefixes(name: str) -> str:
    """A key without torch.compile and DistributedDataParallel wrapper prefixes."""
    changed = True
    while changed:
        changed = False
        for prefix in _PREFIXES:
            if name.startswith(prefix):
                name, changed = name[len(prefix) :], True
    return name


MAX_SAFETENSORS_HEADER = 100 << 20  # safetensors' own limit on a header
# bits per element of every safetensors dtype
_SAFETENSORS_BITS = {"F64": 64, "I64": 64, "U64": 64, "C64": 64, "F32": 32, "I32": 32, "U32": 32}
_SAFETENSORS_BITS |= {"F16": 16, "BF16": 16, "I16": 16, "U16": 16, "I8": 8, "U8": 8, "BOOL": 8}
_SAFETENSORS_BITS |= {"F8_E4M3": 8, "F8_E5M2": 8, "F8_E8M0": 8, "F6_E2M3": 6, "F6_E3M2": 6}
_SAFETENSORS_BITS |= {"F4": 4}


@dataclass(frozen=True)
class HeaderEntry:
    """One tensor of a safetensors header: its description and where its bytes are."""

    info: TensorInfo
    code: str  # the safetensors dtype code (F32, BF16, ...)
    start: int  # absolute offset of its first byte in the file
    end: int  # absolute offset after its last byte


def _header_entry(name: str, spec: Any, data_start: int, what: str) -> HeaderEntry:
    try:
        code, shape, (first, last) = spec["dtype"], spec["shape"], spec["data_offsets"]
        shape = tuple(shape)
        valid = (
            code in _SAFETENSORS_BITS
            and all(type(s) is int and s >= 0 for s in shape)
            and type(first) is int
            and type(last) is int
            and 0 <= first <= last
        )
    except (KeyError, TypeError, ValueError):
        valid = False
    if not valid:
        raise WeightsError(f"{what}: the header entry of {name!r} is damaged or unsupported")
    count = 1
    for size in shape:
        count *= size
    if count * _SAFETENSORS_BITS[code] >= 2**66:  # beyond any byte count torch can hold
        raise WeightsError(f"{what}: the shape of {name!r} {shape} overflows any byte count")
    if last - first != -(-count * _SAFETENSORS_BITS[code] // 8):
        raise WeightsError(
            f"{what}: {name!r} claims {last - first:,} bytes, but a {shape} {code} tensor "
            f"takes {-(-count * _SAFETENSORS_BITS[code] // 8):,}"
        )
    info = TensorInfo(name, shape, _safetensors_dtype(code))
    return HeaderEntry(info, code, data_start + first, data_start + last)


def parse_safetensors_header(
    raw: bytes, file_size: int | None, what: str
) -> dict[str, HeaderEntry]:
    """The tensors a safetensors header (the JSON after the 8-byte length) describes, checked
    as safetensors checks them: every byte range matches its shape and dtype, and (when the
    file's size is known) the ranges tile the data exactly, to the end of the file."""
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsError(f"cannot read {what} as safetensors: damaged header ({exc})") from None
    except (ValueError, RecursionError) as exc:  # nesting or integers past Python's limits
        raise WeightsError(
            f"cannot read {what} as safetensors: damaged header ({type(exc).__name__})"
        ) from None
    if not isinstance(header, dict):
        raise WeightsError(f"cannot read {what} as safetensors: the header is not an object")
    data_start = 8 + len(raw)
    entries = {
        name: _header_entry(name, spec, data_start, what)
        for name, spec in header.items()
        if name != "__metadata__"
    }
    if file_size is not None:
        end = data_start
        for entry in sorted(entries.values(), key=lambda e: (e.start, e.end)):
            if entry.start != end:
                raise WeightsError(
                    f"cannot read {what} as safetensors: the tensors' byte ranges overlap or "
                    f"leave gaps (at {entry.info.name!r}): the file is damaged"
                )
            end = entry.end
        if end != file_size:
            raise WeightsError(
                f"cannot read {what} as safetensors: its tensors end at byte {end:,} but the "
                f"file has {file_size:,}: the file is truncated or damaged"
            )
    return entries


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


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
                f"{path} looks like a zip archive but is damaged: {first_line(exc)}"
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
