"""``FakeHub``: a local HTTP stand-in for the Hugging Face hub, serving folders on 127.0.0.1 the way
the hub's ``resolve`` and ``api`` routes do (routes.py), counting every byte it sends, with an
``intercept`` hook for the answers a real hub gives when things go wrong."""

from __future__ import annotations

import http.server
import socketserver
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

from support.hub.files import _check_commit, default_commit
from support.hub.routes import HubRoutes, Reply, body_length

# --------------------------------------------------------------------------------------------
# FakeHub: a local HTTP stand-in for the Hugging Face hub
# --------------------------------------------------------------------------------------------


class Served(NamedTuple):
    """One request FakeHub answered."""

    method: str
    path: str  # the URL path as sent (still percent-encoded), without the query
    range: str | None  # the Range header, if any
    nbytes: int  # body bytes sent


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    hub: FakeHub

    def server_bind(self) -> None:
        # HTTPServer.server_bind asks socket.getfqdn (a reverse DNS lookup): skipped.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeHub/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hub._handle(self, "GET")

    def do_HEAD(self) -> None:
        self.server.hub._handle(self, "HEAD")

    def _not_allowed(self) -> None:
        self.server.hub._handle(self, self.command, allowed=False)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed


class Asked(NamedTuple):
    """A request, as FakeHub's ``intercept`` hook sees it."""

    method: str
    path: str  # the URL path, percent-decoded, without the query
    query: dict[str, list[str]]
    headers: Any  # the request's headers (Range, Authorization, ...)
    repo_id: str | None  # for a resolve URL of a served repo
    revision: str | None
    filename: str | None


class Answer(NamedTuple):
    """What an ``intercept`` hook sends instead of FakeHub's own answer."""

    status: int
    headers: Mapping[str, str] | None = None
    body: bytes = b""


DROP = "drop"  # an intercept hook's answer: hang up without sending a byte


class FakeHub(HubRoutes):
    """Serve local folders over HTTP on 127.0.0.1 like the Hugging Face hub (a context manager).

    FakeHub({"org/name": folder}) answers what huggingface_hub 2.4 asks:
      * HEAD and GET /{repo_id}/resolve/{revision}/{path}: 200 (or 206 for a single
        ``Range: bytes=a-b``, ``bytes=a-`` or ``bytes=-n``; 416 if unsatisfiable), with
        Content-Length, Accept-Ranges, ETag, X-Repo-Commit, and X-Linked-Etag/X-Linked-Size for
        LFS files; no redirects and no xet headers, so downloads are plain HTTP;
      * GET /api/models/{repo_id}[/revision/{revision}]: model info (sha, siblings);
      * GET /api/models/{repo_id}/tree/{revision}[/{path}]?recursive=: the tree listing;
      * errors as the hub words them: 404 X-Error-Code EntryNotFound (with X-Repo-Commit),
        RevisionNotFound, 401 RepoNotFound for an unknown repo, and for a repo in `gated` 401
        GatedRepo without ``Authorization: Bearer <token>`` or 401 "Invalid credentials in
        Authorization header" with a wrong one; anything else (such as the
        /api/agent-harnesses registry huggingface_hub 2.4 asks for once per process) is a plain 404.
    revision is the branch name served besides the commit (commit: one for all repos, one per repo,
    or by default default_commit(repo_id)). Every connection is closed after one response.
    ``intercept``, when set, sees every request first (an :class:`Asked`) and may answer it
    itself: an :class:`Answer` (a failure, a redirect, a lying range), :data:`DROP` (hang up), or
    None to let FakeHub answer. Its answers are booked like FakeHub's own.
    The project's conftest blocks sockets: call allow_loopback (or point_hub_at) in the test.
    """

    def __init__(
        self,
        repos: Mapping[str, Path | str],
        *,
        commit: str | Mapping[str, str] | None = None,
        revision: str = "main",
        gated: Mapping[str, str] | None = None,
    ) -> None:
        self.repos = {repo_id: Path(folder) for repo_id, folder in repos.items()}
        if isinstance(commit, Mapping):
            commits = {repo_id: commit.get(repo_id) for repo_id in self.repos}
        else:
            commits = {repo_id: commit for repo_id in self.repos}
        self.commits = {
            repo_id: _check_commit(value or default_commit(repo_id))
            for repo_id, value in commits.items()
        }
        self.revision = revision
        self.gated = dict(gated or {})
        self.intercept: Any = None  # (Asked) -> Answer | DROP | None
        self.requests: list[Served] = []
        self._file_bytes: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> FakeHub:
        """Start serving on a free port of 127.0.0.1."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.hub = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="FakeHub",
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and free the port."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def port(self) -> int:
        """The port it listens on."""
        if self._server is None:
            raise RuntimeError("FakeHub is not started")
        return self._server.server_address[1]

    @property
    def endpoint(self) -> str:
        """http://127.0.0.1:PORT, for HF_ENDPOINT or endpoint=."""
        return f"http://127.0.0.1:{self.port}"

    def url(self, repo_id: str, filename: str, revision: str | None = None) -> str:
        """The resolve URL of a file."""
        return f"{self.endpoint}/{repo_id}/resolve/{revision or self.revision}/{filename}"

    # -- bookkeeping ----------------------------------------------------------------------------

    @property
    def served_bytes(self) -> int:
        """Body bytes sent in all responses (files, JSON and error bodies)."""
        with self._lock:
            return sum(entry.nbytes for entry in self.requests)

    def bytes_for(self, filename: str, repo_id: str | None = None) -> int:
        """Body bytes of filename sent through resolve URLs (of one repo, or of all)."""
        with self._lock:
            return sum(
                count
                for (repo, name), count in self._file_bytes.items()
                if name == filename and (repo_id is None or repo == repo_id)
            )

    def reset_counts(self) -> None:
        """Forget the requests and byte counts so far."""
        with self._lock:
            self.requests.clear()
            self._file_bytes.clear()

    # -- serving --------------------------------------------------------------------------------

    def _handle(self, handler: _Handler, method: str, *, allowed: bool = True) -> None:
        split = urlsplit(handler.path)
        range_header = handler.headers.get("Range")
        asked = self._asked(method, split.path, parse_qs(split.query), handler.headers)
        answer = None if self.intercept is None else self.intercept(asked)
        if answer == DROP:
            with self._lock:
                self.requests.append(Served(method, split.path, range_header, 0))
            handler.close_connection = True
            return
        if isinstance(answer, Answer):
            counted = None if asked.filename is None else (asked.repo_id, asked.filename)
            reply = Reply(answer.status, dict(answer.headers or {}), answer.body, counted=counted)
        elif allowed:
            reply = self._route(method, split.path, parse_qs(split.query), handler.headers)
        else:
            reply = self._error(405, None, f"{method} is not supported by FakeHub")
        # Booked before the response goes out: a client that has the body sees it counted.
        planned = 0 if method == "HEAD" else body_length(reply)
        entry = Served(method, split.path, range_header, planned)
        with self._lock:
            self.requests.append(entry)
            if reply.counted is not None:
                self._file_bytes[reply.counted] += planned
        sent = self._send(handler, method, reply)
        if sent != planned:  # the client hung up early: book what really went out
            with self._lock:
                for index, booked in enumerate(self.requests):
                    if booked is entry:
                        self.requests[index] = entry._replace(nbytes=sent)
                        if reply.counted is not None:
                            self._file_bytes[reply.counted] -= planned - sent

    def _asked(
        self, method: str, raw_path: str, query: dict[str, list[str]], headers: Any
    ) -> Asked:
        segments = raw_path.split("/")[1:]
        matched = self._match_repo(segments)
        if matched is not None and len(matched[1]) >= 3 and matched[1][0] == "resolve":
            repo_id, rest = matched
            revision, filename = unquote(rest[1]), unquote("/".join(rest[2:]))
            return Asked(method, unquote(raw_path), query, headers, repo_id, revision, filename)
        return Asked(method, unquote(raw_path), query, headers, None, None, None)

    def _send(self, handler: _Handler, method: str, reply: Reply) -> int:
        handler.close_connection = True
        handler.send_response(reply.status)
        length = body_length(reply)
        headers = {**reply.headers, "Content-Length": str(length), "Connection": "close"}
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if method == "HEAD" or length == 0:
            return 0
        sent = 0
        try:
            if reply.file is None:
                handler.wfile.write(reply.body)
                sent = len(reply.body)
            else:
                with reply.file.open("rb") as stream:
                    stream.seek(reply.start)
                    left = reply.length
                    while left:
                        chunk = stream.read(min(left, 1 << 16))
                        if not chunk:
                            break
                        handler.wfile.write(chunk)
                        sent += len(chunk)
                        left -= len(chunk)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        return sent
