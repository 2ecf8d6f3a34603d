"""The weights job: what a checkpoint holds (``models.inventory``), and for a GGUF file the
special tokens llama.cpp makes of its tokenizer (``tokenization.gguf.specials``: the defaults it
applies, the end-of-turn and end-of-generation tokens it finds by their text)."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from embedcli.errors import EncodingError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.inventory import WeightsReport, inspect_weights
from embedcli.models.sources import open_source

if TYPE_CHECKING:
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint


def weights_report(
    path: str | Path,
    token_key: str | None = None,
    position_key: str | None = None,
    access: HubAccess = OFFLINE,
) -> WeightsReport:
    """``inspect_weights``, with a GGUF file's ``special_tokens`` in its ``gguf`` part (None,
    and ``special_tokens_error`` saying why, where llama.cpp would not load its tokenizer)."""
    source = open_source(path, access)
    report = inspect_weights(source, token_key, position_key)
    if report.gguf is None or not source.checkpoint.is_gguf:
        return report
    # on use: only a GGUF file's report reads its vocabulary (llama.cpp's tokenizer modules)
    from embedcli.tokenization.gguf.specials import gguf_special_tokens

    gguf = cast("GGUFCheckpoint", source.checkpoint).file
    metadata = {  # the keys llama.cpp's vocabulary reads
        k: v.plain()
        for k, v in gguf.metadata.items()
        if k.startswith("tokenizer.") or k == "general.name"
    }
    specials, error = None, None
    try:
        specials = asdict(gguf_special_tokens(metadata, str(gguf.path)))
    except EncodingError as exc:
        error = str(exc)
    found = {**report.gguf, "special_tokens": specials, "special_tokens_error": error}
    return replace(report, gguf=found)
