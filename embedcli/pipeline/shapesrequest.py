"""What ``embedcli inspect-shapes`` is asked to do, as one frozen object that checks itself
when made: ``--list-presets`` beside another option, or ``--optimizer`` without ``--train``, is
refused before any preset is read or table built."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from embedcli.core.config import Overrides
from embedcli.errors import UsageError
from embedcli.models.hub.session import OFFLINE, HubAccess


def refuse_beside_listing(given: Iterable[tuple[str, object]]) -> None:
    """--list-presets lists the presets and nothing else: another option beside it (``given``:
    flag and value, None or False where not given) is refused, by name."""
    extra = [flag for flag, value in given if value not in (None, False)]
    if extra:
        raise UsageError(
            f"--list-presets lists the presets and uses no other option: drop {', '.join(extra)}"
        )


@dataclass(frozen=True)
class ShapesRequest:
    """The flags of ``embedcli inspect-shapes``, read; made only when they make sense
    together."""

    preset: str | None = None
    listing: bool = False  # --list-presets: the presets, and nothing else
    batch_size: int | None = None
    seq_len: int | None = None
    overrides: Overrides = field(default_factory=Overrides)  # the table flags
    device: str = "meta"  # meta: shapes only, nothing allocated
    weights: str | None = None
    access: HubAccess = OFFLINE  # --download, --download-all
    token_key: str | None = None
    position_key: str | None = None
    train: bool = False
    optimizer: str | None = None  # what --train counts (None: adamw)

    def __post_init__(self) -> None:
        if self.listing:
            refuse_beside_listing(self._given())
        elif self.optimizer is not None and not self.train:
            raise UsageError("--optimizer chooses what --train counts: pass --train too")

    def _given(self) -> tuple[tuple[str, object], ...]:
        """Every other option, as its flag and value (None or False where not given)."""
        o = self.overrides
        return (
            ("--preset", self.preset), ("-b", self.batch_size), ("-t", self.seq_len),
            ("-d", o.d_model), ("--vocab-size", o.vocab_size),
            ("--context-length", o.context_length), ("--positional", o.positional),
            ("--dtype", o.dtype), ("--weights", self.weights), ("--token-key", self.token_key),
            ("--position-key", self.position_key), ("--train", self.train),
            ("--optimizer", self.optimizer),
            ("--device", None if self.device == "meta" else self.device),
        )  # fmt: skip

    @property
    def counted_training(self) -> str | None:
        """The optimizer whose training step is counted, or None without --train."""
        return (self.optimizer or "adamw") if self.train else None
