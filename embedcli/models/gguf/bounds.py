"""The quantization step of every block of a GGML-quantized tensor, from its scales alone.

A quantized block stores small integers ``q`` and one or two scales; a value is ``step * q``
(minus an offset in the types with a minimum). A value the block's range holds is rounded to the
nearest step, so it is off by at most half a step: the bound ``error_bounds`` gives. (A K-quant's
scale search may pick a range that clips a block's largest values; those can be off by more.)

The steps are read from the block layouts of ggml-quants (``block_q8_0`` and the others: each
scale's offset and width in a block), never from dequantized values. Types whose values come
from a codebook (IQ*), or are ternary (TQ*), have no single step and give None.
"""

from __future__ import annotations

from typing import Any

QK_K = 256  # values in a K-quant super-block


def _f16(blocks: Any, first: int) -> Any:
    import numpy as np

    return blocks[:, first : first + 2].copy().view(np.float16).astype(np.float64)[:, 0]


def _k_scales(packed: Any) -> Any:
    """The eight 6-bit sub-block scales of a Q4_K or Q5_K block (12 packed bytes)."""
    import numpy as np

    low = packed[:, 0:4] & 0x3F
    high = (packed[:, 8:12] & 0x0F) | ((packed[:, 0:4] >> 2) & 0x30)
    return np.concatenate([low, high], axis=1).astype(np.float64)


def _q3_scales(packed: Any) -> Any:
    """The sixteen 6-bit sub-block scales of a Q3_K block, less 32 (12 packed bytes)."""
    import numpy as np

    low = packed[:, 0:8]
    high = packed[:, 8:12]
    scales = np.empty((packed.shape[0], 16), dtype=np.int16)
    for j in range(16):
        nibble = (low[:, j % 8] >> (4 * (j // 8))) & 0x0F
        two = (high[:, j % 4] >> (2 * (j // 4))) & 0x03
        scales[:, j] = (nibble | (two << 4)).astype(np.int16) - 32
    return scales.astype(np.float64)


# per type: (bytes a block, a function of the blocks (n, bytes) -> steps (n, sub-blocks))
def _layouts() -> dict[str, tuple[int, Any]]:
    return {
        "Q8_0": (34, lambda b: _f16(b, 0)[:, None]),
        "Q4_0": (18, lambda b: _f16(b, 0)[:, None]),
        "Q4_1": (20, lambda b: _f16(b, 0)[:, None]),
        "Q5_0": (22, lambda b: _f16(b, 0)[:, None]),
        "Q5_1": (24, lambda b: _f16(b, 0)[:, None]),
        "Q8_1": (36, lambda b: _f16(b, 0)[:, None]),
        # Q2_K: scales[16] (low nibble: the scale), qs[64], d, dmin
        "Q2_K": (84, lambda b: _f16(b, 80)[:, None] * (b[:, 0:16] & 0x0F)),
        # Q3_K: hmask[32], qs[64], scales[12], d
        "Q3_K": (110, lambda b: _f16(b, 108)[:, None] * _q3_scales(b[:, 96:108])),
        # Q4_K: d, dmin, scales[12], qs[128]; Q5_K: d, dmin, scales[12], qh[32], qs[128]
        "Q4_K": (144, lambda b: _f16(b, 0)[:, None] * _k_scales(b[:, 4:16])),
        "Q5_K": (176, lambda b: _f16(b, 0)[:, None] * _k_scales(b[:, 4:16])),
        # Q6_K: ql[128], qh[64], scales[16] (int8), d
        "Q6_K": (210, lambda b: _f16(b, 208)[:, None] * b[:, 192:208].view("i1")),
    }


# where each block keeps its float16 scale d, and the minimum (m) or the minimums' scale (dmin)
# of the types with one
_SCALE, _MIN = "scale", "minimum"
_FIELDS = {"Q8_0": {0: _SCALE}, "Q4_0": {0: _SCALE}, "Q5_0": {0: _SCALE}, "Q8_1": {0: _SCALE}}
_FIELDS |= {"Q4_1": {0: _SCALE, 2: _MIN}, "Q5_1": {0: _SCALE, 2: _MIN}}
_FIELDS |= {"Q2_K": {80: _SCALE, 82: _MIN}, "Q3_K": {108: _SCALE}, "Q6_K": {208: _SCALE}}
_FIELDS |= {"Q4_K": {0: _SCALE, 2: _MIN}, "Q5_K": {0: _SCALE, 2: _MIN}}


def first_bad_scale(kind: str, raw: Any) -> tuple[str, float] | None:
    """(which field, its value) of the first float16 scale or minimum in ``raw`` (whole blocks
    of type ``kind``, as uint8) that is not finite; None if there is none, or the type's layout
    is not known."""
    import numpy as np

    found = _layouts().get(kind)
    if found is None:
        return None
    blocks = raw.reshape(-1, found[0])
    fields = _FIELDS[kind]
    values = np.stack([_f16(blocks, at) for at in fields], axis=1)  # (blocks, fields)
    bad = np.argwhere(~np.isfinite(values))
    if not len(bad):
        return None
    block, which = bad[0]
    return list(fields.values())[which], float(values[block, which])


# The legacy types round each value with the scale in float32, then store the scale in float16:
# a value is off by half a step plus |q| times the scale's rounding (at most 2**-11 of it, or
# 2**-25 for a subnormal scale), and a minimum's own rounding. (|q| at most, its offset)
_LEGACY = {"Q8_0": (127, None), "Q4_0": (8, None), "Q5_0": (16, None)}
_LEGACY |= {"Q4_1": (15, 2), "Q5_1": (31, 2), "Q8_1": (127, None)}
_HALF_ULP, _HALF_ULP_LOW = 2.0**-11, 2.0**-25
_ONE_SIDED = ("Q4_0", "Q5_0")


def _rounding(value: Any) -> Any:
    import numpy as np

    return np.maximum(np.abs(value) * _HALF_ULP, _HALF_ULP_LOW)


def step_sizes(kind: str, raw: Any) -> Any | None:
    """The step of every (sub-)block in ``raw`` (whole blocks of type ``kind``, as uint8), as a
    float64 array; None for a type without a single step."""
    found = _layouts().get(kind)
    if found is None:
        return None
    size, steps = found
    if raw.size % size:
        raise ValueError(f"{raw.size} bytes are not whole {kind} blocks of {size}")
    return steps(raw.reshape(-1, size))


def error_bounds(kind: str, raw: Any) -> Any | None:
    """The largest error a value in each (sub-)block's range can carry, from the scales:
    half a step (K-quants, whose values are rounded with the stored scales), plus the float16
    rounding of the scale and minimum (the legacy types); None without a single step."""
    import numpy as np

    steps = step_sizes(kind, raw)
    if steps is None:
        return None
    steps = np.abs(steps)
    if kind not in _LEGACY:
        return steps / 2
    largest, minimum = _LEGACY[kind]
    # Q4_0 and Q5_0 put a block's largest magnitude at -8 (-16) steps: a value of the other
    # sign reaches +7 (+15) at most, and can be off by a whole step
    bound = steps * (1.0 if kind in _ONE_SIDED else 0.5) + largest * _rounding(steps)
    if minimum is not None:
        size = _layouts()[kind][0]
        bound = bound + _rounding(_f16(raw.reshape(-1, size), minimum))[:, None]
    return bound
