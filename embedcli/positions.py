"""Positional encodings as matrices to look at: the table itself, or its cosine similarities."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from embedcli.config import EmbedConfig
from embedcli.errors import OutputError, OutputFormatError, WeightsError
from embedcli.outputs import atomic_write

if TYPE_CHECKING:
    import numpy as np
    import torch


@dataclass
class Heatmap:
    """A matrix and how to label it; rendered as terminal blocks, a PNG, or JSON."""

    title: str
    kind: str  # "encoding" or "similarity"
    row_axis: str
    column_axis: str
    matrix: np.ndarray  # (rows, columns) float64
    row_labels: list[str] | None = None  # None: rows are numbered
    column_labels: list[str] | None = None
    source: str | None = None  # where the matrix came from (positions: the table's source)

    @property
    def limit(self) -> float:
        """The largest magnitude: the colour scale runs from -limit to +limit."""
        import numpy as np

        finite = np.abs(self.matrix[np.isfinite(self.matrix)]) if len(self.matrix) else []
        return float(finite.max()) if len(finite) and finite.max() > 0 else 1.0


def position_table(
    positional: str | None,
    context_length: int | None,
    d_model: int | None,
    seed: int,
    weights: Path | None = None,
    position_key: str | None = None,
) -> tuple[torch.Tensor, str, str]:
    """(the (context_length, d) positional table to show, where it came from, its family).

    The family defaults to learned with ``weights`` (a checkpoint holds a learned table) and to
    sinusoidal without; sizes default to a terminal-sized picture, and with ``weights`` come from
    the checkpoint (a size given that disagrees with it is an error)."""
    from embedcli.config import PICTURE_D_MODEL, PICTURE_POSITIONS, Overrides
    from embedcli.embedding import sinusoidal_table
    from embedcli.errors import UsageError

    positional = positional or ("learned" if weights is not None else "sinusoidal")
    if weights is not None and positional != "learned":
        raise UsageError("--weights shows a checkpoint's learned table: drop --positional")
    given = Overrides(d_model=d_model, context_length=context_length)
    d_model = d_model or PICTURE_D_MODEL
    context_length = context_length or PICTURE_POSITIONS
    _check_picture_memory(context_length, d_model)
    if positional == "sinusoidal":
        # Validates the sizes (sin and cos pairs need an even d_model) before any work.
        EmbedConfig(d_model=d_model, context_length=context_length, positional="sinusoidal")
        return sinusoidal_table(context_length, d_model), "sinusoidal (fixed)", positional
    from embedcli.sources import source_tables

    # The recipe draws the token table first, so the seeded positional table is the one `embed`
    # uses when both are built with embed's default vocabulary (gpt2's 50,257 rows).
    seeded = EmbedConfig(d_model=d_model, context_length=context_length, seed=seed)
    _, position, source = source_tables(seeded, weights, None, position_key, given)
    if position is None:
        raise WeightsError(f"{weights} has no learned positional table to show")
    return position.detach().double(), f"learned, {source}", positional


def _check_picture_memory(rows: int, d_model: int, similarity: bool = False) -> None:
    """The (rows, d) table in float64 (and its (rows, rows) similarities) must fit."""
    from embedcli.devices import ensure_fits, host_available_memory

    need = rows * d_model * 8 * 2 + (rows * rows * 8 if similarity else 0)
    what = f"a picture of {rows:,} positions × {d_model:,} dimensions"
    ensure_fits(
        what + (" and its similarities" if similarity else ""),
        need,
        host_available_memory(),
        "this machine",
        "lower --context-length or -d" + (", or drop --similarity" if similarity else ""),
    )


def positions_heatmap(table: torch.Tensor, source: str, similarity: bool) -> Heatmap:
    """The table (positions × dimensions) or its position-by-position cosine similarity."""
    if similarity:
        from embedcli.embedding import cosine_similarity

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


@contextmanager
def png_figure(
    path: Path, width_px: int, height_px: int, handle: BinaryIO | None = None
) -> Iterator[tuple[Any, Any]]:
    """(figure, axes) to draw on, saved as a PNG at ``path`` (named *.png) when the block ends,
    written atomically (or into ``handle``, a file staged for ``path``), and closed whatever
    happens. matplotlib is the ``embedcli[plot]`` extra: where it is missing, an error says
    how to install it."""
    if path.suffix.lower() != ".png":
        raise OutputFormatError(f"--png writes PNG images; name the file *.png, not {path.name}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise OutputError(
            "--png needs matplotlib, which is not installed: pip install 'embedcli[plot]'"
        ) from None
    dpi = 100
    figure, axes = pyplot.subplots(figsize=(width_px / dpi, height_px / dpi), dpi=dpi)
    try:
        yield figure, axes
        if handle is not None:
            figure.savefig(handle, format="png", dpi=dpi)
        else:
            with atomic_write(path) as written:
                figure.savefig(written, format="png", dpi=dpi)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        pyplot.close(figure)


def save_png(heatmap: Heatmap, path: Path, *, width_px: int = 800, height_px: int = 500) -> None:
    """The same figure as a PNG (matplotlib: the ``embedcli[plot]`` extra), written atomically."""
    with png_figure(path, width_px, height_px) as (figure, axes):
        image = axes.imshow(
            heatmap.matrix,
            aspect="auto",
            cmap="RdBu_r",
            vmin=-heatmap.limit,
            vmax=heatmap.limit,
            interpolation="nearest",
        )
        axes.set_title(heatmap.title, fontsize=10)
        axes.set_xlabel(heatmap.column_axis)
        axes.set_ylabel(heatmap.row_axis)
        if heatmap.row_labels:
            axes.set_yticks(range(len(heatmap.row_labels)), heatmap.row_labels, fontsize=7)
        if heatmap.column_labels:
            axes.set_xticks(
                range(len(heatmap.column_labels)), heatmap.column_labels, fontsize=7, rotation=90
            )
        figure.colorbar(image, ax=axes)
