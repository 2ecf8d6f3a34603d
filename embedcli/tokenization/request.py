"""What ``embedcli tokenize`` is asked to do, as one frozen object that checks itself when made:
modes that cannot be combined are refused before any text is read or encoding loaded."""

from __future__ import annotations

from dataclasses import dataclass

from embedcli.errors import UsageError
from embedcli.tokenization.engines import mode


@dataclass(frozen=True)
class TokenizeRequest:
    """The mode flags of ``embedcli tokenize``, read; made only when they make sense
    together. ``check_encodings`` adds what depends on how many encodings were named."""

    count: bool = False
    encode: bool = False
    decode: bool = False
    truncate: int | None = None  # --truncate N: the text of the first N tokens
    explain: bool = False
    offsets: bool = False
    ids: bool = False  # --ids given
    as_json: bool = False

    def __post_init__(self) -> None:
        modes = self.modes
        if len(modes) > 1:
            raise UsageError(f"{' and '.join(modes)} cannot be combined; pick one")
        if self.offsets and modes:
            raise UsageError(
                f"--offsets belongs to the token table (and its --json), not {modes[0]}"
            )
        if self.explain and self.ids:
            raise UsageError(
                "--explain shows how a text becomes ids; --ids are ids already: pass TEXT"
            )
        if self.count:
            mode()  # a bad EMBEDCLI_COUNT_ENGINE is a usage error before any text is read

    @property
    def modes(self) -> list[str]:
        """The output modes given, as their flags (the token table when none)."""
        flags = (
            ("--count", self.count), ("--encode", self.encode), ("--decode", self.decode),
            ("--truncate", self.truncate is not None), ("--explain", self.explain),
        )  # fmt: skip
        return [flag for flag, on in flags if on]

    def check_encodings(self, n: int) -> None:
        """Refuse a mode that shows one encoding when ``n`` were named."""
        modes = self.modes
        if n > 1 and modes and modes[0] != "--count":
            raise UsageError(f"{modes[0]} works with one encoding, but {n} were given")
        if n > 1 and self.offsets and not self.as_json:
            raise UsageError(
                "the side-by-side table of several encodings has no offsets column: pass one "
                "encoding, or --json (offsets for each)"
            )
