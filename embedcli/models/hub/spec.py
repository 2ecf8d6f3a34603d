"""Hugging Face hub sources, offline first: ``hf:ORG/NAME[@REVISION]``, and the hub's errors.

A hub source is looked up in the local Hugging Face cache first (cache.py). The network is used
only when allowed (``--download``, or ``HF_HUB_OFFLINE=0`` set explicitly: session.py), and then
only for what a command needs (remote.py): small files whole, safetensors headers, table rows
and, within a limit unless ``--download-all``, whole tables. With the network allowed a branch or
tag is resolved on the hub again, once per command, as huggingface_hub does; offline, the cached
ref is used. ``HF_ENDPOINT`` (mirrors, and the tests' local server) and ``HF_TOKEN`` are
honoured; the token is never printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from embedcli.errors import EncodingError, UsageError, WeightsError

PREFIX = "hf:"
DEFAULT_REVISION = "main"
# huggingface_hub's own rule: word characters, '-' and '.', 96 at most, ends not '-' or '.'
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")  # a branch, tag, refs/pr/N or commit


class HubError(WeightsError):
    """A hub source that cannot be resolved: not cached offline, not found, unreachable."""


class Unreachable(HubError):
    """The hub could not be reached at all (nothing listens, no network)."""


class AbsentOnHub(HubError, EncodingError):
    """Files the hub said the repo does not have: fetching cannot bring them (an EncodingError
    too, so that a command that can do without a tokenizer, such as embed --ids, goes on)."""


@dataclass(frozen=True)
class HubSpec:
    """A model on the hub: ``hf:ORG/NAME[@REVISION]``."""

    repo_id: str
    revision: str = DEFAULT_REVISION

    @classmethod
    def parse(cls, text: str) -> HubSpec | None:
        """The spec in ``text``, None when it does not start with ``hf:``, an error when bad."""
        if not text.startswith(PREFIX):
            return None
        body = text[len(PREFIX) :]
        repo_id, _, revision = body.partition("@")
        parts = repo_id.split("/")
        if not 1 <= len(parts) <= 2 or not all(
            _NAME.match(p) and ".." not in p and "--" not in p for p in parts
        ):
            raise UsageError(
                f"{text!r} is not a hub model: write hf:ORG/NAME or hf:ORG/NAME@REVISION "
                "(e.g. hf:openai-community/gpt2)"
            )
        if "@" in body and not revision.strip():
            raise UsageError(f"{text!r} names no revision after '@'")
        if revision and (not _REVISION.match(revision) or ".." in revision or "//" in revision):
            raise UsageError(
                f"{text!r} has a bad revision {revision!r}: a branch, a tag or a commit hash"
            )
        return cls(repo_id, revision or DEFAULT_REVISION)

    def __str__(self) -> str:
        suffix = "" if self.revision == DEFAULT_REVISION else f"@{self.revision}"
        return f"{PREFIX}{self.repo_id}{suffix}"

    @property
    def folder_name(self) -> str:
        """The repo's folder in the hub cache."""
        return "models--" + self.repo_id.replace("/", "--")


def is_commit(revision: str | None) -> bool:
    """Whether ``revision`` is a full commit hash (which, unlike a branch, cannot move)."""
    return bool(revision) and _COMMIT.match(revision or "") is not None
