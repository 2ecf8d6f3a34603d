"""``ollama:NAME[:TAG]``: a model pulled by Ollama, found through its local manifests, offline.

Ollama keeps a manifest per model and tag under ``<models>/manifests/<registry>/<namespace>/
<name>/<tag>`` (registry ``registry.ollama.ai`` and namespace ``library`` unless the name says
otherwise, tag ``latest`` by default), and the files it names by digest under
``<models>/blobs/sha256-<hex>``. ``<models>`` is ``$OLLAMA_MODELS``, else ``~/.ollama/models``.
The weights are the layer whose media type is ``application/vnd.ollama.image.model``: a GGUF
file. Its size is checked against the manifest; its digest is not recomputed (Ollama checked it
when it pulled the file, and hashing gigabytes would cost more than the lookup).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from embedcli.errors import WeightsError

PREFIX = "ollama:"
REGISTRY = "registry.ollama.ai"
NAMESPACE = "library"
MODEL_LAYER = "application/vnd.ollama.image.model"
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
MAX_MANIFEST = 1 << 20


def is_ollama(spec: str) -> bool:
    """Whether a source is written ollama:NAME[:TAG]."""
    return spec.startswith(PREFIX)


def models_dir() -> Path:
    """Where Ollama keeps its models: $OLLAMA_MODELS, else ~/.ollama/models."""
    found = os.environ.get("OLLAMA_MODELS")
    return Path(found).expanduser() if found else Path.home() / ".ollama" / "models"


def parse_name(spec: str) -> tuple[str, str, str, str]:
    """(registry, namespace, model, tag) of ``ollama:[REGISTRY/][NAMESPACE/]MODEL[:TAG]``."""
    text = spec[len(PREFIX) :]
    name, _, tag = text.partition(":")
    tag = tag or "latest"
    parts = name.split("/")
    if not 1 <= len(parts) <= 3 or not all(_PART.fullmatch(p) for p in [*parts, tag]):
        raise WeightsError(
            f"{spec!r} is not an Ollama model name: write ollama:NAME[:TAG], e.g. "
            "ollama:llama3.2 or ollama:qwen2.5:0.5b"
        )
    if len(parts) == 1:
        return REGISTRY, NAMESPACE, parts[0], tag
    if len(parts) == 2:
        return REGISTRY, parts[0], parts[1], tag
    return parts[0], parts[1], parts[2], tag


def resolve(spec: str) -> Path:
    """The GGUF blob of an Ollama model, through its manifest."""
    registry, namespace, model, tag = parse_name(spec)
    base = models_dir()
    manifest = base / "manifests" / registry / namespace / model / tag
    if not manifest.is_file():
        _not_a_file(manifest, "an Ollama manifest")
        tags = base / "manifests" / registry / namespace / model
        known = sorted(p.name for p in tags.iterdir()) if tags.is_dir() else []
        hint = (
            f"its tags here: {', '.join(known)}"
            if known
            else f"`ollama pull {model}` fetches it (embedcli never downloads from Ollama)"
        )
        raise WeightsError(f"no Ollama model {spec[len(PREFIX) :]!r} in {base}: {hint}")
    layer = _model_layer(manifest, _read_manifest(manifest))
    digest, size = layer.get("digest"), layer.get("size")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise WeightsError(f"{manifest}: the model layer's digest {digest!r} is not sha256:<hex>")
    given = "size" in layer  # Ollama always writes one; one that is there must be a count
    if given and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise WeightsError(
            f"{manifest}: the model layer's size {repr(size)[:40]} is not a byte count: the "
            "Ollama manifest is damaged"
        )
    blob = base / "blobs" / digest.replace(":", "-")
    if not blob.is_file():
        _not_a_file(blob, "a model's weights")
        raise WeightsError(
            f"{spec}: the manifest names {blob.name}, which is not in {base / 'blobs'} (an "
            "interrupted pull? `ollama pull` completes it)"
        )
    held = blob.stat().st_size
    if given and held != size:
        raise WeightsError(
            f"{blob} holds {held:,} bytes and the manifest says {size:,}: the file is not the "
            "one the manifest names (incomplete, or damaged)"
        )
    return blob


def _not_a_file(path: Path, what: str) -> None:
    """Refuse a path that is there but is no regular file (a folder, a FIFO, a device, or a
    link to one), saying what it is; a path that is not there at all passes."""
    import stat

    try:
        mode = path.stat().st_mode  # through a symbolic link, as reading it would go
    except FileNotFoundError:
        if path.is_symlink():
            raise WeightsError(
                f"{path} is a symbolic link to {os.readlink(path)}, which does not exist"
            ) from None
        return
    except OSError as exc:
        raise WeightsError(f"cannot read {path}: {exc.strerror or exc}") from None
    kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
    raise WeightsError(f"{path} is {kind}: it cannot be read as {what}")


def _read_manifest(manifest: Path) -> object:
    """The manifest's JSON, each way it can fail said as it is."""
    try:
        if manifest.stat().st_size > MAX_MANIFEST:
            raise WeightsError(f"{manifest} is too large to be an Ollama manifest")
        raw = manifest.read_bytes()
    except OSError as exc:
        raise WeightsError(f"cannot read {manifest}: {exc.strerror or exc}") from None
    damaged = "the Ollama manifest is damaged"
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise WeightsError(
            f"{manifest} is not JSON's UTF-8 (nor UTF-16 or UTF-32) text: {damaged}"
        ) from None
    except json.JSONDecodeError:
        raise WeightsError(f"{manifest} is not JSON: {damaged}") from None
    except RecursionError:
        raise WeightsError(
            f"{manifest} nests its JSON too deeply for Python's parser to read (an Ollama "
            f"manifest is two levels deep): {damaged}"
        ) from None
    except ValueError:  # int() refuses a number of more than sys.get_int_max_str_digits()
        raise WeightsError(
            f"{manifest} holds a number too long to read ({sys.get_int_max_str_digits():,} "
            f"digits at most): {damaged}"
        ) from None


def _model_layer(manifest: Path, data: object) -> dict:
    """The one layer whose media type is a model's."""
    layers = data.get("layers") if isinstance(data, dict) else None
    if not isinstance(layers, list):
        raise WeightsError(f"{manifest} lists no layers: the Ollama manifest is damaged")
    models = [x for x in layers if isinstance(x, dict) and x.get("mediaType") == MODEL_LAYER]
    if len(models) != 1:
        raise WeightsError(
            f"{manifest} names {len(models)} model layers ({MODEL_LAYER}); embedcli reads a "
            "model with exactly one"
        )
    return models[0]
