"""``embedcli positions``: the view of whichever picture the pipeline made (a table or its
similarities, rope's angles or similarity, ALiBi's biases)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType

if TYPE_CHECKING:
    from embedcli.pipeline.positionmaps import AlibiReport, Heatmap, RopeReport


def positions_view(
    report: Heatmap | RopeReport | AlibiReport, *, width: int = 100, plain: bool = True
) -> RenderableType:
    """The picture of ``report``, fitted to ``width``."""
    from embedcli.render.heatmap import heatmap_view

    if hasattr(report, "slopes"):  # ALiBi
        from embedcli.render.alibi import alibi_view

        return alibi_view(report, width=width, plain=plain)
    heatmap = getattr(report, "heatmap", report)  # rope's report holds its heatmap
    return heatmap_view(heatmap, width=width, plain=plain)
