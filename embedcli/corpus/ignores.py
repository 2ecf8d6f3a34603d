"""The ignore rules of ``count``'s walk: ``.gitignore`` files read as git reads them (nested
ones, negations, anchoring, through ``pathspec``), ``.git/info/exclude``, and the ``--ignore``
patterns, which have the last word.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from embedcli.errors import UsageError


class Ignores:
    """The .gitignore rules in force in one folder, each ancestor's, deepest last; and the
    --ignore patterns, which have the last word (a .gitignore negation cannot undo them)."""

    def __init__(
        self, rules: tuple[tuple[Path, Any], ...] = (), extra: tuple[Path, Any] | None = None
    ) -> None:
        self.rules = rules
        self.extra = extra
        self.prefixes = [(os.path.join(base, ""), spec) for base, spec in rules]
        if extra is not None:
            self.prefixes.append((os.path.join(extra[0], ""), extra[1]))

    def below(self, folder: Path, extra: Any = None) -> Ignores:
        """The rules for a sub-folder: these, then its own .gitignore (if any)."""
        rules = self.rules
        gitignore = folder / ".gitignore"
        try:
            present = gitignore.is_file()
        except OSError:  # an unreadable folder: the walk reports it
            present = False
        if present:
            spec = spec_of(read_lines(gitignore), str(gitignore))
            if spec is not None:
                rules = (*rules, (folder, spec))
        return Ignores(rules, (folder, extra) if extra is not None else self.extra)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Git's answer: the last rule that matches decides (a negation re-includes)."""
        decision = False
        for prefix, spec in self.prefixes:
            if not path.startswith(prefix):
                continue
            relative = path[len(prefix) :].replace(os.sep, "/")
            result = spec.check_file(relative + ("/" if is_dir else ""))
            if result.include is None:
                continue
            if is_dir and spec.patterns[result.index].pattern.rstrip().endswith("/**"):
                continue  # in git, dir/** matches what is inside dir, not dir itself
            decision = result.include
        return decision


def read_lines(path: Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20).splitlines()
    except OSError:
        return []


def spec_of(lines: Sequence[str], source: str | None = None) -> Any:
    """Patterns in gitignore syntax. In a .gitignore (``source``), a line git would not
    understand is left out, as git leaves it out; given as --ignore/--include, it is an error."""
    from pathspec import GitIgnoreSpec

    lines = list(lines)
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception as exc:  # pathspec's errors for a pattern it cannot parse
        if source is None:
            raise UsageError(f"cannot read the pattern {lines[:3]}: {exc}") from None
    usable = []
    for line in lines:
        try:
            GitIgnoreSpec.from_lines([line])
        except Exception:
            continue
        usable.append(line)
    return GitIgnoreSpec.from_lines(usable)


def repository_rules(root: Path) -> Ignores:
    """The rules git applies inside ``root`` from above it: the .gitignore files of the
    folders from the repository's top (the folder holding .git) down to ``root``'s parent,
    and .git/info/exclude."""
    # os.path.exists, not Path.exists: a folder that may not be searched has no .git to tell
    top = next((p for p in (root, *root.parents) if os.path.exists(p / ".git")), None)
    if top is None:
        return Ignores()
    rules: tuple[tuple[Path, Any], ...] = ()
    exclude = top / ".git" / "info" / "exclude"
    if exclude.is_file():
        spec = spec_of(read_lines(exclude), str(exclude))
        rules = ((top, spec),)
    ignores = Ignores(rules)
    for folder in reversed(root.parents):
        if folder == top or top in folder.parents:
            ignores = ignores.below(folder)
    return ignores
