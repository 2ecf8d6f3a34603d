"""The embedding configuration: one frozen dataclass, validated once, passed down whole."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from embedcli.errors import ConfigError

POSITIONAL_FAMILIES = ("learned", "none")
DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class EmbedConfig:
    """Sizes and initialisation of the input layer (GPT-2 small by default)."""

    vocab_size: int = 50257  # rows of the token table; must exceed every token id in use
    d_model: int = 768  # width of every embedding vector
    context_length: int = 1024  # rows of the positional table: the longest sequence accepted
    positional: str = "learned"  # "learned": a trained (context_length, d) table, as GPT-2; "none"
    seed: int = 123  # torch.manual_seed before the tables are created, on the CPU
    dtype: str = "float32"  # dtype of the tables after creation: float32, float16, bfloat16

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "context_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{name} must be a positive integer, got {value!r} ({flag})")
        if self.positional not in POSITIONAL_FAMILIES:
            raise ConfigError(
                f"unknown positional family {self.positional!r}; "
                f"choose one of: {', '.join(POSITIONAL_FAMILIES)}"
            )
        if self.dtype not in DTYPES:
            raise ConfigError(f"unknown dtype {self.dtype!r}; choose one of: {', '.join(DTYPES)}")
        if (
            isinstance(self.seed, bool)
            or not isinstance(self.seed, int)
            or not 0 <= self.seed < 2**64  # torch.manual_seed's range
        ):
            raise ConfigError(f"seed must be an integer from 0 to 2**64 - 1, got {self.seed!r}")

    @property
    def has_positional_table(self) -> bool:
        """Whether the module owns a learned positional table."""
        return self.positional == "learned"

    @property
    def num_parameters(self) -> int:
        """Parameters in the token table plus the positional table (if any)."""
        rows = self.vocab_size + (self.context_length if self.has_positional_table else 0)
        return rows * self.d_model

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready copy."""
        return asdict(self)
