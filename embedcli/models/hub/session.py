"""What one command allows of the hub, and what the hub told it: a :class:`HubAccess`.

The command line makes one per command from ``--download`` and ``--download-all`` and passes it
down to whatever opens a hub source or tokenizer; that code asks it (``allowed``,
``fetch_limit``) and tells it (``tell``: what is about to be fetched, and how much). The commits
the hub named for a revision are remembered in it for the rest of the command. Library callers
that pass none get :data:`OFFLINE`: the cache only, unless ``HF_HUB_OFFLINE=0``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from embedcli.errors import UsageError
from embedcli.models.hub.http import endpoint
from embedcli.models.hub.spec import HubSpec

WHOLE_FETCH_LIMIT = 1 << 30  # a whole table larger than this is fetched only when allowed
RESOLVED_FOR = 60.0  # seconds a commit the hub named is used without asking again
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class HubAccess:
    """What one command allows of the hub, where it says what it fetches, and what the hub
    named (the commits of the revisions it asked about)."""

    download: bool = False  # --download: the network may be used
    download_all: bool = False  # --download-all: as --download, and whole tables of any size
    notice: Callable[[str], None] | None = None  # where "fetching ..." lines go (None: nowhere)
    # (endpoint, repo, revision) -> (commit, when): this command's answers, stale after a while
    commits: dict[tuple[str, str, str], tuple[str, float]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def allowed(self) -> bool:
        """Whether the network may be used: ``--download`` (or ``--download-all``), or
        ``HF_HUB_OFFLINE=0`` explicitly."""
        return download_allowed(self.download or self.download_all)

    @property
    def fetch_limit(self) -> int | None:
        """Bytes of one whole table that may be fetched (None: any size)."""
        return None if self.download_all else WHOLE_FETCH_LIMIT

    def tell(self, line: str) -> None:
        """Say one line about a fetch to come, where this command wants such lines."""
        if self.notice is not None:
            self.notice(line)

    def remember_commit(self, spec: HubSpec, commit: str) -> None:
        """Record what the hub said ``spec``'s revision is at, for the rest of this command."""
        self.commits[(endpoint(), spec.repo_id, spec.revision)] = (commit, time.monotonic())

    def known_commit(self, spec: HubSpec) -> str | None:
        """The commit the hub said ``spec``'s revision is at earlier in this command (and not
        long ago: a process that opens sources for hours asks again), or None."""
        found = self.commits.get((endpoint(), spec.repo_id, spec.revision))
        if found is None or time.monotonic() - found[1] > RESOLVED_FOR:
            return None
        return found[0]


OFFLINE = HubAccess()  # no flags: the cache only (HF_HUB_OFFLINE=0 still opens the network)


def offline_forced() -> str | None:
    """HF_HUB_OFFLINE as set, where it forbids the network (1, true, yes, on); else None."""
    value = os.environ.get("HF_HUB_OFFLINE", "").strip()
    return value if value.lower() in _TRUE else None


def download_allowed(flag: bool) -> bool:
    """Whether the network may be used: ``--download``, or ``HF_HUB_OFFLINE=0`` explicitly."""
    forced = offline_forced()
    if flag and forced is not None:
        raise UsageError(
            f"--download asks for the network, but HF_HUB_OFFLINE={forced} forbids it; unset "
            "HF_HUB_OFFLINE, or drop --download to use the cache alone"
        )
    return flag or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _FALSE
