"""``embedcli positions``: the view of whichever picture the pipeline made (a table or its
similarities, rope's angles or similarity, ALiBi's biases)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType

from embedcli.pipeline.positionmaps import AlibiReport, RopeReport

if TYPE_CHECKING:
    from embedcli.pipeline.positionmaps import AlibiReport, Heatmap, RopeReport


def positions_view(
    report: Heatmap | RopeReport | AlibiReport, *, width: int = 100, plain: bool = True
) -> RenderableType:
    """The picture of ``report``, fitted to ``width``."""
    from embedcli.render.heatmap import heatmap_view  # lazy: render.heatmap loads rich

    if isinstance(report, AlibiReport):
        from embedcli.render.alibi import alibi_view  # lazy: render.alibi loads rich

        return alibi_view(report, width=width, plain=plain)
    heatmap = report.heatmap if isinstance(report, RopeReport) else report
    return heatmap_view(heatmap, width=width, plain=plain)
