"""HTTP to a hub: transient failures retried, range answers checked, failures told plainly.

Every request embedcli makes to a hub goes through :func:`with_retries`: a transient answer
(408, 429, 5xx) or a dropped connection is tried again after a delay that doubles, honouring
``Retry-After`` within a bound, a bounded number of times, as huggingface_hub does; then the
error names the repo, the file, the status and the attempts. An answer to a range request must
say in ``Content-Range`` that it holds exactly the bytes asked for (:func:`check_range`), since
size alone cannot tell a shifted range from the right one. Error text never quotes a URL's query
string (on the hub, a signed download link) nor HF_TOKEN.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from embedcli.models.hub.spec import HubError

T = TypeVar("T")

DEFAULT_ENDPOINT = "https://huggingface.co"

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})  # huggingface_hub's own list
# httpx's (and httpx2's) names for a request that never got its answer: the class names are the
# same in both libraries, and huggingface_hub retries exactly these
_DROPPED = frozenset({"TimeoutException", "NetworkError", "RemoteProtocolError"})
_REFUSED = "ConnectError"  # nothing listens: on the first contact, one error at once


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient failure is tried again."""

    attempts: int = 6  # tries in all: the first and huggingface_hub's five retries
    first_delay: float = 1.0  # seconds before the second try, doubled before each next one
    max_delay: float = 8.0
    max_retry_after: float = 60.0  # a server's Retry-After is honoured up to this
    sleep: Callable[[float], None] = time.sleep  # tests give one that only records

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return min(self.max_delay, self.first_delay * 2 ** (attempt - 1))


def endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` (a mirror, or a local server) or huggingface.co; one
    that is not an http(s) address is refused, naming it (huggingface_hub fails to import
    with some: ``http://[::1`` raised a ValueError from its constants)."""
    value = os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    problem = _address_problem(value)
    if problem is not None:
        shown = repr(redacted(value)[:200])
        raise HubError(
            f"HF_ENDPOINT={shown} is not a hub address ({problem}): set it to one such as "
            f"{DEFAULT_ENDPOINT} (a mirror's http:// or https:// address), or unset it"
        )
    return value.rstrip("/")


def _address_problem(value: str) -> str | None:
    """What makes ``value`` unusable as a hub's address, or None."""
    if not value.isprintable() or any(c.isspace() for c in value):
        return "it holds whitespace or control characters"
    try:
        parts = urlsplit(value)
        port = parts.port  # raises on a port out of range or not a number
    except ValueError as exc:
        return one_line(exc)
    if port == 0:
        return "its port is 0"
    if parts.scheme.lower() not in ("http", "https"):
        return "it does not start with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if not _NETLOC.match(parts.netloc):  # urlsplit lets 'http://[::1]x' through, with no port
        return "its host and port are not HOST or HOST:PORT"
    return None


_NETLOC = re.compile(r"^(?:[^@/]*@)?(?:\[[0-9A-Fa-f:.]+(?:%[^\]]+)?\]|[^:@\[\]/]+)(?::[0-9]+)?$")


POLICY = RetryPolicy()  # the one in force; tests replace it (monkeypatch) with a recording sleep


class Transient(Exception):
    """An answer worth asking again for (429, 5xx), raised inside a try."""

    def __init__(self, status: int, phrase: str = "", retry_after: float | None = None) -> None:
        super().__init__(status)
        self.status, self.phrase, self.retry_after = status, phrase, retry_after

    @property
    def reason(self) -> str:
        return status_text(self.status, self.phrase)


class GaveUp(Exception):
    """Every try failed transiently: ``reason`` of the last one, and how many there were."""

    def __init__(self, reason: str, attempts: int) -> None:
        super().__init__(reason)
        self.reason, self.attempts = reason, attempts


def status_text(status: int, phrase: str = "") -> str:
    """'HTTP 503 (Service Unavailable)'."""
    return f"HTTP {status}" + (f" ({phrase})" if phrase else "")


def retry_after(headers: Any) -> float | None:
    """A ``Retry-After`` of seconds (the date form is not used by the hub), else None."""
    value = (headers.get("Retry-After") or "").strip() if headers is not None else ""
    try:
        seconds = float(value) if value else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


def raise_transient(response: Any) -> None:
    """Raise :class:`Transient` for an answer worth asking again for."""
    if response.status_code in RETRY_STATUSES:
        raise Transient(
            response.status_code,
            getattr(response, "reason_phrase", "") or "",
            retry_after(response.headers),
        )


def dropped(exc: BaseException, *, first_contact: bool = False) -> bool:
    """Whether ``exc`` is a connection that broke or timed out (worth trying again); on the
    first contact a refused connection is not: nothing is there, and waiting will not help."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if first_contact and _REFUSED in names:
        return False
    return bool(names & _DROPPED)


def with_retries(
    attempt: Callable[[], T],
    *,
    first_contact: bool = False,
    tell: Callable[[str], None] | None = None,
    what: str = "the hub",
) -> T:
    """``attempt()``, tried again on :class:`Transient` and dropped connections under
    :data:`POLICY`; :class:`GaveUp` when every try failed so. A wait a server asked for
    (``Retry-After``) is said first through ``tell``, naming ``what`` was asked for."""
    policy = POLICY
    tries = max(1, policy.attempts)
    for number in range(1, tries + 1):
        try:
            return attempt()
        except Transient as exc:
            reason, wait = exc.reason, exc.retry_after
        except Exception as exc:
            if not dropped(exc, first_contact=first_contact):
                raise
            reason, wait = f"the connection failed ({one_line(exc)})", None
        if number < tries:
            delay = policy.delay(number, wait)
            if tell is not None and wait is not None and delay > 0:
                tell(waiting_line(what, reason, wait, delay))
            policy.sleep(delay)
    raise GaveUp(reason, tries)


def waiting_line(what: str, reason: str, asked: float, delay: float) -> str:
    """What a wait on a ``Retry-After`` is for, and how long it is (less than asked: capped)."""
    capped = f" (embedcli waits at most {_seconds(delay)})" if delay < asked else ""
    return (
        f"waiting {_seconds(delay)} before asking again for {what}: it answered {reason} "
        f"with Retry-After: {_seconds(asked)}{capped}"
    )


def _seconds(value: float) -> str:
    """'60 s', '1.5 s', '99,999,999 s'."""
    return f"{value:,.0f} s" if value == int(value) else f"{value:,.1f} s"


def one_line(exc: BaseException) -> str:
    """The first line of an exception's text, at most 200 characters, made safe to print."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
    return redacted(text) or type(exc).__name__


_URL_TAIL = re.compile(r"(?i)\b((?:https?|wss?)://[^\s?#'\"<>]*)[?#][^\s'\"<>]*")


def redacted(text: str) -> str:
    """``text`` without URL query strings and fragments (a signed link's signature), an
    address's user and password, HF_TOKEN in any spelling a library may quote it, or any bearer
    credential."""
    text = _URL_TAIL.sub(r"\1", text)
    text = re.sub(r"(://)[^/\s@]+@", r"\1***@", text)  # user:password@ in an address
    token = os.environ.get("HF_TOKEN") or ""
    for form in {token, token.strip(), repr(token)[1:-1], repr(token.encode())[2:-1]}:
        if len(form) >= 4:
            text = text.replace(form, "***")
    return re.sub(r"(?i)(bearer\s+)\S+", r"\1***", text)


_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", re.I)


def content_range(header: str | None) -> tuple[int, int, int | None] | None:
    """(first, last, total or None) of a ``Content-Range: bytes a-b/n``, None if it is not one."""
    found = _CONTENT_RANGE.match(header or "")
    if found is None:
        return None
    first, last = int(found.group(1)), int(found.group(2))
    total = None if found.group(3) == "*" else int(found.group(3))
    if last < first or (total is not None and last >= total):
        return None
    return first, last, total


def check_range(header: str | None, start: int, end: int, exact: bool) -> int | None:
    """The file's size that a 206 answer for bytes ``start`` to ``end`` (exclusive) gives,
    once its ``Content-Range`` is the range asked for (or, not ``exact``, its start up to the
    end of the file); else a :class:`RangeMismatch` saying what came instead."""
    found = content_range(header)
    if found is None:
        raise RangeMismatch(
            f"an unusable Content-Range ({header[:80]!r})" if header else "no Content-Range"
        )
    first, last, total = found
    if first == start and last == end - 1:
        return total
    if first == start and not exact and total is not None and last == total - 1 < end - 1:
        return total  # a first read past a small file's end: the file is shorter
    raise RangeMismatch(f"bytes {first}-{last}")


class RangeMismatch(Exception):
    """A 206 answer that does not hold the bytes asked for."""
