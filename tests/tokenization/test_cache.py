"""The parsed-ranks cache: keyed by verified hashes, atomic, self-checking, safe to delete."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from embedcli.errors import EncodingError
from embedcli.io import cache
from embedcli.tokenization import encodings

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


@pytest.fixture
def cache_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    encodings.get_encoding.cache_clear()
    yield folder
    encodings.get_encoding.cache_clear()


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the published files were parsed although the cache had them")

    monkeypatch.setattr(encodings, "parse_tiktoken_bpe", refuse)
    monkeypatch.setattr(encodings, "parse_data_gym", refuse)


def test_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "x"))
    assert cache.cache_dir() == tmp_path / "x"
    monkeypatch.setenv(cache.CACHE_ENV, "")
    assert cache.cache_dir() is None
    monkeypatch.delenv(cache.CACHE_ENV)
    # platformdirs decides the place: XDG_CACHE_HOME on Linux, ~/.cache without it.
    from platformdirs import user_cache_path

    assert cache.cache_dir() == user_cache_path("embedcli", appauthor=False)
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache.cache_dir() == tmp_path / "xdg" / "embedcli"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert cache.cache_dir() == Path.home() / ".cache" / "embedcli"


@pytest.mark.parametrize("name", encodings.BUNDLED_ENCODINGS)
def test_second_load_comes_from_the_cache(cache_at: Path, monkeypatch, name: str) -> None:
    first = encodings.get_encoding(name)
    assert len(list(cache_at.glob("ranks-*.bin"))) >= 1
    assert not list(cache_at.glob("*.tmp"))
    expected = first._mergeable_ranks
    encodings.get_encoding.cache_clear()
    _no_parsing(monkeypatch)
    again = encodings.get_encoding(name)
    assert again._mergeable_ranks == expected
    assert again.encode("Hello, world!") == first.encode("Hello, world!")


def test_entry_is_keyed_by_the_verified_hash(cache_at: Path) -> None:
    encodings.get_encoding("o200k_base")
    assert (cache_at / f"ranks-{O200K_SHA256}.bin").is_file()


@pytest.mark.parametrize("damage", ["truncate", "flip", "header", "empty"])
def test_damaged_entry_is_rebuilt(cache_at: Path, damage: str) -> None:
    encodings.get_encoding("o200k_base")
    entry = cache_at / f"ranks-{O200K_SHA256}.bin"
    data = bytearray(entry.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[-10] ^= 0xFF
    elif damage == "header":
        data[:5] = b"other"
    else:
        data = bytearray()
    entry.write_bytes(bytes(data))
    assert cache.load_ranks(O200K_SHA256) is None
    encodings.get_encoding.cache_clear()
    assert encodings.get_encoding("o200k_base").encode("tiktoken is great!") == [
        83,
        8251,
        2488,
        382,
        2212,
        0,
    ]
    assert cache.load_ranks(O200K_SHA256) is not None  # written again, whole


def test_deleting_the_cache_is_safe(cache_at: Path) -> None:
    encodings.get_encoding("gpt2")
    for entry in cache_at.iterdir():
        entry.unlink()
    cache_at.rmdir()
    encodings.get_encoding.cache_clear()
    assert encodings.get_encoding("gpt2").encode("Hello, world!") == [15496, 11, 995, 0]


def test_unwritable_cache_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))
    encodings.get_encoding.cache_clear()
    assert encodings.get_encoding("gpt2").encode("Hello, world!") == [15496, 11, 995, 0]
    encodings.get_encoding.cache_clear()


def test_empty_variable_turns_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    encodings.get_encoding.cache_clear()
    encodings.get_encoding("gpt2")
    encodings.get_encoding.cache_clear()
    assert list(tmp_path.rglob("ranks-*")) == []


def test_entries_are_named_by_a_sha256(cache_at: Path) -> None:
    """gpt2 reads two files: its entry is keyed by a SHA-256 of both expected hashes."""
    encodings.get_encoding("gpt2")
    names = [p.name for p in cache_at.iterdir()]
    assert len(names) == 1
    digest = names[0].removeprefix("ranks-").removesuffix(".bin")
    assert len(digest) == 64 and int(digest, 16) >= 0


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_published_hash_is_verified_once_when_written(
    cache_at: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The 90 ms check of the ranks against the published hash runs when an entry is written,
    never when one is loaded (the entry's own checksum catches damage there)."""
    calls: list[int] = []
    real = encodings.ranks_sha256
    monkeypatch.setattr(encodings, "ranks_sha256", lambda r: calls.append(1) or real(r))
    encodings.get_encoding.cache_clear()
    encodings.get_encoding(name)
    assert calls == [1] and len(list(cache_at.glob("ranks-*.bin"))) == 1
    encodings.get_encoding.cache_clear()
    assert encodings.get_encoding(name).encode("Hello world")
    assert calls == [1]  # the second load came from the entry, unchecked against the hash


def test_ranks_that_miss_the_published_hash_are_refused(
    cache_at: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranks built wrong (a parser bug, say) are neither used nor stored."""
    monkeypatch.setattr(encodings, "ranks_sha256", lambda ranks: "0" * 64)
    encodings.get_encoding.cache_clear()
    with pytest.raises(EncodingError, match="do not hash as the published file does"):
        encodings.get_encoding("o200k_base")
    encodings.get_encoding.cache_clear()
    assert list(cache_at.glob("ranks-*.bin")) == []


@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_an_entry_that_is_no_regular_file_is_rebuilt(cache_at: Path, kind: str) -> None:
    """A FIFO in an entry's place is never waited on; a link to /dev/zero, or a file past any
    entry's size, is never read whole (the hostile trial: 23 GiB, then killed)."""
    import os

    encodings.get_encoding("cl100k_base")
    (entry,) = cache_at.glob("ranks-*.bin")
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "zero":
        entry.symlink_to("/dev/zero")
    else:
        with entry.open("wb") as handle:
            handle.truncate(cache.MAX_ENTRY_BYTES + 1)  # sparse: no bytes on disk
    assert cache.load_ranks(entry.stem.removeprefix("ranks-")) is None
    encodings.get_encoding.cache_clear()
    assert encodings.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    encodings.get_encoding.cache_clear()
