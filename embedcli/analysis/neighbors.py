"""Which tokens sit nearest in a table: cosine neighbours of chosen tokens, searched a chunk of
rows at a time (memory stays queries × chunk, never V × V)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from embedcli.analysis.rowcount import RowCount, RowsDone
from embedcli.core import memory
from embedcli.core.devices import resolve_device
from embedcli.core.memory import CHUNK_ELEMENTS
from embedcli.errors import InputTextError, TokenIdError, WeightsError
from embedcli.tokenization.encodings import token_piece

if TYPE_CHECKING:
    import tiktoken
    import torch

    from embedcli.tokenization.encodings import Token


NEIGHBOR_CHUNK_ROWS = 8192  # rows compared at a time: memory stays (queries × chunk), not V × V


def nearest_tokens(
    table: torch.Tensor,
    queries: list[int],
    k: int,
    chunk_rows: int = NEIGHBOR_CHUNK_ROWS,
    device: torch.device | str = "cpu",
    on_rows: RowsDone | None = None,
) -> list[list[tuple[int, float]]]:
    """For each query row, the ``k`` other rows with the highest cosine similarity, best first.

    The table is moved to ``device`` a chunk of rows at a time; scores are float64 where the
    device has it (MPS does not: float32 there). Rows holding NaN or infinite values are never
    neighbors (a list can then be shorter than ``k``); a query row holding them is an error.
    ``on_rows(done, total)`` hears the rows searched, a chunk at a time."""
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
    read = RowCount(on_rows, table.shape[0])
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
        read.add(rows.shape[0])
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
    size = 4 if device.type == "mps" else 8  # float32 on MPS, float64 elsewhere
    rows = queries + 3 * chunk_rows  # the chunk, its scaled and its normalised copies
    scores = 3 * queries * (chunk_rows + k) * (size + 8)  # scores and ids, merged
    memory.ensure_fits(
        f"the neighbor search ({queries:,} tokens × d {width:,})",
        rows * width * size + scores,
        memory.available_memory(device),
        str(device),
        "look up fewer tokens at a time",
    )


def token_ids_for(ids: list[int], table: torch.Tensor) -> list[int]:
    """``ids``, each checked to be a row of ``table`` (the encoding must be the model's)."""
    if not ids:
        raise InputTextError(
            "the text has no tokens: there is nothing to look up; pass TEXT, -f FILE or --ids"
            " (project also takes --first-ids N or --ids-file)"
        )
    rows = table.shape[0]
    for token in ids:
        if not 0 <= token < rows:
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
    on_rows: RowsDone | None = None,
) -> list[TokenNeighbors]:
    """For each token of ``ids``, its ``k`` nearest tokens in ``table``, with their pieces;
    the search runs on ``device`` (auto, cpu, cuda:N, mps); ``on_rows`` hears its rows."""

    if isinstance(device, str):
        device = resolve_device(device, allow_meta=False)

    return [
        TokenNeighbors(
            token_piece(enc, token, index=index),
            [token_piece(enc, other, score=score) for other, score in near],
        )
        for index, (token, near) in enumerate(
            zip(ids, nearest_tokens(table, ids, k, device=device, on_rows=on_rows), strict=True)
        )
    ]
