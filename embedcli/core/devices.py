"""Devices and dtypes: resolve what the user asked for, or say exactly why it is not available."""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedcli.core.memory import host_available_memory, host_total_memory
from embedcli.errors import DeviceError

if TYPE_CHECKING:
    import torch


DEVICE_CHOICES = "auto, cpu, cuda, cuda:N, mps, meta"
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|meta|cuda)(?::(\d+))?$")

_DTYPE_ALIASES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
}
DTYPE_NAMES = ("float32", "float16", "bfloat16")


def canonical_dtype(name: str) -> str:
    """Normalise a dtype name or alias (fp16, bf16, half) to float32/float16/bfloat16."""
    key = name.strip().lower().removeprefix("torch.")
    if key not in _DTYPE_ALIASES:
        raise DeviceError(f"unknown dtype {name!r}; choose one of: {', '.join(DTYPE_NAMES)}")
    return _DTYPE_ALIASES[key]


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype for a name or alias."""
    import torch

    return getattr(torch, canonical_dtype(name))


def dtype_size(name: str) -> int:
    """Bytes per element of a dtype, without importing torch."""
    return 4 if canonical_dtype(name) == "float32" else 2


def _torch_build() -> str:
    import torch

    return torch.__version__


def _mps_available() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def _mps_built() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_built())


def _cuda_unavailable_reason() -> str:
    import torch

    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        return f"this torch build ({_torch_build()}) has no CUDA"
    return f"this torch build ({_torch_build()}) has CUDA and sees no GPU on this machine"


def _mps_unavailable_reason() -> str:
    if not _mps_built():
        return f"this torch build ({_torch_build()}) has no MPS support"
    if platform.system() != "Darwin":
        return "MPS needs an Apple-silicon Mac"
    return "MPS is built into this torch, but not available (it needs macOS 12.3+ on Apple silicon)"


def auto_device() -> str:
    """What ``auto`` resolves to: CUDA, then MPS, then CPU."""
    import torch

    if torch.cuda.is_available():
        return "cuda:0"
    if _mps_available():
        return "mps"
    return "cpu"


def resolve_device(spec: str = "auto", *, allow_meta: bool = True) -> torch.device:
    """Turn auto/cpu/cuda/cuda:N/mps/meta into an available ``torch.device``, or explain why not."""
    import torch

    match = _DEVICE_RE.match(spec.strip().lower())
    if match is None:
        raise DeviceError(f"unknown device {spec!r}; choose one of: {DEVICE_CHOICES}")
    kind, index = match.group(1), match.group(2)
    if index is not None and kind != "cuda":
        raise DeviceError(f"unknown device {spec!r}: only cuda takes an index (cuda:N)")
    if kind == "auto":
        return torch.device(auto_device())
    if kind == "meta":
        if not allow_meta:
            raise DeviceError(
                "the meta device holds shapes but no values, so there is nothing to embed; "
                "use a real device (cpu, cuda, mps)"
            )
        return torch.device("meta")
    if kind == "cpu":
        return torch.device("cpu")
    if kind == "mps":
        if not _mps_available():
            raise DeviceError(
                f"MPS was requested, but {_mps_unavailable_reason()}; try --device cpu"
            )
        return torch.device("mps")
    if not torch.cuda.is_available():
        raise DeviceError(f"CUDA was requested, but {_cuda_unavailable_reason()}; try --device cpu")
    count = torch.cuda.device_count()
    number = int(index) if index is not None else 0
    if number >= count:
        have = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
        raise DeviceError(
            f"{spec} was requested, but this machine has {count} CUDA device(s): {have}"
        )
    return torch.device("cuda", number)


def check_dtype_on_device(dtype: str, device: torch.device) -> None:
    """Refuse dtype/device pairs that torch cannot run, before any table is built."""
    # CUDA runs bfloat16 lookups and additions on every GPU it supports (natively from sm_80,
    # through float32 arithmetic before): nothing to refuse there.
    if device.type == "mps" and dtype == "bfloat16":
        release = platform.mac_ver()[0]
        major = int(release.split(".")[0]) if release else 0
        if major < 14:
            raise DeviceError("bfloat16 on MPS needs macOS 14 or newer; try --dtype float16")


@dataclass(frozen=True)
class DeviceInfo:
    """One row of ``embedcli devices``."""

    name: str
    available: bool
    description: str  # the hardware's name, or why the device is unavailable
    memory_total: int | None  # bytes, where known
    memory_free: int | None  # bytes, where known


def list_devices() -> list[DeviceInfo]:
    """cpu, every cuda:N (or why there is none), and mps, with names and memory where known."""
    import torch

    rows = [
        DeviceInfo(
            "cpu",
            True,
            f"{platform.machine() or 'CPU'}, {os.cpu_count()} logical cores, "
            f"{torch.get_num_threads()} torch threads",
            host_total_memory(),
            host_available_memory(),
        )
    ]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            free, total = torch.cuda.mem_get_info(i)
            rows.append(
                DeviceInfo(
                    f"cuda:{i}",
                    True,
                    f"{props.name} (compute capability {props.major}.{props.minor})",
                    int(total),
                    int(free),
                )
            )
    else:
        rows.append(DeviceInfo("cuda", False, _cuda_unavailable_reason(), None, None))
    if _mps_available():
        recommended = getattr(torch.mps, "recommended_max_memory", None)
        rows.append(
            DeviceInfo(
                "mps", True, "Apple GPU (Metal)", recommended() if recommended else None, None
            )
        )
    else:
        rows.append(DeviceInfo("mps", False, _mps_unavailable_reason(), None, None))
    return rows


def machine_devices() -> tuple[list[DeviceInfo], str, str | None, str]:
    """(devices, torch version, CUDA version or None, what --device auto picks)."""
    import torch

    return list_devices(), torch.__version__, torch.version.cuda, auto_device()
