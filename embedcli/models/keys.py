"""Where a checkpoint keeps the input layer's tensors: the one record both the key-name layouts
of bare checkpoints (tables) and the registry's families (familykeys) give."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableKeys:
    """Where the tables are in a checkpoint."""

    layout: str
    token: str
    position: str | None
    head: str | None
    head_transposed: bool = False
    # what a model family runs besides the tables: token_type, norm_weight, norm_bias,
    # project_in -> the checkpoint's key
    extras: tuple[tuple[str, str], ...] = ()
