"""Weights split over several files, and safetensors read by the byte from a hub.

A :class:`ShardedCheckpoint` looks like one :class:`~embedcli.models.checkpoint.Checkpoint` to
the rest of embedcli, but opens a shard only when one of its tensors is asked about: the index's
``weight_map`` says which file holds which tensor, so finding the tables opens only the shards
that hold them. :class:`RemoteSafetensors` is one safetensors file of a hub repo, described from
its header (one or two HTTP range reads) and read into embedcli's cache (tensorstore.py): the
rows a lookup uses (``load_rows``), or a whole tensor (``load``), which is said before it is
fetched and, above the limit of ``--download-all``, refused. Every piece is stored under its
repo, commit, file and name, verified against the header's byte count, and never half-written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.core.devices import torch_dtype
from embedcli.core.memory import ensure_host_fits, format_bytes
from embedcli.errors import WeightsError
from embedcli.models.formats import MAX_SAFETENSORS_HEADER, TensorInfo, parse_safetensors_header
from embedcli.models.hub.cache import not_cached
from embedcli.models.hub.rows import MissingRows, RowLayout, gather_rows
from embedcli.models.hub.tensorstore import TensorStore

__all__ = ["FETCH_BLOCK", "RemoteSafetensors", "ShardedCheckpoint", "TensorStore"]

if TYPE_CHECKING:
    import torch

    from embedcli.models.hub.remote import Remote
    from embedcli.models.hub.spec import HubSpec
    from embedcli.models.protocols import Checkpoint

HEADER_FIRST_READ = 1 << 13  # most shard headers fit in 8 KiB: one range read, else a second
FETCH_BLOCK = 16 << 20  # bytes per range read when a table is fetched
_TORCH_LOADABLE = ("F64", "F32", "F16", "BF16")


class RemoteSafetensors:
    """One safetensors file of a hub repo: its header, and its tensors read by the byte.

    ``remote`` None means offline: only what embedcli's cache already holds can be used."""

    format = "safetensors"
    is_gguf = False

    def __init__(self, remote: Remote | None, spec: HubSpec, commit: str, filename: str) -> None:
        self.remote, self.spec, self.filename = remote, spec, filename
        self.path = Path(f"{spec}/{filename}")
        self.extra: dict[str, Any] = {}
        self.store = TensorStore(spec.repo_id, commit, filename)
        self.entries = self._entries()
        self.tensors = [entry.info for entry in self.entries.values()]

    @property
    def names(self) -> list[str]:
        """Every tensor's name, from the header."""
        return list(self.entries)

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
        # the hub's Content-Range gave the file's size: the tensors must fill it exactly
        size = None if self.remote is None else self.remote.sizes.get(self.filename)
        entries = parse_safetensors_header(raw, size, str(self.path))
        self.store.keep_header(raw)
        return entries

    def _need_remote(self, what: str) -> Remote:
        if self.remote is None:
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

    def _table_entry(self, name: str) -> Any:
        entry = self.entries.get(name)
        if entry is None:
            raise WeightsError(f"{self.path} has no tensor {name!r}")
        if entry.code not in _TORCH_LOADABLE:
            raise WeightsError(f"{name} in {self.path} is {entry.info.dtype}, not a table dtype")
        return entry

    def load(self, name: str) -> torch.Tensor:
        """One tensor, from embedcli's cache or fetched into it by range reads: said before it
        is fetched, and refused above the remote's fetch limit (``--download-all`` lifts it)."""
        import torch

        entry = self._table_entry(name)
        nbytes = entry.end - entry.start
        ensure_host_fits(f"the values of {name} {entry.info.shape} {entry.info.dtype}", nbytes)
        path = self.store.tensor(name, nbytes)
        if path is None:
            remote = self._need_remote(f"the tensor {name}")
            self._announce(name, entry, nbytes - min(self.store.partial(name), nbytes), remote)
            path = self.store.fetch(
                name,
                nbytes,
                lambda a, b: remote.read_range(self.filename, entry.start + a, entry.start + b),
                FETCH_BLOCK,
            )
        dtype = torch_dtype(entry.info.dtype)
        values = torch.from_file(str(path), shared=False, size=entry.info.numel, dtype=dtype)
        return values.reshape(entry.info.shape)

    def _announce(self, name: str, entry: Any, missing: int, remote: Remote) -> None:
        """Say how much a whole fetch will bring, before it starts; refuse it above the limit."""

        info, limit = entry.info, remote.fetch_limit
        what = f"{name} {info.shape} {info.dtype} of {self.spec}"
        amount = f"{format_bytes(missing)} ({missing:,} bytes)"
        if limit is not None and missing > limit:
            raise WeightsError(
                f"this command needs all of {what}, which is not in embedcli's cache: fetching "
                f"it would download {amount}, more than the {format_bytes(limit)} fetched "
                "without asking; pass --download-all to fetch it"
            )
        remote.access.tell(f"fetching {what}: {amount}")

    def cached_whole(self, name: str) -> bool:
        """Whether all of tensor ``name`` is in embedcli's cache (else a lookup reads rows)."""
        entry = self._table_entry(name)
        return self.store.tensor(name, entry.end - entry.start) is not None

    def reads_rows(self, name: str) -> bool:
        """A table not in embedcli's cache whole is read by rows (fetched, or cached blocks)."""
        return not self.cached_whole(name)

    def local_files(self) -> list[Path]:
        """None: the file is on the hub (embedcli's cache holds what was fetched of it)."""
        return []

    def load_rows(self, name: str, rows: Sequence[int]) -> torch.Tensor:
        """Rows ``rows`` of a 2-D table, (len(rows), d) in its dtype: from the whole tensor
        when cached, else from cached row blocks, the missing blocks fetched by range reads."""
        import torch

        entry = self._table_entry(name)
        info = entry.info
        if len(info.shape) != 2:
            raise WeightsError(f"{name} in {self.path} is {info.shape}, not a (rows, d) table")
        layout = RowLayout(
            name, info.shape[0], (entry.end - entry.start) // max(info.shape[0], 1), entry.start
        )
        wanted = layout.check(rows)
        dtype = torch_dtype(info.dtype)
        whole = self.store.tensor(name, entry.end - entry.start)
        if whole is not None:
            values = torch.from_file(str(whole), shared=False, size=info.numel, dtype=dtype)
            return values.reshape(info.shape)[torch.tensor(wanted, dtype=torch.long)].clone()
        per = layout.per_block
        remote = self.remote
        fetch = None if remote is None else (lambda a, b: remote.read_range(self.filename, a, b))
        try:
            data = gather_rows(
                layout,
                wanted,
                lambda k: self.store.block(name, per, k, layout.block_bytes(k)),
                lambda k, piece: self.store.keep_block(name, per, k, piece),
                fetch,
            )
        except MissingRows:
            self._need_remote(f"part of the tensor {name}")
            raise
        flat = (
            torch.frombuffer(bytearray(data), dtype=dtype) if data else torch.empty(0, dtype=dtype)
        )
        return flat.reshape(len(wanted), info.shape[1])

    def shares_storage(self, first: str, second: str) -> bool:
        """safetensors never shares storage between tensors."""
        return False

    def unique_parameters(self) -> int:
        """Elements of all tensors."""
        return sum(t.numel for t in self.tensors)


class ShardedCheckpoint:
    """Tensors spread over files by an index's ``weight_map``; shards open when needed."""

    is_gguf = False

    def __init__(
        self,
        path: Path,
        weight_map: dict[str, str],
        opener: Callable[[str], Checkpoint],
        format: str,
    ) -> None:
        self.path = path
        self.weight_map = weight_map
        self.format = format
        self.extra: dict[str, Any] = {}
        self._opener = opener
        self.opened: dict[str, Checkpoint] = {}  # shard file -> opened checkpoint

    @property
    def names(self) -> list[str]:
        """Every tensor's name, from the index alone."""
        return list(self.weight_map)

    def shard(self, name: str) -> Checkpoint:
        """The opened shard that holds ``name``."""
        if name not in self.weight_map:
            raise WeightsError(f"{self.path} has no tensor {name!r}")
        filename = self.weight_map[name]
        if filename not in self.opened:
            self.opened[filename] = self._opener(filename)
        return self.opened[filename]

    def _all_shards(self) -> Iterable[Checkpoint]:
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

    def load_rows(self, name: str, rows: Sequence[int]) -> torch.Tensor:
        """Read rows of one table from its shard: (len(rows), d)."""
        return self.shard(name).load_rows(name, rows)

    def reads_rows(self, name: str) -> bool:
        """As the shard that holds ``name`` reads it."""
        return self.shard(name).reads_rows(name)

    def local_files(self) -> list[Path]:
        """Every shard file the index names, each once, beside the index."""
        return [self.path / name for name in dict.fromkeys(self.weight_map.values())]

    def shares_storage(self, first: str, second: str) -> bool:
        """Tensors share storage only within one PyTorch shard."""
        if self.weight_map.get(first) != self.weight_map.get(second):
            return False
        return self.shard(first).shares_storage(first, second)

    def unique_parameters(self) -> int:
        """Elements of all tensors, shared storage counted once within each shard."""
        return sum(shard.unique_parameters() for shard in self._all_shards())
