"""Model sources: a checkpoint file, a model folder, a GGUF file, an Ollama model,
``hf:ORG/NAME[@REV]``, or a sample model (``sample:NAME``, a GGUF file joined from packages).

A ``--weights`` or ``-e`` string is told once (:func:`classify`) into a :class:`Source`: its kind
and where it is. Both the tables (:func:`open_source`) and the tokenizer
(``tokenization.modeltok``) are taken from that one description.
A folder (``save_pretrained`` output or a hub snapshot) brings its ``config.json`` (sizes,
positional family, rope theta, tying, input scaling), its tokenizer files, and its weights: one
``model.safetensors``, or shards with an index whose ``weight_map`` decides which file is opened.
A hub source is a cached snapshot (offline), or, with downloads allowed, the same files read over
HTTP, safetensors by the byte. Everything here is decided once, so commands only ask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from embedcli.errors import WeightsError
from embedcli.models.checkpoint import Checkpoint
from embedcli.models.config import (
    CONFIG_FILE,
    MAX_JSON_BYTES,
    ModelConfig,
    folder_config,
    parse_config,
    read_json,
)
from embedcli.models.gguf.file import looks_like_gguf
from embedcli.models.gguf.ollama import is_ollama, resolve
from embedcli.models.gguf.source import open_gguf
from embedcli.models.hub.cache import (
    keep_ref,
    not_cached,
    offline_snapshot,
    snapshot_folder,
    with_cache,
)
from embedcli.models.hub.remote import Remote
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.hub.shards import RemoteSafetensors, ShardedCheckpoint
from embedcli.models.hub.spec import HubSpec, Unreachable, is_commit
from embedcli.models.sample import is_sample, sample_path

if TYPE_CHECKING:
    from embedcli.models.hub.remote import Remote
    from embedcli.models.hub.shards import RemoteSafetensors, ShardedCheckpoint
    from embedcli.models.protocols import Checkpoint

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


SourceKind = Literal["hub", "ollama", "folder", "gguf", "checkpoint", "missing"]


@dataclass(frozen=True)
class Source:
    """A ``--weights`` or ``-e`` string, told once: what it names, and where."""

    text: str  # as the user wrote it
    kind: SourceKind  # checkpoint: any other file (safetensors, PyTorch, .npz, a tokenizer file)
    path: Path | None = None  # folder, gguf, checkpoint, missing: the path as written
    hub: HubSpec | None = None  # hub: the parsed spec


def classify(spec: str | Path) -> Source:
    """What ``spec`` names: ``hf:ORG/NAME[@REV]``, ``ollama:NAME[:TAG]``, a folder, a GGUF file
    (told by its magic), another file, or nothing on this machine. A bad ``hf:`` spec is an
    error here; an Ollama name is resolved only when it is opened."""

    text = str(spec)
    hub = HubSpec.parse(text)
    if hub is not None:
        return Source(text, "hub", hub=hub)
    if is_ollama(text):
        return Source(text, "ollama")
    if is_sample(text):  # joined into the cache (once), verified, then a GGUF file
        return Source(text, "gguf", sample_path(text))
    path = Path(text)
    if path.is_dir():
        return Source(text, "folder", path)
    if not path.exists():
        return Source(text, "missing", path)
    # a regular file only: the magic is never read from a pipe or a device
    kind: SourceKind = "gguf" if path.is_file() and looks_like_gguf(path) else "checkpoint"
    return Source(text, kind, path)


def _weight_map(index: Any, where: Path | str) -> dict[str, str]:
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if (
        not isinstance(weight_map, dict)
        or not weight_map
        or not all(
            isinstance(k, str) and isinstance(v, str) and _shard_name(v)
            for k, v in weight_map.items()
        )
    ):
        raise WeightsError(f"{where} has no usable weight_map (tensor name -> shard file)")
    return weight_map


def _shard_name(name: str) -> bool:
    """A shard is a plain file name beside the index: no folders, no control characters."""
    return (
        0 < len(name) <= 255
        and name not in (".", "..")
        and name.isprintable()
        and not any(c in name for c in "/\\:")
    )


@dataclass
class ModelSource:
    """An opened source of tables: its checkpoint, and what a model folder brings with it."""

    spec: str  # as the user wrote it
    label: str  # how reports name it
    checkpoint: Checkpoint
    config: ModelConfig | None = None
    folder: Path | None = None  # the model folder or snapshot, when there is one
    hub: HubSpec | None = None
    remote: bool = False  # tables are read over the network
    commit: str | None = None  # the commit a hub source resolved to

    def summary(self) -> dict[str, Any] | None:
        """What reports say about the model: its config, and for a hub model its commit."""
        found = {} if self.config is None else self.config.summary()
        if self.hub is not None and self.commit:
            found["commit"] = self.commit
        return found or None

    def by_rows(self, name: str) -> bool:
        """Whether a lookup in table ``name`` should read the rows it uses alone
        (``checkpoint.load_rows``): a GGUF table, or a hub table that is not on this machine
        whole, fetched by the byte (online) or kept as row blocks (offline)."""
        return self.checkpoint.reads_rows(name)

    def local_files(self) -> list[str]:
        """The files on this machine that the weights come from (outputs must not be these)."""
        return [] if self.remote else [str(path) for path in self.checkpoint.local_files()]


def open_source(spec: str | Path, access: HubAccess = OFFLINE) -> ModelSource:
    """Open a checkpoint file, a model folder, or a hub model (offline unless ``access``
    allows downloads; whole tables above ``WHOLE_FETCH_LIMIT`` only with ``download_all``)."""

    source = classify(spec)
    text = source.text
    if source.hub is not None:
        return _open_hub(source.hub, access)
    if source.kind == "ollama":
        return ModelSource(text, text, *open_gguf(resolve(text)))
    path = Path(text) if source.path is None else source.path
    if source.kind == "folder":
        return _open_folder(path, text, text)
    if source.kind == "missing":
        raise WeightsError(
            f"cannot read {path}: no such file or folder (a hub model is written hf:ORG/NAME)"
        )
    if source.kind == "gguf":
        return ModelSource(text, text if is_sample(text) else path.name, *open_gguf(path))
    return ModelSource(text, path.name, Checkpoint(path))


def _open_folder(
    folder: Path, spec: str, label: str, hub: HubSpec | None = None, remote: Remote | None = None
) -> ModelSource:
    """A save_pretrained folder or a hub snapshot: config, and weights by their index."""

    config = folder_config(folder)
    for index_name in INDEX_FILES:
        index = folder / index_name
        if index.is_file():
            weight_map = _weight_map(read_json(index, "a weights index"), index)
            opener = _shard_opener(folder, hub, remote)
            kind = "safetensors" if index_name.startswith("model.safetensors") else "pytorch"
            shards = len(set(weight_map.values()))
            checkpoint = ShardedCheckpoint(
                folder, weight_map, opener, f"{kind}, {shards} shard{'s' * (shards != 1)}"
            )
            return ModelSource(spec, label, checkpoint, config, folder, hub)
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return ModelSource(spec, label, Checkpoint(folder / name), config, folder, hub)
    looked = ", ".join((*INDEX_FILES, *WEIGHT_FILES))
    raise WeightsError(f"{folder} holds no model weights (looked for {looked})")


def _shard_opener(
    folder: Path, hub: HubSpec | None, remote: Remote | None = None
) -> Callable[[str], Checkpoint]:
    """Open one shard of a folder; in a hub snapshot, a shard not downloaded is read through
    embedcli's tensor cache, and fetched by the byte when ``remote`` (downloads allowed)."""

    def opener(filename: str) -> Checkpoint:
        path = folder / filename
        if path.is_file() or hub is None:
            if not path.is_file():
                raise WeightsError(f"{path} is listed in the index but missing")
            return Checkpoint(path)

        return RemoteSafetensors(remote, hub, folder.name, filename)

    return opener


def _open_hub(spec: HubSpec, access: HubAccess) -> ModelSource:
    """A hub model: with the network allowed, at the commit the hub says its revision is at now
    (a cached snapshot of that commit first); offline, at the cached ref."""
    if access.allowed():
        remote = Remote(spec, access)
        try:
            commit = spec.revision if is_commit(spec.revision) else remote.reach()  # a hash: fixed
        except Unreachable as exc:
            raise with_cache(exc, spec) from None
        # where the hub names no commit, the cached ref is all there is to go by
        snapshot = offline_snapshot(spec) if commit is None else snapshot_folder(spec, commit)
        if snapshot is not None and _has_weights(snapshot):
            keep_ref(spec, snapshot.name)
            remote.commit = snapshot.name  # a shard the snapshot lacks is fetched by the byte
            source = _open_folder(snapshot, str(spec), str(spec), spec, remote)
            source.commit = snapshot.name
            return source
        return _open_remote(spec, remote)
    snapshot = offline_snapshot(spec)
    if snapshot is not None and _has_weights(snapshot):
        source = _open_folder(snapshot, str(spec), str(spec), spec)
        source.commit = snapshot.name
        return source
    if snapshot is not None:  # a snapshot without weights: the table may be in embedcli's cache
        checkpoint = _single_file(
            RemoteSafetensors(None, spec, snapshot.name, WEIGHT_FILES[0]),
            snapshot,
            "safetensors, from embedcli's cache",
        )
        config = folder_config(snapshot)
        return ModelSource(
            str(spec), str(spec), checkpoint, config, snapshot, spec, commit=snapshot.name
        )
    raise not_cached(spec)


def _single_file(single: RemoteSafetensors, path: Path, format: str) -> ShardedCheckpoint:
    """A hub model's one model.safetensors, behind the sharded interface (one shard)."""

    weight_map = {name: WEIGHT_FILES[0] for name in single.entries}
    return ShardedCheckpoint(path, weight_map, lambda _: single, format)


def _has_weights(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (*INDEX_FILES, *WEIGHT_FILES))


def _open_remote(spec: HubSpec, remote: Remote) -> ModelSource:
    """A hub model read over HTTP: config and index whole, safetensors headers by range."""

    config_path = remote.file(CONFIG_FILE, MAX_JSON_BYTES)
    config = (
        None
        if config_path is None
        else parse_config(read_json(config_path, "a model config"), f"{spec}/{CONFIG_FILE}")
    )
    index_path = remote.file(INDEX_FILES[0], MAX_JSON_BYTES)
    commit = remote.resolve_commit(INDEX_FILES[0] if index_path else WEIGHT_FILES[0])
    if index_path is not None:
        weight_map = _weight_map(read_json(index_path, "a weights index"), index_path)
        shards = len(set(weight_map.values()))
        checkpoint = ShardedCheckpoint(
            Path(str(spec)),
            weight_map,
            lambda filename: RemoteSafetensors(remote, spec, commit, filename),
            f"safetensors, {shards} shard{'s' * (shards != 1)}, read by the byte",
        )
    else:
        checkpoint = _single_file(
            RemoteSafetensors(remote, spec, commit, WEIGHT_FILES[0]),
            Path(str(spec)),
            "safetensors, read by the byte",
        )
    folder = None if config_path is None else config_path.parent
    return ModelSource(
        str(spec), str(spec), checkpoint, config, folder, spec, remote=True, commit=commit
    )
