"""A hub model's tables read by rows: a batch looks up the rows its ids use, not the table.

When ``ModelSource.by_rows`` says so (a hub table not on this machine whole), embed takes the
table's shape and dtype from the header, checks the flags and config.json against them before
anything is fetched, and reads the token rows of its ids (and the positional table's first rows)
after tokenising. The module then runs on those rows alone, with the ids renumbered into them;
the report keeps the real ids, vocabulary and shapes. A job that needs the whole table (windows
streamed to a file, ``--lines``) still gets it through ``token``/``position``: fetched only then,
said before it starts and refused above ``--download-all``'s limit, as every whole fetch is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from embedcli.models.hub.rows import read_rows
from embedcli.models.tables import LoadedTables, check_tables

if TYPE_CHECKING:
    import torch

    from embedcli.core.config import EmbedConfig
    from embedcli.models.formats import TensorInfo
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint
    from embedcli.models.hub.rows import TableRows
    from embedcli.models.keys import TableKeys
    from embedcli.models.protocols import Checkpoint


class RowTables(LoadedTables):
    """LoadedTables whose token and positional tables stay in the checkpoint: ``rows`` reads
    what a batch uses; ``token`` and ``position`` read the whole tables, once, when asked."""

    def __init__(
        self, checkpoint: Checkpoint, keys: TableKeys, extras: dict[str, torch.Tensor] | None = None
    ) -> None:
        self.checkpoint = checkpoint
        self.keys = keys
        self.held: list[int] | None = None  # the token rows the last lookup read
        self.token_info: TensorInfo = checkpoint.info(keys.token)
        self.position_info: TensorInfo | None = (
            None if keys.position is None else checkpoint.info(keys.position)
        )
        self._whole = False
        super().__init__(
            str(checkpoint.path), keys.layout, keys.token, keys.position, None, None,
            extras=dict(extras or {}), extra_keys=dict(keys.extras), head_key=keys.head,
        )  # fmt: skip

    # The dataclass's __init__ assigns token and position (None here): these hold them.
    @property
    def token(self) -> torch.Tensor:  # type: ignore[override]
        """The whole token table (fetched now, if it was not)."""
        self._read_whole()
        return self._token

    @token.setter
    def token(self, value: torch.Tensor | None) -> None:
        self._token = value

    @property
    def position(self) -> torch.Tensor | None:  # type: ignore[override]
        """The whole positional table, or None (fetched now, if it was not)."""
        self._read_whole()
        return self._position

    @position.setter
    def position(self, value: torch.Tensor | None) -> None:
        self._position = value

    def _read_whole(self) -> None:
        if self._whole:
            return
        token = self.checkpoint.load(self.token_key)
        position = None if self.position_key is None else self.checkpoint.load(self.position_key)
        check_tables(token, position, self.keys)
        self._token, self._position, self._whole = token, position, True

    def __repr__(self) -> str:  # the dataclass's would fetch the tables to show them
        return f"RowTables({self.path!r}, {self.token_key!r}, {self.position_key!r})"

    @property
    def token_shape(self) -> tuple[int, ...]:
        return tuple(self.token_info.shape)

    @property
    def position_shape(self) -> tuple[int, ...] | None:
        return None if self.position_info is None else tuple(self.position_info.shape)

    @property
    def token_dtype(self) -> str:
        return self.token_info.dtype

    def rows(self, config: EmbedConfig, held: Sequence[int], length: int) -> TableRows:
        """The token rows ``held`` (see :func:`held_ids`), and the positional rows that
        sequences of ``length`` tokens reach under ``config``."""

        positions = 0
        if config.has_positional_table and self.position_info is not None:
            # the rows before position 0 (OPT's 2, RoBERTa's padding_idx + 1), then T positions
            reach = length + config.position_rows - config.context_length
            positions = min(reach, self.position_info.shape[0])
        rows = read_rows(self.checkpoint, self.token_key, held, self.position_key, positions)
        check_tables(rows.token, rows.position, self.keys)
        self.held = list(held)
        return rows

    def quantization(self, dtype: str) -> dict[str, Any] | None:
        """How a GGUF table was read: its GGML type, the dtype its rows enter the model in
        (``dtype``: float32, llama.cpp's, unless --dtype says otherwise), and for a quantized
        one the worst quantization error of those rows (from their block scales)."""
        if not self.checkpoint.is_gguf:
            return None
        checkpoint = cast("GGUFCheckpoint", self.checkpoint)
        held = self.held if checkpoint.quantized(self.token_key) else None
        return {
            "ggml_type": checkpoint.ggml_type(self.token_key),
            "lookup_dtype": dtype,
            "max_error": checkpoint.error_bound(self.token_key, held) if held else None,
            "error_rows": len(held) if held else 0,
        }


def held_ids(config: EmbedConfig, ids: torch.Tensor) -> list[int]:
    """The token rows to read for ``ids``: each id once, and, where a family counts positions
    over the ids that are not padding (RoBERTa), every id up to padding_idx too, so that the
    renumbered ids keep padding_idx where it is and every other id away from it."""
    held = {int(i) for i in ids.flatten().tolist()}
    if config.position_ids == "padding" and config.padding_idx is not None:
        held.update(range(min(config.padding_idx + 1, config.vocab_size)))
    return sorted(held)
