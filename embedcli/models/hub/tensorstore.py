"""embedcli's cache of what was fetched from a hub: headers, whole tensors, and row blocks.

One folder per repo, commit and file (``tensors/ORG--NAME/<commit>/<file>/``): ``header.json``,
``<tensor>.bin`` for a whole tensor (published only once complete: fetched into ``.part``,
resumed after an interruption, verified by size against the header, then renamed), and
``<tensor>.rows-<R>/<k>.bin`` for block ``k`` of a table fetched by rows (rows ``k*R`` to
``k*R + R``, each block written whole or not at all and checked by size when read). A block
lives in a folder of its own, so it can never be taken for the whole tensor.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from embedcli.errors import WeightsError
from embedcli.io.cache import cache_dir


class TensorStore:
    """embedcli's cache of tensors fetched from a hub: one folder per repo, commit and file."""

    def __init__(self, repo_id: str, commit: str, filename: str) -> None:

        base = cache_dir()
        self.folder = (
            None
            if base is None
            else base
            / "tensors"
            / repo_id.replace("/", "--")
            / commit
            / filename.replace("/", "--")
        )

    def _path(self, name: str) -> Path | None:
        if self.folder is None:
            return None
        safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in name)
        if len(safe) > 120 or safe != name.replace("/", "-"):  # long or odd: add a hash
            safe = safe[:80] + "-" + hashlib.sha256(name.encode()).hexdigest()[:16]
        return self.folder / (safe + ".bin")

    def header(self) -> bytes | None:
        """The cached header JSON, or None."""
        if self.folder is None:
            return None
        try:
            return (self.folder / "header.json").read_bytes()
        except OSError:
            return None

    def keep_header(self, raw: bytes) -> None:
        """Cache the header JSON (written whole or not at all; a cache that cannot be written
        only costs the next run a request)."""
        if self.folder is not None:
            with contextlib.suppress(OSError):
                _write_whole(self.folder / "header.json", raw)

    @property
    def header_file(self) -> Path | None:
        """Where the header is cached."""
        return None if self.folder is None else self.folder / "header.json"

    def tensor(self, name: str, nbytes: int) -> Path | None:
        """The cached bytes of a tensor, when complete."""
        path = self._path(name)
        if path is None or not path.is_file() or path.stat().st_size != nbytes:
            return None
        return path

    def partial(self, name: str) -> int:
        """Bytes of a tensor fetched so far by an interrupted whole fetch."""
        path = self._path(name)
        try:
            return 0 if path is None else path.with_suffix(".part").stat().st_size
        except OSError:
            return 0

    def _block_path(self, name: str, per_block: int, index: int) -> Path | None:
        path = self._path(name)
        return None if path is None else path.with_suffix(f".rows-{per_block}") / f"{index}.bin"

    def block(self, name: str, per_block: int, index: int, nbytes: int) -> bytes | None:
        """Block ``index`` of a table fetched by rows, ``per_block`` rows a block, when cached
        whole (``nbytes``: its size from the header; anything else is not trusted)."""
        path = self._block_path(name, per_block, index)
        try:
            if path is None or path.stat().st_size != nbytes:
                return None
            data = path.read_bytes()
        except OSError:
            return None
        return data if len(data) == nbytes else None

    def keep_block(self, name: str, per_block: int, index: int, data: bytes) -> None:
        """Cache one row block, written whole or not at all (a cache that cannot be written
        only costs a later run the request)."""
        path = self._block_path(name, per_block, index)
        if path is not None:
            with contextlib.suppress(OSError):
                _write_whole(path, data)

    def fetch(
        self, name: str, nbytes: int, read: Callable[[int, int], bytes], block: int = 16 << 20
    ) -> Path:
        """Fetch a tensor's ``nbytes`` with ``read(start, end)`` (offsets within the tensor,
        ``block`` bytes a read), resuming a partial download, and publish it only once
        complete."""
        path = self._path(name)
        if path is None:
            raise WeightsError(
                "embedcli's cache is turned off (EMBEDCLI_CACHE_DIR is empty), so a table "
                "cannot be fetched by the byte; set it to a folder"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path.with_suffix(".lock"), "a") as lock:
                _lock(lock)  # another embedcli fetching the same tensor: wait, then use its work
                if self.tensor(name, nbytes) is not None:
                    return path
                return self._fetch_locked(path, name, nbytes, read, block)
        except OSError as exc:
            raise WeightsError(
                f"cannot write embedcli's cache ({path.parent}): {exc.strerror or exc}; free "
                "some space, or set EMBEDCLI_CACHE_DIR to a folder that can be written"
            ) from None

    def _fetch_locked(
        self, path: Path, name: str, nbytes: int, read: Callable[[int, int], bytes], block: int
    ) -> Path:
        partial = path.with_suffix(".part")
        done = partial.stat().st_size if partial.is_file() else 0
        if done > nbytes:
            partial.unlink()
            done = 0
        with open(partial, "ab") as handle:
            while done < nbytes:
                data = read(done, min(nbytes, done + block))
                handle.write(data)
                handle.flush()
                done += len(data)
            os.fsync(handle.fileno())
        if partial.stat().st_size != nbytes:
            partial.unlink()
            raise WeightsError(f"the download of {name} did not give {nbytes:,} bytes; try again")
        os.replace(partial, path)
        return path


def _lock(handle: Any) -> None:
    """An exclusive lock on an open file, held until it is closed (where the system has one)."""
    try:
        import fcntl
    except ImportError:  # Windows: concurrent fetches of one tensor are not guarded there
        return
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)


def _write_whole(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
