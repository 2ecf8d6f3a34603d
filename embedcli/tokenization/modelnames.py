"""Model names -> encodings and context windows: a table embedcli keeps itself.

tiktoken's own table lags behind the models people use (o1, o3, o4-mini, gpt-4.1, gpt-4.5, gpt-5
and fine-tuned ``ft:`` names raise KeyError in tiktoken 0.7-0.9): here a name is matched exactly,
else by its longest known prefix (dated snapshots such as ``gpt-4o-2024-08-06``), and
``ft:BASE:...`` by its base model. Context windows are the published input limits, for
``count --context MODEL``.
"""

from __future__ import annotations

from dataclasses import dataclass

from embedcli.errors import UsageError


@dataclass(frozen=True)
class ModelName:
    """A model family: its encoding and its context window (tokens)."""

    name: str
    encoding: str
    context: int


MODELS = tuple(
    ModelName(*row)
    for row in (
        ("gpt-5", "o200k_base", 400_000),
        ("gpt-5-mini", "o200k_base", 400_000),
        ("gpt-5-nano", "o200k_base", 400_000),
        ("gpt-4.5", "o200k_base", 128_000),
        ("gpt-4.1", "o200k_base", 1_047_576),
        ("gpt-4.1-mini", "o200k_base", 1_047_576),
        ("gpt-4.1-nano", "o200k_base", 1_047_576),
        ("gpt-4o", "o200k_base", 128_000),
        ("gpt-4o-mini", "o200k_base", 128_000),
        ("chatgpt-4o-latest", "o200k_base", 128_000),
        ("o1", "o200k_base", 200_000),
        ("o1-mini", "o200k_base", 128_000),
        ("o1-pro", "o200k_base", 200_000),
        ("o3", "o200k_base", 200_000),
        ("o3-mini", "o200k_base", 200_000),
        ("o3-pro", "o200k_base", 200_000),
        ("o4-mini", "o200k_base", 200_000),
        ("gpt-oss-20b", "o200k_harmony", 131_072),  # o200k_base with the harmony format's specials
        ("gpt-oss-120b", "o200k_harmony", 131_072),
        ("gpt-4-turbo", "cl100k_base", 128_000),
        ("gpt-4", "cl100k_base", 8_192),
        ("gpt-4-32k", "cl100k_base", 32_768),
        ("gpt-3.5-turbo", "cl100k_base", 16_385),
        ("text-embedding-3-small", "cl100k_base", 8_191),
        ("text-embedding-3-large", "cl100k_base", 8_191),
        ("text-embedding-ada-002", "cl100k_base", 8_191),
        ("davinci-002", "cl100k_base", 16_384),
        ("babbage-002", "cl100k_base", 16_384),
        ("gpt2", "gpt2", 1_024),
        ("gpt-2", "gpt2", 1_024),
        ("davinci", "r50k_base", 2_049),
        ("curie", "r50k_base", 2_049),
        ("babbage", "r50k_base", 2_049),
        ("ada", "r50k_base", 2_049),
    )
)
_BY_NAME = {model.name: model for model in MODELS}


def lookup(name: str) -> ModelName:
    """The model a name means: exact, ``ft:BASE:...``, or the longest known prefix of a dated
    or suffixed name; an unknown name is a usage error listing close matches."""
    wanted = name.strip()
    if wanted.startswith("ft:"):
        wanted = wanted[3:].split(":", 1)[0]
    if wanted in _BY_NAME:
        return _BY_NAME[wanted]
    prefixes = [m for m in MODELS if wanted.startswith(m.name + "-")]
    if prefixes:
        found = max(prefixes, key=lambda m: len(m.name))
        exact = _tiktoken_exact(wanted)
        if exact is not None and exact != found.encoding:  # davinci-codex is not davinci
            raise UsageError(
                f"embedcli knows {found.name}, not {name!r}, which tiktoken says is "
                f"{exact}: pass --encoding {exact}"
            )
        return found
    import difflib

    close = difflib.get_close_matches(wanted, list(_BY_NAME), n=4, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UsageError(f"unknown model {name!r}{hint} (--list-models shows them; or pass --encoding)")


def _tiktoken_exact(name: str) -> str | None:
    """tiktoken's encoding for exactly ``name``, if its table has it."""
    try:
        from tiktoken.model import MODEL_TO_ENCODING
    except ImportError:
        return None
    return MODEL_TO_ENCODING.get(name)


def known(name: str) -> bool:
    """Whether :func:`lookup` knows ``name``."""
    try:
        lookup(name)
    except UsageError:
        return False
    return True
