"""Reports -> what a person or a script sees: rich renderables, their JSON twins, PNG figures.
Rendering never computes: the numbers come in the report.

Every view takes its data, then keyword-only ``width`` (the terminal's columns: views fit it
without splitting a word) and ``plain`` (no colour: separators and character ramps instead).
The JSON twins (``render.json``) and ``render.png`` never import rich; importing this package
imports neither rich nor torch.

- ``common``: what every view shares: the presentation helpers (plural, visible, format_bytes,
  format_shape), plain text, wrapped item lines, the first layout that fits.
- ``json``: the ``--json`` twin of every report (no rich).
- ``embed``: ``embedcli embed``: header, pipeline steps, vectors, similarity maps, notes.
- ``shapes``: inspect-shapes, broadcasting, and how positions enter (embed's addition too).
- ``presets``: ``inspect-shapes --list-presets``, grouped by family.
- ``tokens``: ``embedcli tokenize``: tokens, pieces and bytes, encodings compared, --explain.
- ``windows``: ``embedcli windows``: the data loader's batches and totals.
- ``count``: ``embedcli count``: files, the folder tree, totals, engines, models.
- ``checkpoints``: ``weights``, ``neighbors`` and ``stats``: a checkpoint and its tables.
- ``undertrained``: ``embedcli undertrained``: the candidates, the classes, what they mean.
- ``project``: ``embedcli project``: a token table's map as a terminal scatter plot.
- ``devices``: ``embedcli devices``: each device, its dtypes and memory.
- ``heatmap``: matrices as terminal pictures (a character ramp, or coloured blocks).
- ``positions``: ``embedcli positions``: whichever picture the pipeline made.
- ``alibi``: ALiBi's biases, head by head, and the slopes.
- ``positionsjson``: ``positions --json``: the numbers drawn and what they are made of.
- ``png``: PNG figures through matplotlib (no rich).
- ``countcsv``: ``count --csv``: one row per file, written as it is counted.
- ``progress``: progress bars on stderr (streaming embed, count).
- ``workprogress``: the bar of work on a table (stats, project, neighbors): rows read, time left.

Imports: pipeline, analysis, corpus, tokenization, models, core, io, errors.
"""

# name -> the module of embedcli.render that defines it, imported on first use (PEP 562): a
# command imports the rich modules its own view needs, not every view's.
_WHERE = {
    "addition_view": "shapes",
    "alibi_view": "alibi",
    "broadcast_table": "shapes",
    "broadcast_view": "shapes",
    "coloured_text": "tokens",
    "count_csv": "countcsv",
    "CountProgress": "progress",
    "compare_view": "tokens",
    "devices_table": "devices",
    "embed_tables": "embed",
    "engines_view": "count",
    "explain_view": "tokens",
    "files_view": "count",
    "heatmap_view": "heatmap",
    "MAX_POSITIONS": "embed",
    "models_view": "count",
    "neighbors_view": "checkpoints",
    "plural": "common",
    "positions_view": "positions",
    "presets_table": "presets",
    "project_view": "project",
    "shapes_tables": "shapes",
    "stats_view": "checkpoints",
    "StreamProgress": "progress",
    "undertrained_view": "undertrained",
    "strip_trailing": "common",
    "TENSOR_NAMES": "shapes",
    "to_text": "common",
    "TOKEN_TABLE_LIMIT": "tokens",
    "tokenize_view": "tokens",
    "tree_view": "count",
    "weights_view": "checkpoints",
    "windows_view": "windows",
    "WorkProgress": "workprogress",
}

__all__ = sorted(_WHERE)


def module_of(name: str) -> str:
    """The module that defines ``name``."""
    return f"{__name__}.{_WHERE[name]}"


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_of(name)), name)
    globals()[name] = value
    return value
