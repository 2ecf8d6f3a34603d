"""The pure-Python broadcasting explanation agrees with torch, result for result and error for
error."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import assert_python_ok

from embedcli.core.broadcast import explain, format_shape
from embedcli.errors import BroadcastError


def test_positions_over_a_batch() -> None:
    plan = explain((8, 4, 256), (4, 256))
    assert plan.aligned == ((8, 4, 256), (1, 4, 256))
    assert [(a.axis, a.sizes, a.result, a.rule) for a in plan.axes] == [
        (-3, (8, 1), 8, "stretch"),
        (-2, (4, 4), 4, "equal"),
        (-1, (256, 256), 256, "equal"),
    ]
    assert plan.result == (8, 4, 256)


def test_error_names_axis_and_sizes() -> None:
    with pytest.raises(BroadcastError) as info:
        explain((8, 4, 256), (3, 256))
    assert str(info.value) == "cannot broadcast (8,4,256) with (3,256): axis -2 has sizes 4 and 3"


@pytest.mark.parametrize(
    ("shape", "text"), [((), "()"), ((4,), "(4,)"), ((8, 4, 256), "(8,4,256)")]
)
def test_format_shape(shape, text) -> None:
    assert format_shape(shape) == text


shapes = st.lists(st.lists(st.integers(0, 4), max_size=4).map(tuple), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(shapes)
def test_agrees_with_torch(given_shapes) -> None:
    try:
        expected = tuple(torch.broadcast_shapes(*given_shapes))
    except RuntimeError:
        with pytest.raises(BroadcastError):
            explain(*given_shapes)
        return
    plan = explain(*given_shapes)
    assert plan.result == expected
    assert all(len(a) == len(expected) for a in plan.aligned)


def test_no_torch_import() -> None:
    code = (
        "import sys; from embedcli.core.broadcast import explain; explain((2,3),(3,)); "
        "assert 'torch' not in sys.modules"
    )
    assert_python_ok(code)
