"""What a report says about where its tables came from and where they ran: ``SourceInfo``,
beside the ``EmbedConfig`` it carries (its JSON twin, render.json, writes both as one object)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from embedcli.models.tables import LoadedTables


@dataclass(frozen=True)
class TableType:
    """How a GGUF token table is stored, what its rows were read as, and their worst error."""

    ggml_type: str
    lookup_dtype: str
    max_error: float | None  # from the block scales of the rows read; None: not quantized
    error_rows: int  # the rows the error was worked out over


@dataclass(frozen=True)
class SourceInfo:
    """The tables' source (seeded, or a checkpoint's keys), the encoding, the padding and the
    device the module ran on."""

    device: str  # where the module ran
    requested_device: str  # --device as given ("auto")
    encoding: str
    pad_id: int | None
    weights: str | None = None  # the checkpoint's path; None: tables seeded from config.seed
    layout: str | None = None
    token_key: str | None = None
    position_key: str | None = None
    model: Mapping[str, Any] | None = None  # what a model folder's config.json says, summarised
    table_type: TableType | None = None  # a GGUF table's storage

    @property
    def trained(self) -> bool:
        """Whether the tables are a checkpoint's (the seed played no part)."""
        return self.weights is not None


def source_info(
    tables: LoadedTables | None,
    *,
    device: str,
    requested_device: str,
    encoding: str,
    pad_id: int | None,
    table_type: Mapping[str, Any] | None = None,
) -> SourceInfo:
    """The report's source: seeded (no ``tables``), or the checkpoint's path, layout and keys,
    the model summary and (``table_type``) how a GGUF table is stored."""
    ran = {
        "device": device,
        "requested_device": requested_device,
        "encoding": encoding,
        "pad_id": pad_id,
    }
    if tables is None:
        return SourceInfo(**ran)
    return SourceInfo(
        **ran,
        weights=tables.path,
        layout=tables.layout,
        token_key=tables.token_key,
        position_key=tables.position_key,
        model=tables.model or None,
        table_type=TableType(**table_type) if table_type else None,
    )
