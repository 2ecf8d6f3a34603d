"""What a table has learned: nearest tokens, value statistics, and what a checkpoint holds."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from embedcli.errors import WeightsError
from embedcli.weights import Checkpoint, TableKeys, TensorInfo, find_tables

if TYPE_CHECKING:
    import tiktoken
    import torch

    from embedcli.encodings import Token
    from embedcli.models import ModelSource

NEIGHBOR_CHUNK_ROWS = 8192  # rows compared at a time: memory stays (queries × chunk), not V × V
CHUNK_ELEMENTS = 1 << 21  # values converted to float64 at a time (16 MiB), however wide a row
NORM_PERCENTILES = (0, 5, 25, 50, 75, 95, 100)


# ---------------------------------------------------------------- neighbors


def nearest_tokens(
    table: torch.Tensor,
    queries: list[int],
    k: int,
    chunk_rows: int = NEIGHBOR_CHUNK_ROWS,
    device: torch.device | str = "cpu",
) -> list[list[tuple[int, float]]]:
    """For each query row, the ``k`` other rows with the highest cosine similarity, best first.

    The table is moved to ``device`` a chunk of rows at a time; scores are float64 where the
    device has it (MPS does not: float32 there). Rows holding NaN or infinite values are never
    neighbors (a list can then be shorter than ``k``); a query row holding them is an error."""
    import torch

    device = torch.device(device)
    precision = torch.float32 if device.type == "mps" else torch.float64
    k = min(k, table.shape[0] - 1)
    unique = sorted(set(queries))
    chunk_rows = max(1, min(chunk_rows, CHUNK_ELEMENTS // max(table.shape[1], 1)))
    _check_search_memory(len(unique), chunk_rows, table.shape[1], k, device)
    query = table[unique].to(device, precision)  # (Q, d)
    finite = torch.isfinite(query).all(dim=1)
    if not bool(finite.all()):
        token = unique[int((~finite).nonzero()[0])]
        raise WeightsError(
            f"the row of token {token} holds NaN or infinite values, so it has no cosine "
            "similarity to any other row; the table is damaged"
        )
    query = _unit_rows(query)
    best_scores = torch.full((len(unique), 0), float("-inf"), dtype=precision, device=device)
    best_ids = torch.empty((len(unique), 0), dtype=torch.long, device=device)
    own = torch.tensor(unique, device=device).unsqueeze(1)  # (Q, 1)
    for start in range(0, table.shape[0], chunk_rows):
        rows = table[start : start + chunk_rows].to(device, precision)  # (R, d)
        usable = torch.isfinite(rows).all(dim=1)  # (R,)
        scores = query @ _unit_rows(rows).T  # (Q, R)
        ids = torch.arange(start, start + rows.shape[0], device=device).expand_as(scores)
        scores = scores.masked_fill(ids == own, float("-inf"))  # a token is not its own neighbor
        scores = scores.masked_fill(~usable, float("-inf"))  # nor is a row of NaN or inf
        merged_scores = torch.cat([best_scores, scores], dim=1)
        merged_ids = torch.cat([best_ids, ids], dim=1)
        top = merged_scores.topk(min(k, merged_scores.shape[1]), dim=1)
        best_scores, best_ids = top.values, merged_ids.gather(1, top.indices)
    found = {
        token: [
            (other, score)
            for other, score in zip(
                best_ids[i].tolist(), best_scores[i].double().tolist(), strict=True
            )
            if score != float("-inf")
        ]
        for i, token in enumerate(unique)
    }
    return [found[token] for token in queries]


def _unit_rows(rows: torch.Tensor) -> torch.Tensor:
    """Rows scaled to length 1 (a zero row stays zero); each row is first divided by its largest
    magnitude, so that squaring huge or tiny values neither overflows nor underflows."""
    import torch

    peak = rows.abs().amax(dim=1, keepdim=True)  # (R, 1)
    rows = rows / peak.clamp_min(torch.finfo(rows.dtype).tiny)
    return rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-12)


def _check_search_memory(
    queries: int, chunk_rows: int, width: int, k: int, device: torch.device
) -> None:
    """Refuse a search whose working copies (queries and a chunk, normalised) would not fit."""
    from embedcli.devices import available_memory, ensure_fits

    size = 4 if device.type == "mps" else 8  # float32 on MPS, float64 elsewhere
    rows = queries + 3 * chunk_rows  # the chunk, its scaled and its normalised copies
    scores = 3 * queries * (chunk_rows + k) * (size + 8)  # scores and ids, merged
    ensure_fits(
        f"the neighbor search ({queries:,} tokens × d {width:,})",
        rows * width * size + scores,
        available_memory(device),
        str(device),
        "look up fewer tokens at a time",
    )


def token_ids_for(ids: list[int], table: torch.Tensor) -> list[int]:
    """``ids``, each checked to be a row of ``table`` (the encoding must be the model's)."""
    if not ids:
        from embedcli.errors import InputTextError

        raise InputTextError("the text has no tokens: there is nothing to look up")
    rows = table.shape[0]
    for token in ids:
        if not 0 <= token < rows:
            from embedcli.errors import TokenIdError

            raise TokenIdError(
                f"token id {token} is out of range for a token table of {rows} rows; "
                "use the encoding the model was trained with"
            )
    return ids


@dataclass(frozen=True)
class TokenNeighbors:
    """One token of the text (with its index) and its nearest tokens (with scores), best first."""

    token: Token
    neighbors: list[Token]


def neighbors_report(
    enc: tiktoken.Encoding,
    ids: list[int],
    table: torch.Tensor,
    k: int,
    device: torch.device | str = "cpu",
) -> list[TokenNeighbors]:
    """For each token of ``ids``, its ``k`` nearest tokens in ``table``, with their pieces;
    the search runs on ``device`` (auto, cpu, cuda:N, mps)."""
    from embedcli.devices import resolve_device
    from embedcli.encodings import token_piece

    if isinstance(device, str):
        device = resolve_device(device, allow_meta=False)

    return [
        TokenNeighbors(
            token_piece(enc, token, index=index),
            [token_piece(enc, other, score=score) for other, score in near],
        )
        for index, (token, near) in enumerate(
            zip(ids, nearest_tokens(table, ids, k, device=device), strict=True)
        )
    ]


# ---------------------------------------------------------------- statistics


@dataclass(frozen=True)
class TableStats:
    """Distribution of one table's values, and of its rows' lengths."""

    name: str
    shape: tuple[int, ...]
    mean: float
    std: float
    min: float
    max: float
    within_one_std: float  # share of values within mean ± std: 0.683 for a normal distribution
    row_norm_percentiles: dict[str, float]  # over the rows whose values are all finite
    non_finite: int = 0  # NaN and ±inf values, left out of every statistic above


def table_stats(name: str, table: torch.Tensor) -> TableStats:
    """Mean, std, min, max, share within one std, and row-norm percentiles, in float64.

    NaN and infinite values are counted and left out (rows holding one have no norm). The table
    is read a chunk of rows at a time into one float64 buffer, worked on in place: memory stays
    the table plus a chunk and a norm per row."""
    import numpy as np
    import torch

    rows, width = table.shape
    step = max(1, CHUNK_ELEMENTS // max(width, 1))
    _check_stats_memory(name, rows, step * width)
    buffer = torch.empty((min(step, rows), width), dtype=torch.float64)  # (R, d)
    holed: set[int] = set()  # the chunks (by first row) that hold NaN or inf

    def chunks(scale: float = 1.0):  # (values / scale in float64, finite mask or None: all are)
        for start in range(0, rows, step):
            values = buffer[: min(step, rows - start)]
            values.copy_(table[start : start + step].detach())
            if scale != 1.0:
                values.div_(scale)
            if start not in holed and math.isfinite(float(values.sum())):
                yield values, None  # a finite sum: no NaN or inf in the chunk
            else:
                holed.add(start)
                yield values, values.isfinite()

    count, low, high, total, norms = _first_pass(chunks())
    if not count:
        raise WeightsError(f"the {name} table holds no finite values: all are NaN or infinite")
    scale = _scale(max(abs(low), abs(high)))  # so that sums and squares cannot overflow
    if scale != 1.0:
        _, _, _, total, norms = _first_pass(chunks(scale))
    mean = total / count  # of the scaled values
    squares, within = 0.0, 0
    for values, finite in chunks(scale):
        values.sub_(mean)
        if finite is not None:
            values.masked_fill_(~finite, 0)
        squares += float(values.square_().sum())
    std = (squares / (count - 1)) ** 0.5 if count > 1 else 0.0
    for values, _ in chunks(scale):
        within += int((values.sub_(mean).abs_() <= std).count_nonzero())  # NaN compares False
    every = np.concatenate(norms) * scale
    if not len(every):
        raise WeightsError(
            f"every row of the {name} table holds a NaN or infinite value: no row has a norm"
        )
    quantiles = np.percentile(every, NORM_PERCENTILES)
    return TableStats(
        name=name,
        shape=tuple(table.shape),
        mean=mean * scale,
        std=std * scale,
        min=low * scale,
        max=high * scale,
        within_one_std=within / count,
        row_norm_percentiles={
            f"p{p}": float(q) for p, q in zip(NORM_PERCENTILES, quantiles, strict=True)
        },
        non_finite=rows * width - count,
    )


def _first_pass(chunks: Iterable[tuple[torch.Tensor, torch.Tensor | None]]) -> tuple:
    """(count, min, max, sum of the finite values, norms of the rows without NaN or inf);
    the chunks are changed in place."""
    count, low, high, total, norms = 0, float("inf"), float("-inf"), 0.0, []
    for values, finite in chunks:
        if finite is None:
            count += values.numel()
            lowest, highest = (float(v) for v in values.aminmax())
            norms.append(values.norm(dim=1).numpy())  # (R,)
        else:
            holes = ~finite
            count += int(finite.count_nonzero())
            lowest = float(values.masked_fill_(holes, float("inf")).min())
            highest = float(values.masked_fill_(holes, float("-inf")).max())
            values.masked_fill_(holes, 0)
            norms.append(values[finite.all(dim=1)].norm(dim=1).numpy())  # (R',)
        low, high = min(low, lowest), max(high, highest)
        total += float(values.sum())
    return count, low, high, total, norms


def _scale(peak: float) -> float:
    """1, or the largest magnitude where squaring values would overflow or underflow float64."""
    return 1.0 if peak == 0 or 1e-100 <= peak <= 1e100 else peak


def _check_stats_memory(name: str, rows: int, chunk: int) -> None:
    """Refuse statistics whose working copies would not fit: norms and a chunk, in float64."""
    from embedcli import devices

    devices.ensure_fits(
        f"statistics of the {name} table (float64 row norms and a chunk of rows)",
        4 * rows * 8 + 6 * chunk * 8,
        devices.host_available_memory(),
        "this machine",
        "free some memory, or use a machine with more",
    )


# ---------------------------------------------------------------- checkpoint contents


@dataclass
class WeightsReport:
    """What ``embedcli weights`` shows about a checkpoint."""

    path: str
    format: str
    tensors: list[TensorInfo]
    layout: str | None
    token_key: str | None
    position_key: str | None
    head_key: str | None
    head_tied: str  # "same storage", "equal values", "not tied", "no output head"
    parameters: int  # elements of all tensors, tied tensors counted once
    detection_error: str | None = None
    extra: list[str] = field(default_factory=list)  # other entries of a PyTorch checkpoint
    model: dict[str, Any] | None = None  # what a model folder's config.json says, summarised


def inspect_weights(
    path: str | Path | Checkpoint | ModelSource,
    token_key: str | None = None,
    position_key: str | None = None,
) -> WeightsReport:
    """List every tensor, detect the tables, and tell whether the output head is tied."""
    from embedcli.models import ModelSource

    if isinstance(path, ModelSource):
        source = path
    elif isinstance(path, Checkpoint):
        source = ModelSource(str(path.path), path.path.name, path)
    else:
        from embedcli.models import open_weights

        source = open_weights(path)
    checkpoint = source.checkpoint
    label = source.label if source.folder is not None or source.hub else str(checkpoint.path)
    model = source.summary()
    parameters = checkpoint.unique_parameters()
    try:
        keys = find_tables(checkpoint, token_key, position_key)
    except WeightsError as exc:
        return WeightsReport(
            label, checkpoint.format, checkpoint.tensors, None, None, None, None,
            "no output head", parameters, str(exc), sorted(checkpoint.extra), model,
        )  # fmt: skip
    tied = _tying(source, keys)
    if tied == "equal values":
        parameters -= checkpoint.info(keys.head).numel  # one table stored twice: count it once
    return WeightsReport(
        label, checkpoint.format, checkpoint.tensors, keys.layout, keys.token, keys.position,
        keys.head, tied, parameters, None, sorted(checkpoint.extra), model,
    )  # fmt: skip


def _tying(source: ModelSource, keys: TableKeys) -> str:
    """How the head relates to the token table: as a model's config.json says (reading no
    values), else compared (same storage, then equal values); over the network, never compared."""
    said = None if source.config is None else source.config.tie_word_embeddings
    if said is not None:
        return "tied (config.json)" if said else "not tied (config.json)"
    if keys.head is None:
        return "no output head"
    if source.remote:  # comparing would fetch both tables
        return "not compared"
    return _head_tied(source.checkpoint, keys)


def _head_tied(checkpoint: Checkpoint, keys: TableKeys) -> str:
    """'same storage', 'equal values' or 'not tied': the head compared with the token table,
    from the header first (shape and dtype), then a chunk of rows at a time."""
    if checkpoint.shares_storage(keys.token, keys.head):
        return "same storage"
    token, head = checkpoint.info(keys.token), checkpoint.info(keys.head)
    shape = head.shape[::-1] if keys.head_transposed else head.shape
    if shape != token.shape or head.dtype != token.dtype:
        return "not tied"
    first = checkpoint.load(keys.token)
    second = checkpoint.load(keys.head)
    second = second.T if keys.head_transposed else second
    step = max(1, CHUNK_ELEMENTS // max(first.shape[1], 1))
    for start in range(0, first.shape[0], step):
        a, b = first[start : start + step], second[start : start + step]  # (R, d)
        if not bool(((a == b) | (a.isnan() & b.isnan())).all()):
            return "not tied"
    return "equal values"
