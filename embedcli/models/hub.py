"""Hugging Face hub sources, offline first: ``hf:ORG/NAME[@REVISION]``.

A hub source is looked up in the local Hugging Face cache (``HF_HUB_CACHE``, ``HF_HOME``), laid
out as the hub client writes it (``models--ORG--NAME/{refs,snapshots,blobs}``), without importing
``huggingface_hub``. The network is used only when allowed (``--download``, or ``HF_HUB_OFFLINE=0``
set explicitly), and then only for what a command needs: small files whole (through
``huggingface_hub``, so that they land in its cache), and safetensors headers and tables by HTTP
range reads. ``HF_ENDPOINT`` (mirrors, and the tests' local server) and ``HF_TOKEN`` are honoured;
the token is never printed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from embedcli.errors import UsageError, WeightsError

PREFIX = "hf:"
DEFAULT_REVISION = "main"
DEFAULT_ENDPOINT = "https://huggingface.co"
# huggingface_hub's own rule: word characters, '-' and '.', 96 at most, ends not '-' or '.'
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SHORT_COMMIT = re.compile(r"^[0-9a-f]{7,39}$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")  # a branch, tag, refs/pr/N or commit
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class HubError(WeightsError):
    """A hub source that cannot be resolved: not cached offline, not found, unreachable."""


@dataclass(frozen=True)
class HubSpec:
    """A model on the hub: ``hf:ORG/NAME[@REVISION]``."""

    repo_id: str
    revision: str = DEFAULT_REVISION

    @classmethod
    def parse(cls, text: str) -> HubSpec | None:
        """The spec in ``text``, None when it does not start with ``hf:``, an error when bad."""
        if not text.startswith(PREFIX):
            return None
        body = text[len(PREFIX) :]
        repo_id, _, revision = body.partition("@")
        parts = repo_id.split("/")
        if not 1 <= len(parts) <= 2 or not all(
            _NAME.match(p) and ".." not in p and "--" not in p for p in parts
        ):
            raise UsageError(
                f"{text!r} is not a hub model: write hf:ORG/NAME or hf:ORG/NAME@REVISION "
                "(e.g. hf:openai-community/gpt2)"
            )
        if "@" in body and not revision.strip():
            raise UsageError(f"{text!r} names no revision after '@'")
        if revision and (not _REVISION.match(revision) or ".." in revision or "//" in revision):
            raise UsageError(
                f"{text!r} has a bad revision {revision!r}: a branch, a tag or a commit hash"
            )
        return cls(repo_id, revision or DEFAULT_REVISION)

    def __str__(self) -> str:
        suffix = "" if self.revision == DEFAULT_REVISION else f"@{self.revision}"
        return f"{PREFIX}{self.repo_id}{suffix}"

    @property
    def folder_name(self) -> str:
        """The repo's folder in the hub cache."""
        return "models--" + self.repo_id.replace("/", "--")


def hub_cache() -> Path:
    """The Hugging Face hub cache folder, found as ``huggingface_hub`` finds it."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.path.expanduser(os.path.expandvars(os.environ[variable])))
    home = os.environ.get("HF_HOME")
    if not home:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
        home = os.path.join(xdg, "huggingface")
    return Path(os.path.expanduser(os.path.expandvars(home))) / "hub"


def endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` (a mirror, or a local server) or huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


_requested = {"download": False}  # set by the command line's --download, once per command


def request_download(flag: bool) -> None:
    """Record whether this command was given ``--download`` (the CLI's one writer)."""
    _requested["download"] = bool(flag)


def download_requested() -> bool:
    """Whether this command was given ``--download``."""
    return _requested["download"]


def download_allowed(flag: bool) -> bool:
    """Whether the network may be used: ``--download``, or ``HF_HUB_OFFLINE=0`` explicitly."""
    offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    if flag and offline in _TRUE:
        raise UsageError("--download asks for the network, but HF_HUB_OFFLINE=1 forbids it")
    return flag or offline in _FALSE


def cached_commit(spec: HubSpec, cache: Path | None = None) -> str | None:
    """The commit a revision points to in the local cache, or None when not cached."""
    repo = (cache or hub_cache()) / spec.folder_name
    if _COMMIT.match(spec.revision):
        return spec.revision if (repo / "snapshots" / spec.revision).is_dir() else None
    ref = repo / "refs" / spec.revision
    try:  # a regular file of one commit hash: never a device, a pipe, or a huge file
        if ref.is_file():
            with ref.open("rb") as handle:
                commit = handle.read(128).decode("ascii").strip()
        else:
            commit = ""
    except (OSError, UnicodeDecodeError):
        commit = ""
    if _COMMIT.match(commit) and (repo / "snapshots" / commit).is_dir():
        return commit
    if _SHORT_COMMIT.match(spec.revision):  # a short hash, as git shows it: when unambiguous
        try:
            found = [
                p.name for p in (repo / "snapshots").iterdir() if p.name.startswith(spec.revision)
            ]
        except OSError:
            found = []
        if len(found) == 1 and _COMMIT.match(found[0]):
            return found[0]
    return None


def cached_snapshot(spec: HubSpec) -> Path | None:
    """The snapshot folder of ``spec`` in the local cache, or None."""
    commit = cached_commit(spec)
    return None if commit is None else hub_cache() / spec.folder_name / "snapshots" / commit


def not_cached(spec: HubSpec, what: str = "", where: str = "") -> HubError:
    """The offline miss, with the two ways out (``where``: the cache looked in, if not the
    Hugging Face cache)."""
    missing = f"{what} of {spec}" if what else str(spec)
    where = where or f"the Hugging Face cache ({hub_cache()})"
    return HubError(
        f"{missing} is not in {where} and embedcli is offline by "
        f"default; pass --download to fetch only what is needed, or run: hf download "
        f"{spec.repo_id}"
        + ("" if spec.revision == DEFAULT_REVISION else f" --revision {spec.revision}")
    )


class Remote:
    """One hub repo at one revision, read over HTTP: whole small files, and byte ranges."""

    def __init__(self, spec: HubSpec) -> None:
        from huggingface_hub.utils import disable_progress_bars, logging

        # embedcli's stderr carries one Error line or its own progress: no bars, no retry notes
        disable_progress_bars()
        logging.set_verbosity_error()
        self.spec = spec
        self.endpoint = endpoint()
        self.commit: str | None = None
        self._reached = False

    def _token(self) -> str | bool | None:
        token = os.environ.get("HF_TOKEN") or None
        if token is not None and (token != token.strip() or not token.isprintable()):
            raise HubError(
                "HF_TOKEN holds whitespace or control characters (a line ending, from a file?); "
                "set it to the token alone"
            )
        return token

    def _reach(self) -> None:
        """One quick request first: an unreachable hub is one error at once, not the hub
        client's five retries a file (half a minute each)."""
        if self._reached:
            return
        from huggingface_hub.utils import get_session

        try:
            url, headers = self._request("config.json", self.spec.revision)
            get_session().head(url, headers=headers, timeout=10)
        except HubError:
            raise
        except Exception as exc:  # httpx's connection errors and timeouts
            reason = _redacted((str(exc).strip().splitlines() or [type(exc).__name__])[0][:200])
            raise HubError(
                f"cannot reach {self.endpoint} for {self.spec} ({reason}); check the network, "
                "or HF_ENDPOINT for a mirror"
            ) from None
        self._reached = True

    def _request(self, filename: str, revision: str | None = None) -> tuple[str, dict[str, str]]:
        """The address of a file of the repo (at ``revision``, else the commit once known, else
        the revision asked for) and the headers every request carries (HF_TOKEN's)."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers

        revision = revision or self.commit or self.spec.revision
        url = hf_hub_url(self.spec.repo_id, filename, revision=revision, endpoint=self.endpoint)
        return url, build_hf_headers(token=self._token())

    def file(self, filename: str) -> Path | None:
        """A small file, downloaded whole into the hub cache (None when the repo lacks it)."""
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import RemoteEntryNotFoundError

        self._reach()
        try:
            path = Path(
                hf_hub_download(
                    self.spec.repo_id,
                    filename,
                    revision=self.spec.revision,
                    cache_dir=hub_cache(),
                    endpoint=self.endpoint,
                    token=self._token(),
                )
            )
        except RemoteEntryNotFoundError:  # the hub says the repo has no such file
            return None
        except Exception as exc:
            raise self._failure(exc, filename) from None
        snapshot = path.parents[len(Path(filename).parts) - 1]
        if _COMMIT.match(snapshot.name):
            self.commit = snapshot.name
        return path

    def read_range(self, filename: str, start: int, end: int, *, exact: bool = True) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of a file of the repo, by one range read;
        not ``exact``: fewer where the file ends sooner (a first read of a small file)."""
        if end <= start:
            return b""
        self._reach()
        url, headers = self._request(filename)
        headers["Range"] = f"bytes={start}-{end - 1}"
        try:
            data = self._ranged(url, headers, start, end)
        except HubError:
            raise
        except Exception as exc:
            raise self._failure(exc, filename) from None
        if len(data) != end - start and (exact or len(data) > end - start):
            raise HubError(
                f"{self.endpoint} sent {len(data):,} bytes of {filename} where {end - start:,} "
                f"were asked for (bytes {start}-{end - 1}); try again"
            )
        return data

    def _ranged(self, url: str, headers: dict[str, str], start: int, end: int) -> bytes:
        """The body of a range request, streamed: a server that ignores the range (200, the
        whole file) is read only up to ``end`` and then dropped, never held whole."""
        from huggingface_hub.utils import get_session, hf_raise_for_status

        wanted = end - start
        with get_session().stream(
            "GET", url, headers=headers, follow_redirects=True, timeout=60
        ) as response:
            if response.status_code >= 400:
                response.read()
                hf_raise_for_status(response)
            ranged = response.status_code == 206
            skip = 0 if ranged else start
            limit = wanted + 1 if ranged else wanted  # a 206 longer than asked is a lie: seen
            self._note_commit(response.headers.get("x-repo-commit"))
            parts, held = [], 0
            for chunk in response.iter_bytes():
                if skip:
                    dropped = min(skip, len(chunk))
                    chunk, skip = chunk[dropped:], skip - dropped
                parts.append(chunk[: limit - held])
                held += len(parts[-1])
                if held >= limit:
                    break
        return b"".join(parts)

    def _note_commit(self, commit: str | None) -> None:
        if self.commit is None and commit and _COMMIT.match(commit):
            self.commit = commit

    def resolve_commit(self, filename: str) -> str:
        """The commit the revision points to, as the hub says in its answer for a file: the
        key of embedcli's tensor cache (a branch name would go stale when the branch moves)."""
        if self.commit is not None:
            return self.commit
        from huggingface_hub.utils import get_session

        self._reach()
        url, headers = self._request(filename, self.spec.revision)
        try:
            response = get_session().head(url, headers=headers, timeout=10)
        except Exception as exc:
            raise self._failure(exc, filename) from None
        self._note_commit(response.headers.get("x-repo-commit"))
        if self.commit is None:
            raise HubError(
                f"{self.endpoint} did not say which commit {self.spec} is at (no X-Repo-Commit), "
                "so what is fetched cannot be cached safely; name a commit: hf:ORG/NAME@<hash>"
            )
        return self.commit

    def _failure(self, exc: Exception, filename: str) -> HubError:
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
                f"{self.spec.repo_id} was not found at {self.endpoint} (or it is private: set "
                "HF_TOKEN)"
            )
        if isinstance(exc, RevisionNotFoundError):
            return HubError(f"{self.spec.repo_id} has no revision {self.spec.revision!r}")
        token = os.environ.get("HF_TOKEN")
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (401, 403) and token:
            return HubError(
                f"{self.endpoint} refused HF_TOKEN for {self.spec} ({status}): the token is "
                "wrong, expired, or may not read this repo"
            )
        reason = _redacted((str(exc).strip().splitlines() or [type(exc).__name__])[0][:200])
        return HubError(f"cannot fetch {filename} of {self.spec} from {self.endpoint}: {reason}")


def _redacted(text: str) -> str:
    """``text`` with HF_TOKEN (in any spelling a library may quote it) and any bearer
    credential removed: a token is never printed."""
    token = os.environ.get("HF_TOKEN") or ""
    for form in {token, token.strip(), repr(token)[1:-1], repr(token.encode())[2:-1]}:
        if len(form) >= 4:
            text = text.replace(form, "***")
    return re.sub(r"(?i)(bearer\s+)\S+", r"\1***", text)
