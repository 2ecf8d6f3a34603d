"""Model sources: a checkpoint file, a Hugging Face model folder, or ``hf:ORG/NAME[@REV]``.

A folder (``save_pretrained`` output or a hub snapshot) brings its ``config.json`` (sizes,
positional family, rope theta, tying, input scaling), its tokenizer files, and its weights: one
``model.safetensors``, or shards with an index whose ``weight_map`` decides which file is opened.
A hub source is a cached snapshot (offline), or, with downloads allowed, the same files read over
HTTP, safetensors by the byte. Everything here is decided once, so commands only ask.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from embedcli.errors import ConfigError, WeightsError
from embedcli.hub import HubSpec, Remote, cached_snapshot, download_allowed, not_cached

CONFIG_FILE = "config.json"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# model_type values whose positions are rotary (and which carry rope_theta)
_LEARNED = ("gpt2", "gpt_neo", "opt", "biogpt", "gpt_bigcode", "xglm", "codegen_learned")
_SCALED = ("gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text")


@dataclass(frozen=True)
class ModelConfig:
    """What a model's ``config.json`` says about its input layer."""

    model_type: str | None
    vocab_size: int | None
    d_model: int | None  # n_embd / hidden_size / d_model
    context_length: int | None  # n_positions / max_position_embeddings
    positional: str | None  # learned, rope, or None when the config does not tell
    rope_theta: float | None  # the rope base (10000 unless the model says otherwise)
    rope_dim: int | None  # dimensions the rotation covers: one attention head's
    rope_scaling: str | None  # a rope_type other than default (llama3, yarn, ...), named
    rope_scaling_params: (
        tuple[tuple[str, Any], ...] | None
    )  # those embedcli applies: linear, llama3
    tie_word_embeddings: bool | None
    embed_scale: float  # what the model multiplies token embeddings by (Gemma: sqrt(d_model))
    file: str = CONFIG_FILE
    keys: dict[str, str] = field(default_factory=dict)  # field -> the key the file names it by

    def summary(self) -> dict[str, Any]:
        """The fields a report shows, without the empty ones."""
        fields = {
            "model_type": self.model_type,
            "positional": self.positional,
            "rope_theta": self.rope_theta,
            "rope_scaling": self.rope_scaling,
            "tie_word_embeddings": self.tie_word_embeddings,
            "embed_scale": self.embed_scale if self.embed_scale != 1.0 else None,
        }
        return {k: v for k, v in fields.items() if v is not None}


def _first(data: dict[str, Any], *names: str) -> Any:
    return data.get(_first_key(data, *names) or "")


def _first_key(data: dict[str, Any], *names: str) -> str | None:
    for name in names:
        if data.get(name) is not None:
            return name
    return None


def _int(value: Any, name: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: {name} must be a positive integer, got {value!r}")
    return value


def parse_config(data: Any, where: str) -> ModelConfig:
    """The input-layer fields of a ``config.json`` (a multimodal model's ``text_config``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} is not a JSON object")
    text = data.get("text_config") if isinstance(data.get("text_config"), dict) else data
    model_type = _first(text, "model_type") or data.get("model_type")
    d_model = _int(_first(text, "n_embd", "hidden_size", "d_model"), "hidden_size", where)
    rope = text.get("rope_parameters") if isinstance(text.get("rope_parameters"), dict) else {}
    scaling = text.get("rope_scaling") if isinstance(text.get("rope_scaling"), dict) else {}
    theta = _first(text, "rope_theta")
    theta = rope.get("rope_theta") if theta is None else theta
    rope_type = scaling.get("rope_type") or scaling.get("type") or rope.get("rope_type")
    if rope_type is not None and not isinstance(rope_type, str):
        raise ConfigError(f"{where}: rope_scaling's rope_type must be a name, got {rope_type!r}")
    if theta is not None:
        try:
            usable = not isinstance(theta, bool) and math.isfinite(float(theta)) and theta > 1
        except (TypeError, ValueError, OverflowError):
            usable = False
        if not usable:
            shown = repr(theta)[:40]
            raise ConfigError(f"{where}: rope_theta must be a number above 1, got {shown}")
    if model_type in _LEARNED:
        positional: str | None = "learned"
    elif theta is not None or rope or scaling or model_type in ("llama", "mistral", "qwen2"):
        positional = "rope"
        theta = float(theta if theta is not None else 10000.0)
    else:
        positional = None
    heads = _int(text.get("num_attention_heads"), "num_attention_heads", where)
    head_dim = _int(text.get("head_dim"), "head_dim", where)
    if head_dim is None and heads and d_model and d_model % heads == 0:
        head_dim = d_model // heads
    partial = _first(text, "partial_rotary_factor")
    partial = rope.get("partial_rotary_factor") if partial is None else partial
    if head_dim and isinstance(partial, int | float) and 0 < partial < 1:
        head_dim = int(head_dim * partial)  # only part of each head rotates (Phi, GPT-NeoX)
    tied = _first(text, "tie_word_embeddings")
    if tied is None:
        tied = data.get("tie_word_embeddings")
    scale = math.sqrt(d_model) if model_type in _SCALED and d_model else 1.0
    return ModelConfig(
        model_type=model_type if isinstance(model_type, str) else None,
        vocab_size=_int(text.get("vocab_size"), "vocab_size", where),
        d_model=d_model,
        context_length=_int(
            _first(text, "n_positions", "max_position_embeddings", "n_ctx"),
            "max_position_embeddings",
            where,
        ),
        positional=positional,
        rope_theta=float(theta) if positional == "rope" else None,
        rope_dim=head_dim if positional == "rope" else None,
        rope_scaling=str(rope_type) if rope_type not in (None, "default") else None,
        rope_scaling_params=_rope_scaling(rope_type, {**rope, **scaling}, where),
        tie_word_embeddings=tied if isinstance(tied, bool) else None,
        embed_scale=scale,
        keys={
            "d_model": _first_key(text, "n_embd", "hidden_size", "d_model") or "hidden_size",
            "context_length": _first_key(text, "n_positions", "max_position_embeddings", "n_ctx")
            or "max_position_embeddings",
        },
    )


MAX_JSON_BYTES = 64 << 20  # a config or an index; the largest published index is a few MB


_SCALING_KEYS = {
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}


def _rope_scaling(rope_type: Any, params: dict[str, Any], where: str) -> Any:
    """The scaling parameters embedcli applies (linear, llama3), checked; None otherwise."""
    if rope_type not in _SCALING_KEYS:
        return None
    values = {}
    for key in _SCALING_KEYS[rope_type]:
        value = params.get(key)
        try:
            good = not isinstance(value, bool) and math.isfinite(float(value)) and value > 0
        except (TypeError, ValueError, OverflowError):
            good = False
        if not good:
            raise ConfigError(f"{where}: rope_scaling {key} must be a positive number")
        values[key] = value
    if rope_type == "llama3" and values["high_freq_factor"] <= values["low_freq_factor"]:
        raise ConfigError(f"{where}: rope_scaling high_freq_factor must exceed low_freq_factor")
    return (("rope_type", rope_type), *values.items())


def read_json(path: Path, what: str) -> Any:
    """A JSON file of a model (bounded in size), or one clear error."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_JSON_BYTES:
            raise WeightsError(
                f"{path} is not {what} (not a regular file of at most "
                f"{MAX_JSON_BYTES // 2**20} MiB)"
            )
        with path.open("rb") as handle:
            data = handle.read(MAX_JSON_BYTES + 1)
        return json.loads(data)
    except OSError as exc:
        raise WeightsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsError(f"{path} is not valid JSON ({what}): {exc}") from None
    except (ValueError, RecursionError) as exc:  # nesting or integers past Python's limits
        raise WeightsError(f"{path} is not usable as {what} ({type(exc).__name__})") from None


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
    checkpoint: Any  # Checkpoint, ShardedCheckpoint or RemoteSafetensors: the same interface
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

    def local_files(self) -> list[str]:
        """The files on this machine that the weights come from (outputs must not be these)."""
        if self.remote:
            return []
        shards = getattr(self.checkpoint, "weight_map", None)
        if shards is None:
            return [str(self.checkpoint.path)]
        return [str(Path(self.checkpoint.path) / name) for name in dict.fromkeys(shards.values())]


def open_source(spec: str | Path, download: bool = False) -> ModelSource:
    """Open a checkpoint file, a model folder, or a hub model (offline unless ``download``)."""
    from embedcli.checkpoint import Checkpoint

    text = str(spec)
    hub = HubSpec.parse(text)
    if hub is not None:
        return _open_hub(hub, download_allowed(download))
    path = Path(text)
    if path.is_dir():
        return _open_folder(path, text, text)
    if not path.exists():
        raise WeightsError(
            f"cannot read {path}: no such file or folder (a hub model is written hf:ORG/NAME)"
        )
    return ModelSource(text, path.name, Checkpoint(path))


def open_weights(weights: str | Path) -> ModelSource:
    """Open ``--weights``: downloads only where this command was given ``--download``."""
    from embedcli.hub import download_requested

    return open_source(weights, download_requested())


def folder_config(folder: Path) -> ModelConfig | None:
    """A folder's config.json, parsed, or None when it has none."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        return None
    return parse_config(read_json(path, "a model config"), str(path))


def _open_folder(
    folder: Path, spec: str, label: str, hub: HubSpec | None = None, remote: Remote | None = None
) -> ModelSource:
    """A save_pretrained folder or a hub snapshot: config, and weights by their index."""
    from embedcli.checkpoint import Checkpoint
    from embedcli.shards import ShardedCheckpoint

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


def _shard_opener(folder: Path, hub: HubSpec | None, remote: Remote | None = None) -> Any:
    """Open one shard of a folder; in a hub snapshot, a shard not downloaded is read through
    embedcli's tensor cache, and fetched by the byte when ``remote`` (downloads allowed)."""
    from embedcli.checkpoint import Checkpoint

    def opener(filename: str) -> Any:
        path = folder / filename
        if path.is_file() or hub is None:
            if not path.is_file():
                raise WeightsError(f"{path} is listed in the index but missing")
            return Checkpoint(path)
        from embedcli.shards import RemoteSafetensors

        return RemoteSafetensors(remote, hub, folder.name, filename)

    return opener


def _open_hub(spec: HubSpec, allowed: bool) -> ModelSource:
    snapshot = cached_snapshot(spec)
    if snapshot is not None and _has_weights(snapshot):
        remote = None
        if allowed:  # a shard the snapshot lacks may be fetched by the byte
            remote = Remote(spec)
            remote.commit = snapshot.name
        source = _open_folder(snapshot, str(spec), str(spec), spec, remote)
        source.commit = snapshot.name
        return source
    if allowed:
        return _open_remote(spec)
    if snapshot is not None:  # a snapshot without weights: the table may be in embedcli's cache
        from embedcli.shards import RemoteSafetensors

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


def _single_file(single: Any, path: Path, format: str) -> Any:
    """A hub model's one model.safetensors, behind the sharded interface (one shard)."""
    from embedcli.shards import ShardedCheckpoint

    weight_map = {name: WEIGHT_FILES[0] for name in single.entries}
    return ShardedCheckpoint(path, weight_map, lambda _: single, format)


def _has_weights(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (*INDEX_FILES, *WEIGHT_FILES))


def _open_remote(spec: HubSpec) -> ModelSource:
    """A hub model read over HTTP: config and index whole, safetensors headers by range."""
    from embedcli.shards import RemoteSafetensors, ShardedCheckpoint

    remote = Remote(spec)
    config_path = remote.file(CONFIG_FILE)
    config = (
        None
        if config_path is None
        else parse_config(read_json(config_path, "a model config"), f"{spec}/{CONFIG_FILE}")
    )
    index_path = remote.file(INDEX_FILES[0])
    commit = remote.resolve_commit(INDEX_FILES[0] if index_path else WEIGHT_FILES[0])
    if index_path is not None:
        weight_map = _weight_map(read_json(index_path, "a weights index"), index_path)
        shards = len(set(weight_map.values()))
        checkpoint: Any = ShardedCheckpoint(
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


# ---------------------------------------------------------------- tokenizers


def _tokenizer_files() -> tuple[str, ...]:
    from embedcli.modeltok import TOKENIZER_FILES

    return tuple(TOKENIZER_FILES)


def _has_tokenizer(folder: Path) -> bool:
    return any((folder / name).is_file() for name in _tokenizer_files()) or any(
        folder.glob("*.tiktoken")
    )


def tokenizer_source(weights: str | Path) -> str | None:
    """The tokenizer a --weights source brings (as an -e value): a hub model's, a model
    folder's; GPT-2's encoding for a GPT-2 folder without tokenizer files; None for a bare
    checkpoint file. A model folder with another tokenizer is an error without -e: GPT-2's ids
    would fit its table and give the wrong rows, silently."""
    from embedcli.errors import EncodingError

    text = str(weights)
    if HubSpec.parse(text) is not None:
        return text
    path = Path(text)
    if not path.is_dir():
        return None
    if _has_tokenizer(path):
        return text
    config = folder_config(path)
    if config is None or (config.model_type == "gpt2" and config.vocab_size in (None, 50257)):
        return None  # a bare folder of tables, or GPT-2 itself: the gpt2 encoding is right
    raise EncodingError(
        f"{path} holds a {config.model_type or 'model'} but no tokenizer files "
        f"({', '.join(_tokenizer_files())}); pass -e with its tokenizer (a file, a folder, or "
        "hf:ORG/NAME) or an encoding"
    )


def load_tokenizer(name: str) -> Any:
    """A model's tokenizer from a file, a model folder, or hf:ORG/NAME (the cache first; the
    network only when allowed, and then only the tokenizer files)."""
    from embedcli.errors import EncodingError
    from embedcli.hub import download_requested

    spec = HubSpec.parse(name)
    if spec is None:
        path = Path(name)
        if not path.exists():
            raise EncodingError(f"cannot read the tokenizer {name}: no such file or folder")
        # a file is named with its folder: llama3/tokenizer.model, llama4/tokenizer.model
        label = f"{path.parent.name}/{path.name}" if path.is_file() and path.parent.name else None
        return _loaded_tokenizer(path, label or path.name or name)
    snapshot = cached_snapshot(spec)
    if snapshot is not None and _has_tokenizer(snapshot):
        return _loaded_tokenizer(snapshot, str(spec))
    if not download_allowed(download_requested()):
        raise not_cached(spec, "the tokenizer")
    remote = Remote(spec)
    for filename in _tokenizer_files():
        found = remote.file(filename)
        if found is not None:
            return _loaded_tokenizer(found, str(spec))
    raise EncodingError(
        f"{spec} has no tokenizer files ({', '.join(_tokenizer_files())}); pass -e with an "
        "encoding or a tokenizer file"
    )


def _loaded_tokenizer(path: Path, name: str) -> Any:
    """Load a tokenizer once per process for the same file (a command may ask several times)."""
    try:
        stat = path.stat()
    except OSError as exc:
        from embedcli.errors import EncodingError

        raise EncodingError(f"cannot read the tokenizer {path}: {exc.strerror or exc}") from None
    # absolute, not resolved: a hub snapshot's file is a link to a blob named by its hash,
    # and the tokenizer's kind is told by the name (tokenizer.json, tokenizer.model)
    return _load_once(str(path.absolute()), stat.st_mtime_ns, stat.st_size, name)


@lru_cache(maxsize=8)
def _load_once(path: str, mtime: int, size: int, name: str) -> Any:
    from embedcli.modeltok import load_model_tokenizer

    return load_model_tokenizer(Path(path), name=name)
