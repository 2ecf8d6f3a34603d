"""Weights split over several files, and safetensors read by the byte from a hub.

A :class:`ShardedCheckpoint` looks like one :class:`~embedcli.models.checkpoint.Checkpoint` to
the rest of embedcli, but opens a shard only when one of its tensors is asked about: the index's
``weight_map`` says which file holds which tensor, so finding the tables opens only the shards
that hold them. :class:`RemoteSafetensors` is one safetensors file of a hub repo, described from
its header (one or two HTTP range reads) and read one tensor at a time into embedcli's cache,
where a tensor is stored under its repo, commit, file and name, verified against the header's
byte count, resumed after an interruption, and never left half-written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.errors import WeightsError
from embedcli.models.formats import MAX_SAFETENSORS_HEADER, TensorInfo, parse_safetensors_header

if TYPE_CHECKING:
    import torch

    from embedcli.models.hub import Remote

HEADER_FIRST_READ = 1 << 13  # most shard headers fit in 8 KiB: one range read, else a second
FETCH_BLOCK = 16 << 20  # bytes per range read when a table is fetched
_TORCH_LOADABLE = ("F64", "F32", "F16", "BF16")


class TensorStore:
    """embedcli's cache of tensors fetched from a hub: one folder per repo, commit and file."""

    def __init__(self, repo_id: str, commit: str, filename: str) -> None:
        from embedcli.io.cache import cache_dir

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

    def fetch(self, name: str, nbytes: int, read: Callable[[int, int], bytes]) -> Path:
        """Fetch a tensor's ``nbytes`` with ``read(start, end)`` (offsets within the tensor),
        resuming a partial download, and publish it only once complete."""
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
                return self._fetch_locked(path, name, nbytes, read)
        except OSError as exc:
            raise WeightsError(
                f"cannot write embedcli's cache ({path.parent}): {exc.strerror or exc}; free "
                "some space, or set EMBEDCLI_CACHE_DIR to a folder that can be written"
            ) from None

    def _fetch_locked(
        self, path: Path, name: str, nbytes: int, read: Callable[[int, int], bytes]
    ) -> Path:
        partial = path.with_suffix(".part")
        done = partial.stat().st_size if partial.is_file() else 0
        if done > nbytes:
            partial.unlink()
            done = 0
        with open(partial, "ab") as handle:
            while done < nbytes:
                block = read(done, min(nbytes, done + FETCH_BLOCK))
                handle.write(block)
                handle.flush()
                done += len(block)
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
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


class RemoteSafetensors:
    """One safetensors file of a hub repo: its header, and its tensors read by the byte.

    ``remote`` None means offline: only what embedcli's cache already holds can be used."""

    format = "safetensors"

    def __init__(self, remote: Remote | None, spec: Any, commit: str, filename: str) -> None:
        self.remote, self.spec, self.filename = remote, spec, filename
        self.path = Path(f"{spec}/{filename}")
        self.extra: dict[str, Any] = {}
        self.store = TensorStore(spec.repo_id, commit, filename)
        self.entries = self._entries()
        self.tensors = [entry.info for entry in self.entries.values()]

    def _entries(self) -> dict[str, Any]:
        """The header, from embedcli's cache, else fetched (and cached); a damaged cached copy
        is fetched anew, or, offline, named so that it can be deleted."""
        raw = self.store.header()
        if raw is not None:
            try:
                return parse_safetensors_header(raw, None, str(self.path))
            except WeightsError:
                if self.remote is None:
                    raise WeightsError(
                        f"the cached header of {self.path} is damaged: delete "
                        f"{self.store.header_file}, or pass --download to fetch it again"
                    ) from None
        raw = self._fetch_header()
        entries = parse_safetensors_header(raw, None, str(self.path))
        self.store.keep_header(raw)
        return entries

    def _need_remote(self, what: str) -> Remote:
        if self.remote is None:
            from embedcli.models.hub import not_cached

            # the snapshot lacks this shard: embedcli's tensor cache was the other place
            where = "the Hugging Face cache's snapshot" + (
                ""
                if self.store.folder is None
                else f" nor in embedcli's cache ({self.store.folder})"
            )
            raise not_cached(self.spec, what, where)
        return self.remote

    def _fetch_header(self) -> bytes:
        remote = self._need_remote(f"{self.filename}'s header")
        first = remote.read_range(self.filename, 0, HEADER_FIRST_READ, exact=False)
        size = int.from_bytes(first[:8], "little") if len(first) >= 8 else 0
        if not 0 < size <= MAX_SAFETENSORS_HEADER:
            raise WeightsError(f"{self.path} is not a safetensors file (header length {size})")
        if 8 + size <= len(first):
            return first[8 : 8 + size]
        return first[8:] + remote.read_range(self.filename, len(first), 8 + size)

    def info(self, name: str) -> TensorInfo:
        """The description of one tensor."""
        if name not in self.entries:
            raise WeightsError(f"{self.path} has no tensor {name!r}")
        return self.entries[name].info

    def load(self, name: str) -> torch.Tensor:
        """One tensor, from embedcli's cache or fetched into it by range reads."""
        import torch

        from embedcli.core.devices import torch_dtype
        from embedcli.core.memory import ensure_host_fits

        entry = self.entries.get(name)
        if entry is None:
            raise WeightsError(f"{self.path} has no tensor {name!r}")
        if entry.code not in _TORCH_LOADABLE:
            raise WeightsError(f"{name} in {self.path} is {entry.info.dtype}, not a table dtype")
        nbytes = entry.end - entry.start
        ensure_host_fits(f"the values of {name} {entry.info.shape} {entry.info.dtype}", nbytes)
        path = self.store.tensor(name, nbytes)
        if path is None:
            remote = self._need_remote(f"the tensor {name}")
            path = self.store.fetch(
                name,
                nbytes,
                lambda a, b: remote.read_range(self.filename, entry.start + a, entry.start + b),
            )
        dtype = torch_dtype(entry.info.dtype)
        values = torch.from_file(str(path), shared=False, size=entry.info.numel, dtype=dtype)
        return values.reshape(entry.info.shape)

    def shares_storage(self, first: str, second: str) -> bool:
        """safetensors never shares storage between tensors."""
        return False

    def unique_parameters(self) -> int:
        """Elements of all tensors."""
        return sum(t.numel for t in self.tensors)


class ShardedCheckpoint:
    """Tensors spread over files by an index's ``weight_map``; shards open when needed."""

    def __init__(
        self,
        path: Path,
        weight_map: dict[str, str],
        opener: Callable[[str], Any],
        format: str,
    ) -> None:
        self.path = path
        self.weight_map = weight_map
        self.format = format
        self.extra: dict[str, Any] = {}
        self._opener = opener
        self.opened: dict[str, Any] = {}  # shard file -> opened checkpoint

    @property
    def names(self) -> list[str]:
        """Every tensor's name, from the index alone."""
        return list(self.weight_map)

    def shard(self, name: str) -> Any:
        """The opened shard that holds ``name``."""
        if name not in self.weight_map:
            raise WeightsError(f"{self.path} has no tensor {name!r}")
        filename = self.weight_map[name]
        if filename not in self.opened:
            self.opened[filename] = self._opener(filename)
        return self.opened[filename]

    def _all_shards(self) -> Iterable[Any]:
        """Every shard, opened a few at a time (over a network, headers arrive in parallel)."""
        missing = [f for f in dict.fromkeys(self.weight_map.values()) if f not in self.opened]
        if len(missing) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(8, len(missing))) as pool:
                self.opened.update(zip(missing, pool.map(self._opener, missing), strict=True))
        elif missing:
            self.opened[missing[0]] = self._opener(missing[0])
        return [self.opened[f] for f in dict.fromkeys(self.weight_map.values())]

    @property
    def tensors(self) -> list[TensorInfo]:
        """Every tensor's description (opens every shard's header)."""
        found = {t.name: t for shard in self._all_shards() for t in shard.tensors}
        missing = [n for n in self.weight_map if n not in found]
        if missing:
            raise WeightsError(
                f"the index of {self.path} lists {missing[0]!r} in {self.weight_map[missing[0]]}, "
                "which does not hold it: the index and the shards disagree"
            )
        return [found[n] for n in self.weight_map]

    def info(self, name: str) -> TensorInfo:
        """The description of one tensor (opens only its shard)."""
        return self.shard(name).info(name)

    def load(self, name: str) -> torch.Tensor:
        """Read one tensor from its shard."""
        return self.shard(name).load(name)

    def shares_storage(self, first: str, second: str) -> bool:
        """Tensors share storage only within one PyTorch shard."""
        if self.weight_map.get(first) != self.weight_map.get(second):
            return False
        return self.shard(first).shares_storage(first, second)

    def unique_parameters(self) -> int:
        """Elements of all tensors, shared storage counted once within each shard."""
        return sum(shard.unique_parameters() for shard in self._all_shards())
