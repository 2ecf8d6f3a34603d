"""Golden-file checkers (see golden_oracle.py): rope's angles and similarity, ALiBi's biases
and slopes, recomputed from their formulas."""

from __future__ import annotations

import math
import re

import numpy as np

from support.golden_oracle import (  # the shared readers and the checker registry
    checker,
    number,
    ramp_of,
    table_lines,
)

# ---------------------------------------------------------------- rope and ALiBi


def evenly(n: int, k: int) -> list[int]:
    """k of n indices, first and last included (the heatmaps' sampling)."""
    return list(range(n)) if k >= n else [round(i * (n - 1) / (k - 1)) for i in range(k)]


def rope_frequencies(text: str) -> np.ndarray:
    """inv_freq_i = theta^(-2i/r) from the view's own theta and rope_dim, with the scaling it
    names applied by the published rules (Llama 3.1's, as Meta's reference code writes it),
    in float64, one pair at a time."""
    head = preamble(text)
    theta = number(re.search(r"theta ([\d,.]+)", head).group(1))
    dim = int(re.search(r"rope_dim (\d+)", head).group(1))
    frequencies = np.array([theta ** (-2 * i / dim) for i in range(dim // 2)])
    linear = re.search(r"scaling linear \(factor ([\d.]+)\)", head)
    if linear:
        return frequencies / float(linear.group(1))
    found = re.search(
        r"scaling llama3 \(factor ([\d.]+), low ([\d.]+), high ([\d.]+), original ([\d,]+)\)",
        head,
    )
    if found:
        factor, low, high, original = (number(v) for v in found.groups())
        for i, f in enumerate(frequencies):
            wavelength = 2 * math.pi / f
            if wavelength > original / low:
                frequencies[i] = f / factor
            elif wavelength >= original / high:
                smooth = (original / wavelength - low) / (high - low)
                frequencies[i] = (1 - smooth) * f / factor + smooth * f
    else:
        assert "no scaling" in head
    return frequencies


GRID_LINE = r"\s*\d+ [ .:=+*#%@·-]*"  # a row label, then cells


def preamble(text: str) -> str:
    """The lines above the first row of cells (title, facts, axes), joined: wrapped or not."""
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if re.fullmatch(GRID_LINE, line))
    return " ".join(" ".join(lines[:end]).split())


def map_grid(text: str) -> tuple[list[str], list[int], int | None]:
    """(the lines of cells, their row labels, the columns shown or None for all)."""
    grid = [line for line in text.splitlines() if re.fullmatch(GRID_LINE, line)]
    found = re.search(r"(\d+) of [\d,]+ columns shown", preamble(text))
    return grid, [int(line.split()[0]) for line in grid], int(found.group(1)) if found else None


def scale_line(text: str) -> tuple[float, float]:
    line = next(line for line in text.splitlines() if line.startswith("scale: "))
    low, high = (float(v) for v in re.findall(r"[+-]\d+\.\d+", line)[:2])
    return low, high


def allowed(value: float, low: float, high: float, cyclic: bool = False) -> set[str]:
    """The ramp characters ``value`` may be drawn as: its own, one step either way where it
    sits on a step's edge (float32 against float64), and for an angle on the ±π seam both."""
    out = set()
    for e in (-1e-5, 0.0, 1e-5):
        v = value + e * max(1.0, abs(value))
        if cyclic and abs(v) > math.pi:
            v -= math.copysign(2 * math.pi, v)
        out.add(ramp_of(v, low, high))
    return out


def check_cells(grid: list[str], rows: list[int], matrix: np.ndarray, columns: list[int],
                low: float, high: float, cyclic: bool = False) -> None:  # fmt: skip
    """Every drawn cell against ``matrix`` (NaN: the masked mark)."""
    width = max(len(re.sub(r"^\s*\d+ ", "", line, count=1)) for line in grid)
    cell = -(-width // len(columns))
    assert 1 <= cell <= 3, cell
    for line, row in zip(grid, rows, strict=True):
        drawn = re.sub(r"^\s*\d+ ", "", line, count=1).ljust(len(columns) * cell)
        for k, column in enumerate(columns):
            got, value = drawn[k * cell], matrix[row, column]
            assert drawn[k * cell : (k + 1) * cell] == got * cell, (row, column)  # whole cells
            if not math.isfinite(value):
                assert got == "·", (row, column, got)
            else:
                assert got in allowed(value, low, high, cyclic), (row, column, got, value)


@checker("positions_rope")
def _positions_rope(stem: str, text: str) -> None:
    frequencies = rope_frequencies(text)
    grid, rows, shown = map_grid(text)
    sampled = re.search(r"(\d+) of ([\d,]+) rows shown", preamble(text))
    length = int(number(sampled.group(2))) if sampled else len(rows)
    assert rows == evenly(length, len(rows))  # every position, or an even sample of them
    angles = np.angle(np.exp(1j * np.outer(np.arange(length), frequencies)))  # (-π, π]
    n = len(frequencies)
    prose = " ".join(text.split())
    assert "wrapped to (-π, π]" in prose and f"{n} pairs" in prose
    assert scale_line(text) == (-3.14, 3.14)
    check_cells(grid, rows, angles, evenly(n, shown or n), -math.pi, math.pi, cyclic=True)


@checker("positions_rope_similarity")
def _positions_rope_similarity(stem: str, text: str) -> None:
    frequencies = rope_frequencies(text)
    grid, rows, _ = map_grid(text)
    length = rows[-1] + 1
    distance = np.abs(np.subtract.outer(np.arange(length), np.arange(length)))
    similarity = np.cos(distance[..., None] * frequencies).mean(axis=-1)  # (T, T)
    off = similarity[~np.eye(length, dtype=bool)]
    low, high = scale_line(text)
    assert abs(low - off.min()) <= 0.005 and abs(high - off.max()) <= 0.005
    check_cells(grid, rows, similarity, rows, off.min(), off.max())
    prose = " ".join(text.split())
    profile = re.findall(r"(\d+)→([+-]\d\.\d{3})", prose)
    assert len(profile) >= 4 and "Toeplitz" in prose
    for k, value in profile:
        assert abs(float(value) - similarity[int(k), 0]) <= 6e-4, (k, value)


def press_slopes(heads: int) -> list[float]:
    """ALiBi's slopes as the paper (Press et al. 2022, section 3) defines them: 2^(-8k/n) for
    n a power of two; otherwise those of the power of two below, then every other slope of
    the sequence for twice that."""
    p = 2 ** int(math.log2(heads))
    slopes = [2 ** (-8 * k / p) for k in range(1, p + 1)]
    return slopes + [2 ** (-8 * k / (2 * p)) for k in range(1, 2 * (heads - p), 2)]


def slopes_table(text: str, slopes: list[float]) -> None:
    seen = set()
    for row in table_lines(text):
        for at in range(0, len(row) - 3, 4):
            head, slope, power, reach = row[at : at + 4]
            if not head.isdigit():
                continue
            want = slopes[int(head)]
            assert abs(number(slope) - want) <= last_digit(slope), (head, slope, want)
            assert abs(2 ** float(power.removeprefix("2^")) - want) <= 1e-9, (head, power)
            assert abs(number(reach) - 1 / want) <= last_digit(reach), (head, reach)
            seen.add(int(head))
    assert seen == set(range(len(slopes)))


def last_digit(shown: str) -> float:
    """Half a unit of the last digit ``shown`` has: how far the value may be from it."""
    decimals = len(shown.partition(".")[2]) if "." in shown else 0
    return 0.5 * 10**-decimals * (1 + 1e-9)


def alibi_bias(slope: float, length: int) -> np.ndarray:
    """-slope · (i - j) for a key j at or before the query i, NaN after it."""
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    return np.where(j <= i, -slope * (i - j), np.nan)


@checker("positions_alibi")
def _positions_alibi(stem: str, text: str) -> None:
    lines = text.splitlines()
    found = re.search(r"all (\d+) heads|(its one head)", lines[0])
    heads = 1 if found.group(2) else int(found.group(1))
    slopes = press_slopes(heads)
    slopes_table(text, slopes)
    titles = [i for i, line in enumerate(lines) if re.match(r"head \d+( |$)", line)]
    above = " ".join(" ".join(lines[: titles[0]]).split())
    sampled = re.search(r"(\d+) of (\d+) positions shown", above)
    block = int(sampled.group(1)) if sampled else None
    block_lines = (
        next(
            j
            for j in range(titles[0] + 1, len(lines))
            if not lines[j] or lines[j].startswith("scale")
        )
        - titles[0]
        - 1
    )
    block = block or block_lines
    length = int(sampled.group(2)) if sampled else block
    positions = evenly(length, block)
    low = -max(slopes) * (length - 1) or -1.0  # one position has no bias but 0: down to -1
    assert abs(scale_line(text)[0] - low) <= 0.005 and scale_line(text)[1] == 0.0
    drawn_heads = []
    for title in titles:
        for found in re.finditer(r"head (\d+)", lines[title]):
            head, at = int(found.group(1)), found.start()
            drawn_heads.append(head)
            bias = alibi_bias(slopes[head], length)
            for r in range(block):
                cells = lines[title + 1 + r][at : at + block].ljust(block)
                for c in range(block):
                    value = bias[positions[r], positions[c]]
                    want = {"·"} if not math.isfinite(value) else allowed(value, low, 0.0)
                    assert cells[c] in want, (head, r, c, cells[c], value)
    assert drawn_heads == evenly(heads, len(drawn_heads))


@checker("positions_alibi_head")
def _positions_alibi_head(stem: str, text: str) -> None:
    found = re.search(r"head (\d+) \(slope 2\^([-\d.]+)\)", text.splitlines()[0])
    head = int(found.group(1))
    heads = max(int(r[0]) for r in table_lines(text) if r[0].isdigit()) + 1
    slopes = press_slopes(heads)
    assert 2 ** float(found.group(2)) == slopes[head]
    slopes_table(text, slopes)
    grid, rows, _ = map_grid(text)
    bias = alibi_bias(slopes[head], rows[-1] + 1)
    low = -slopes[head] * rows[-1]
    assert abs(scale_line(text)[0] - low) <= 0.005
    check_cells(grid, rows, bias, rows, low, 0.0)
    assert "· = masked" in text
