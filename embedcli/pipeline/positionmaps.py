"""Positions as matrices to look at: ``Heatmap`` (a matrix and its labels, which every
position picture is), and the encodings that act inside attention: rope's rotation angles (or
the similarity they give two positions), and ALiBi's bias of each head on the attention scores.
Neither adds anything to the input embeddings, and neither has parameters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from embedcli.core.memory import ensure_room
from embedcli.core.positions import (
    by_distance,
    rope_angles,
    rope_attention_factor,
    rope_distance_similarity,
    rope_inverse_frequencies,
    rope_sequence_length,
    wrap_angles,
)
from embedcli.errors import MemoryLimitError
from embedcli.tokenization.display import plural

if TYPE_CHECKING:
    import numpy as np

    from embedcli.pipeline.positionsource import Encoding


@dataclass
class Heatmap:
    """A matrix and how to label it; rendered as terminal blocks, a PNG, or JSON."""

    title: str
    kind: str  # "encoding" or "similarity"
    row_axis: str
    column_axis: str
    matrix: np.ndarray  # (rows, columns) float64
    row_labels: list[str] | None = None  # None: rows are numbered
    column_labels: list[str] | None = None
    source: str | None = None  # where the matrix came from (positions: the table's source)
    positional: str | None = None  # positions: the family drawn (learned, sinusoidal, rope)
    bounds: tuple[float, float] | None = None  # a fixed colour scale (rope's angles: -π, π)
    scale_note: str | None = None  # what the scale is, said beside its numbers
    masked: str | None = None  # NaN cells are masked, not values: what they are (ALiBi's j > i)
    details: tuple[str, ...] = ()  # short "key value" facts under the title
    notes: tuple[str, ...] = ()  # sentences under the scale

    @property
    def limit(self) -> float:
        """The largest magnitude: the colour scale runs from -limit to +limit."""
        import numpy as np

        if self.bounds is not None:
            return max(abs(self.bounds[0]), abs(self.bounds[1])) or 1.0
        finite = np.abs(self.matrix[np.isfinite(self.matrix)]) if len(self.matrix) else []
        return float(finite.max()) if len(finite) and finite.max() > 0 else 1.0


@dataclass
class RopeReport:
    """Rope's picture (``heatmap``) and the numbers behind it."""

    heatmap: Heatmap  # angles (positions × pairs, wrapped) or the similarity by distance
    theta: float
    rope_dim: int  # rotated dimensions of one head: rope_dim / 2 pairs (the columns)
    scaling: dict[str, Any] | None  # any rope type, as the model's config gives it (resolved)
    inverse_frequencies: np.ndarray  # (rope_dim / 2,) float32 values, scaling applied
    profile: np.ndarray | None = None  # --similarity: S by distance m - n = 0..T-1
    rope_bases: dict[str, float] | None = None  # every layer type's base, where they differ
    attention_factor: float = 1.0  # what attention multiplies cos and sin by (yarn, longrope)
    sequence_length: int | None = None  # dynamic: the sequence length the angles are for


@dataclass
class SlopeRow:
    """One head's ALiBi slope: slope = 2^log2; the bias reaches -1 at distance 1/slope."""

    head: int  # 0-based, as --head counts
    slope: float
    log2: float
    distance_to_minus_one: float


@dataclass(frozen=True)
class AlibiBias:
    """ALiBi's (heads, T, T) bias, float64, computed only for the cells asked for:
    bias[h, i, j] = -slope_h · (i - j) for a key j at or before the query i, NaN for j > i.
    Indexed like an array (an int, a slice or a list per axis; lists index each axis on its
    own), so that a picture of 16 heads × 16 positions never builds BLOOM's 112 × T × T."""

    slopes: tuple[float, ...]
    length: int  # T: queries and keys

    @property
    def shape(self) -> tuple[int, int, int]:
        return (len(self.slopes), self.length, self.length)

    @property
    def size(self) -> int:
        return len(self.slopes) * self.length * self.length

    def __len__(self) -> int:
        return len(self.slopes)

    def __getitem__(self, key: Any) -> np.ndarray:
        import numpy as np

        key = key if isinstance(key, tuple) else (key,)
        key = (*key, *[slice(None)] * (3 - len(key)))
        slopes = np.asarray(self.slopes, dtype=np.float64)
        # the positions asked for, never all T of them (T may be 2**40: a MemoryError)
        picked = [np.asarray(slopes[key[0]])] + [_positions(k, self.length) for k in key[1:]]
        kept = [p.ndim > 0 for p in picked]
        slope, query, key_j = np.ix_(*[np.atleast_1d(p) for p in picked])
        behind = key_j - query  # j - i, so that the diagonal is +0, not -0
        bias = np.where(behind > 0, np.nan, slope * behind)  # (h, i, j) picked
        return bias.reshape([n for n, k in zip(bias.shape, kept, strict=True) if k])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        whole = self[:, :, :]
        return whole if dtype is None else whole.astype(dtype)


def _positions(key: Any, length: int) -> np.ndarray:
    """The positions ``key`` (an int, a slice or a list) picks of ``length``, as float64."""
    import numpy as np

    if isinstance(key, slice):
        return np.arange(*key.indices(length), dtype=np.float64)
    picked = np.asarray(key)
    if picked.size and not ((-length <= picked) & (picked < length)).all():
        raise IndexError(f"position {key} is out of range for {length:,} positions")
    return np.where(picked < 0, picked + length, picked).astype(np.float64)


@dataclass
class AlibiReport:
    """ALiBi's biases: every head (``head`` None) or one, and every head's slope."""

    title: str
    source: str
    slopes: list[SlopeRow]
    slope_rule: str  # how the slopes are made, in words
    bias: AlibiBias  # (heads, T, T) float64, by the cell; (1, T, T) with --head; NaN: j > i
    bounds: tuple[float, float]  # the colour scale, shared by every head: lowest bias to 0
    head: int | None = None  # --head: the one head drawn large
    heatmap: Heatmap | None = None  # that head, drawn large
    notes: tuple[str, ...] = ()
    masked: str = "masked: key j after query i (a causal query never sees it)"


def _number(value: float) -> str:
    return f"{value:,.10g}"


def power_of_two(log2: float) -> str:
    """A slope as the power of two it is: '2^-1', '2^-0.5', '2^-6.9375'."""
    return f"2^{round(log2, 6):g}"


_SCALING_WORDS = {  # field -> its short name in the details line
    "factor": "factor",
    "low_freq_factor": "low",
    "high_freq_factor": "high",
    "original_max_position_embeddings": "original",
    "max_position_embeddings": "context",
    "beta_fast": "beta_fast",
    "beta_slow": "beta_slow",
    "mscale": "mscale",
    "mscale_all_dim": "mscale_all_dim",
    "partial_rotary_factor": "partial",
    "attention_factor": "attention factor",
}


def scaling_words(scaling: dict[str, Any] | None) -> str:
    """'scaling llama3 (factor 8, low 1, high 4, original 8,192)', or 'no scaling'."""
    if not scaling:
        return "no scaling"
    numbers = {k: v for k, v in scaling.items() if isinstance(v, int | float)
               and not isinstance(v, bool)}  # fmt: skip
    said = [f"{word} {_number(numbers[key])}" for key, word in _SCALING_WORDS.items()
            if key in numbers]  # fmt: skip
    if scaling["rope_type"] == "yarn" and scaling.get("truncate") is False:
        said.append("not truncated")
    if scaling["rope_type"] == "longrope":
        said.append(f"{len(scaling['short_factor'])} short and long factors")
    if scaling["rope_type"] == "freq_factors":
        said.append(f"{len(scaling['factors'])} factors from rope_freqs.weight")
    return f"scaling {scaling['rope_type']} ({', '.join(said)})"


def _scaling_note(scaling: dict[str, Any] | None, rows: int) -> tuple[str, ...]:
    if not scaling:
        return ()
    kind, factor = scaling["rope_type"], _number(scaling.get("factor", 1.0))
    attention = _number(rope_attention_factor(tuple(scaling.items())))
    if kind == "linear":
        return (f"linear scaling: every pair turns {factor}× slower than theta alone says",)
    if kind == "llama3":
        original = _number(scaling["original_max_position_embeddings"])
        low, high = _number(scaling["low_freq_factor"]), _number(scaling["high_freq_factor"])
        return (
            f"llama3 scaling: pairs whose wavelength 2π/inv_freq exceeds {original}/{low} turn "
            f"{factor}× slower, those under {original}/{high} keep their speed, and the band "
            "between is blended",
        )
    if kind == "dynamic":
        length = rope_sequence_length(tuple(scaling.items()), rows)
        return (
            f"dynamic scaling: the angles are for a sequence of {_number(length)} positions "
            f"(the base grows with the length past the context, "
            f"{_number(scaling['max_position_embeddings'])}; factor {factor})",
        )
    if kind == "yarn":
        return (
            f"yarn scaling: low-frequency pairs turn {factor}× slower, high-frequency ones "
            f"keep their speed, a ramp between; attention multiplies cos and sin by {attention}",
        )
    if kind == "freq_factors":
        return (
            "frequency factors (the GGUF file's rope_freqs.weight): each pair turns its own "
            "factor slower than theta alone says, as llama.cpp divides its frequencies",
        )
    if kind == "longrope":
        original = _number(scaling["original_max_position_embeddings"])
        which = "long" if rows > scaling["original_max_position_embeddings"] else "short"
        return (
            f"longrope scaling: each pair divided by its own {which} factor ({rows:,} positions; "
            f"long past {original}); attention multiplies cos and sin by {attention}",
        )
    partial = scaling.get("partial_rotary_factor", 1.0)
    return (
        f"proportional rope: the first {_number(partial)} of the pairs turn (÷ {factor}), "
        "the rest stay at angle 0",
    )


def rope_report(encoding: Encoding, rows: int, similarity: bool) -> RopeReport:
    """Rope's angle per position (rows) and pair of rotated dimensions (columns), wrapped to
    (-π, π]; or, with ``similarity``, the similarity it gives two positions, by distance."""
    import torch

    dim = encoding.rope_dim
    assert dim is not None
    pairs = dim // 2
    if similarity:  # (T, T) and the profile's (T, r/2) cosines
        _check_memory(rows * (rows + pairs) * 16, f"{rows:,} positions², by distance")
    else:
        hint = "lower --context-length" + ("" if encoding.from_model else " or -d")
        # about 32 bytes a number at the peak (positions, angles, wrapped), as measured
        _check_memory(rows * pairs * 32, f"{rows:,} positions × {pairs:,} pairs", hint)
    scaling = None if encoding.rope_scaling is None else dict(encoding.rope_scaling)
    inverse = rope_inverse_frequencies(
        dim, encoding.rope_theta, encoding.rope_scaling, seq_len=rows
    )  # (r/2,): the frequencies for these rows (dynamic, longrope)
    details = (f"theta {_number(encoding.rope_theta)}", f"rope_dim {dim}", plural(pairs, "pair"),
               scaling_words(scaling))  # fmt: skip
    bases = encoding.rope_bases
    notes = _scaling_note(scaling, rows)
    drawn = (
        f"block 0 ({encoding.rope_not_in_first_block}) has no rope: the first rope layers' base"
        if encoding.rope_not_in_first_block
        else "the first block's"
    )
    scaled = {k: v for k, v in (encoding.rope_layer_scalings or {}).items() if v != "default"}
    if scaled:  # another layer type's scaling, which the picture of the first's does not show
        notes += (
            "rope scaling by layer type: "
            + ", ".join(f"{name} {kind}" for name, kind in scaled.items())
            + " (the others none)",
        )
    if bases:
        listed = ", ".join(f"{name} {_number(base)}" for name, base in bases.items())
        notes += (
            f"the layers' rope bases differ ({listed}); {drawn}, "
            f"{_number(encoding.rope_theta)}, is drawn",
        )
    elif encoding.rope_not_in_first_block:
        notes += (f"{drawn}, {_number(encoding.rope_theta)}, is drawn",)
    parameters = "nothing is added to the input embeddings, and nothing is learned (0 parameters)"
    if similarity:
        return _rope_similarity(encoding, rows, inverse, details, notes, parameters, scaling)
    angles = wrap_angles(
        rope_angles(torch.arange(rows), dim, encoding.rope_theta, encoding.rope_scaling)
    )  # (T, r/2) float64, fmt: skip
    heatmap = Heatmap(
        f"RoPE rotation angles: {encoding.source}", "angle", "position",
        f"pair i of the {dim} rotated dimensions", angles.numpy(), source=encoding.source,
        positional="rope", bounds=(-math.pi, math.pi), scale_note="radians, wrapped",
        details=details,
        notes=(
            f"angle[pos, i] = pos · inv_freq_i, with inv_freq_i = theta^(-2i/{dim}), drawn "
            "wrapped to (-π, π]: the rotation itself (-π and +π are the same turn)",
            f"attention rotates pair i of every query and key by this angle; {parameters}",
            *notes,
        ),
    )  # fmt: skip
    return RopeReport(heatmap, encoding.rope_theta, dim, scaling, inverse.double().numpy(),
                      rope_bases=bases, **_rope_extras(encoding, rows))  # fmt: skip


def _rope_similarity(
    encoding: Encoding,
    rows: int,
    inverse: Any,
    details: tuple[str, ...],
    notes: tuple[str, ...],
    parameters: str,
    scaling: dict[str, Any] | None,
) -> RopeReport:

    profile = rope_distance_similarity(inverse, rows)  # (T,)
    pairs = len(inverse)
    over = "the one pair" if pairs == 1 else f"the {pairs:,} pairs"
    distances = sorted({0, *(2**k for k in range(rows.bit_length()) if 2**k < rows), rows - 1})
    shown = ", ".join(f"{k}→{float(profile[k]):+.3f}" for k in distances)
    heatmap = Heatmap(
        f"RoPE similarity between positions: {encoding.source}", "similarity", "position",
        "position", by_distance(profile).numpy(), source=encoding.source, positional="rope",
        details=details,
        notes=(
            f"S[m, n] = mean over {over} of cos((m - n) · inv_freq_i): the cosine "
            "between rotated copies, at positions m and n, of one vector whose pairs have "
            "equal magnitudes",
            "S depends on m - n alone, so the matrix is constant along each diagonal (a "
            f"Toeplitz matrix); S by distance: {shown}",
            f"rope acts on queries and keys inside attention; {parameters}",
            *notes,
        ),
    )  # fmt: skip
    return RopeReport(heatmap, encoding.rope_theta, encoding.rope_dim or 0, scaling,
                      inverse.double().numpy(), profile.numpy(), encoding.rope_bases,
                      **_rope_extras(encoding, rows))  # fmt: skip


def _rope_extras(encoding: Encoding, rows: int) -> dict[str, Any]:
    """The attention factor, and the sequence length dynamic scaling's angles are for."""
    return {
        "attention_factor": rope_attention_factor(encoding.rope_scaling),
        "sequence_length": rope_sequence_length(encoding.rope_scaling, rows),
    }


def slope_rule(encoding: Encoding) -> str:
    """How the slopes of ``encoding.heads`` heads are made, in words."""
    n = encoding.heads or 0
    if encoding.slope_rule == "mpt":
        m = 2 ** math.ceil(math.log2(n))
        # transformers' build_mpt_alibi_tensor: concat(slopes[1::2], slopes[::2])[:n]
        odd = f", even k first, then odd k, the first {n} of them" if m != n else ""
        return (
            f"MPT's slopes: 2^(-b·k/{m}) for k = 1..{m}, {m} the power of two at or above "
            f"{plural(n, 'head')}{odd} (b = alibi_bias_max, 8 unless its config says otherwise)"
        )
    p = 2 ** math.floor(math.log2(n))
    if p == n:
        return f"Press et al.'s slopes: 2^(-8k/{n}) for k = 1..{n}, a geometric sequence"
    return (
        f"Press et al.'s slopes for {n} heads, not a power of two: 2^(-8k/{p}) for k = 1..{p}, "
        f"then the odd k of 2^(-8k/{2 * p}) for the other {n - p}"
    )


JSON_BIAS_VALUES = 1 << 22  # --json writes at most this many bias values (4,194,304)
PICTURE_HEADS = 16  # small multiples drawn at most, in the terminal and a PNG (sampled evenly)


def alibi_report(
    encoding: Encoding,
    rows: int,
    head: int | None = None,
    *,
    png: bool = False,
    as_json: bool = False,
) -> AlibiReport:
    """ALiBi's bias of every head (or of ``head`` alone) on the attention scores, T × T, as
    cells computed when drawn; refused, before any is computed, where what ``png`` and
    ``as_json`` ask for would not fit (a PNG: up to 16 whole heads; JSON: every value)."""
    slopes = list(encoding.slopes or ())
    drawn = slopes if head is None else [slopes[head]]
    bias = AlibiBias(tuple(drawn), rows)
    _check_alibi_outputs(bias, head is not None, png, as_json)
    low = -max(drawn) * (rows - 1)
    bounds = (low if low < 0 else -1.0, 0.0)
    table = [SlopeRow(h, s, math.log2(s), 1 / s) for h, s in enumerate(slopes)]
    notes = [
        "bias[h, i, j] = -slope_h · (i - j), added to head h's attention score q_i·k_j/√d "
        "before softmax: nothing is added to the input embeddings, and nothing is learned "
        "(0 parameters)",
        slope_rule(encoding),
    ]
    if encoding.model_family == "BLOOM":
        notes.append(
            "BLOOM's code (build_alibi_tensor) adds +slope·j instead: that differs by slope·i, "
            "the same for every key of a query, which softmax cancels"
        )
    heads = "its one head" if len(slopes) == 1 else f"all {len(slopes)} heads"
    report = AlibiReport(
        f"ALiBi biases, {heads}: {encoding.source}",
        encoding.source, table, slope_rule(encoding), bias, bounds, head, notes=tuple(notes),
    )  # fmt: skip
    if head is not None:
        slope = power_of_two(table[head].log2)
        report.title = f"ALiBi bias of head {head} (slope {slope}): {encoding.source}"
        report.heatmap = Heatmap(
            report.title, "bias", "query position i", "key position j", bias[0],
            source=encoding.source, positional="alibi", bounds=bounds,
            scale_note="bias on the attention scores", masked=report.masked,
        )  # fmt: skip
    return report


def _check_alibi_outputs(bias: AlibiBias, one: bool, png: bool, as_json: bool) -> None:
    """The whole heads a picture or JSON holds must fit; the terminal's small multiples
    (16 heads × 16 positions) always do."""
    heads, rows = len(bias), bias.length
    if as_json and bias.size > JSON_BIAS_VALUES:
        raise MemoryLimitError(
            f"--json writes every bias value: {plural(heads, 'head')} × {rows:,}² positions "
            f"= {bias.size:,} values, more than the {JSON_BIAS_VALUES:,} it writes at most; "
            "pass --head H, or lower --context-length"
        )
    whole = (heads if as_json else 0, 1 if one else 0, min(heads, PICTURE_HEADS) if png else 0)
    if max(whole):
        # float64 values, and as many again for the NaN mask and the JSON lists or the image
        _check_memory(max(whole) * rows * rows * 8 * 3, f"{max(whole):,} × {rows:,}² biases")


def _check_memory(need: int, what: str, hint: str = "lower --context-length") -> None:

    ensure_room(f"the numbers of a picture of {what}", need, hint)
