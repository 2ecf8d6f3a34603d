"""The embedding configuration: one frozen dataclass, validated once, passed down whole."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from embedcli.errors import ConfigError

POSITIONAL_FAMILIES = ("learned", "sinusoidal", "rope", "none")
DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class EmbedConfig:
    """Sizes and initialisation of the input layer (GPT-2 small by default)."""

    vocab_size: int = 50257  # rows of the token table; must exceed every token id in use
    d_model: int = 768  # width of every embedding vector
    context_length: int = 1024  # rows of the positional table: the longest sequence accepted
    positional: str = "learned"  # learned (GPT-2's table), sinusoidal (fixed), rope, or none
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
        if self.positional in ("sinusoidal", "rope") and self.d_model % 2:
            raise ConfigError(
                f"{self.positional} positions work on pairs of dimensions (sin and cos), so "
                f"--d-model must be even, got {self.d_model}"
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


@dataclass(frozen=True)
class Preset:
    """A named model configuration for ``inspect-shapes``."""

    name: str
    description: str
    config: EmbedConfig
    batch_size: int = 8
    seq_len: int = 4
    n_layers: int | None = None  # transformer blocks of the full GPT-2-style model, when known
    parameters: int | None = None  # the whole model's parameters, when counted (a checkpoint)

    @property
    def model_parameters(self) -> int | None:
        """Parameters of the whole GPT-2-style model (output head tied to the token table).

        Per block: two LayerNorms (4d), attention qkv (3d² + 3d) and projection (d² + d), MLP
        (4d² + 4d and 4d² + d): 12d² + 13d. Plus the two tables and the final LayerNorm (2d).
        GPT-2 small gives 124,439,808; GPT-3 gives 174.6 billion ("175B").
        """
        if self.parameters is not None:
            return self.parameters
        if self.n_layers is None:
            return None
        d = self.config.d_model
        per_block = 12 * d * d + 13 * d
        return self.config.num_parameters + self.n_layers * per_block + 2 * d


def _gpt(d_model: int, context_length: int = 1024) -> EmbedConfig:
    return EmbedConfig(vocab_size=50257, d_model=d_model, context_length=context_length)


PRESETS = {
    p.name: p
    for p in (
        Preset("gpt2", "GPT-2 small, 124M", _gpt(768), n_layers=12),
        Preset("gpt2-medium", "GPT-2 medium, 355M", _gpt(1024), n_layers=24),
        Preset("gpt2-large", "GPT-2 large, 774M", _gpt(1280), n_layers=36),
        Preset("gpt2-xl", "GPT-2 XL, 1.5B", _gpt(1600), n_layers=48),
        Preset("gpt3", "GPT-3, 175B", _gpt(12288, 2048), n_layers=96),
        Preset(
            "book-ch2",
            "LLM-from-scratch ch. 2: input (8,4,256)",
            EmbedConfig(vocab_size=50257, d_model=256, context_length=4),
        ),
    )
}
DEFAULT_PRESET = "gpt2"
