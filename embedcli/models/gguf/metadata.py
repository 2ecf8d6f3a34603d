"""A GGUF file's metadata read as llama.cpp's loader reads it: typed keys of one architecture
(``<arch>.<name>``), each checked for its type, a value that cannot be a model's refused with
its key; and small float32 tensors that stand for config fields (rope's frequency factors)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from embedcli.errors import ConfigError

if TYPE_CHECKING:
    from embedcli.models.gguf.file import GGUFFile

INTEGERS = (0, 1, 2, 3, 4, 5, 10, 11)  # GGUF's integer value types
NUMBERS = (*INTEGERS, 6, 12)
BOOL, STRING, ARRAY = 7, 8, 9
MAX_LAYERS = 512  # llama.cpp's LLAMA_MAX_LAYERS: it refuses a block_count above it


class Metadata:
    """The keys of one architecture of an opened file."""

    def __init__(self, gguf: GGUFFile, arch: str) -> None:
        self.gguf, self.arch = gguf, arch
        self.where = str(gguf.path)

    def key(self, name: str) -> str:
        """The whole key: ``<arch>.<name>``, or ``name`` without its leading dot."""
        return name[1:] if name.startswith(".") else f"{self.arch}.{name}"

    def has(self, name: str) -> bool:
        return self.gguf.get(self.key(name)) is not None

    def string(self, name: str) -> str | None:
        found = self.gguf.get(self.key(name))
        if found is None:
            return None
        if found.type != STRING:
            raise self.wrong(name, "a string", found.type_name)
        return str(found.value)

    def boolean(self, name: str) -> bool | None:
        found = self.gguf.get(self.key(name))
        if found is None:
            return None
        if found.type != BOOL:
            raise self.wrong(name, "true or false", found.type_name)
        return bool(found.value)

    def integer(self, name: str, low: int = 1) -> int | None:
        """An integer of at least ``low`` (an array of equal values counts as that value, as
        llama.cpp's get_key_or_arr reads one)."""
        found = self.gguf.get(self.key(name))
        if found is None:
            return None
        value = found.value
        if found.type == ARRAY and found.element in INTEGERS and len(value):
            distinct = {int(v) for v in value}
            if len(distinct) != 1:
                raise ConfigError(
                    f"{self.where}: {self.key(name)} differs from layer to layer "
                    f"({sorted(distinct)[:4]}), which embedcli does not read"
                )
            value = distinct.pop()
        elif found.type not in INTEGERS:
            raise self.wrong(name, "an integer", found.type_name)
        if int(value) < low:
            raise ConfigError(f"{self.where}: {self.key(name)} must be at least {low}, got {value}")
        return int(value)

    def number(self, name: str) -> float | None:
        """A finite number."""
        found = self.gguf.get(self.key(name))
        if found is None:
            return None
        if found.type not in NUMBERS:
            raise self.wrong(name, "a number", found.type_name)
        value = float(found.value)
        if not math.isfinite(value):
            raise ConfigError(f"{self.where}: {self.key(name)} is {value}, not a finite number")
        return value

    def flags(self, name: str, count: int) -> list[bool] | None:
        """A per-layer array of true and false (or 0 and 1) of ``count`` entries."""
        found = self.gguf.get(self.key(name))
        if found is None or found.type != ARRAY:
            return None
        if found.element not in (BOOL, *INTEGERS) or len(found.value) != count:
            raise ConfigError(
                f"{self.where}: {self.key(name)} must list true or false for each of the "
                f"{count:,} blocks, got {len(found.value):,} of {found.type_name}"
            )
        return [bool(v) for v in found.value]

    def required(self, value: Any, name: str) -> Any:
        if value is None:
            raise ConfigError(f"{self.where} has no {self.key(name)}, which its architecture needs")
        return value

    def wrong(self, name: str, wanted: str, got: str) -> ConfigError:
        return ConfigError(f"{self.where}: {self.key(name)} must be {wanted}, it is {got}")


def tensor_values(gguf: GGUFFile, name: str, count: int) -> tuple[float, ...] | None:
    """The values of a small F32 vector tensor (rope's frequency factors), or None where the
    file has no such tensor; one of another type or size is refused."""
    import numpy as np

    record = next((t for t in gguf.tensors if t.name == name), None)
    if record is None:
        return None
    if record.ggml_type != 0 or record.numel != count:
        raise ConfigError(
            f"{gguf.path}: {name} must be {count:,} float32 values (one per rotated pair), "
            f"it is {record.numel:,} of GGML type {record.ggml_type}"
        )
    values = np.frombuffer(gguf.view(record.start, record.start + record.nbytes), dtype="<f4")
    if not (np.isfinite(values).all() and (values > 0).all()):
        raise ConfigError(f"{gguf.path}: {name} holds a factor that is not a positive number")
    return tuple(float(v) for v in values)
