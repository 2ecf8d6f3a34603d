"""What a table has learned: nearest tokens, value statistics, and what a checkpoint holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from embedcli.errors import WeightsError
from embedcli.weights import Checkpoint, TensorInfo, find_tables

if TYPE_CHECKING:
    import tiktoken
    import torch

    from embedcli.encodings import Token

NEIGHBOR_CHUNK_ROWS = 8192  # rows compared at a time: memory stays (queries × chunk), not V × V
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
    device has it (MPS does not: float32 there)."""
    import torch

    device = torch.device(device)
    precision = torch.float32 if device.type == "mps" else torch.float64
    k = min(k, table.shape[0] - 1)
    unique = sorted(set(queries))
    query = table[unique].to(device, precision)  # (Q, d)
    query = query / query.norm(dim=1, keepdim=True).clamp_min(1e-12)
    best_scores = torch.full((len(unique), 0), float("-inf"), dtype=precision, device=device)
    best_ids = torch.empty((len(unique), 0), dtype=torch.long, device=device)
    own = torch.tensor(unique, device=device).unsqueeze(1)  # (Q, 1)
    for start in range(0, table.shape[0], chunk_rows):
        rows = table[start : start + chunk_rows].to(device, precision)  # (R, d)
        rows = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-12)
        scores = query @ rows.T  # (Q, R)
        ids = torch.arange(start, start + rows.shape[0], device=device).expand_as(scores)
        scores = scores.masked_fill(ids == own, float("-inf"))  # a token is not its own neighbor
        merged_scores = torch.cat([best_scores, scores], dim=1)
        merged_ids = torch.cat([best_ids, ids], dim=1)
        top = merged_scores.topk(min(k, merged_scores.shape[1]), dim=1)
        best_scores, best_ids = top.values, merged_ids.gather(1, top.indices)
    found = {
        token: list(zip(best_ids[i].tolist(), best_scores[i].double().tolist(), strict=True))
        for i, token in enumerate(unique)
    }
    return [found[token] for token in queries]


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
    row_norm_percentiles: dict[str, float]


def table_stats(name: str, table: torch.Tensor) -> TableStats:
    """Mean, std, min, max, share within one std, and row-norm percentiles, in float64."""
    import torch

    values = table.detach().double()
    mean, std = float(values.mean()), float(values.std())
    norms = values.norm(dim=1)
    levels = torch.tensor([p / 100 for p in NORM_PERCENTILES], dtype=torch.float64)
    quantiles = torch.quantile(norms, levels).tolist()
    return TableStats(
        name=name,
        shape=tuple(table.shape),
        mean=mean,
        std=std,
        min=float(values.min()),
        max=float(values.max()),
        within_one_std=float(((values - mean).abs() <= std).double().mean()),
        row_norm_percentiles={f"p{p}": q for p, q in zip(NORM_PERCENTILES, quantiles, strict=True)},
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


def inspect_weights(
    path: Path | Checkpoint, token_key: str | None = None, position_key: str | None = None
) -> WeightsReport:
    """List every tensor, detect the tables, and tell whether the output head is tied."""
    import torch

    checkpoint = path if isinstance(path, Checkpoint) else Checkpoint(path)
    path = checkpoint.path
    parameters = checkpoint.unique_parameters()
    try:
        keys = find_tables(checkpoint, token_key, position_key)
    except WeightsError as exc:
        return WeightsReport(
            str(path),
            checkpoint.format,
            checkpoint.tensors,
            None,
            None,
            None,
            None,
            "no output head",
            parameters,
            str(exc),
            sorted(checkpoint.extra),
        )
    tied = "no output head"
    if keys.head is not None:
        if checkpoint.shares_storage(keys.token, keys.head):
            tied = "same storage"
        else:
            head = checkpoint.load(keys.head)
            token = checkpoint.load(keys.token)
            head = head.T if keys.head_transposed else head
            tied = (
                "equal values"
                if head.shape == token.shape and torch.equal(head, token)
                else ("not tied")
            )
            if tied == "equal values":
                parameters -= head.numel()  # one table stored twice: count it once
    return WeightsReport(
        str(path),
        checkpoint.format,
        checkpoint.tensors,
        keys.layout,
        keys.token,
        keys.position,
        keys.head,
        tied,
        parameters,
        None,
        sorted(checkpoint.extra),
    )
