"""``ollama:NAME[:TAG]``: a model pulled by Ollama, found through its local manifests, offline.

Ollama keeps a manifest per model and tag under ``<models>/manifests/<registry>/<namespace>/
<name>/<tag>`` (registry ``registry.ollama.ai`` and namespace ``library`` unless the name says
otherwise, tag ``latest`` by default), and the files it names by digest under
``<models>/blobs/sha256-<hex>``. ``<models>`` is ``$OLLAMA_MODELS``, else ``~/.ollama/models``.
The weights are the layer whose media type is ``application/vnd.ollama.image.model``: a GGUF
file. Its size is checked against the manifest; its digest is not recomputed (Ollama checked it
when it pulled the file, and hashing gigabytes would cost more than the lookup).

``describe`` lists the manifest's other layers as well (the chat template, the sampling
parameters, the license, a system prompt, a vision projector, an adapter), reads the small
text ones (a template, the parameters' JSON, the config blob's family and quantization), each
bounded, and says of every layer whether its blob is here.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from embedcli.errors import WeightsError

PREFIX = "ollama:"
REGISTRY = "registry.ollama.ai"
NAMESPACE = "library"
MODEL_LAYER = "application/vnd.ollama.image.model"
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
MAX_MANIFEST = 1 << 20
MAX_TEXT = 1 << 16  # bytes of a template, parameters or config blob read
MEDIA = "application/vnd.ollama.image."  # a layer's media type: this, then its kind


@dataclass(frozen=True)
class OllamaLayer:
    """One layer of a manifest: what it is (model, template, params, license, system,
    projector, adapter, messages), its blob's digest and size, and whether the blob is here."""

    kind: str
    media_type: str
    digest: str | None
    size: int | None
    here: bool


@dataclass(frozen=True)
class OllamaModel:
    """An Ollama model as its manifest lists it."""

    name: str  # NAMESPACE/MODEL:TAG as ollama names it
    manifest: str
    blob: str  # the model layer's GGUF file
    layers: list[OllamaLayer]
    config: dict[str, Any] | None = None  # the config blob's model_family, file_type, ...
    template: str | None = None  # the chat template (Go's text/template), as the blob holds it
    params: Any = None  # the sampling parameters (stop strings, temperature...), as JSON
    notes: list[str] = field(default_factory=list)  # what could not be read, and why


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
    name, colon, tag = text.partition(":")
    tag = tag or ("" if colon else "latest")  # "NAME:" names no tag: refused below
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
    return _resolve(spec)[0]


def describe(spec: str) -> OllamaModel:
    """The model's manifest: every layer, and the small text ones read (bounded)."""
    blob, manifest, data = _resolve(spec)
    registry, namespace, model, tag = parse_name(spec)
    base = models_dir()
    entries = [x for x in data["layers"] if isinstance(x, dict)]
    config_entry = data.get("config") if isinstance(data.get("config"), dict) else None
    layers = [_layer(base, entry) for entry in entries]
    notes: list[str] = []
    texts: dict[str, tuple[str, bool]] = {}
    for layer in layers:
        if layer.kind in ("template", "params") and layer.here and layer.kind not in texts:
            texts[layer.kind] = _text(base, layer, notes)
    params = None
    if "params" in texts:
        params = _json(*texts["params"], "params layer", notes)
    config = None
    if config_entry is not None:
        found = _layer(base, config_entry)
        if found.here:
            loaded = _json(*_text(base, found, notes), "config blob", notes)
            if isinstance(loaded, dict):
                wanted = ("model_format", "model_family", "model_families", "model_type",
                          "file_type", "renderer", "parser")  # fmt: skip
                config = {k: loaded[k] for k in wanted if k in loaded}
    prefix = "" if registry == REGISTRY else f"{registry}/"
    label = f"{prefix}{'' if namespace == NAMESPACE else namespace + '/'}{model}:{tag}"
    template = texts["template"][0] if "template" in texts else None
    return OllamaModel(label, str(manifest), str(blob), layers, config, template, params, notes)


def _json(text: str, whole: bool, what: str, notes: list[str]) -> Any:
    """A layer's JSON, or None with a note saying why not (``whole``: all of it was read)."""
    if not whole:
        notes.append(f"its {what} is not parsed: only its first {MAX_TEXT:,} bytes were read")
        return None
    try:
        return json.loads(text)
    except RecursionError:
        notes.append(f"its {what} nests its JSON too deeply to read")
    except json.JSONDecodeError:
        notes.append(f"its {what} is not JSON")
    except ValueError:  # int() refuses a number of more digits than Python reads
        notes.append(f"its {what} holds a number too long to read")
    return None


def _layer(base: Path, entry: dict) -> OllamaLayer:
    media = str(entry.get("mediaType", ""))
    digest, size = entry.get("digest"), entry.get("size")
    digest = digest if isinstance(digest, str) and _DIGEST.fullmatch(digest) else None
    size = size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None
    kind = media.removeprefix(MEDIA) if media.startswith(MEDIA) else "config"
    here = digest is not None and (base / "blobs" / digest.replace(":", "-")).is_file()
    return OllamaLayer(kind, media, digest, size, here)


def _text(base: Path, layer: OllamaLayer, notes: list[str]) -> tuple[str, bool]:
    """A small layer's text: its first MAX_TEXT bytes, decoded as UTF-8 (a byte that is not
    shown as U+FFFD, and said), and whether that is all of it."""
    assert layer.digest is not None
    path = base / "blobs" / layer.digest.replace(":", "-")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_TEXT + 1)
    except OSError as exc:
        notes.append(f"cannot read its {layer.kind} layer: {exc.strerror or exc}")
        return "", False
    whole = len(raw) <= MAX_TEXT
    if not whole:
        what = "blob" if layer.kind == "config" else "layer"
        notes.append(f"its {layer.kind} {what} is longer than {MAX_TEXT:,} bytes: the first shown")
        raw = raw[:MAX_TEXT]
    try:
        return raw.decode("utf-8"), whole
    except UnicodeDecodeError:
        notes.append(f"its {layer.kind} layer is not UTF-8 text: bytes shown as U+FFFD")
        return raw.decode("utf-8", errors="replace"), whole


def _resolve(spec: str) -> tuple[Path, Path, dict]:
    """(the GGUF blob, the manifest, its JSON) of an Ollama model."""
    registry, namespace, model, tag = parse_name(spec)
    base = models_dir()
    if not base.is_dir():
        where = "$OLLAMA_MODELS" if os.environ.get("OLLAMA_MODELS") else "Ollama's default"
        raise WeightsError(
            f"{base} ({where}) is no folder: no Ollama store is there, so {spec} cannot be "
            "found (set OLLAMA_MODELS to the folder Ollama keeps its models in)"
        )
    manifest = _matching(base / "manifests", registry, namespace, model, tag)
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
    data = _read_manifest(manifest)
    layer = _model_layer(manifest, data)
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
    assert isinstance(data, dict)
    return blob, manifest, data


def _matching(root: Path, *parts: str) -> Path:
    """``root/parts...``, each part matched regardless of case where no entry has it exactly
    (Ollama matches model names so); the exact path where none matches."""
    found = root
    for part in parts:
        exact = found / part
        if exact.exists() or not found.is_dir():
            found = exact
            continue
        same = [p for p in found.iterdir() if p.name.lower() == part.lower()]
        found = same[0] if len(same) == 1 else exact
    return found


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
