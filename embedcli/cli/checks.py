"""Checks of option values while the command line is parsed: a typo is a usage error (exit 2)
with a "did you mean", and shell completion offers the names. No torch, tiktoken or rich here
(tiktoken is imported only to list encodings when a name is not a bundled one)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import typer

from embedcli.core.config import DTYPES
from embedcli.core.kinds import POSITIONAL_FAMILIES
from embedcli.errors import EncodingError, UsageError
from embedcli.models.hub.session import HubAccess
from embedcli.tokenization.encodings import (
    BUNDLED_ENCODINGS,
    encoding_name_for_model,
    looks_like_model_tokenizer,
)

_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16"}
_DTYPE_ALIASES["bf16"] = "bfloat16"
_DEVICE = re.compile(r"^(auto|cpu|mps|meta|cuda)(:\d+)?$")
DEVICE_NAMES = ("auto", "cpu", "cuda", "mps", "meta")


def suggest(value: str, names: Sequence[str]) -> str:
    """'; did you mean 'x'?' for a near miss, else ''."""
    import difflib  # only for a mistyped value

    close = difflib.get_close_matches(value, list(names), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def choices(
    names: Sequence[str], aliases: dict[str, str] | None = None, *, fold: bool = True
) -> tuple[Callable[[str | None], str | None], Callable[[str], list[str]]]:
    """A (callback, completion) pair: the value must be one of ``names`` (or an alias)."""
    aliases = aliases or {}

    def check(value: str | None) -> str | None:
        if value is None:
            return None
        key = value.strip().lower() if fold else value
        key = key.removeprefix("torch.")
        if key in names:
            return key
        if key in aliases:
            return aliases[key]
        import difflib  # only for a mistyped value

        close = difflib.get_close_matches(key, [*names, *aliases], n=3, cutoff=0.6)
        close = list(dict.fromkeys(aliases.get(c, c) for c in close))[:2]
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise typer.BadParameter(f"{value!r} is not one of: {', '.join(names)}{hint}")

    return check, lambda incomplete: [n for n in names if n.startswith(incomplete)]


def check_device(value: str) -> str:
    """auto, cpu, cuda, cuda:N or mps."""
    return _device(value, meta=False)


# Names people reach for that torch spells otherwise: what to write instead, and why.
_DEVICE_ALIASES = {
    "gpu": "torch names an NVIDIA (or AMD ROCm) GPU cuda, so write cuda (or cuda:N for GPU N); "
    "an Apple GPU is mps; auto picks whichever this machine has",
    "nvidia": "torch names an NVIDIA GPU cuda: write cuda (or cuda:N)",
    "rocm": "torch names an AMD ROCm GPU cuda too: write cuda (or cuda:N)",
    "metal": "torch names Apple's GPU mps: write mps",
    "apple": "torch names Apple's GPU mps: write mps",
}


def _device(value: str, *, meta: bool) -> str:
    """auto, cpu, cuda, cuda:N, mps (and meta where shapes alone are wanted)."""
    key = value.strip().lower()
    names = DEVICE_NAMES if meta else tuple(n for n in DEVICE_NAMES if n != "meta")
    if key == "meta" and not meta:
        raise typer.BadParameter(
            "the meta device holds shapes but no values, so there is nothing to compute here; "
            "use auto, cpu, cuda or mps (inspect-shapes takes meta)"
        )
    alias = _DEVICE_ALIASES.get(key.split(":")[0])
    if alias is not None and _DEVICE.match(key) is None:
        raise typer.BadParameter(f"{value!r} is not a device name: {alias}")
    if _DEVICE.match(key) is None:
        raise typer.BadParameter(
            f"{value!r} is not a device here: use {', '.join(names[:-1])}, cuda:N or {names[-1]}"
            + suggest(key.split(":")[0], names)
        )
    if ":" in key and not key.startswith("cuda"):
        raise typer.BadParameter(f"{value!r}: only cuda takes an index (cuda:N)")
    return key


MAX_SIZE = 2**40  # above any size a machine could hold; far below int64, where torch overflows


def bounded(value: int | None) -> int | None:
    """A size or count no larger than MAX_SIZE: a 30-digit -d is a usage error, not a crash."""
    if value is not None and value > MAX_SIZE:
        raise typer.BadParameter(f"{value} is too large (at most 2**40 = {MAX_SIZE:,})")
    return value


def check_seed(value: int) -> int:
    if not 0 <= value < 2**64:  # torch.manual_seed's range
        raise typer.BadParameter(f"{value} is not in the range 0 to 2**64 - 1")
    return value


def check_shapes_device(value: str) -> str:
    """--device of inspect-shapes: meta too."""
    return _device(value, meta=True)


def complete_device(incomplete: str) -> list[str]:
    """Device names for shell completion."""
    return [d for d in DEVICE_NAMES if d.startswith(incomplete) and d != "meta"]


def complete_shapes_device(incomplete: str) -> list[str]:
    """Device names for shell completion, meta included."""
    return [d for d in DEVICE_NAMES if d.startswith(incomplete)]


def _known_encodings() -> list[str]:
    """Every encoding tiktoken can name here (its plugins included), bundled ones first."""
    import tiktoken

    return list(dict.fromkeys([*BUNDLED_ENCODINGS, *tiktoken.list_encoding_names()]))


def check_encoding(value: str | list[str] | None) -> str | list[str] | None:
    if value is None:
        return None

    values = [value] if isinstance(value, str) else value
    for name in values:
        if name in BUNDLED_ENCODINGS or looks_like_model_tokenizer(name):
            continue
        if name not in (known := _known_encodings()):
            raise typer.BadParameter(
                f"unknown encoding {name!r}; choose one of: {', '.join(known)}, a tokenizer "
                f"file or model folder, or hf:ORG/NAME" + suggest(name, known)
            )
    return value


def hub_access(download: bool, download_all: bool) -> HubAccess:
    """What this command allows of the hub, from its --download and --download-all: with
    either, what is about to be fetched (and how much) is said on stderr."""
    notice = (lambda line: typer.echo(line, err=True)) if download or download_all else None
    return HubAccess(download, download_all, notice)


def check_model(value: str | list[str] | None) -> str | list[str] | None:
    if value is None:
        return None

    for name in [value] if isinstance(value, str) else value:
        try:
            encoding_name_for_model(name)
        except EncodingError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


def complete_encoding(incomplete: str) -> list[str]:
    return [n for n in _known_encodings() if n.startswith(incomplete)]


dtype_check, dtype_complete = choices(DTYPES, _DTYPE_ALIASES)
# alibi and relative come from a model's config.json, never from the flag: seeded tables have
# no attention heads to bias
positional_check, positional_complete = choices(
    tuple(f for f in POSITIONAL_FAMILIES if f not in ("alibi", "relative"))
)
@functools.cache
def _preset_choices() -> tuple[Callable, Callable]:
    # late: the presets import every family's module (40 ms), which tokenize and count never
    # need, and a preset is checked only when --preset is given
    from embedcli.models.presets import preset_names

    return choices(preset_names())


def preset_complete(incomplete: str) -> list[str]:
    return _preset_choices()[1](incomplete)


def preset_check(value: str | None) -> str | None:
    """A preset's name (case folded); a mistyped one names the closest and --list-presets,
    rather than listing every preset on one line."""
    try:
        return _preset_choices()[0](value)
    except typer.BadParameter as exc:
        hint = str(exc).partition("?")[0].rpartition("; ")[2]
        close = f"{hint}? " if hint.startswith("did you mean") else ""
        raise typer.BadParameter(
            f"{value!r} is not a preset; {close}the presets: embedcli inspect-shapes --list-presets"
        ) from None


pool_check, pool_complete = choices(("none", "mean", "last"))
optimizer_check, optimizer_complete = choices(("adamw", "sgd"), {"adam": "adamw"})


def renamed(new: Any, old: Any, new_flag: str, old_flag: str) -> Any:
    """The value of a renamed option, from its new or its old name, never both."""
    if new is not None and old is not None:
        raise UsageError(f"pass {new_flag} or the old {old_flag}, not both")
    return old if new is None else new
