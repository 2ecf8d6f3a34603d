"""Positional encodings as matrices to look at: the table itself, or its cosine similarities.
The Heatmap type, rope's angles and ALiBi's biases come from pipeline.positionmaps, the encoding
to draw from pipeline.positionsource."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from embedcli.core.config import (
    DEFAULT_VOCAB_SIZE,
    PICTURE_D_MODEL,
    PICTURE_POSITIONS,
    EmbedConfig,
    Overrides,
)
from embedcli.core.memory import ensure_room
from embedcli.core.sinusoids import sinusoidal_table
from embedcli.errors import ConfigError, UsageError, WeightsError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.pipeline.positionmaps import Heatmap as Heatmap  # re-exported
from embedcli.pipeline.positionmaps import alibi_report, rope_report
from embedcli.pipeline.positionsource import resolve
from embedcli.pipeline.sources import learned_positions

if TYPE_CHECKING:
    import torch

    from embedcli.pipeline.positionmaps import AlibiReport, RopeReport
    from embedcli.pipeline.positionsource import Encoding, PositionsRequest


def position_table(
    positional: str | None,
    context_length: int | None,
    d_model: int | None,
    seed: int,
    weights: Path | None = None,
    position_key: str | None = None,
    access: HubAccess = OFFLINE,
) -> tuple[torch.Tensor, str, str]:
    """(the (context_length, d) positional table to show, where it came from, its family).

    The family defaults to learned with ``weights`` (a checkpoint holds a learned table) and to
    sinusoidal without; sizes default to a terminal-sized picture, and with ``weights`` come from
    the checkpoint (a width given that disagrees with it is an error; ``context_length``, at
    most the table's rows, draws its first rows)."""
    positional = positional or ("learned" if weights is not None else "sinusoidal")
    if weights is not None and positional != "learned":
        raise UsageError("--weights shows a checkpoint's learned table: drop --positional")
    if weights is not None:
        table, source = _checkpoint_table(weights, context_length, d_model, position_key, access)
        return table, source, positional
    d_model = d_model or PICTURE_D_MODEL
    context_length = context_length or PICTURE_POSITIONS
    _check_picture_memory(context_length, d_model)
    if positional == "sinusoidal":
        # Validates the sizes (sin and cos pairs need an even d_model) before any work.
        EmbedConfig(d_model=d_model, context_length=context_length, positional="sinusoidal")
        return sinusoidal_table(context_length, d_model), "sinusoidal (fixed)", positional
    # Validates the sizes as embed would build them; only the positional table is made.
    EmbedConfig(d_model=d_model, context_length=context_length, seed=seed)
    table = seeded_positions(context_length, d_model, seed)
    return table, f"learned, seeded nn.Embedding tables, seed {seed}", positional


def _checkpoint_table(
    weights: Path,
    rows: int | None,
    d_model: int | None,
    position_key: str | None,
    access: HubAccess = OFFLINE,
) -> tuple[torch.Tensor, str]:
    """A checkpoint's learned table from position 0 (its first ``rows``), checked as embed
    checks it, and where it came from. Only the positional rows shown are read: a hub model
    fetches them and never its token table."""

    given = Overrides(d_model=d_model)  # rows: any number up to the table's
    found = learned_positions(weights, position_key, given, access=access)
    if found is None:
        raise WeightsError(f"{weights} has no learned positional table to show")
    if rows is not None and rows > found.rows:
        raise ConfigError(
            f"--context-length {rows:,} asks for more rows than the learned table of "
            f"{found.label} has ({found.rows:,} positions)"
        )
    shown = found.rows if rows is None else rows
    _check_picture_memory(shown, found.width)
    return found.read(shown).detach().double(), f"learned, {found.label}"


SKIP_CHUNK = 1 << 20  # values drawn at a time while the token table's draws are skipped


def seeded_positions(rows: int, d_model: int, seed: int) -> torch.Tensor:
    """The (rows, d) positional table of embed's seeded recipe, in float64, without its token
    table: ``torch.manual_seed(seed)``, ``nn.Embedding(50257, d)``, ``nn.Embedding(rows, d)``.

    The token table's normal draws are made a chunk at a time into one small buffer, and
    dropped: torch fills n >= 16 values from n uniforms (16 more where n is not a multiple of
    16), each group of 16 from its own, so chunks of a multiple of 16, the last at least 16,
    leave the generator where the whole table would (tests/test_positions.py checks it)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        left = DEFAULT_VOCAB_SIZE * d_model
        buffer = torch.empty(min(left, SKIP_CHUNK + 16))
        while left > SKIP_CHUNK + 16:
            buffer.normal_()  # SKIP_CHUNK + 16 values: a multiple of 16
            left -= len(buffer)
        buffer[:left].normal_()
        return torch.nn.Embedding(rows, d_model).weight.detach().double()  # (rows, d)


def positions_report(request: PositionsRequest) -> Heatmap | RopeReport | AlibiReport:
    """What ``embedcli positions`` draws: a table (or its similarities), rope's angles (or
    their similarity by distance), or ALiBi's biases, from the flags, a preset or a model."""

    encoding = resolve(request)
    rows = request.context_length or PICTURE_POSITIONS
    if encoding.family == "rope":
        return rope_report(encoding, rows, request.similarity)
    if encoding.family == "alibi":
        return alibi_report(encoding, rows, request.head, png=request.png, as_json=request.as_json)
    if encoding.from_model and request.weights is None:  # a preset's width, a seeded table
        rows = request.context_length or min(PICTURE_POSITIONS, encoding.context_length or rows)
        table, source = _preset_table(encoding, rows, request.seed)
    else:
        table, source, _ = position_table(
            encoding.family, request.context_length, request.d_model or encoding.d_model,
            request.seed, request.weights, request.position_key, request.access,
        )  # fmt: skip
        if request.weights is None and encoding.source.startswith("custom:"):
            source = f"{source}, for {encoding.source}"  # a preset's, changed
    heatmap = positions_heatmap(table, source, request.similarity)
    heatmap.positional = encoding.family
    return heatmap


def _preset_table(encoding: Encoding, rows: int, seed: int) -> tuple[torch.Tensor, str]:
    """A preset's learned table, seeded, at its width: ``torch.manual_seed(seed)``, then
    ``nn.Embedding(rows, d)`` alone (no token table drawn first: GPT-3's would be 2.5 GB)."""
    import torch

    assert encoding.d_model is not None
    _check_picture_memory(rows, encoding.d_model)
    torch.manual_seed(seed)
    table = torch.nn.Embedding(rows, encoding.d_model).weight.detach().double()  # (rows, d)
    return table, (
        f"learned, seeded nn.Embedding({rows:,}, {encoding.d_model:,}) drawn alone, seed "
        f"{seed}, " + (f"for {encoding.source}" if encoding.source.startswith("custom:")
                       else f"at the width of {encoding.source}")
    )


def _check_picture_memory(rows: int, d_model: int, similarity: bool = False) -> None:
    """The (rows, d) table in float64 (and its (rows, rows) similarities) must fit."""
    need = rows * d_model * 8 * 4 + (rows * rows * 8 if similarity else 0)  # 4 float64 copies
    what = f"the numbers of a picture of {rows:,} positions × {d_model:,} dimensions"
    ensure_room(
        what + (" and its similarities" if similarity else ""),
        need,
        "lower --context-length or -d" + (", or drop --similarity" if similarity else ""),
    )


def positions_heatmap(table: torch.Tensor, source: str, similarity: bool) -> Heatmap:
    """The table (positions × dimensions) or its position-by-position cosine similarity."""
    if similarity:
        from embedcli.core.embedding import cosine_similarity  # lazy: core.embedding loads torch

        _check_picture_memory(*table.shape, similarity=True)
        return Heatmap(
            f"cosine similarity between positions: {source}",
            "similarity",
            "position",
            "position",
            cosine_similarity(table).numpy(),
            source=source,
        )
    return Heatmap(
        f"positional encoding: {source}",
        "encoding",
        "position",
        "dimension",
        table.double().numpy(),
        source=source,
    )
