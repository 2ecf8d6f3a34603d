"""Hugging Face hub sources, offline first: ``hf:ORG/NAME[@REVISION]``.

A hub source is looked up in the local Hugging Face cache (``HF_HUB_CACHE``, ``HF_HOME``), laid
out as the hub client writes it (``models--ORG--NAME/{refs,snapshots,blobs,.no_exist}``), without
importing ``huggingface_hub``. The network is used only when allowed (``--download``, or
``HF_HUB_OFFLINE=0`` set explicitly), and then only for what a command needs (remote.py): small
files whole, safetensors headers, table rows and, within a limit unless ``--download-all``,
whole tables. With the network allowed a branch or tag is resolved on the hub again, once per
command, as huggingface_hub does; offline, the cached ref is used. ``HF_ENDPOINT`` (mirrors, and
the tests' local server) and ``HF_TOKEN`` are honoured; the token is never printed.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from embedcli.errors import EncodingError, UsageError, WeightsError

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


WHOLE_FETCH_LIMIT = 1 << 30  # a whole table larger than this is fetched only when allowed


class HubError(WeightsError):
    """A hub source that cannot be resolved: not cached offline, not found, unreachable."""


class Unreachable(HubError):
    """The hub could not be reached at all (nothing listens, no network)."""

    def with_cache(self, spec: HubSpec) -> Unreachable:
        """This error, saying that the cache holds ``spec`` at a commit, where it does."""
        commit = cached_commit(spec)
        if commit is None:
            return self
        return Unreachable(
            f"{self}; or drop --download to use what the cache holds (commit {commit[:12]}"
            + ("" if is_commit(spec.revision) else f" of {spec.revision}")
            + ")"
        )


class AbsentOnHub(HubError, EncodingError):
    """Files the hub said the repo does not have: fetching cannot bring them (an EncodingError
    too, so that a command that can do without a tokenizer, such as embed --ids, goes on)."""


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


def is_commit(revision: str | None) -> bool:
    """Whether ``revision`` is a full commit hash (which, unlike a branch, cannot move)."""
    return bool(revision) and _COMMIT.match(revision or "") is not None


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


def offline_snapshot(spec: HubSpec) -> Path | None:
    """The snapshot the cache's ref names (or the commit asked for), without asking the hub."""
    commit = cached_commit(spec)
    return None if commit is None else snapshot_folder(spec, commit)


def snapshot_folder(spec: HubSpec, commit: str) -> Path:
    """Where the cache keeps the files of ``spec`` at ``commit``."""
    return hub_cache() / spec.folder_name / "snapshots" / commit


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


def keep_ref(spec: HubSpec, commit: str) -> None:
    """Point the cache's ``refs/<revision>`` at ``commit``, as huggingface_hub does after a
    download, so that offline runs use what the hub last said (a cache that cannot be written
    only costs a later offline run the newest commit)."""
    if _COMMIT.match(spec.revision) or not _COMMIT.match(commit):
        return
    ref = hub_cache() / spec.folder_name / "refs" / spec.revision
    with contextlib.suppress(OSError):
        if ref.is_file() and ref.read_text("ascii").strip() == commit:
            return
        ref.parent.mkdir(parents=True, exist_ok=True)
        temporary = ref.with_name(f".{ref.name}.{os.getpid()}.tmp")
        temporary.write_text(commit, "ascii")
        os.replace(temporary, ref)


def known_absent(spec: HubSpec, filenames: Sequence[str]) -> str | None:
    """The cached commit of ``spec`` at which the hub said it has none of ``filenames`` (the
    ``.no_exist`` marks huggingface_hub leaves on a 404), or None when that is not known."""
    commit = cached_commit(spec)
    if commit is None or not filenames:
        return None
    marks = hub_cache() / spec.folder_name / ".no_exist" / commit
    try:
        return commit if all((marks / name).is_file() for name in filenames) else None
    except OSError:
        return None


def not_cached(
    spec: HubSpec,
    what: str = "",
    where: str = "",
    files: Sequence[str] = (),
    instead: str = "",
) -> HubError:
    """The offline miss, with the two ways out (``where``: the cache looked in, if not the
    Hugging Face cache). ``files``: the files that would have served; when the hub said the repo
    has none of them, the error says that instead (downloading cannot help), and ``instead``
    says what to do."""
    absent_at = known_absent(spec, files)
    if absent_at is not None:
        return AbsentOnHub(
            f"{spec} has none of {', '.join(files)}: the hub said so at commit "
            f"{absent_at[:12]}, so --download cannot bring {what or 'them'}"
            + (f"; {instead}" if instead else "")
        )
    missing = f"{what} of {spec}" if what else str(spec)
    where = where or f"the Hugging Face cache ({hub_cache()})"
    return HubError(
        f"{missing} is not in {where} and embedcli is offline by "
        f"default; pass --download to fetch only what is needed, or run: hf download "
        f"{spec.repo_id}"
        + ("" if spec.revision == DEFAULT_REVISION else f" --revision {spec.revision}")
    )
