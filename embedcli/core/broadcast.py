"""NumPy/PyTorch broadcasting, explained step by step. Pure Python: no torch import."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from embedcli.errors import BroadcastError, UsageError

Shape = tuple[int, ...]


def format_shape(shape: Sequence[int]) -> str:
    """(8, 4, 256) -> '(8,4,256)'; (4,) -> '(4,)'; () -> '()'."""
    inner = ",".join(str(n) for n in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


_SEPARATORS = re.compile(r"\s*[,xX×]\s*")
_SIZE = re.compile(r"[0-9]{1,19}")  # up to int64's width; then bounded by MAX_SIZE
MAX_SIZE = 2**40  # every size embedcli takes (docs/reliability.md); int64 overflows far above
MAX_AXES = 64  # NumPy's limit (NPY_MAXDIMS; torch takes more)


def parse_shape(text: str) -> Shape:
    """'8,4,256', '(8,4,256)', '[8, 4, 256]', '8x4x256', '(4,)' -> a tuple; '()' or '[]' -> ()."""
    inner = text.strip()
    if inner[:1] + inner[-1:] in ("()", "[]"):
        inner = inner[1:-1].strip()
    if not inner:
        return ()
    parts = _SEPARATORS.split(inner)
    if len(parts) > 1 and parts[-1] == "":  # '(4,)'
        parts.pop()
    shown = f"{text[:40]!r}{'…' if len(text) > 40 else ''}"
    if len(parts) > MAX_AXES:
        raise UsageError(
            f"the shape {shown} has {len(parts):,} axes; embedcli takes at most {MAX_AXES}, as "
            "NumPy does"
        )
    if not all(_SIZE.fullmatch(part) for part in parts):
        raise UsageError(
            f"cannot read the shape {shown}: write sizes of at most 19 digits like 8,4,256 or "
            "(8,4,256) or 8x4x256, and () for a scalar"
        )
    shape = tuple(int(part) for part in parts)
    too_big = next((n for n in shape if n > MAX_SIZE), None)
    if too_big is not None:
        raise UsageError(
            f"the shape {shown} has a size of {too_big:,}, past the 2**40 = {MAX_SIZE:,} "
            "embedcli takes for any size (docs/reliability.md)"
        )
    return shape


@dataclass(frozen=True)
class AxisRule:
    """How one axis (counted from the right, -1 is the last) of the result is formed."""

    axis: int
    sizes: tuple[int, ...]  # each operand's size on this axis after left-padding with 1s
    result: int
    rule: str  # "equal": all sizes agree; "stretch": the 1s are stretched to ``result``


@dataclass(frozen=True)
class BroadcastPlan:
    """Every step of broadcasting some shapes together."""

    shapes: tuple[Shape, ...]  # as given
    aligned: tuple[Shape, ...]  # right-aligned, padded on the left with 1s
    axes: tuple[AxisRule, ...]  # left to right
    result: Shape


def explain(*shapes: Sequence[int]) -> BroadcastPlan:
    """Broadcast ``shapes`` as torch does, keeping each step; incompatible axes raise."""
    if len(shapes) < 1:
        raise BroadcastError("broadcasting needs at least one shape")
    given = tuple(tuple(int(n) for n in shape) for shape in shapes)
    for shape in given:
        if any(n < 0 for n in shape):
            raise BroadcastError(f"shape {format_shape(shape)} has a negative size")
    ndim = max(len(shape) for shape in given)
    aligned = tuple((1,) * (ndim - len(shape)) + shape for shape in given)
    axes = []
    for position in range(ndim):
        sizes = tuple(shape[position] for shape in aligned)
        distinct = set(sizes) - {1}
        if len(distinct) > 1:
            first, second = sorted(distinct, key=sizes.index)[:2]
            raise BroadcastError(
                f"cannot broadcast {' with '.join(format_shape(s) for s in given)}: "
                f"axis {position - ndim} has sizes {first} and {second}"
            )
        result = distinct.pop() if distinct else 1
        rule = "equal" if all(size == result for size in sizes) else "stretch"
        axes.append(AxisRule(position - ndim, sizes, result, rule))
    return BroadcastPlan(given, aligned, tuple(axes), tuple(axis.result for axis in axes))
