"""Sockets and environment: loopback only. The project's conftest refuses every socket connection;
``allow_loopback`` re-allows 127.0.0.1 (and only that) for a test that talks to a ``FakeHub``,
and ``offline_env`` and ``point_hub_at`` set the environment a hub test runs in."""

from __future__ import annotations

import _socket
import socket
import tempfile
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest


# --------------------------------------------------------------------------------------------
# Sockets and environment: loopback only
# --------------------------------------------------------------------------------------------

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
# A local port nothing listens on: a hub client pointed here fails at once, on this machine.
REFUSED_ENDPOINT = "http://127.0.0.1:9"


def _loopback_host(address: object) -> str | None:
    """The numeric loopback address of a (host, port, ...) tuple; None if it is anything else."""
    if isinstance(address, tuple) and address and isinstance(address[0], str):
        host = address[0]
        if host in LOOPBACK_HOSTS:
            return "::1" if host == "::1" else "127.0.0.1"
    return None


def _refuse(address: object) -> OSError:
    return OSError(f"tests must not touch the network (only loopback is allowed): {address!r}")


def _loopback_connect(self: socket.socket, address: Any) -> None:
    host = _loopback_host(address)
    if host is None:
        raise _refuse(address)
    _socket.socket.connect(self, (host, *address[1:]))


def _loopback_create_connection(
    address: tuple[str, int],
    timeout: Any = socket._GLOBAL_DEFAULT_TIMEOUT,  # type: ignore[attr-defined]
    source_address: tuple[str, int] | None = None,
    **kwargs: Any,
) -> socket.socket:
    host = _loopback_host(address)
    if host is None:
        raise _refuse(address)
    family = socket.AF_INET6 if host == "::1" else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:  # type: ignore[attr-defined]
            sock.settimeout(timeout)
        if source_address is not None:
            sock.bind(source_address)
        _socket.socket.connect(sock, (host, address[1]))
    except BaseException:
        sock.close()
        raise
    return sock


def _loopback_getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    if not isinstance(host, str) or host not in LOOPBACK_HOSTS:
        raise _refuse((host, port))
    return _socket.getaddrinfo("::1" if host == "::1" else "127.0.0.1", port, *args, **kwargs)


def allow_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allow socket connections to 127.0.0.1/::1/localhost only; everything else still raises."""
    monkeypatch.setattr(socket.socket, "connect", _loopback_connect)
    monkeypatch.setattr(socket, "create_connection", _loopback_create_connection)
    monkeypatch.setattr(socket, "getaddrinfo", _loopback_getaddrinfo)


def offline_env(
    target: pytest.MonkeyPatch | MutableMapping[str, str],
    *,
    endpoint: str | None = None,
    cache_dir: Path | None = None,
    home: Path | None = None,
    token: str | None = None,
    offline: bool = False,
) -> dict[str, str]:
    """Set the hub variables that keep a process local (a MonkeyPatch or an env dict); return them.

    HF_ENDPOINT is `endpoint` or a refused local port, so nothing can reach huggingface.co;
    telemetry, xet and progress bars are off; proxies are bypassed for loopback; HF_TOKEN is `token`
    or removed (with HUGGING_FACE_HUB_TOKEN). huggingface_hub reads most of these at import: they
    govern subprocesses; for this process see point_hub_at.
    """
    values = {
        "HF_ENDPOINT": endpoint or REFUSED_ENDPOINT,
        "HF_HUB_OFFLINE": "1" if offline else "0",
        "TRANSFORMERS_OFFLINE": "1" if offline else "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "DO_NOT_TRACK": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_DISABLE_SYMLINKS_WARNING": "1",
        "NO_PROXY": ",".join(LOOPBACK_HOSTS),
        "no_proxy": ",".join(LOOPBACK_HOSTS),
    }
    if cache_dir is not None:
        values["HF_HUB_CACHE"] = str(cache_dir)
    if home is not None:
        values["HF_HOME"] = str(home)
    if token is not None:
        values["HF_TOKEN"] = token
    removed = [] if token is not None else ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"]
    if isinstance(target, MutableMapping):
        target.update(values)
        for name in removed:
            target.pop(name, None)
    else:
        for name, value in values.items():
            target.setenv(name, value)
        for name in removed:
            target.delenv(name, raising=False)
    return values


def point_hub_at(
    monkeypatch: pytest.MonkeyPatch,
    endpoint: str,
    *,
    cache_dir: Path | None = None,
    token: str | None = None,
) -> None:
    """Make this process's huggingface_hub (and transformers) use endpoint, loopback only.

    Patches the module constants that huggingface_hub computed from the environment at import
    (ENDPOINT, the resolve URL template, HF_HUB_CACHE, the token file, offline and xet switches),
    allows loopback sockets, and sets offline_env for subprocesses.
    """
    from huggingface_hub import constants

    allow_loopback(monkeypatch)
    offline_env(monkeypatch, endpoint=endpoint, cache_dir=cache_dir, token=token)
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", template)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    # No stored token: only HF_TOKEN (or an explicit token=) authenticates.
    missing = Path(tempfile.gettempdir()) / "hubfixtures-no-token" / "token"
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(missing))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(missing.with_name("stored")))
    # huggingface_hub 2.4 fetches {ENDPOINT}/api/agent-harnesses once per process and caches the
    # answer under HF_HOME: kept out of the user's home (FakeHub answers it 404 anyway).
    monkeypatch.setattr(
        constants,
        "AGENT_HARNESSES_PATH",
        str(missing.with_name("agent_harnesses.json")),
        raising=False,
    )
    if cache_dir is not None:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache_dir))
