"""``count --tree``: tokens rolled up per folder as files come in, keeping only the levels the view
can show; the folders every file shares are made one root (/work/corpus/ rather than work/,
main/, corpus/ spending three levels of --depth).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeRow:
    """One row of the tree: a folder or a file, ``level`` levels deep (1: the top)."""

    level: int
    name: str
    folder: bool
    tokens: tuple[int, ...]  # per encoding
    files: int


class FolderSums:
    """Files and tokens per path prefix. The root is the folders shared by every file, which
    only shrinks as files come in, so a prefix deeper than ``depth`` below the shared folders so
    far can never be shown and is not kept."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.sums: dict[tuple[str, ...], list[int]] = {}  # prefix -> [files, tokens...]
        self.leaves: set[tuple[str, ...]] = set()  # prefixes that are a file's whole path
        self.common: tuple[str, ...] | None = None
        self.absolute = False

    def add(self, path: str, tokens: Sequence[int]) -> None:
        """One counted file."""
        parts = tuple(p for p in path.split("/") if p not in ("", "."))
        folder = parts[:-1]
        if self.common is None:
            self.common, self.absolute = folder, path.startswith("/")
        else:
            shared = 0
            limit = min(len(self.common), len(folder))
            while shared < limit and self.common[shared] == folder[shared]:
                shared += 1
            self.common = self.common[:shared]
        deepest = len(self.common) + self.depth
        if len(parts) <= deepest:
            self.leaves.add(parts)
        for level in range(1, min(len(parts), deepest) + 1):
            into = self.sums.get(parts[:level])
            if into is None:
                into = self.sums[parts[:level]] = [0] * (1 + len(tokens))
            into[0] += 1
            for i, n in enumerate(tokens):
                into[i + 1] += n

    def rows(self, total: int, min_share: float = 0.0) -> tuple[list[TreeRow], int]:
        """The rows, depth first, children by tokens of the first encoding (most first, ties by
        name), and how many branches under ``min_share`` of ``total`` were folded away."""
        shown = self._shown()
        children: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        for key in shown:
            children.setdefault(key[:-1], []).append(key)

        def ordered(parent: tuple[str, ...]) -> list[tuple[str, ...]]:
            return sorted(children.get(parent, ()), key=lambda k: (-shown[k][0][1], k[-1]))

        rows, hidden = [], 0
        stack = list(reversed(ordered(())))  # depth first, without recursion: trees can be deep
        while stack:
            key = stack.pop()
            sums, leaf = shown[key]
            if total and sums[1] / total < min_share:
                hidden += 1
                continue
            folder = not leaf or key in children
            rows.append(TreeRow(len(key), key[-1], folder, tuple(sums[1:]), sums[0]))
            stack.extend(reversed(ordered(key)))
        return rows, hidden

    def _shown(self) -> dict[tuple[str, ...], tuple[list[int], bool]]:
        """Each prefix the view shows, under its display key, with its sums and whether it is a
        file's whole path."""
        common = self.common or ()
        shared = len(common)
        rooted = shared >= 2 or (shared == 1 and self.absolute)
        root = ("/" if self.absolute else "") + "/".join(common)
        shown = {}
        for key, sums in self.sums.items():
            if rooted:
                if len(key) < shared:
                    continue
                display = (root, *key[shared:])
            else:
                display = key
            if len(display) <= self.depth:
                shown[display] = (sums, key in self.leaves)
        return shown
