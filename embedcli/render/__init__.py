"""Reports -> rich renderables. Rendering never computes; the JSON twins live in jsonout.py.

Every view takes its data, then keyword-only ``width`` (the terminal's columns: views fit it
without splitting a word) and ``plain`` (no colour: separators and character ramps instead).
Importing this package never imports torch.
"""

from embedcli.render.checkpoints import neighbors_view, stats_view, weights_view
from embedcli.render.common import plural, strip_trailing, to_text
from embedcli.render.count import files_view, models_view, tree_view
from embedcli.render.devices import devices_table
from embedcli.render.embed import MAX_POSITIONS, STEP_OPERATIONS, embed_tables, step_operation
from embedcli.render.heatmap import heatmap_view
from embedcli.render.progress import StreamProgress
from embedcli.render.shapes import (
    TENSOR_NAMES,
    addition_view,
    broadcast_table,
    broadcast_view,
    presets_table,
    shapes_tables,
)
from embedcli.render.tokens import TOKEN_TABLE_LIMIT, coloured_text, compare_view, tokenize_view
from embedcli.render.windows import windows_view

__all__ = [
    "MAX_POSITIONS",
    "STEP_OPERATIONS",
    "TENSOR_NAMES",
    "TOKEN_TABLE_LIMIT",
    "StreamProgress",
    "addition_view",
    "broadcast_table",
    "broadcast_view",
    "coloured_text",
    "compare_view",
    "devices_table",
    "embed_tables",
    "files_view",
    "heatmap_view",
    "models_view",
    "neighbors_view",
    "plural",
    "presets_table",
    "shapes_tables",
    "stats_view",
    "step_operation",
    "strip_trailing",
    "to_text",
    "tokenize_view",
    "tree_view",
    "weights_view",
    "windows_view",
]
