"""``embedcli undertrained``: the tokens a model (almost) never trained, from its weights.

The matrix is the output head where the model has one of its own, else the token table (a
tied head is the token table); the row norm is the token table's. The tokenizer gives the
pieces, the reference (known-unused tokens, by name or by byte) and each token's class, so a
source without one needs ``-e``: guessing it would give another vocabulary's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from embedcli.analysis.undertrained import row_norms, unused_cosine
from embedcli.analysis.vocabclasses import (
    CLASSES,
    Reference,
    reference_tokens,
    token_classes,
    vocabulary_pieces,
)
from embedcli.errors import UsageError, WeightsError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.inventory import head_tying
from embedcli.models.sources import open_source
from embedcli.models.tables import find_tables, read_tables
from embedcli.tokenization.display import Token, token_piece
from embedcli.tokenization.encodings import get_encoding

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np

    from embedcli.models.keys import TableKeys
    from embedcli.models.sources import ModelSource

DEFAULT_TOP = 20


@dataclass(frozen=True)
class Candidate:
    """One token that is not a reference token, by its rank among all tokens."""

    rank: int  # 1 = the row most like the unused direction
    token: Token
    cosine: float | None  # None: the row holds NaN or infinity
    row_norm: float | None
    token_class: str  # one of CLASSES


@dataclass(frozen=True)
class ClassCount:
    """How many tokens one class holds, and how many of them rank among the top R (R: the
    number of reference tokens)."""

    token_class: str
    tokens: int
    in_top: int


@dataclass(frozen=True)
class UndertrainedReport:
    """What the command shows; its fields are the JSON keys (``rows`` is kept out)."""

    source: str
    tokenizer: str
    matrix: str  # "output head" or "token table"
    matrix_key: str
    head: str  # how the head relates to the token table (weights' head_tied words)
    shape: tuple[int, int]
    first_pc_share: float
    non_finite_rows: int
    undefined_rows: int  # finite rows with nothing left once the component is removed
    reference: Reference
    top_reference: int  # R: the top R are compared with the R reference tokens
    reference_in_top: int  # reference tokens among the top R
    candidates: list[Candidate]
    classes: list[ClassCount]


@dataclass(frozen=True)
class RowIndicators:
    """Every row's numbers, for the picture (never in JSON: a number per token)."""

    cosine: np.ndarray
    norms: np.ndarray
    classes: np.ndarray  # indices into CLASSES
    candidates: list[int]  # the ids listed


def _matrix(source: ModelSource, keys: TableKeys, token: Any) -> tuple[str, str, str, Any]:
    """(which, its key, how the head is tied, the matrix): the head where it is the model's
    own, else the token table."""
    checkpoint = source.checkpoint
    tying = head_tying(source, keys)
    own = keys.head is not None and tying.startswith(("not tied", "not compared"))
    if not own or keys.head is None:
        return "token table", keys.token, tying, token
    if checkpoint.is_gguf and checkpoint.quantized(keys.head):  # type: ignore[attr-defined]
        head = checkpoint.rows_view(keys.head)  # type: ignore[attr-defined]
    else:
        head = checkpoint.load(keys.head)
        head = head.T if keys.head_transposed else head
    if tuple(head.shape) != tuple(token.shape):
        raise WeightsError(
            f"the output head {keys.head} is {tuple(head.shape)} and the token table "
            f"{tuple(token.shape)}: their rows are not the same tokens"
        )
    return "output head", keys.head, tying, head


def undertrained_report(
    weights: str,
    encoding: str | None,
    reference_ids: Sequence[int] | None,
    top: int = DEFAULT_TOP,
    token_key: str | None = None,
    access: HubAccess = OFFLINE,
    on_rows: Callable[[str], Callable[[int, int], None] | None] = lambda stage: None,
) -> tuple[UndertrainedReport, RowIndicators]:
    """The indicator of every token of ``weights``' table, its top ``top`` candidates, and
    the counts per class; ``on_rows(stage)`` gives the callback that hears each stage's rows."""
    import numpy as np

    from embedcli.tokenization.modeltok import tokenizer_source  # lazy: model sources

    name = encoding or tokenizer_source(weights)
    if name is None:
        raise UsageError(
            f"{weights} brings no tokenizer: pass -e with the model's own (the pieces, the "
            "unused tokens' names and encode(decode(id)) all come from it)"
        )
    enc = get_encoding(name, access)
    source = open_source(weights, access)
    keys = find_tables(source.checkpoint, token_key, None, source.config)
    tables = read_tables(source.checkpoint, keys)
    which, key, tying, matrix = _matrix(source, keys, tables.token)
    rows = matrix.shape[0]
    if enc.n_vocab > rows:
        raise WeightsError(
            f"the tokenizer {name} has {enc.n_vocab:,} tokens and the table {rows:,} rows: it "
            "is not this model's tokenizer; pass -e with the model's own"
        )
    pieces = vocabulary_pieces(enc, rows)
    reference = reference_tokens(pieces, reference_ids, rows)
    indicator = unused_cosine(matrix, reference.ids, on_rows(f"{which} rows"))
    own = which == "token table"  # else the norms are the token table's, read once more
    norms = indicator.norms if own else row_norms(tables.token, on_rows("norms"))
    classes = token_classes(enc, pieces, reference.ids, on_rows("tokens round-tripped"))

    # highest first; a row without a cosine (NaN or inf in it, or nothing left) ranks last
    order = np.argsort(np.where(np.isnan(indicator.cosine), np.inf, -indicator.cosine))
    order = order.astype(np.int64, copy=False)
    code = CLASSES.index("reference")
    top_r = len(reference.ids)
    in_top = np.zeros(len(CLASSES), dtype=np.int64)
    np.add.at(in_top, classes[order[:top_r]], 1)
    totals = np.bincount(classes, minlength=len(CLASSES))
    picked = [int(t) for t in order[classes[order] != code][:top]]
    rank = np.empty(rows, dtype=np.int64)
    rank[order] = np.arange(1, rows + 1)

    def number(values: np.ndarray, token: int) -> float | None:
        value = float(values[token])
        return None if np.isnan(value) else value

    candidates = [
        Candidate(int(rank[t]), token_piece(enc, t), number(indicator.cosine, t),
                  number(norms, t), CLASSES[classes[t]])
        for t in picked
    ]  # fmt: skip
    report = UndertrainedReport(
        source=source.label, tokenizer=name, matrix=which, matrix_key=key, head=tying,
        shape=(rows, matrix.shape[1]), first_pc_share=indicator.first_pc_share,
        non_finite_rows=indicator.non_finite,
        undefined_rows=int(np.isnan(indicator.cosine).sum()) - indicator.non_finite,
        reference=reference, top_reference=top_r,
        reference_in_top=int(in_top[code]), candidates=candidates,
        classes=[ClassCount(c, int(totals[i]), int(in_top[i])) for i, c in enumerate(CLASSES)],
    )  # fmt: skip
    return report, RowIndicators(indicator.cosine, norms, classes, picked)
