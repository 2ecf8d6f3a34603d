"""What ``count`` reports, gathered as files come in (in walk order): the totals always, and only
what the chosen view shows: every file and skip for ``--json``; the top rows and the first skips
for the table; the folder sums for ``--tree`` (tree.py). Memory follows the view, not the tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from embedcli.corpus.selection import Skipped
from embedcli.corpus.tree import FolderSums

SKIPPED_SHOWN = 5  # skips the table names (--json lists them all)
SORTS = ("tokens", "path", "bytes")
# What a skip's reason says it is, for the summary line: (words in the reason, kind).
_KINDS = (("binary", "binary"), ("not UTF-8", "not UTF-8"), ("over --max-file-size",
          "over --max-file-size"), ("the same file as", "duplicate"), ("the same folder as",
          "duplicate"), ("symlink loop", "symlink loop"), ("not followed", "symlink"),
          ("broken link", "broken link"), ("not a regular file", "not a regular file"),
          ("unreadable", "unreadable"), ("bytes than its size", "size not its content"),
          ("whitespace characters: tiktoken", "whitespace run"))  # fmt: skip


@dataclass
class FileCount:
    """One file's tokens under each encoding."""

    path: str
    bytes: int
    tokens: dict[str, int]


@dataclass(frozen=True)
class Keep:
    """What a view needs kept beyond the totals."""

    files: int | None = None  # the first N files in ``sort`` order (None: every file)
    sort: str = "tokens"  # --sort: tokens (most first), path, or bytes (largest first)
    skipped: int | None = None  # the first N skips, in walk order (None: every skip)
    tree_depth: int | None = None  # --tree: folder sums to this many levels


def skip_kind(reason: str) -> str:
    """The kind of a skip, as the summary line counts them (binary, duplicate, symlink...)."""
    return next((kind for words, kind in _KINDS if words in reason), reason.split(":")[0])


@dataclass
class CountReport:
    """What ``count`` shows: the files kept (see :class:`Keep`), the skips kept (walk order),
    and the totals of everything counted and skipped."""

    encodings: list[str]
    files: list[FileCount] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    counted: int = 0  # files counted, kept or not
    skips: int = 0  # files skipped, kept or not
    bytes: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    skip_kinds: dict[str, int] = field(default_factory=dict)  # kind -> skips, first met first
    tree: FolderSums | None = None
    keep: Keep = field(default_factory=Keep)

    def __post_init__(self) -> None:
        self.tokens = {name: self.tokens.get(name, 0) for name in self.encodings}
        if self.keep.tree_depth is not None and self.tree is None:
            self.tree = FolderSums(self.keep.tree_depth)

    def add(self, item: FileCount | Skipped) -> None:
        """One file's count or skip."""
        if isinstance(item, Skipped):
            self.skips += 1
            kind = skip_kind(item.reason)
            self.skip_kinds[kind] = self.skip_kinds.get(kind, 0) + 1
            if self.keep.skipped is None or len(self.skipped) < self.keep.skipped:
                self.skipped.append(item)
            return
        self.counted += 1
        self.bytes += item.bytes
        for name in self.encodings:
            self.tokens[name] += item.tokens[name]
        if self.tree is not None:
            self.tree.add(item.path, [item.tokens[name] for name in self.encodings])
        limit = self.keep.files
        if limit is None or limit > 0:
            self.files.append(item)
        if limit is not None and len(self.files) > 2 * limit + 64:
            self.files = self.sorted_files()  # the rows that can still be shown, no more

    def sorted_files(self, sort: str | None = None) -> list[FileCount]:
        """The files kept, by tokens of the first encoding (most first; ties by path), by bytes,
        or by path; no more than :attr:`Keep.files`."""
        sort = sort or self.keep.sort
        first = self.encodings[0]
        if sort == "path":
            ordered = sorted(self.files, key=lambda f: f.path)
        elif sort == "bytes":
            ordered = sorted(self.files, key=lambda f: (-f.bytes, f.path))
        else:
            ordered = sorted(self.files, key=lambda f: (-f.tokens[first], f.path))
        return ordered if self.keep.files is None else ordered[: self.keep.files]

    @property
    def totals(self) -> dict[str, Any]:
        """Files counted and skipped, bytes, and tokens per encoding."""
        return {
            "files": self.counted,
            "skipped": self.skips,
            "bytes": self.bytes,
            "tokens": dict(self.tokens),
        }


def collect(
    items: Iterable[FileCount | Skipped], encodings: Sequence[str], keep: Keep | None = None
) -> CountReport:
    """A report of everything counted and skipped, keeping what ``keep`` asks for (all of it
    by default)."""
    report = CountReport(list(encodings), keep=keep or Keep())
    for item in items:
        report.add(item)
    return report
