"""``embedcli positions --json``: the numbers drawn, and what they are made of. Never imports
rich.

- a table (learned, sinusoidal) or its similarities: ``render.json.heatmap_json``;
- rope: the drawn matrix (angles wrapped to (-π, π], or the similarity), ``inverse_frequencies``
  per pair, ``theta``, ``rope_dim``, ``scaling`` (null for none) and, for the similarity, its
  ``profile`` by distance;
- ALiBi: every head's ``slopes`` (head, slope, log2, distance_to_minus_one), and ``bias``,
  (heads, T, T) or (1, T, T) for ``head``, null where masked (a key after the query).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from embedcli.pipeline.positionmaps import AlibiReport, RopeReport
from embedcli.render.json import heatmap_json

if TYPE_CHECKING:
    from embedcli.pipeline.positionmaps import AlibiReport, Heatmap, RopeReport


def positions_json(report: Heatmap | RopeReport | AlibiReport) -> dict[str, Any]:
    """The JSON twin of ``report``."""

    if isinstance(report, AlibiReport):
        return alibi_json(report)
    if isinstance(report, RopeReport):
        return rope_json(report)
    return heatmap_json(report.positional or "", report)


def rope_json(report: RopeReport) -> dict[str, Any]:
    """Rope's matrix and its numbers: the report's fields, the heatmap's matrix in its place."""

    fields = {k: v for k, v in asdict_shallow(report).items() if k != "heatmap"}
    if report.profile is None:
        del fields["profile"]
    return {
        **heatmap_json("rope", report.heatmap),
        "wrapped": "(-pi, pi]" if report.heatmap.kind == "angle" else None,
        "pairs": report.rope_dim // 2,
        **fields,
    }


def alibi_json(report: AlibiReport) -> dict[str, Any]:
    """ALiBi's slopes and biases."""
    import numpy as np

    return {
        "positional": "alibi",
        "kind": "bias",
        "source": report.source,
        "heads": len(report.slopes),
        "head": report.head,
        "slope_rule": report.slope_rule,
        "slopes": [asdict(row) for row in report.slopes],
        "shape": list(report.bias.shape),
        "bias": np.asarray(report.bias),  # computed here: the pipeline checked its size
    }


def asdict_shallow(report: Any) -> dict[str, Any]:
    """A dataclass's fields, values as they are (arrays are not copied into lists)."""
    from dataclasses import fields

    return {f.name: getattr(report, f.name) for f in fields(report)}
