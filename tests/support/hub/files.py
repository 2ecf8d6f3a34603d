"""What the hub calls a file (etag, git blob id, LFS pointer), and the huggingface_hub cache laid
out exactly as huggingface_hub lays it out (blobs by etag, relative symlinks in
``snapshots/<commit>``, ``refs/<revision>``)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    pass


# --------------------------------------------------------------------------------------------
# What the hub calls a file: etag, git blob id, LFS pointer
# --------------------------------------------------------------------------------------------

# The patterns of the hub's default .gitattributes that matter for models: these go to LFS, and so
# does anything over 10 MiB (the hub refuses larger plain git files).
LFS_SUFFIXES = (
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".ckpt",
    ".h5",
    ".msgpack",
    ".onnx",
    ".ot",
    ".gguf",
    ".model",
    ".npy",
    ".npz",
    ".pkl",
    ".pickle",
    ".tflite",
    ".tar",
    ".gz",
    ".zip",
    ".zst",
    ".7z",
)
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
_SKIPPED_DIRS = {".git", ".cache"}


class HubFile(NamedTuple):
    """One file as the hub describes it."""

    path: str  # relative, with forward slashes
    size: int
    sha256: str
    git_sha1: str  # git blob id of the content
    lfs: bool

    @property
    def etag(self) -> str:
        """The hub's etag, and the cache's blob name: sha256 for LFS files, the git blob id else."""
        return self.sha256 if self.lfs else self.git_sha1

    @property
    def pointer(self) -> bytes:
        """The git-lfs pointer file that git stores in place of an LFS file."""
        return (
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\n"
            f"size {self.size}\n"
        ).encode()

    @property
    def blob_id(self) -> str:
        """The id the hub's tree listing gives (for LFS files: the git id of the pointer)."""
        return git_blob_sha1(self.pointer) if self.lfs else self.git_sha1


def git_blob_sha1(data: bytes) -> str:
    """Git's blob id: sha1 of b"blob <size>\\0" + data."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def is_lfs(path: str, size: int) -> bool:
    """Whether the hub would store path in git-lfs."""
    return size > LFS_SIZE_THRESHOLD or path.lower().endswith(LFS_SUFFIXES)


_hub_file_cache: dict[tuple[str, int, int], HubFile] = {}
_hub_file_lock = threading.Lock()


# A file larger than this is a sparse stand-in for a big checkpoint (gigabytes on paper): it is
# described by a stand-in hash of its name, size and mtime, since hashing it would read it all.
# Nothing downloads such a file whole, so no hash of it is ever checked.
HASHED_SIZE_LIMIT = 256 << 20


def hub_file(folder: Path, path: str) -> HubFile:
    """Describe folder/path (hashes cached by size and mtime)."""
    full = Path(folder) / path
    stat = full.stat()
    key = (str(full.resolve()), stat.st_size, stat.st_mtime_ns)
    with _hub_file_lock:
        cached = _hub_file_cache.get(key)
    if cached is not None and cached.path == path:
        return cached
    if stat.st_size > HASHED_SIZE_LIMIT:
        stand_in = f"sparse {path} {stat.st_size} {stat.st_mtime_ns}".encode()
        info = HubFile(
            path=path,
            size=stat.st_size,
            sha256=hashlib.sha256(stand_in).hexdigest(),
            git_sha1=hashlib.sha1(stand_in).hexdigest(),
            lfs=True,
        )
        with _hub_file_lock:
            _hub_file_cache[key] = info
        return info
    data = full.read_bytes()
    info = HubFile(
        path=path,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        git_sha1=git_blob_sha1(data),
        lfs=is_lfs(path, len(data)),
    )
    with _hub_file_lock:
        _hub_file_cache[key] = info
    return info


def repo_files(folder: Path) -> list[str]:
    """Every file under folder, sorted, as relative paths with "/" (.git and .cache skipped)."""
    folder = Path(folder)
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in files:
            found.append((Path(root) / name).relative_to(folder).as_posix())
    return sorted(found)


def default_commit(repo_id: str) -> str:
    """A stable fake commit hash for repo_id: the sha1 of its name."""
    return hashlib.sha1(repo_id.encode()).hexdigest()


def _check_commit(commit: str) -> str:
    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise ValueError(f"a commit hash is 40 lowercase hex digits, not {commit!r}")
    return commit


# --------------------------------------------------------------------------------------------
# The huggingface_hub cache
# --------------------------------------------------------------------------------------------

# What huggingface_hub writes to <cache>/CACHEDIR.TAG (huggingface_hub/_local_folder.py).
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by huggingface_hub.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)


def repo_cache_folder(cache_dir: Path, repo_id: str) -> Path:
    """<cache_dir>/models--ORG--NAME, the storage folder of a model repo."""
    return Path(cache_dir) / "--".join(["models", *repo_id.split("/")])


def tree_listing(folder: Path) -> dict[str, Any]:
    """The trees/<commit>.json that snapshot_download writes for a repo whose files are folder's."""
    files: dict[str, Any] = {}
    for path in repo_files(folder):
        info = hub_file(folder, path)
        entry: dict[str, Any] = {"size": info.size, "blob_id": info.blob_id}
        if info.lfs:
            entry["lfs_sha256"] = info.sha256
            entry["lfs_size"] = info.size
        files[path] = entry
    return {"format_version": 1, "files": files}


def place_in_hf_cache(
    folder: Path,
    cache_dir: Path,
    repo_id: str,
    *,
    revision: str = "main",
    commit: str | None = None,
    files: list[str] | None = None,
    tree: bool = False,
) -> Path:
    """Put folder's files (or only `files`) in the hub cache as huggingface_hub does; the snapshot.

    Layout: models--ORG--NAME/blobs/<etag> (sha256 for LFS files such as *.safetensors, the git
    blob sha1 for others such as config.json), snapshots/<commit>/<path> as relative symlinks to
    the blobs, refs/<revision> holding the commit (no newline; not written when revision is the
    commit itself), and CACHEDIR.TAG. With tree=True also trees/<commit>.json listing ALL of
    folder's files, as snapshot_download leaves it: then a partial snapshot is known to be partial.
    """
    folder = Path(folder)
    commit = _check_commit(commit or default_commit(repo_id))
    storage = repo_cache_folder(cache_dir, repo_id)
    snapshot = storage / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    (storage / "blobs").mkdir(parents=True, exist_ok=True)
    for path in repo_files(folder) if files is None else files:
        info = hub_file(folder, path)
        blob = storage / "blobs" / info.etag
        if not blob.exists():
            partial = blob.with_name(blob.name + ".incomplete")
            shutil.copyfile(folder / path, partial)
            os.replace(partial, blob)
        link = snapshot / path
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(os.path.relpath(blob, link.parent), link)
    if revision != commit:
        ref = storage / "refs" / revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(commit, encoding="utf-8")
    if tree:
        listing = storage / "trees" / f"{commit}.json"
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text(json.dumps(tree_listing(folder), indent=1), encoding="utf-8")
    tag = Path(cache_dir) / "CACHEDIR.TAG"
    if not tag.exists():
        tag.write_text(CACHEDIR_TAG, encoding="utf-8")
    return snapshot
