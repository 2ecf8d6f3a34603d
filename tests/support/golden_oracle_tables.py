"""Golden-file checkers (see golden_oracle.py): checkpoints and their tables, windows,
positional heatmaps and devices."""

from __future__ import annotations

import re

import numpy as np
import torch

from support.golden_oracle import (  # the shared readers and the checker registry
    assert_ramp,
    binary_size,
    cells,
    checker,
    gpt2,
    number,
    recipe,
    shape,
    shown,
    sinusoids,
    table_lines,
)

# ---------------------------------------------------------------- checkpoints and tables


def render_checkpoint_state() -> dict[str, torch.Tensor]:
    import tempfile
    from pathlib import Path

    from safetensors.torch import load_file

    from support.renderinputs import checkpoint  # the file tests/render/test_render.py renders

    with tempfile.TemporaryDirectory() as folder:
        return load_file(str(checkpoint(Path(folder))))


@checker("weights")
def _weights(stem: str, text: str) -> None:
    state = render_checkpoint_state()
    rows = [r for r in table_lines(text) if len(r) == 4 and r[1].startswith("(")]
    for row in rows:
        assert shape(row[1]) == tuple(state[row[0]].shape), row
    tied = torch.equal(state["lm_head.weight"], state["transformer.wte.weight"])
    total = sum(t.numel() for t in state.values()) - (
        state["lm_head.weight"].numel() if tied else 0
    )
    assert number(re.search(r"([\d,]+) parameters", text).group(1)) == total
    assert ("tied (equal values)" in text) == tied


def neighbor_rows(text: str) -> list[tuple[int, list[tuple[str, float]]]]:
    rows, current = [], None
    for row in table_lines(text):
        if len(row) != 4:
            continue
        if row[1]:
            current = (int(row[1]), [])
            rows.append(current)
        at, item = 0, re.compile(r",?\s*(.+?) (-?\d\.\d{3})(?=,|$)")
        while (found := item.match(row[3], at)) is not None:
            current[1].append((found.group(1), float(found.group(2))))
            at = found.end()
    return rows


def check_neighbors(text: str, table: np.ndarray) -> None:
    enc = gpt2()
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    by_piece = {}
    for token_id, near in neighbor_rows(text):
        scores = unit @ unit[token_id]
        scores[token_id] = -np.inf
        best = np.argsort(-scores)[: len(near)]
        for (piece, score), other in zip(near, best, strict=True):
            by_piece[piece] = other
            assert piece == shown(enc.decode_single_token_bytes(int(other))), (piece, other)
            assert abs(score - scores[other]) <= 5e-4, (piece, score, scores[other])
    assert by_piece


@checker("neighbors_seeded")
def _neighbors_seeded(stem: str, text: str) -> None:
    token, _ = recipe(50257, 16, 32, 123)  # tests/render/test_render.py's seeded tables
    check_neighbors(text, token)


@checker("neighbors_trained")
def _neighbors_trained(stem: str, text: str) -> None:
    check_neighbors(text, render_checkpoint_state()["transformer.wte.weight"].double().numpy())


def stats_cells(text: str) -> dict[str, list[str]]:
    """statistic -> [token table's, positional table's], from either layout: statistics down
    the side (one column a table), or one row a table (with row norms in a second table)."""
    found: dict[str, list[str]] = {}
    heads: list[str] = []
    for line in text.splitlines():
        if line.startswith("┃"):
            heads = cells(line.replace("┃", "│"))
            continue
        if not line.startswith("│"):
            continue
        row = cells(line)
        if heads and heads[0] == "statistic":
            found[row[0]] = row[1:]
        elif heads and heads[0] == "table":
            for head, value in zip(heads[1:], row[1:], strict=True):
                key = f"row norm {head}" if re.fullmatch(r"p\d+", head) else head
                found.setdefault(key, []).append(value)
    return found


@checker("stats")
def _stats(stem: str, text: str) -> None:
    token, position = recipe(50257, 16, 32, 123)
    rows = stats_cells(text)
    for column, table in enumerate((token, position)):
        values = table.ravel()
        std = values.std(ddof=1)
        assert shape(rows["shape"][column]) == table.shape
        for name, expected, places in (
            ("mean", values.mean(), 4), ("std", std, 4), ("min", values.min(), 3),
            ("max", values.max(), 3),
        ):  # fmt: skip
            assert abs(number(rows[name][column]) - expected) <= 0.6 * 10**-places, name
        within = np.mean(np.abs(values - values.mean()) <= std) * 100
        assert abs(number(rows["within ±1 std"][column].rstrip("%")) - within) <= 0.06
        norms = np.linalg.norm(table, axis=1)
        for p in (0, 5, 25, 50, 75, 95, 100):
            got = number(rows[f"row norm p{p}"][column])
            assert abs(got - np.percentile(norms, p)) <= 6e-4, p


# ---------------------------------------------------------------- windows


@checker("windows")
def _windows(stem: str, text: str) -> None:
    from support.renderinputs import WINDOW_TEXT

    ids = gpt2().encode(WINDOW_TEXT)
    length = stride = 3
    windows = [ids[s : s + length + 1] for s in range(0, len(ids) - length, stride)]
    xs = [r for r in table_lines(text) if len(r) >= 3 and r[1] == "x"]
    shown_ids = [
        [int(v) for v in r[2:]]
        for r in table_lines(text)
        if len(r) >= 3 and r[1] == "" and r[2].isdigit()
    ]
    pairs = [(shown_ids[2 * k], shown_ids[2 * k + 1]) for k in range(len(xs))]
    for k, (x, y) in enumerate(pairs):
        assert x == windows[k][:length] and y == windows[k][1:], k
    full = len(windows)
    assert f"{len(ids)} tokens" in text and f"{full} windows with a full target" in text
    batches = full // 3  # batch size 3, drop_last
    assert f"in {batches} batches" in text
    dropped = full - batches * 3
    assert f"leaves out the last {dropped} windows" in text
    covered = (batches * 3 - 1) * stride + length + 1  # the last batched window's target ends
    assert f"{len(ids) - covered} tokens at the end are in no batched window" in text


# ---------------------------------------------------------------- positions and devices


def check_position_map(text: str, matrix: np.ndarray, similarity: bool) -> None:
    lines = text.splitlines()
    found = re.search(r"(\d+) of (\d+) columns shown", " ".join(lines[:4]))
    grid = [line for line in lines if re.fullmatch(r"\s*\d+ [ .:=+*#%@-]*", line)]
    rows = [int(line.split()[0]) for line in grid]
    n = matrix.shape[1]
    k = int(found.group(1)) if found else n
    if similarity:
        columns = rows
    elif found and n % 2 == 0:
        pairs = [round(i * (n // 2 - 1) / (k // 2 - 1)) for i in range(k // 2)]
        columns = [c for p in pairs for c in (2 * p, 2 * p + 1)]
    else:
        columns = [round(i * (n - 1) / (k - 1)) for i in range(k)] if k < n else list(range(n))
    shown_low, shown_high = (float(v) for v in re.findall(r"[+-]\d+\.\d+", lines[-1])[:2])
    if similarity:  # scaled to the off-diagonal range, so that the bands stand out
        off = matrix[~np.eye(*matrix.shape, dtype=bool)]
        low, high = float(off.min()), float(off.max())
    else:  # symmetric around 0
        high = float(np.abs(matrix).max())
        low = -high
    assert abs(shown_low - low) <= 0.005 and abs(shown_high - high) <= 0.005  # the scale line
    for line, row in zip(grid, rows, strict=True):
        drawn = re.sub(r"^\s*\d+ ", "", line, count=1)
        cell = max(1, len(drawn.rstrip()) // len(columns)) if drawn.strip() else 1
        assert_ramp(drawn, list(matrix[row, columns]), low, high, cell)


def cosine(table: np.ndarray) -> np.ndarray:
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return unit @ unit.T


@checker("positions", "positions_sinusoidal")
def _positions(stem: str, text: str) -> None:
    found = re.search(r"rows: position", text)
    assert found
    grid = [line for line in text.splitlines() if re.fullmatch(r"\s*\d+ [ .:=+*#%@-]*", line)]
    length = int(grid[-1].split()[0]) + 1
    width = 128 if stem == "positions" else 64  # tests/render/test_render.py's and test_positions'
    check_position_map(text, sinusoids(length, width), False)


@checker("positions_similarity")
def _positions_similarity(stem: str, text: str) -> None:
    check_position_map(text, cosine(sinusoids(64, 128)), True)


@checker("positions_learned_similarity")
def _positions_learned(stem: str, text: str) -> None:
    _, position = recipe(50257, 32, 48, 123)  # the token table is drawn first, then positions
    check_position_map(text, cosine(position), True)


@checker("devices")
def _devices(stem: str, text: str) -> None:
    rows = {r[0]: r for r in table_lines(text) if len(r) == 5 and r[0]}
    assert rows["cuda:0"][3] == binary_size(150_000_000_000)  # the memory tests/test_render gives
    assert rows["cuda:0"][4] == binary_size(149_000_000_000)
    assert "--device auto → cuda:0" in text
