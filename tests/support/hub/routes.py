"""The hub's routes as FakeHub answers them: ``resolve`` (whole files and byte ranges), the
``api/models`` info and tree listings, and the errors the hub words its own way (unknown repo,
revision or file; a gated repo without its token). Each request becomes a :class:`Reply`;
serving it, booking its bytes and the ``intercept`` hook are server.py's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote

from support.hub.files import hub_file, repo_files


class Reply(NamedTuple):
    """One answer of FakeHub, before it is sent."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    file: Path | None = None  # when set, send file[start:start + length] instead of body
    start: int = 0
    length: int = 0
    counted: tuple[str, str] | None = None  # (repo_id, filename) for bytes_for


class HubRoutes:
    """The hub's routes over ``repos`` (repo id -> folder), each at its commit in ``commits`` and
    also under the branch name ``revision``; a repo in ``gated`` needs its token. FakeHub is one."""

    repos: dict[str, Path]
    commits: dict[str, str]
    revision: str
    gated: dict[str, str]

    def _error(
        self, status: int, code: str | None, message: str, commit: str | None = None
    ) -> Reply:
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code is not None:
            headers["X-Error-Code"] = code
        if commit is not None:
            headers["X-Repo-Commit"] = commit
        return Reply(status, headers, json.dumps({"error": message}).encode())

    def _json(self, data: object, commit: str | None = None) -> Reply:
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if commit is not None:
            headers["X-Repo-Commit"] = commit
        return Reply(200, headers, json.dumps(data).encode())

    def _match_repo(self, segments: list[str]) -> tuple[str, list[str]] | None:
        """(repo_id, the segments after it) for a known repo at the start of segments."""
        for repo_id in sorted(self.repos, key=lambda r: -r.count("/")):
            parts = repo_id.split("/")
            if [unquote(s) for s in segments[: len(parts)]] == parts:
                return repo_id, segments[len(parts) :]
        return None

    def _auth_error(self, repo_id: str, headers: Any) -> Reply | None:
        secret = self.gated.get(repo_id)
        if secret is None:
            return None
        authorization = headers.get("Authorization") or ""
        if not authorization:
            return self._error(
                401,
                "GatedRepo",
                f"Access to model {repo_id} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in.",
            )
        if authorization != f"Bearer {secret}":
            return self._error(401, None, "Invalid credentials in Authorization header")
        return None

    def _unknown_repo(self, headers: Any) -> Reply:
        # The hub answers 401 to anonymous requests for a repo it does not show, 404 otherwise.
        status = 404 if headers.get("Authorization") else 401
        return self._error(status, "RepoNotFound", "Repository not found")

    def _revision_commit(self, repo_id: str, revision: str) -> str | None:
        commit = self.commits[repo_id]
        return commit if revision in (self.revision, commit) else None

    def _route(
        self, method: str, raw_path: str, query: dict[str, list[str]], headers: Any
    ) -> Reply:
        segments = raw_path.split("/")[1:]
        if segments[:1] == ["api"]:
            return self._route_api(method, segments[1:], query, headers)
        matched = self._match_repo(segments)
        if matched is None:
            if "resolve" in segments[1:3]:
                return self._unknown_repo(headers)
            return self._error(404, None, f"FakeHub does not serve {raw_path}")
        repo_id, rest = matched
        if len(rest) < 3 or rest[0] != "resolve":
            return self._error(404, None, f"FakeHub does not serve {raw_path}")
        denied = self._auth_error(repo_id, headers)
        if denied is not None:
            return denied
        revision = unquote(rest[1])
        commit = self._revision_commit(repo_id, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        filename = unquote("/".join(rest[2:]))
        return self._resolve(repo_id, filename, commit, headers.get("Range"))

    def _resolve(self, repo_id: str, filename: str, commit: str, range_header: str | None) -> Reply:
        folder = self.repos[repo_id]
        full = folder / filename
        inside = full.resolve().is_relative_to(folder.resolve())
        if not filename or not inside or not full.is_file() or filename not in repo_files(folder):
            return self._error(404, "EntryNotFound", "Entry not found", commit=commit)
        info = hub_file(folder, filename)
        headers = {
            "Content-Type": "application/octet-stream",
            "Accept-Ranges": "bytes",
            "ETag": f'"{info.etag}"',
            "X-Repo-Commit": commit,
        }
        if info.lfs:
            headers["X-Linked-Etag"] = f'"{info.sha256}"'
            headers["X-Linked-Size"] = str(info.size)
        counted = (repo_id, filename)
        span = _parse_range(range_header, info.size)
        if span is None:
            return Reply(200, headers, file=full, length=info.size, counted=counted)
        if span == "unsatisfiable":
            headers["Content-Range"] = f"bytes */{info.size}"
            return Reply(416, headers)
        start, end = span
        headers["Content-Range"] = f"bytes {start}-{end}/{info.size}"
        return Reply(206, headers, file=full, start=start, length=end - start + 1, counted=counted)

    def _route_api(
        self, method: str, segments: list[str], query: dict[str, list[str]], headers: Any
    ) -> Reply:
        if segments[:1] != ["models"]:
            return self._error(404, None, "FakeHub serves model repos only")
        matched = self._match_repo(segments[1:])
        if matched is None:
            return self._unknown_repo(headers)
        repo_id, rest = matched
        denied = self._auth_error(repo_id, headers)
        if denied is not None:
            return denied
        if not rest or rest == [""]:
            return self._model_info(repo_id, self.revision, query)
        if rest[0] == "revision" and len(rest) == 2:
            return self._model_info(repo_id, unquote(rest[1]), query)
        if rest[0] == "tree" and len(rest) >= 2:
            path = unquote("/".join(rest[2:])).strip("/")
            return self._tree(repo_id, unquote(rest[1]), path, query)
        return self._error(404, None, f"FakeHub does not serve /api/{'/'.join(segments)}")

    def _model_info(self, repo_id: str, revision: str, query: dict[str, list[str]]) -> Reply:
        commit = self._revision_commit(repo_id, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        folder = self.repos[repo_id]
        blobs = _true(query, "blobs")
        siblings = []
        for path in repo_files(folder):
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                info = hub_file(folder, path)
                sibling.update(size=info.size, blobId=info.blob_id)
                if info.lfs:
                    sibling["lfs"] = {
                        "sha256": info.sha256,
                        "size": info.size,
                        "pointerSize": len(info.pointer),
                    }
            siblings.append(sibling)
        return self._json(
            {
                "_id": commit[:24],
                "id": repo_id,
                "modelId": repo_id,
                "author": repo_id.split("/")[0] if "/" in repo_id else None,
                "sha": commit,
                "lastModified": "2024-01-01T00:00:00.000Z",
                "createdAt": "2024-01-01T00:00:00.000Z",
                "private": False,
                "gated": "manual" if repo_id in self.gated else False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": [],
                "library_name": "transformers",
                "siblings": siblings,
            },
            commit=commit,
        )

    def _tree(self, repo_id: str, revision: str, path: str, query: dict[str, list[str]]) -> Reply:
        commit = self._revision_commit(repo_id, revision)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        folder = self.repos[repo_id]
        recursive = _true(query, "recursive")
        prefix = f"{path}/" if path else ""
        files = [p for p in repo_files(folder) if p.startswith(prefix)]
        if path and not files:
            return self._error(404, "EntryNotFound", f"{path} does not exist", commit=commit)
        entries: dict[str, dict[str, Any]] = {}
        for file_path in files:
            parts = file_path[len(prefix) :].split("/")
            # Folders on the way to the file (all of them when recursive, the first one else).
            for depth in range(1, len(parts) if recursive else min(2, len(parts))):
                folder_path = prefix + "/".join(parts[:depth])
                entries.setdefault(
                    folder_path,
                    {
                        "type": "directory",
                        "oid": hashlib.sha1(f"tree {folder_path}".encode()).hexdigest(),
                        "size": 0,
                        "path": folder_path,
                    },
                )
            if not recursive and len(parts) > 1:
                continue
            info = hub_file(folder, file_path)
            entry: dict[str, Any] = {
                "type": "file",
                "oid": info.blob_id,
                "size": info.size,
                "path": file_path,
            }
            if info.lfs:
                entry["lfs"] = {
                    "oid": info.sha256,
                    "size": info.size,
                    "pointerSize": len(info.pointer),
                }
            entries[file_path] = entry
        return self._json([entries[key] for key in sorted(entries)], commit=commit)


def body_length(reply: Reply) -> int:
    """The bytes of the body a reply sends."""
    return reply.length if reply.file is not None else len(reply.body)


def _true(query: dict[str, list[str]], name: str) -> bool:
    return any(value.lower() in ("1", "true") for value in query.get(name, []))


def _parse_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """(start, end) inclusive for one byte range; "unsatisfiable"; None to send the whole file."""
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None  # other units and multiple ranges: ignored, as RFC 9110 allows
    first, dash, last = spec.strip().partition("-")
    if not dash:
        return None
    try:
        if first == "":  # bytes=-n: the last n bytes
            count = int(last)
            if count <= 0 or size == 0:
                return "unsatisfiable"
            return max(0, size - count), size - 1
        start = int(first)
        end = size - 1 if last == "" else min(int(last), size - 1)
    except ValueError:
        return None
    if start < 0 or (last != "" and int(last) < start):
        return None
    if start >= size:
        return "unsatisfiable"
    return start, end
