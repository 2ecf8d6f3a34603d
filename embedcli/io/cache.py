"""A user cache of parsed BPE ranks, so that start-up skips parsing the published files.

Each entry is keyed by the SHA-256 of the verified files it was parsed from, carries a checksum of
its own payload, is written atomically, and is safe to delete at any time: a missing, stale or
damaged entry is simply rebuilt. ``EMBEDCLI_CACHE_DIR`` overrides the location; set it to an empty
string to turn the cache off.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import stat
from pathlib import Path

from embedcli.io.outputs import atomic_write

CACHE_ENV = "EMBEDCLI_CACHE_DIR"
# Bump v1 when the payload layout changes; marshal's own version guards across Pythons.
_FORMAT = b"embedcli-ranks-v1 marshal-%d\n" % marshal.version


def cache_dir() -> Path | None:
    """Where the cache lives (platformdirs' user cache location), or None when turned off."""
    override = os.environ.get(CACHE_ENV)
    if override is not None:
        return Path(override) if override else None
    from platformdirs import user_cache_path

    return user_cache_path("embedcli", appauthor=False)


def _entry(key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"ranks-{key}.bin"


def load_ranks(key: str) -> dict[bytes, int] | None:
    """The cached ranks for ``key``, or None when absent, damaged or of another format."""
    path = _entry(key)
    if path is None:
        return None
    data = read_regular(path)
    if data is None:
        return None
    start = len(_FORMAT)
    header, digest, payload = data[:start], data[start : start + 32], data[start + 32 :]
    if header != _FORMAT or hashlib.sha256(payload).digest() != digest:
        return None
    try:
        ranks = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    return ranks if isinstance(ranks, dict) else None


MAX_ENTRY_BYTES = 64 << 20  # o200k_base's entry is about 4 MiB


def read_regular(path: Path, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """An entry's bytes, if it is a regular file of at most ``limit`` bytes: a FIFO, a device (a
    link to /dev/zero) or a huge file in its place is no entry, so it is never waited on or read
    whole."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def store_ranks(key: str, ranks: dict[bytes, int]) -> None:
    """Write an entry atomically; a cache that cannot be written is silently skipped."""
    path = _entry(key)
    if path is None:
        return
    payload = marshal.dumps(ranks)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, record=False) as handle:
            handle.write(_FORMAT + hashlib.sha256(payload).digest() + payload)
    except OSError:
        pass  # read-only home, full disk: the cache is an optimisation, never a requirement
