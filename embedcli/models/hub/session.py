"""What this command allows of the hub, and what the hub told it: process-wide state.

The command line records ``--download`` and ``--download-all`` here once per command
(``request_download``, ``request_download_all``) and says where notices go (``on_notice``); the
hub code asks (``download_requested``, ``whole_fetch_limit``) and tells (``notice``). The commits
the hub named for a revision are remembered for the rest of the command. This is a module global
for now; it is meant to become a parameter passed down from the command.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from embedcli.errors import UsageError
from embedcli.models.hub.http import endpoint
from embedcli.models.hub.spec import HubSpec

WHOLE_FETCH_LIMIT = 1 << 30  # a whole table larger than this is fetched only when allowed
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

_requested = {"download": False, "all": False}  # set by the command line, once per command
RESOLVED_FOR = 60.0  # seconds a commit the hub named is used without asking again
# (endpoint, repo, revision) -> (commit, when): cleared by each command, and stale after a while
_resolved: dict[tuple[str, str, str], tuple[str, float]] = {}
_listeners: list[Callable[[str], None]] = []


def request_download(flag: bool) -> None:
    """Record whether this command was given ``--download`` (the CLI's one writer, called for
    every command that has the option). A new command resolves branches on the hub anew."""
    _requested["download"] = bool(flag)
    _resolved.clear()


def request_download_all(flag: bool) -> None:
    """Record whether this command was given ``--download-all`` (the CLI's one writer, called
    for every command that has the option, in any order with ``request_download``): whole
    tables of any size may be fetched, and the network used as with ``--download``."""
    _requested["all"] = bool(flag)


def download_requested() -> bool:
    """Whether this command was given ``--download`` (or ``--download-all``)."""
    return _requested["download"] or _requested["all"]


def whole_fetch_limit(download_all: bool | None = None) -> int | None:
    """Bytes of one whole table that may be fetched without ``--download-all`` (None: any)."""
    allowed = _requested["all"] if download_all is None else download_all
    return None if allowed else WHOLE_FETCH_LIMIT


def on_notice(listener: Callable[[str], None] | None) -> None:
    """Where notices go (what is about to be fetched, and how much): the CLI's stderr. None
    stops them. The core never prints."""
    _listeners.clear()
    if listener is not None:
        _listeners.append(listener)


def notice(line: str) -> None:
    """Tell the listener, if any, one line."""
    for listener in _listeners:
        listener(line)


def download_allowed(flag: bool) -> bool:
    """Whether the network may be used: ``--download``, or ``HF_HUB_OFFLINE=0`` explicitly."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    if flag and offline in _TRUE:
        raise UsageError("--download asks for the network, but HF_HUB_OFFLINE=1 forbids it")
    return flag or offline in _FALSE


def remember_commit(spec: HubSpec, commit: str) -> None:
    """Record what the hub said ``spec``'s revision is at, for the rest of this command."""
    _resolved[(endpoint(), spec.repo_id, spec.revision)] = (commit, time.monotonic())


def known_commit(spec: HubSpec) -> str | None:
    """The commit the hub said ``spec``'s revision is at earlier in this command (and not
    long ago: a process that opens sources for hours asks again), or None."""
    found = _resolved.get((endpoint(), spec.repo_id, spec.revision))
    if found is None or time.monotonic() - found[1] > RESOLVED_FOR:
        return None
    return found[0]
