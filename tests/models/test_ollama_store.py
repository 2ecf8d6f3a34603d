"""Ollama stores that are damaged: manifests Python cannot read, layer sizes that are no byte
count, blobs and manifests that are not regular files, each one ``Error:`` line that says what it
is."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from support.ggufbytes import gguf_file
from support.helpers import expect_error, make_runner

from embedcli.cli import app

pytest.importorskip("gguf")

runner = make_runner()


def ollama_store(root: Path, gguf: Path, **layer: object) -> tuple[Path, Path]:
    """An Ollama store holding ``gguf`` as the model ollama:tiny (its manifest, its blob);
    ``layer``: fields of the model layer written over the right ones."""
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    blob = root / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir(parents=True)
    shutil.copy(gguf, blob)
    model = {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"}
    model |= {"size": gguf.stat().st_size, **layer}
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": [model]}))
    return manifest, blob


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    return tmp_path / "ollama"


def test_ollama_manifests_python_cannot_read_are_said_as_they_are(
    tmp_path: Path, store: Path
) -> None:
    """A manifest nested 100,000 deep (RecursionError) or holding a 5,001-digit number (valid
    JSON that int() refuses): one line that says so, never a traceback or "not JSON"."""
    manifest, _ = ollama_store(store, gguf_file(tmp_path / "model.gguf"))
    cases = {
        "[" * 100_000 + "]" * 100_000: "nests its JSON too deeply for Python's parser to read",
        '{"layers": [], "n": ' + "9" * 5001 + "}": "holds a number too long to read",
        "{": "is not JSON: the Ollama manifest is damaged",
        "{}".encode("utf-16"): "lists no layers",  # JSON in UTF-16 is JSON
        b"\x80\x81": "is not JSON's UTF-8 (nor UTF-16 or UTF-32) text",
    }
    for text, message in cases.items():
        manifest.write_bytes(text if isinstance(text, bytes) else text.encode())
        expect_error(runner.invoke(app, ["weights", "ollama:tiny"]), message)


@pytest.mark.parametrize("size", ["12", True, -1, None, 1.5])
def test_an_ollama_layer_size_that_is_not_a_byte_count_is_refused(
    tmp_path: Path, store: Path, size: object
) -> None:
    ollama_store(store, gguf_file(tmp_path / "model.gguf"), size=size)
    result = runner.invoke(app, ["weights", "ollama:tiny"])
    expect_error(result, f"the model layer's size {repr(size)[:40]} is not a byte count")


@pytest.mark.parametrize("kind", ["folder", "fifo", "link to /dev/zero", "dangling link"])
def test_an_ollama_blob_that_is_not_a_file_is_said_as_it_is(
    tmp_path: Path, store: Path, kind: str
) -> None:
    """A blob that is there but is no regular file is not "not in blobs"; nor is a manifest."""
    manifest, blob = ollama_store(store, gguf_file(tmp_path / "model.gguf"))
    blob.unlink()
    make = {
        "folder": blob.mkdir,
        "fifo": lambda: os.mkfifo(blob),
        "link to /dev/zero": lambda: blob.symlink_to("/dev/zero"),
        "dangling link": lambda: blob.symlink_to(tmp_path / "gone"),
    }
    make[kind]()
    said = {"folder": "is a folder", "dangling link": "is a symbolic link to"}
    message = f"{blob} {said.get(kind, 'is not a regular file')}"
    expect_error(runner.invoke(app, ["weights", "ollama:tiny"]), message)
    if kind == "folder":
        manifest.unlink()
        manifest.mkdir()
        expect_error(runner.invoke(app, ["weights", "ollama:tiny"]), f"{manifest} is a folder")


def _with_layer(manifest: Path, store: Path, kind: str, data: bytes | None) -> None:
    """Add a layer of ``kind`` to the manifest; its blob written unless ``data`` is None."""
    digest = hashlib.sha256(data or b"gone").hexdigest()
    if data is not None:
        (store / "blobs" / f"sha256-{digest}").write_bytes(data)
    entry = {"mediaType": f"application/vnd.ollama.image.{kind}", "digest": f"sha256:{digest}"}
    entry["size"] = len(data or b"gone")
    doc = json.loads(manifest.read_text())
    doc["layers"].append(entry)
    manifest.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("kind", "data", "said"),
    [
        ("template", b"\xff\xfe{{ .Prompt }}", "its template layer is not UTF-8 text"),
        ("template", b"x" * (1 << 16) + b"y", "longer than 65,536 bytes: the first shown"),
        ("params", b"{not json", "its params layer is not JSON"),
        ("params", b'{"n": ' + b"9" * 5001 + b"}", "its params layer holds a number too long"),
        ("license", None, "license 4 B (blob not here)"),
    ],
)
def test_layers_that_cannot_be_read_are_said(
    kind: str, data: bytes | None, said: str, tmp_path: Path, store: Path
) -> None:
    """A manifest's other layers never stop weights: a layer whose blob is missing, a template
    that is not UTF-8 or too long to show whole, params that are not JSON, each said."""
    manifest, _ = ollama_store(store, gguf_file(tmp_path / "model.gguf"))
    _with_layer(manifest, store, kind, data)
    result = runner.invoke(app, ["weights", "ollama:tiny"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert said in result.stdout
    report = json.loads(runner.invoke(app, ["weights", "ollama:tiny", "--json"]).stdout)
    kinds = [layer["kind"] for layer in report["ollama"]["layers"]]
    assert kinds == ["model", kind]


def test_a_template_is_shown_as_text_never_as_markup(tmp_path: Path, store: Path) -> None:
    manifest, _ = ollama_store(store, gguf_file(tmp_path / "model.gguf"))
    _with_layer(manifest, store, "template", b"[bold red]{{ .Prompt }}[/]\x1b[2J\n")
    view = runner.invoke(app, ["weights", "ollama:tiny"], terminal_width=200).stdout
    assert "[bold red]{{ .Prompt }}[/]" in view and "\x1b" not in view


def test_names_as_ollama_matches_them(tmp_path: Path, store: Path, monkeypatch) -> None:
    """A name in another case finds the model, as Ollama's own lookup does; an empty tag is
    refused; a store folder that is not there is said to be missing, not the model."""
    ollama_store(store, gguf_file(tmp_path / "model.gguf"))
    assert runner.invoke(app, ["weights", "ollama:TINY:Latest"]).exit_code == 0
    expect_error(runner.invoke(app, ["weights", "ollama:tiny:"]), "is not an Ollama model name")
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "nowhere"))
    expect_error(runner.invoke(app, ["weights", "ollama:tiny"]), "nowhere ($OLLAMA_MODELS) is no")
