"""Reports -> what a person or a script sees: rich renderables, their JSON twins, PNG figures.
Rendering never computes: the numbers come in the report.

Every view takes its data, then keyword-only ``width`` (the terminal's columns: views fit it
without splitting a word) and ``plain`` (no colour: separators and character ramps instead).
The JSON twins (``render.json``) and ``render.png`` never import rich; importing this package
imports neither rich nor torch.

- views, one module per command family: ``embed``, ``tokens``, ``count``, ``shapes``,
  ``windows``, ``checkpoints`` (weights, neighbors, stats), ``project``, ``positions`` (with
  ``heatmap`` and ``alibi``), ``presets``, ``devices``; ``common``: what they share.
- ``json`` and ``positionsjson``: the JSON twins; ``png``: figures; ``countcsv``: count's CSV.
- ``progress``: progress bars on stderr (streaming embed, count).

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
    "step_operation": "embed",
    "STEP_OPERATIONS": "embed",
    "StreamProgress": "progress",
    "strip_trailing": "common",
    "TENSOR_NAMES": "shapes",
    "to_text": "common",
    "TOKEN_TABLE_LIMIT": "tokens",
    "tokenize_view": "tokens",
    "tree_view": "count",
    "weights_view": "checkpoints",
    "windows_view": "windows",
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
