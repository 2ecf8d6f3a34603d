"""One hub repo read over HTTP: its commit, whole small files, and byte ranges.

The first contact resolves the revision asked for: the hub's ``X-Repo-Commit`` answer is the
commit every later read of the command is pinned to (a branch that moves mid-command cannot mix
two commits), and the cache's ref is moved to it. Small files are downloaded whole through
``huggingface_hub``, so that they land in its cache, once the size the hub gives for them (a
HEAD) is within a limit; safetensors headers and table bytes are read by range, each answer
checked against the range asked for. Transient failures are retried (http.py); what finally
fails is one line naming the repo, the file and the status.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from embedcli.core.memory import format_bytes
from embedcli.models.hub.cache import (
    hub_cache,
    keep_ref,
    offline_snapshot,
    snapshot_folder,
    with_cache,
)
from embedcli.models.hub.http import (
    RETRY_STATUSES,
    GaveUp,
    RangeMismatch,
    Transient,
    check_range,
    dropped,
    endpoint,
    one_line,
    raise_transient,
    redacted,
    retry_after,
    status_text,
    with_retries,
)
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.hub.spec import HubError, HubSpec, Unreachable, is_commit

T = TypeVar("T")

CONFIG = "config.json"  # the file the first contact asks about: every model repo has one
# the most of one small file fetched whole: tokenization.common.MAX_TOKENIZER_BYTES, which a
# tokenizer file may be (models does not import tokenization); callers pass a lower one
SMALL_FILE_LIMIT = 1 << 30


class Remote:
    """One hub repo at one revision, read over HTTP: whole small files, and byte ranges."""

    def __init__(self, spec: HubSpec, access: HubAccess = OFFLINE) -> None:
        self.endpoint = endpoint()  # checked before huggingface_hub, which reads it on import
        from huggingface_hub.utils import disable_progress_bars, logging

        # embedcli's stderr carries one Error line or its own progress: no bars, no retry notes
        disable_progress_bars()
        logging.set_verbosity_error()
        self.spec = spec
        self.shown = redacted(self.endpoint)  # as messages name it: never a user or password
        self.access = access  # what this command allows, and where it says what it fetches
        self.commit: str | None = access.known_commit(spec)
        self.fetch_limit = access.fetch_limit  # bytes of one whole table (None: any size)
        self.sizes: dict[str, int] = {}  # file -> its size, as the first range answer said
        self._reached = self.commit is not None

    def _token(self) -> str | bool | None:
        token = os.environ.get("HF_TOKEN") or None
        if token is not None and (token != token.strip() or not token.isprintable()):
            raise HubError(
                "HF_TOKEN holds whitespace or control characters (a line ending, from a file?); "
                "set it to the token alone"
            )
        return token

    def _request(self, filename: str, revision: str | None = None) -> tuple[str, dict[str, str]]:
        """The address of a file of the repo (at ``revision``, else the commit once known, else
        the revision asked for) and the headers every request carries (HF_TOKEN's)."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers

        revision = revision or self.commit or self.spec.revision
        url = hf_hub_url(self.spec.repo_id, filename, revision=revision, endpoint=self.endpoint)
        return url, build_hf_headers(token=self._token())

    def reach(self) -> str | None:
        """The first contact: one HEAD of config.json at the revision asked for. An unreachable
        hub is one error at once (not five retries a file); the commit the hub names is kept
        for the rest of the command (None where the hub names none)."""
        if self._reached:
            return self.commit
        try:
            response = self._head(CONFIG, first_contact=True)
        except GaveUp as exc:
            raise self._gave_up(CONFIG, exc) from None
        except HubError:
            raise
        except Exception as exc:  # httpx's refused connections, and what is not transient
            raise Unreachable(
                f"cannot reach {self.shown} for {self.spec} ({one_line(exc)}); check the "
                "network, or HF_ENDPOINT for a mirror"
            ) from None
        self._check_head(response)
        self._note_commit(response.headers.get("x-repo-commit"))
        self._reached = True
        return self.commit

    def _head(self, filename: str, first_contact: bool = False) -> Any:
        """One HEAD of ``filename`` at the revision asked for, transient answers retried (the
        first contact fails at once on a refused connection); raises GaveUp after the last."""
        from huggingface_hub.utils import get_session

        url, headers = self._request(filename, self.spec.revision)

        def head() -> Any:
            response = get_session().head(url, headers=headers, timeout=10)
            raise_transient(response)
            return response

        return self._retried(head, filename, first_contact=first_contact)

    def _retried(self, attempt: Callable[[], T], filename: str, first_contact: bool = False) -> T:
        """``attempt()`` under http.py's retries, a wait the hub asks for said as the
        "fetching ..." lines are (so that a long one is never silent)."""
        what = f"{filename} of {self.spec} from {self.shown}"
        return with_retries(attempt, first_contact=first_contact, tell=self.access.tell, what=what)

    def _check_head(self, response: Any) -> None:
        """A first answer that says the repo or revision is not there (or not for this token)
        is that error; a missing config.json is not (the repo may still have weights), and
        other answers are left to the reads that follow (a mirror may not answer HEAD)."""
        if response.status_code not in (401, 403, 404):
            return
        from huggingface_hub.errors import RemoteEntryNotFoundError
        from huggingface_hub.utils import hf_raise_for_status

        try:
            hf_raise_for_status(response)
        except RemoteEntryNotFoundError:
            return
        except Exception as exc:
            raise self._failure(exc, CONFIG) from None

    def file(self, filename: str, limit: int | None = None) -> Path | None:
        """A small file, downloaded whole into the hub cache (None when the repo lacks it),
        once the size the hub gives for it (its HEAD) is at most ``limit`` bytes (None:
        :data:`SMALL_FILE_LIMIT`): nothing of a larger one is fetched."""
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import RemoteEntryNotFoundError

        self.reach()
        revision = self.commit or self.spec.revision

        def download(dry_run: bool) -> Any:
            try:
                return hf_hub_download(
                    self.spec.repo_id,
                    filename,
                    revision=revision,
                    cache_dir=hub_cache(),
                    endpoint=self.endpoint,
                    token=self._token(),
                    dry_run=dry_run,  # True: the HEAD alone, what a download would bring
                )
            except RemoteEntryNotFoundError:
                raise
            except Exception as exc:
                _raise_if_transient(exc)
                raise

        try:
            planned = self._retried(lambda: download(True), filename)
            if planned.will_download:
                self._check_size(filename, planned.file_size, limit)
            path = Path(self._retried(lambda: download(False), filename))
        except RemoteEntryNotFoundError:  # the hub says the repo has no such file
            return None
        except GaveUp as exc:
            raise self._gave_up(filename, exc) from None
        except HubError:
            raise
        except Exception as exc:
            raise self._failure(exc, filename) from None
        snapshot = path.parents[len(Path(filename).parts) - 1]
        if is_commit(snapshot.name):
            self._note_commit(snapshot.name)
            keep_ref(self.spec, snapshot.name)
        return path

    def _check_size(self, filename: str, size: int | None, limit: int | None) -> None:
        """A whole file is fetched only when the hub said its size, and it is within ``limit``."""
        limit = SMALL_FILE_LIMIT if limit is None else limit
        if size is None:
            raise HubError(
                f"{self.shown} did not say how large {filename} of {self.spec} is, so it is not "
                f"fetched (embedcli fetches a whole file of up to {format_bytes(limit)} once "
                "the hub says its size)"
            )
        if size > limit:
            raise HubError(
                f"{self.shown} says {filename} of {self.spec} is {format_bytes(size)} "
                f"({size:,} bytes), more than the {format_bytes(limit)} embedcli reads of such "
                "a file; refused before fetching any of it"
            )

    def read_range(self, filename: str, start: int, end: int, *, exact: bool = True) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of a file of the repo, by one range read;
        not ``exact``: fewer where the file ends sooner (a first read of a small file)."""
        if end <= start:
            return b""
        self.reach()
        url, headers = self._request(filename)
        headers["Range"] = f"bytes={start}-{end - 1}"
        try:
            data = self._retried(
                lambda: self._ranged(url, headers, filename, start, end, exact), filename
            )
        except RangeMismatch as exc:
            raise HubError(
                f"{self.shown} answered the request for bytes {start}-{end - 1} of {filename} "
                f"of {self.spec} with {exc}; refused (nothing of it was kept)"
            ) from None
        except GaveUp as exc:
            raise self._gave_up(filename, exc) from None
        except HubError:
            raise
        except Exception as exc:
            raise self._failure(exc, filename) from None
        if len(data) != end - start and (exact or len(data) > end - start):
            raise HubError(
                f"{self.shown} sent {len(data):,} bytes of {filename} where {end - start:,} "
                f"were asked for (bytes {start}-{end - 1}); try again"
            )
        return data

    def _ranged(
        self, url: str, headers: dict[str, str], filename: str, start: int, end: int, exact: bool
    ) -> bytes:
        """The body of a range request, streamed: a 206 must hold the range asked for (its
        Content-Range), and a server that ignores the range (200, the whole file) is read only
        up to ``end`` and then dropped, never held whole."""
        from huggingface_hub.utils import get_session, hf_raise_for_status

        wanted = end - start
        with get_session().stream(
            "GET", url, headers=headers, follow_redirects=True, timeout=60
        ) as response:
            if response.status_code >= 400:
                response.read()
                raise_transient(response)
                hf_raise_for_status(response)
            ranged = response.status_code == 206
            if not ranged and self.fetch_limit is not None and end > self.fetch_limit:
                raise HubError(
                    f"{self.shown} ignores range requests (it answered {filename} whole), so "
                    f"reading bytes {start:,}-{end - 1:,} would download {end:,} bytes; refused"
                )
            if ranged:
                self._note_size(
                    filename, check_range(response.headers.get("Content-Range"), start, end, exact)
                )
            skip = 0 if ranged else start
            limit = wanted + 1 if ranged else wanted  # a 206 longer than asked is a lie: seen
            self._note_commit(response.headers.get("x-repo-commit"))
            parts, held = [], 0
            for chunk in response.iter_bytes():
                if skip:
                    dropped_now = min(skip, len(chunk))
                    chunk, skip = chunk[dropped_now:], skip - dropped_now
                parts.append(chunk[: limit - held])
                held += len(parts[-1])
                if held >= limit:
                    break
        return b"".join(parts)

    def _note_size(self, filename: str, size: int | None) -> None:
        if size is None:
            return
        known = self.sizes.setdefault(filename, size)
        if known != size:  # at one commit a file cannot change: the answer is not to be trusted
            raise RangeMismatch(f"a file of {size:,} bytes (it was {known:,} bytes before)")

    def _note_commit(self, commit: str | None) -> None:
        """Keep the commit an answer names (X-Repo-Commit); one that is not the commit asked for
        (``@<hash>``), or not the one the hub named before in this command, is refused: what
        it sends is not what was asked for."""
        if not is_commit(commit):
            return
        pinned = self.spec.revision if is_commit(self.spec.revision) else None
        expected = self.commit or pinned
        if expected is not None and commit != expected:
            said = "the commit asked for" if expected == pinned else "the commit it named before"
            raise HubError(
                f"{self.shown} answered for {self.spec} with commit {commit}, not {said} "
                f"({expected}); refused"
            )
        if self.commit is None:
            self.commit = commit
            self.access.remember_commit(self.spec, commit)

    def resolve_commit(self, filename: str) -> str:
        """The commit the revision points to, as the hub says: the key of embedcli's tensor
        cache (a branch name would go stale when the branch moves)."""
        self.reach()
        if self.commit is not None:
            return self.commit
        try:
            response = self._head(filename)
        except GaveUp as exc:
            raise self._gave_up(filename, exc) from None
        except Exception as exc:
            raise self._failure(exc, filename) from None
        self._note_commit(response.headers.get("x-repo-commit"))
        if self.commit is None:
            raise HubError(
                f"{self.shown} did not say which commit {self.spec} is at (no X-Repo-Commit), "
                "so what is fetched cannot be cached safely; name a commit: hf:ORG/NAME@<hash>"
            )
        return self.commit

    def _gave_up(self, filename: str, exc: GaveUp) -> HubError:
        return HubError(
            f"cannot fetch {filename} of {self.spec} from {self.shown}: {exc.reason}, on "
            f"each of {exc.attempts} attempts; the hub is failing now, try again later"
        )

    def _failure(self, exc: Exception, filename: str) -> HubError:
        """What failed, in words: the repo, the file and the status, never a URL's query
        string (a signed download link) nor the token."""
        from huggingface_hub.errors import (
            GatedRepoError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        if isinstance(exc, GatedRepoError):
            return HubError(
                f"{self.spec} is gated: accept its licence on the hub and set HF_TOKEN to a token "
                "that may read it"
            )
        if isinstance(exc, RepositoryNotFoundError):
            return HubError(
                f"{self.spec.repo_id} was not found at {self.shown} (or it is private: set "
                "HF_TOKEN)"
            )
        if isinstance(exc, RevisionNotFoundError):
            return HubError(f"{self.spec.repo_id} has no revision {self.spec.revision!r}")
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        if status in (401, 403) and os.environ.get("HF_TOKEN"):
            return HubError(
                f"{self.shown} refused HF_TOKEN for {self.spec} ({status}): the token is "
                "wrong, expired, or may not read this repo"
            )
        if isinstance(status, int):
            reason = "the hub answered " + status_text(
                status, getattr(response, "reason_phrase", "")
            )
        else:
            reason = one_line(exc)
        return HubError(f"cannot fetch {filename} of {self.spec} from {self.shown}: {reason}")


def _raise_if_transient(exc: BaseException) -> None:
    """Raise :class:`Transient` where huggingface_hub gave up on an answer worth asking again
    for (it retries a few statuses itself, not these); a dropped connection is re-raised as it
    is, and with_retries knows it. A miss it wraps (LocalEntryNotFoundError) is looked into."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int):
        if status in RETRY_STATUSES:
            phrase = getattr(response, "reason_phrase", "") or ""
            raise Transient(status, phrase, retry_after(response.headers)) from None
        return
    cause = exc.__cause__  # huggingface_hub raises its miss "from" what went wrong
    if cause is not None:
        if dropped(cause):
            raise cause
        _raise_if_transient(cause)


def cached_snapshot(spec: HubSpec, access: HubAccess = OFFLINE) -> Path | None:
    """The snapshot folder of ``spec`` in the local cache, or None. Where ``access`` allows the
    network, a branch or tag is resolved on the hub first (once per command): a branch that
    moved is not served from its old commit."""
    if access.allowed() and not is_commit(spec.revision):
        commit = resolved_commit(spec, access)
        if commit is not None:
            snapshot = snapshot_folder(spec, commit)
            if snapshot.is_dir():
                keep_ref(spec, commit)
                return snapshot
            return None
    return offline_snapshot(spec)


def resolved_commit(spec: HubSpec, access: HubAccess = OFFLINE) -> str | None:
    """The commit the hub says ``spec``'s revision is at now (asked once per command), or None
    when the hub does not say."""
    if access.known_commit(spec) is None:
        try:
            Remote(spec, access).reach()  # remembers what the hub said
        except Unreachable as exc:
            raise with_cache(exc, spec) from None
    return access.known_commit(spec)
