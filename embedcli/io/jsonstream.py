"""JSON text in pieces, as ``json.dumps`` formats it: tensors and arrays of two or more dimensions
row by row (never converted whole), NaN and infinities (which JSON cannot hold) as null.

``json`` itself is imported only when JSON is written.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any


def _is_array(value: Any) -> bool:
    return hasattr(value, "tolist") and hasattr(value, "shape")


def _plain(value: Any) -> str:
    """JSON for plain data; NaN and infinities become null."""
    import json  # here: a run that writes no JSON never imports it

    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_chunks(value: Any) -> Iterator[str]:
    """The JSON text of ``value`` in pieces, formatted as ``json.dumps`` formats it: what holds
    no tensor or array is dumped whole; an array of 2 or more dimensions goes row by row."""
    if not _holds_array(value) or (_is_array(value) and len(value.shape) <= 1):
        yield _plain(value.tolist() if _is_array(value) else value)
        return
    if isinstance(value, dict):
        import json

        keys = [json.dumps(str(key), ensure_ascii=False) + ": " for key in value]
        items, opening, closing = zip(keys, value.values(), strict=True), "{", "}"
    else:  # a list, a tuple, or the rows of an array
        items, opening, closing = (("", item) for item in value), "[", "]"
    yield opening
    for index, (key, item) in enumerate(items):
        yield (", " if index else "") + key
        yield from json_chunks(item)
    yield closing


def _holds_array(value: Any) -> bool:
    if _is_array(value):
        return True
    if isinstance(value, dict):
        return any(_holds_array(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_array(v) for v in value)
    return False
