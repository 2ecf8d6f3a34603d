"""PNG figures (matplotlib, the ``embedcli[plot]`` extra): a positional heatmap (rope's angles
and ALiBi's biases too), and the projection's map of a token table. Drawing only: the numbers
come in a report.

A figure is written atomically, or into a file staged with others (``project`` writes its PNG
and the projector's files together); where matplotlib is missing, an error says how to install
it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from embedcli.analysis.projection import ORIGINS
from embedcli.errors import MissingExtraError, OutputError, OutputFormatError, os_reason
from embedcli.io.outputs import NO_MATPLOTLIB, atomic_write
from embedcli.pipeline.positionmaps import AlibiReport, RopeReport, power_of_two

if TYPE_CHECKING:
    from embedcli.analysis.projection import Projection
    from embedcli.pipeline.positionmaps import AlibiReport, Heatmap, RopeReport
    from embedcli.pipeline.undertrained import RowIndicators, UndertrainedReport


@contextmanager
def png_figure(
    path: Path,
    width_px: int,
    height_px: int,
    handle: BinaryIO | None = None,
    grid: tuple[int, int] = (1, 1),
) -> Iterator[tuple[Any, Any]]:
    """(figure, axes) to draw on (an array of axes for a ``grid`` of rows and columns), saved
    as a PNG at ``path`` (named *.png) when the block ends, written atomically (or into
    ``handle``, a file staged for ``path``), and closed whatever happens. matplotlib is the
    ``embedcli[plot]`` extra: where it is missing, an error says how to install it."""
    if path.suffix.lower() != ".png":
        raise OutputFormatError(f"--png writes PNG images; name the file *.png, not {path.name}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise MissingExtraError(NO_MATPLOTLIB) from None
    dpi = 100
    figure, axes = pyplot.subplots(
        *grid, figsize=(width_px / dpi, height_px / dpi), dpi=dpi, squeeze=grid == (1, 1)
    )
    try:
        yield figure, axes
        if handle is not None:
            figure.savefig(handle, format="png", dpi=dpi)
        else:
            with atomic_write(path) as written:
                figure.savefig(written, format="png", dpi=dpi)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {os_reason(exc)}") from exc
    finally:
        pyplot.close(figure)


# a colour map by kind of matrix: rope's angles go round (-π and +π are one turn), ALiBi's
# biases run one way (from the lowest to 0); the rest diverge around 0
CMAPS = {"angle": "twilight_shifted", "bias": "viridis"}


def heatmap_png(heatmap: Heatmap, path: Path, *, width_px: int = 800, height_px: int = 500) -> None:
    """The heatmap as a PNG, written atomically: the matrix on the report's own colour scale
    (rope's -π to π, ALiBi's lowest bias to 0), else one symmetric around 0; masked cells
    blank."""
    low, high = heatmap.bounds or (-heatmap.limit, heatmap.limit)
    with png_figure(path, width_px, height_px) as (figure, axes):
        image = axes.imshow(
            heatmap.matrix,
            aspect="auto",
            cmap=CMAPS.get(heatmap.kind, "RdBu_r"),
            vmin=low,
            vmax=high,
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


def positions_png(report: Heatmap | RopeReport | AlibiReport, path: Path) -> None:
    """``embedcli positions --png``: the picture of whichever report the pipeline made."""
    if isinstance(report, AlibiReport) and report.heatmap is None:  # ALiBi, every head
        return alibi_png(report, path)
    if isinstance(report, (AlibiReport, RopeReport)):  # ALiBi's --head; rope
        report = report.heatmap
    heatmap_png(report, path)


ALIBI_PNG_HEADS = 16  # small multiples in a figure at most, sampled evenly


def alibi_png(
    report: AlibiReport, path: Path, *, width_px: int = 900, height_px: int = 600
) -> None:
    """Every head's bias as a small multiple on one shared colour scale (16 heads at most,
    evenly sampled), each titled with its slope; masked cells blank."""
    import math

    heads = report.bias.shape[0]
    count = min(heads, ALIBI_PNG_HEADS)
    shown = [round(i * (heads - 1) / (count - 1)) for i in range(count)] if count > 1 else [0]
    columns = math.ceil(math.sqrt(count * width_px / height_px))
    rows = math.ceil(count / columns)
    low, high = report.bounds
    with png_figure(path, width_px, height_px, grid=(rows, columns)) as (figure, axes):
        flat = list(axes.flat)
        for axis, head in zip(flat, shown, strict=False):
            image = axis.imshow(report.bias[head], cmap="viridis", vmin=low, vmax=high,
                                interpolation="nearest")  # fmt: skip
            slope = power_of_two(report.slopes[head].log2)
            axis.set_title(f"head {head}: slope {slope}", fontsize=8)
            axis.set_xticks([])
            axis.set_yticks([])
        for axis in flat[len(shown) :]:
            axis.set_visible(False)
        sampled = f" ({count} of {heads} heads, evenly sampled)" if count < heads else ""
        figure.suptitle(f"{report.title}{sampled}\nrows: query i · columns: key j", fontsize=9)
        figure.colorbar(image, ax=flat, shrink=0.8, label="bias on the attention scores")


LABELS_IN_PNG = 60  # the first points (the text's tokens first) are labelled in a PNG


def projection_png(
    report: Projection, path: Path, handle: BinaryIO, *, width_px: int = 900, height_px: int = 700
) -> Path:
    """The map as a PNG, written to ``handle``:
    every row of the table as a grey cloud, the chosen tokens on it, labelled."""
    with png_figure(path, width_px, height_px, handle) as (_, axes):
        cloud = report.cloud
        axes.scatter(cloud[:, 0], cloud[:, 1], s=1, c="0.75", alpha=0.5, linewidths=0)
        colours = {"text": "tab:red", "top": "tab:blue", "ids-file": "tab:green"}
        for origin in ORIGINS:
            chosen = [p for p in report.points if p.origin == origin]
            if chosen:  # the text's tokens on top of the rest
                axes.scatter(
                    [p.x for p in chosen], [p.y for p in chosen], s=14, c=colours[origin],
                    label=origin, zorder=3 if origin == "text" else 2,
                )  # fmt: skip
        for p in report.points[:LABELS_IN_PNG]:
            axes.annotate(
                p.token.display, (p.x, p.y), fontsize=8, xytext=(3, 3),
                textcoords="offset points", weight="bold" if p.origin == "text" else "normal",
            )  # fmt: skip
        share = report.explained_variance_ratio
        axes.set_xlabel(f"PC1 ({share[0]:.2%} of the variance)")
        axes.set_ylabel(f"PC2 ({share[1]:.2%} of the variance)")
        rows, width = report.table_shape
        axes.set_title(
            f"{report.source} · {rows:,} × {width:,}\n{report.structure}: PC1 carries "
            f"{report.noise_ratio:.2f}× the top variance of a random table of this shape",
            fontsize=9,
        )
        axes.legend(loc="upper right", fontsize=8)
    return path


def undertrained_png(
    report: UndertrainedReport, rows: RowIndicators, path: Path, *,
    width_px: int = 900, height_px: int = 650,
) -> Path:  # fmt: skip
    """Every token's indicator against its row norm: the reference tokens, the candidates
    listed, and the rest (a grey cloud); written atomically to ``path``."""
    import numpy as np

    from embedcli.analysis.vocabclasses import CLASSES  # lazy: only for the picture

    with png_figure(path, width_px, height_px) as (_, axes):
        reference = rows.classes == CLASSES.index("reference")
        listed = np.zeros(len(rows.cosine), dtype=bool)
        listed[rows.candidates] = True
        ranked = np.nan_to_num(rows.cosine, nan=-np.inf)
        cut = np.partition(ranked, len(ranked) - report.top_reference)[-report.top_reference]
        high = (ranked >= cut) & ~reference & ~listed  # the rest of the top R
        rest = ~reference & ~listed & ~high
        top = f"top {report.top_reference:,}"
        for chosen, colour, size, label in (
            (rest, "0.6", 2, "other tokens"),
            (high, "tab:orange", 3, f"other tokens in the {top}"),
            (reference, "tab:red", 3, f"reference: {report.reference.described}"),
            (listed, "tab:blue", 12, f"the {len(rows.candidates)} candidates listed"),
        ):
            axes.scatter(rows.norms[chosen], rows.cosine[chosen], s=size, c=colour,
                         linewidths=0, alpha=0.6, label=label, rasterized=True)  # fmt: skip
        axes.set_xlabel(f"row norm of the token table ({report.shape[0]:,} rows)")
        axes.set_ylabel(f"cosine to the unused direction ({report.matrix}, PC1 removed)")
        axes.set_title(
            f"{report.source}: {report.reference_in_top:,} of {report.top_reference:,} "
            f"reference tokens rank in the top {report.top_reference:,}", fontsize=10,
        )  # fmt: skip
        axes.legend(loc="lower right", fontsize=8, markerscale=3)
    return path
