"""Files under an fsspec URL (s3://, gs://, file://, ...) for ``count``: listed by the URL's own
file system, with the walk's rules for dot-names, .git and --ignore/--include (no .gitignore files
are read there). A file that cannot be counted (a broken link, a FIFO, one that vanished or cannot
be read) is skipped with its reason; only a URL that cannot be listed at all is an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from embedcli.corpus.listing import FIRST_BLOCK, GLOB_CHARS, Found, Selection, Skipped
from embedcli.errors import InputTextError, MissingExtraError, UsageError


def walk_url(url: str, selection: Selection, include: Any, extra: Any) -> Iterator[Found | Skipped]:
    """Every file under ``url`` in name order, counted or skipped; a glob that matches nothing,
    or a URL that names nothing, is an :class:`InputTextError`."""
    fs, root = _filesystem(url)
    protocol = url.split("://", 1)[0]
    listed = 0
    try:
        for name, info in _listing(fs, root):
            location = name if "://" in name else f"{protocol}://{name}"
            relative = name[len(root) :].lstrip("/") if name.startswith(root) else name
            parts = relative.split("/")
            if ".git" in parts or (not selection.hidden and any(p.startswith(".") for p in parts)):
                continue
            if extra is not None and extra.check_file(relative).include:
                continue
            if include is not None and not include.check_file(relative).include:
                continue
            listed += 1
            yield _one(fs, name, info, location, protocol, selection)
    except InputTextError:
        raise
    except FileNotFoundError:
        raise InputTextError(f"cannot read {url}: no such file or folder") from None
    except Exception as exc:  # each file system raises its own (connection, parse errors)
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise InputTextError(f"cannot read {url}: {first}") from None
    if not listed and GLOB_CHARS & set(root):
        raise InputTextError(f"no file matches {url}")


def _listing(fs: Any, root: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, info) of each entry under ``root`` that is not a folder, in name order. Entries
    met while listing keep their own type (a link is a link); a root named outright is
    followed."""
    if GLOB_CHARS & set(root):
        found = fs.glob(root, detail=True)
    elif fs.isdir(root):
        found = fs.find(root, detail=True)
    else:
        found = {root: fs.info(root)}
    for name in sorted(found):
        if found[name].get("type") != "directory":
            yield name, found[name]


def _one(
    fs: Any, name: str, info: dict[str, Any], location: str, protocol: str, selection: Selection
) -> Found | Skipped:
    """One listed entry, counted or skipped with why; its first block is read to tell a binary
    (a FIFO is never opened: it would wait for a writer)."""
    if info.get("islink"):
        if protocol in ("file", "local") and not os.path.exists(name):
            return Skipped(location, "broken link")
        return Skipped(location, "symlink, not followed (name it to count it)")
    kind = info.get("type")
    if kind not in ("file", None):
        return Skipped(location, "not a regular file")
    size = int(info.get("size") or 0)
    if selection.max_file_size is not None and size > selection.max_file_size:
        return Skipped(location, f"{size:,} bytes, over --max-file-size")
    try:
        with fs.open(name, "rb") as handle:
            head = handle.read(FIRST_BLOCK)
    except FileNotFoundError:
        return Skipped(location, "vanished before it was read")
    except PermissionError as exc:
        return Skipped(location, f"unreadable: {exc.strerror or 'permission denied'}")
    except IsADirectoryError:
        return Skipped(location, "not a regular file")
    if b"\0" in head:
        return Skipped(location, "binary")
    return Found(location, location, size)


def _filesystem(url: str) -> tuple[Any, str]:
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise MissingExtraError(
            f"{url} is a URL: reading it needs fsspec, which the dask extra brings "
            "(pip install 'embedcli[dask]'), or pip install fsspec"
        ) from None
    try:
        return url_to_fs(url)
    except ImportError as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise UsageError(f"cannot open {url}: {first}") from None
    except Exception as exc:  # a bad URL, or a file system that cannot start
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise InputTextError(f"cannot open {url}: {first}") from None
