"""Memory: what this machine or a device can still allocate, and refusing, before allocating, what
would not fit (a MemoryLimitError that names the part and what to do).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from embedcli.errors import MemoryLimitError

# Values converted to float64 at a time (16 MiB), however wide a row: statistics, neighbours,
# the projection and the head-tying check all work through a table in chunks of this size.
CHUNK_ELEMENTS = 1 << 21

if TYPE_CHECKING:
    import torch


def available_memory(device: torch.device) -> int | None:
    """Bytes that can still be allocated on ``device``, or None where unknown."""
    import torch

    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    if device.type == "mps":
        recommended = getattr(torch.mps, "recommended_max_memory", None)
        return int(recommended()) if recommended else None
    if device.type == "meta":
        return None
    return host_available_memory()


def host_available_memory() -> int | None:
    """Bytes of RAM available to new allocations (MemAvailable on Linux), or None if unknown;
    less where this process's address space is limited (``ulimit -v``, ``prlimit --as``) to
    what is left under the limit."""
    found = _meminfo_available()
    room = _address_space_left()
    if room is not None:
        found = room if found is None else min(found, room)
    return found


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return host_total_memory()  # no /proc/meminfo: all of it, the best that can be said


def _address_space_left() -> int | None:
    """RLIMIT_AS less the address space this process holds (VmSize), or None: no limit, or
    no way to tell."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return max(0, limit - int(line.split()[1]) * 1024)
    except (ImportError, OSError, ValueError):
        pass
    return None


def host_total_memory() -> int | None:
    """Bytes of physical RAM, or None if unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(n: int | float) -> str:
    """1536 -> '1.5 KiB'."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def ensure_fits(what: str, needed: int, available: int | None, where: str, hint: str) -> None:
    """Raise MemoryLimitError when ``needed`` bytes exceed what ``where`` has available."""
    if available is not None and needed > available:
        raise MemoryLimitError(
            f"{what} need {format_bytes(needed)}, but only {format_bytes(available)} is available "
            f"on {where}; {hint}"
        )


def ensure_host_fits(
    what: str, needed: int, hint: str = "free some memory, or use a machine with more"
) -> None:
    """Raise MemoryLimitError when ``needed`` bytes exceed what this machine has available."""
    ensure_fits(what, needed, host_available_memory(), "this machine", hint)


ROOM = 0.75  # of the memory available, the most a job may plan to use: the rest is headroom


def ensure_room(what: str, need: int, hint: str) -> None:
    """Refuse, before allocating, a job whose ``need`` bytes exceed ROOM of what this machine
    has available (a job that fits only by taking nearly all of it is refused too)."""
    available = host_available_memory()
    if available is not None and need > available * ROOM:
        raise MemoryLimitError(
            f"{what} need {format_bytes(need)}, more than {ROOM:.0%} of the "
            f"{format_bytes(available)} available on this machine; {hint}"
        )


def refuse_largest(
    parts: dict[str, tuple[int, str]], needed: int, available: int | None, where: str
) -> None:
    """Raise MemoryLimitError naming the part that needs the most, when the sum does not fit."""
    if available is None or needed <= available:
        return
    name, (part, hint) = max(parts.items(), key=lambda item: item[1][0])
    whole = format_bytes(needed)
    whole = f" ({whole} in all)" if whole != format_bytes(part) else ""  # one part: no sum to show
    raise MemoryLimitError(
        f"{name} need {format_bytes(part)}{whole}, but only {format_bytes(available)} is "
        f"available on {where}; {hint}"
    )
