"""``embedcli devices``: what each device is, whether it can be used, and its memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType

from embedcli.render.common import add_row, format_bytes, heading, items_line, new_table

if TYPE_CHECKING:
    from embedcli.core.devices import DeviceInfo


def devices_table(
    rows: Sequence[DeviceInfo],
    torch_version: str,
    cuda_version: str | None,
    auto: str,
    *,
    width: int = 100,
    plain: bool = True,
) -> RenderableType:
    """Each device: available or not (and why), its name, total and free memory; then the
    versions and what ``--device auto`` picks."""
    table = new_table(
        "device",
        "available",
        "description",
        "memory",
        "free",
        right=("memory", "free"),
        wrap=("description",),
    )
    for row in rows:
        add_row(
            table,
            row.name,
            "yes" if row.available else "no",
            row.description,
            "" if row.memory_total is None else format_bytes(row.memory_total),
            "" if row.memory_free is None else format_bytes(row.memory_free),
        )
    versions = items_line(
        [f"torch {torch_version}", f"CUDA {cuda_version or 'none'}", f"--device auto → {auto}"],
        width,
    )
    return Group(heading("Devices"), table, versions)
