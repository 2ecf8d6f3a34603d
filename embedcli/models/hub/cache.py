"""The local Hugging Face cache, read as the hub client lays it out, without asking the hub.

``HF_HUB_CACHE`` (or ``HF_HOME``) holds ``models--ORG--NAME/{refs,snapshots,blobs,.no_exist}``:
a ref names the commit a branch or tag was last seen at, a snapshot holds the files of one
commit, and ``.no_exist`` marks the files the hub said a commit does not have. embedcli reads the
refs and snapshots itself (bounded reads, short hashes, no import of huggingface_hub on the
offline path that finds a model); the ``.no_exist`` marks, looked at only when a model is not
cached, through huggingface_hub's ``try_to_load_from_cache``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from embedcli.models.hub.http import endpoint
from embedcli.models.hub.session import offline_forced
from embedcli.models.hub.spec import (
    DEFAULT_REVISION,
    AbsentOnHub,
    HubError,
    HubSpec,
    Unreachable,
    is_commit,
)

_SHORT_COMMIT = re.compile(r"^[0-9a-f]{7,39}$")


def hub_cache() -> Path:
    """The Hugging Face hub cache folder, found as ``huggingface_hub`` finds it (read from the
    environment at each call: huggingface_hub's own constant is fixed when it is imported)."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.path.expanduser(os.path.expandvars(os.environ[variable])))
    home = os.environ.get("HF_HOME")
    if not home:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
        home = os.path.join(xdg, "huggingface")
    return Path(os.path.expanduser(os.path.expandvars(home))) / "hub"


def cached_commit(spec: HubSpec, cache: Path | None = None) -> str | None:
    """The commit a revision points to in the local cache, or None when not cached."""
    repo = (cache or hub_cache()) / spec.folder_name
    if is_commit(spec.revision):
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
    if is_commit(commit) and (repo / "snapshots" / commit).is_dir():
        return commit
    if _SHORT_COMMIT.match(spec.revision):  # a short hash, as git shows it: when unambiguous
        try:
            found = [
                p.name for p in (repo / "snapshots").iterdir() if p.name.startswith(spec.revision)
            ]
        except OSError:
            found = []
        if len(found) == 1 and is_commit(found[0]):
            return found[0]
    return None


def offline_snapshot(spec: HubSpec) -> Path | None:
    """The snapshot the cache's ref names (or the commit asked for), without asking the hub."""
    commit = cached_commit(spec)
    return None if commit is None else snapshot_folder(spec, commit)


def snapshot_folder(spec: HubSpec, commit: str) -> Path:
    """Where the cache keeps the files of ``spec`` at ``commit``."""
    return hub_cache() / spec.folder_name / "snapshots" / commit


def keep_ref(spec: HubSpec, commit: str) -> None:
    """Point the cache's ``refs/<revision>`` at ``commit``, as huggingface_hub does after a
    download, so that offline runs use what the hub last said (a cache that cannot be written
    only costs a later offline run the newest commit)."""
    if is_commit(spec.revision) or not is_commit(commit):
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
    try:
        endpoint()  # huggingface_hub cannot be imported with some malformed HF_ENDPOINTs
    except HubError:
        return None  # offline, the miss is told without the marks
    from huggingface_hub import _CACHED_NO_EXIST, try_to_load_from_cache

    cache = hub_cache()
    try:
        marked = [
            try_to_load_from_cache(spec.repo_id, name, cache_dir=cache, revision=commit)
            for name in filenames
        ]
    except OSError:
        return None
    return commit if all(found is _CACHED_NO_EXIST for found in marked) else None


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
    forced = offline_forced()
    offline = (
        f"HF_HUB_OFFLINE={forced} keeps embedcli offline; unset it and pass --download"
        if forced is not None
        else "embedcli is offline by default; pass --download"
    )
    return HubError(
        f"{missing} is not in {where} and {offline} to fetch only what is needed, or run: "
        f"hf download {spec.repo_id}"
        + ("" if spec.revision == DEFAULT_REVISION else f" --revision {spec.revision}")
    )


def with_cache(error: Unreachable, spec: HubSpec) -> Unreachable:
    """``error``, saying that the cache holds ``spec`` at a commit, where it does."""
    commit = cached_commit(spec)
    if commit is None:
        return error
    return Unreachable(
        f"{error}; or drop --download to use what the cache holds (commit {commit[:12]}"
        + ("" if is_commit(spec.revision) else f" of {spec.revision}")
        + ")"
    )
