"""What a walk of ``count`` yields, shared by the walk (selection.py) and fsspec URLs (urls.py):
the files to count, the files skipped and why, and which files were asked for."""

from __future__ import annotations

from dataclasses import dataclass

FIRST_BLOCK = 8192  # bytes read to tell a binary file (a NUL among them), as git does
BLOCK_BYTES = 8 << 20  # large files are cut into blocks of about this size
GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Selection:
    """Which files ``count`` reads."""

    no_ignore: bool = False  # --no-ignore: .gitignore files are not read
    ignore: tuple[str, ...] = ()  # --ignore PATTERN, gitignore syntax
    include: tuple[str, ...] = ()  # --include PATTERN: only files matching one of these
    hidden: bool = False  # --hidden: dotfiles and dot-folders too (never .git)
    max_file_size: int | None = None  # --max-file-size: larger files are skipped
    follow: bool = False  # --follow: symlinks met while walking are followed too


@dataclass(frozen=True)
class Found:
    """A file to count."""

    path: str  # as reports show it
    location: str  # what to open: a path, or an fsspec URL
    size: int
    stamp: tuple[int, int] | None = None  # (inode, mtime in ns) when listed; None for a URL


@dataclass(frozen=True)
class Skipped:
    """A file that was not counted, and why."""

    path: str
    reason: str
