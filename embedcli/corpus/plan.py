"""What ``count`` decides from the text it will count, before the first file is read: whether a
pool of processes repays its start, and whether fastokens repays its build.

Both follow the text of the job's first window, not its bytes: a folder of binaries (compiled
modules, caches, images) holds bytes that are skipped, never counted, and must not buy a pool
or a build. Files under 16 MiB are told binary only when read, so the plan reads the first
block of the largest ones (as a worker will) until the answer is sure: what is known to be
text reaches the bound, or what is left unread could not make it reach it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from embedcli.corpus.listing import FIRST_BLOCK, Found
from embedcli.corpus.pieces import _open, fast_choice

# A pool of processes pays for its start (a fork, the results sent back) once the job holds
# this much text: tiktoken counts about 10 MB a second on one core.
POOL_TEXT = 4 << 20


class FirstWindow:
    """The files of a job's first window, and how much of it is text, read as needed."""

    def __init__(self) -> None:
        self.complete = False  # the job is this one window (the walk ended within it)
        self._unread: list[Found] | None = None  # largest last: the next to look at is popped
        self._text = 0  # bytes of files known to be text
        self._left = 0  # bytes of files not looked at yet

    def plan(self, files: Sequence[Found], complete: bool) -> None:
        if self._unread is None:
            self.complete = complete
            self._unread = sorted(files, key=lambda found: found.size)
            self._left = sum(found.size for found in files)

    def text_at_least(self, bound: int) -> bool:
        """Whether the window holds at least ``bound`` bytes of text (files with no NUL in
        their first block; unreadable ones count as text, their worker says why)."""
        if self._unread is None:
            return False
        while self._text < bound <= self._text + self._left and self._unread:
            found = self._unread.pop()
            self._left -= found.size
            if not _binary(found.location):
                self._text += found.size
        return self._text >= bound

    def pooled(self) -> bool:
        """Whether the job is worth a pool of processes: more than its first window, or a
        window holding POOL_TEXT of text."""
        return not self.complete or self.text_at_least(POOL_TEXT)

    def fast(self, encodings: Sequence[Any], processes: int) -> tuple[bool, ...]:
        """For each encoding, whether fastokens repays its build on this window's text spread
        over ``processes`` (pieces.fast_choice)."""
        chosen = fast_choice(encodings, 1 << 62, processes)  # the most it could be
        if not any(chosen):
            return chosen  # never: no need to look at a file
        from embedcli.tokenization.engines import min_chars

        return tuple(
            yes and self.text_at_least(min_chars(enc.name) * max(processes, 1))
            for yes, enc in zip(chosen, encodings, strict=True)
        )


def _binary(location: str) -> bool:
    """Whether a file's first block holds a NUL, read as its worker reads it (pieces._open:
    never blocking, regular files only); a URL's head is not worth a request here, and an
    unreadable file is not binary: its worker tells."""
    if "://" in location:
        return False
    try:
        with _open(location) as handle:
            return b"\0" in handle.read(FIRST_BLOCK)
    except OSError:
        return False
