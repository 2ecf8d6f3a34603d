"""What ``embedcli project`` is asked to do, as one frozen object: which points (a text's ids,
the table's first N, a file's ids), on which table, on which device, and which files it reads
(no output may replace them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from embedcli.core.config import Overrides
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.tokenization.specialtext import Specials


@dataclass(frozen=True)
class ProjectRequest:
    """The flags of ``embedcli project`` that choose the points and the table, read."""

    texts: tuple[str, ...] = ()  # TEXT, joined with spaces ('-' or none: stdin)
    file: Path | None = None  # -f
    ids: tuple[tuple[int, ...], ...] = ()  # --ids, one sequence each
    encoding: str | None = None
    model: str | None = None
    allow_special: bool | Specials = False  # --allow-special / --special-as-text (specialtext.py)
    top: int | None = None  # --first-ids N: the table's first N ids too
    ids_file: Path | None = None  # --ids-file: the ids in this file too ('-': stdin)
    weights: str | None = None
    access: HubAccess = OFFLINE  # --download, --download-all
    token_key: str | None = None
    given: Overrides = field(default_factory=Overrides)  # -d and --seed (seeded tables)
    device: str = "auto"

    @property
    def text_asked(self) -> bool:
        """Whether a text is to be placed (TEXT, -f or --ids): with --first-ids or --ids-file alone,
        none is read."""
        return bool(self.ids or self.texts) or self.file is not None

    def inputs(self) -> list[Path | int]:
        """Every file the command reads, which no output may replace: the text (stdin, 0, where
        it may be read), the ids, the checkpoint (each file of a model folder)."""
        reads_stdin = self.file is None and self.texts in ((), ("-",)) and not self.ids
        found: list[Path | int] = (
            [self.file] if self.file is not None else [0] if reads_stdin else []
        )
        if self.ids_file is not None:
            found.append(0 if str(self.ids_file) == "-" else self.ids_file)
        if self.weights is not None:
            path = Path(self.weights)
            try:
                found.extend(path.iterdir() if path.is_dir() else [path])
            except OSError:  # an unreadable folder: the loader says what is wrong with it
                found.append(path)
        return found
