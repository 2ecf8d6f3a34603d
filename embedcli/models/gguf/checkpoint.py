"""A GGUF file as a checkpoint: its tensors by their GGUF names, read a row at a time.

The file stays memory-mapped; nothing is read until a tensor is asked for. F32, F16 and BF16
tensors are read as they are stored; a quantized one (Q8_0, Q4_K, Q6_K, ...) is dequantized by
the ``gguf`` package (llama.cpp's own dequantizers), only the rows a lookup uses
(``load_rows``), or a chunk of rows at a time (``QuantizedTable``, which ``stats``,
``neighbors`` and ``project`` read like a tensor). A quantized tensor is described with the dtype
its rows are read as (float32) and its GGML type (``ggml_type``); ``error_bound`` gives the
worst quantization error of the rows used, from the block scales alone. A row a NaN or infinite
scale (or minimum) makes NaN or infinite is refused, by every reading and by ``error_bound``:
values of finite float16 scales are finite, so only a damaged block gives them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.core.memory import CHUNK_ELEMENTS, ensure_host_fits
from embedcli.errors import WeightsError
from embedcli.models.formats import TensorInfo
from embedcli.models.gguf.bounds import error_bounds, first_bad_scale
from embedcli.models.gguf.file import (
    GGUFFile,
    TensorRecord,
    block_sizes,
    ggml_type_name,
    open_gguf_file,
)

if TYPE_CHECKING:
    import torch

# GGML types stored as plain values: (the dtype they are read as, bytes per value)
PLAIN = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64"}
PLAIN |= {"I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64"}


class GGUFCheckpoint:
    """An opened GGUF file with the interface of ``checkpoint.Checkpoint``."""

    format = "gguf"
    is_gguf = True

    def __init__(self, path: Path, gguf: GGUFFile | None = None) -> None:
        self.path = Path(path)
        self.file = gguf if gguf is not None else open_gguf_file(self.path)
        self.extra: dict[str, Any] = {}
        self.tensors = [
            TensorInfo(t.name, t.shape, self.read_dtype(t.name)) for t in self.file.tensors
        ]
        self._info = {t.name: t for t in self.tensors}

    # -- what the file holds

    @property
    def names(self) -> list[str]:
        """Every tensor's name."""
        return [t.name for t in self.tensors]

    def info(self, name: str) -> TensorInfo:
        """The description of one tensor (its dtype: what its values are read as); ``NAME[i]``
        is the i-th matrix of a stacked 3-D tensor (Gemma 3n's altup_proj.weight)."""
        found = self._info.get(name)
        if found is None and name.endswith("]") and "[" in name:
            stacked, index = _slice(name)
            whole = self._info.get(stacked)
            if whole is not None and len(whole.shape) == 3 and 0 <= index < whole.shape[0]:
                return TensorInfo(name, whole.shape[1:], whole.dtype)
        if found is None:
            raise WeightsError(f"{self.path} has no tensor {name!r}")
        return found

    def record(self, name: str) -> TensorRecord:
        """Where a tensor's bytes are, and its GGML type."""
        return self.file.tensor(name)

    def ggml_type(self, name: str) -> str:
        """'Q8_0', 'F16', ...: how a tensor is stored."""
        return ggml_type_name(self.record(name).ggml_type)

    def read_dtype(self, name: str) -> str:
        """The dtype a tensor's values are read as: its own for plain types, float32 for a
        quantized one (as llama.cpp's row lookup gives)."""
        return PLAIN.get(self.ggml_type(name), "float32")

    def quantized(self, name: str) -> bool:
        """Whether a tensor is stored in quantized blocks."""
        return self.ggml_type(name) not in PLAIN

    def reads_rows(self, name: str) -> bool:
        """A GGUF table is read a row at a time (a quantized one dequantized)."""
        return True

    def local_files(self) -> list[Path]:
        """The one file."""
        return [self.path]

    def shares_storage(self, first: str, second: str) -> bool:
        """GGUF tensors never share bytes (overlaps are refused when the file is opened)."""
        return False

    def unique_parameters(self) -> int:
        """Elements of all tensors."""
        return sum(t.numel for t in self.tensors)

    # -- reading

    def _table(self, name: str) -> tuple[TensorRecord, int, int]:
        record = self.record(name)
        shape = record.shape
        if len(shape) != 2:
            raise WeightsError(f"{name} in {self.path} is {shape}, not a (rows, d) table")
        rows, width = shape
        per_block, block_bytes = block_sizes(record.ggml_type)
        return record, rows, width // per_block * block_bytes

    def _decode(
        self, record: TensorRecord, data: Any, count: int, width: int, rows: Sequence[int] | None
    ) -> torch.Tensor:
        """``count`` rows of raw bytes as a tensor (count, width); ``rows``: the rows' numbers
        in the table (None: not a table), which a refusal of a damaged block names."""
        import numpy as np
        import torch

        kind = ggml_type_name(record.ggml_type)
        raw = np.frombuffer(data, dtype=np.uint8)
        if kind == "BF16":
            values = torch.from_numpy(raw.view(np.int16).copy()).view(torch.bfloat16)
            return values.reshape(count, width)
        if kind in PLAIN:
            return torch.from_numpy(raw.view("<" + _NUMPY_CODES[kind]).copy()).reshape(count, width)
        from gguf.quants import dequantize  # the whole gguf package (numpy's dequantizers)

        from embedcli.models.gguf.ggml import constants  # the module gguf.quants uses

        GGMLQuantizationType = constants().GGMLQuantizationType

        try:
            values = dequantize(raw.reshape(count, -1), GGMLQuantizationType(record.ggml_type))
        except NotImplementedError:
            raise WeightsError(
                f"{record.name} in {self.path} is {kind}, which the gguf package cannot dequantize"
            ) from None
        values = np.ascontiguousarray(values, dtype=np.float32).reshape(count, width)
        finite = np.isfinite(values).all(axis=1)  # (count,)
        if not finite.all():
            self._refuse_scale(record, raw, int(np.argmin(finite)), rows)
        return torch.from_numpy(values)

    def _refuse_scale(
        self, record: TensorRecord, raw: Any, index: int, rows: Sequence[int] | None
    ) -> None:
        """Refuse the ``index``-th row of ``raw``, which a block scale (or minimum) that is
        not finite made NaN or infinite, naming the row and the value."""
        kind = ggml_type_name(record.ggml_type)
        row_bytes = raw.size // max(len(rows), 1) if rows is not None else raw.size
        found = first_bad_scale(kind, raw[index * row_bytes : (index + 1) * row_bytes])
        which = record.name if rows is None else f"{record.name} row {rows[index]:,}"
        field = "scale that is not finite" if found is None else f"{found[0]} of {found[1]}"
        raise WeightsError(
            f"{self.path}: {which} has a {kind} block {field}: the file is damaged, so its "
            "values are not shown"
        )

    def load(self, name: str) -> torch.Tensor:
        """A whole tensor (a quantized one dequantized), once its size is known to fit; one
        matrix of a stacked tensor for ``NAME[i]``."""
        if name not in self._info and name.endswith("]"):
            self.info(name)  # refused unless it names a matrix of a stacked tensor
            stacked, index = _slice(name)
            return self.load(stacked)[index].clone()
        record = self.record(name)
        info = self.info(name)
        itemsize = {"float64": 8, "int64": 8, "float16": 2, "bfloat16": 2, "int16": 2}
        itemsize |= {"int8": 1}
        size = info.numel * itemsize.get(info.dtype, 4)
        ensure_host_fits(f"the values of {name} {info.shape} {info.dtype}", size + record.nbytes)
        data = self.file.view(record.start, record.start + record.nbytes)
        if len(info.shape) == 2:
            return self._decode(record, data, info.shape[0], info.shape[1], range(info.shape[0]))
        flat = self._decode(record, data, 1, max(info.numel, 1), None)
        return flat.reshape(info.shape)

    def load_rows(self, name: str, rows: Sequence[int]) -> torch.Tensor:
        """Rows of a 2-D table, (len(rows), d): only those rows' bytes are read."""
        import torch

        record, count, row_bytes = self._table(name)
        width = record.shape[1]
        wanted = [int(row) for row in rows]
        bad = [row for row in wanted if not 0 <= row < count]
        if bad:
            raise WeightsError(f"row {bad[0]} is outside {name}, which has {count:,} rows")
        if not wanted:
            return torch.empty(0, width, dtype=getattr(torch, self.read_dtype(name)))
        ensure_host_fits(f"{len(wanted):,} rows of {name}", len(wanted) * width * 8)
        picked = b"".join(
            self.file.view(record.start + r * row_bytes, record.start + (r + 1) * row_bytes)
            for r in wanted
        )
        return self._decode(record, picked, len(wanted), width, wanted)

    def load_range(self, name: str, start: int, stop: int) -> torch.Tensor:
        """Rows ``start`` to ``stop`` of a 2-D table, read in one piece."""
        record, count, row_bytes = self._table(name)
        start, stop = max(0, start), min(stop, count)
        stop = max(start, stop)
        data = self.file.view(record.start + start * row_bytes, record.start + stop * row_bytes)
        return self._decode(record, data, stop - start, record.shape[1], range(start, stop))

    def error_bound(self, name: str, rows: Sequence[int] | None = None) -> float | None:
        """The worst quantization error of a value of ``rows`` (all rows: None) of a quantized
        table, from its block scales (ggufsteps: for a value in its block's range). None for
        a plain type, or a quantized type whose steps embedcli does not derive."""
        import numpy as np

        record, count, row_bytes = self._table(name)
        kind = ggml_type_name(record.ggml_type)
        if kind in PLAIN:
            return None
        chosen = range(count) if rows is None else sorted({int(r) for r in rows})
        worst = 0.0
        chunk = max(1, CHUNK_ELEMENTS // max(record.shape[1], 1))
        listed = list(chosen)
        for first in range(0, len(listed), chunk):
            part = listed[first : first + chunk]
            data = b"".join(
                self.file.view(record.start + r * row_bytes, record.start + (r + 1) * row_bytes)
                for r in part
            )
            raw = np.frombuffer(data, dtype=np.uint8)
            bounds = error_bounds(kind, raw)
            if bounds is None:
                return None
            finite = np.isfinite(bounds.reshape(len(part), -1)).all(axis=1)  # (rows,)
            if not finite.all():
                self._refuse_scale(record, raw, int(np.argmin(finite)), part)
            if bounds.size:
                worst = max(worst, float(bounds.max()))
        return worst

    def rows_view(self, name: str) -> QuantizedTable:
        """The table as an object sliced like a tensor, read a chunk at a time."""
        return QuantizedTable(self, name)


def _slice(name: str) -> tuple[str, int]:
    """``altup_proj.weight[2]`` -> ("altup_proj.weight", 2); -1 where the index is no number."""
    stacked, _, index = name[:-1].rpartition("[")
    return stacked, int(index) if index.isdigit() else -1


_NUMPY_CODES = {"F32": "f4", "F16": "f2", "F64": "f8", "I8": "i1", "I16": "i2", "I32": "i4"}
_NUMPY_CODES |= {"I64": "i8"}


class QuantizedTable:
    """A quantized GGUF table read like a float32 tensor by the commands that walk a table a
    chunk of rows at a time (stats, neighbors, project): ``shape``, ``dtype``, and indexing by
    a slice of rows or a list of row ids, each dequantized when asked for."""

    def __init__(self, checkpoint: GGUFCheckpoint, name: str) -> None:
        import torch

        self.checkpoint, self.name = checkpoint, name
        self.shape = torch.Size(checkpoint.info(name).shape)
        self.dtype = torch.float32
        self.device = torch.device("cpu")
        self.layout = torch.strided
        self.ggml_type = checkpoint.ggml_type(name)

    def __len__(self) -> int:
        return self.shape[0]

    def dim(self) -> int:
        return 2

    def size(self, index: int | None = None) -> Any:
        return self.shape if index is None else self.shape[index]

    def __getitem__(self, index: Any) -> torch.Tensor:
        import torch

        if isinstance(index, slice):
            start, stop, step = index.indices(self.shape[0])
            if step != 1:
                return self.checkpoint.load_rows(self.name, range(start, stop, step))
            return self.checkpoint.load_range(self.name, start, stop)
        if isinstance(index, int):
            return self.checkpoint.load_rows(self.name, [index])[0]
        if isinstance(index, torch.Tensor):
            index = index.tolist()
        return self.checkpoint.load_rows(self.name, list(index))

    def data_ptr(self) -> int:
        return id(self)  # never equal to a real tensor's: a copy is always made
