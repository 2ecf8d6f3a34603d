"""A map of a token table: its first two principal components, and where chosen tokens fall.

The axes come from ``torch.pca_lowrank`` (centred) over the whole table; every row is then
projected onto them in float64, so the variance reported along each axis is the exact variance
of the table's rows along the axis drawn. Whether the table has structure is judged against a
random table of the same shape: for independent values, the largest variance along any one
direction is the Marchenko–Pastur edge, (1 + sqrt(d / V))^2 times the mean variance per
dimension. A seeded table (nn.Embedding's N(0, 1) draws) sits at that edge; a trained one has
directions far above it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from embedcli.analysis.rowcount import RowCount, RowsDone
from embedcli.core import memory
from embedcli.core.devices import resolve_device
from embedcli.core.memory import CHUNK_ELEMENTS, ensure_host_fits
from embedcli.errors import InputTextError, MemoryLimitError, TokenIdError, WeightsError
from embedcli.tokenization.encodings import token_piece

if TYPE_CHECKING:
    import numpy as np
    import tiktoken
    import torch

    from embedcli.tokenization.encodings import Token


PCA_RANK = 12  # components pca_lowrank finds (the first two are kept): oversampled for accuracy
PCA_ITERATIONS = 6  # its subspace iterations
PCA_SEED = 0  # its random start, fixed so that a map is the same on every run
# PC1's variance over the random-table edge: random tables stay under 1.15 (measured from
# 8 × 100 to 50,257 × 768); above WEAK_RATIO a table has some structure, above STRUCTURE_RATIO
# much.
WEAK_RATIO = 1.2
STRUCTURE_RATIO = 2.0
FLOAT64_ELEMENTS = 1 << 26  # the largest table PCA runs on in float64 (two copies: 1 GiB)
SAFE_PEAK = (1e-15, 1e15)  # largest magnitudes the PCA takes as they are; others are scaled
# pca_lowrank's time in passes over the table (a pass: one chunked read, as _mean's); measured
# on a 50,257 × 768 float32 table on 2 CPU cores: 6 to 11 passes' time; on a GPU it is less.
PCA_PASSES = 8
ORIGINS = ("text", "top", "ids-file")  # where a point came from, in the order points are listed


@dataclass(frozen=True)
class ProjectedPoint:
    """One token on the map: ``origin`` is text, top or ids-file; x and y are PC1 and PC2."""

    token: Token
    origin: str
    x: float
    y: float


@dataclass
class Projection:
    """What ``embedcli project`` shows. Field names are the JSON keys, except ``cloud`` (every
    row's coordinates, drawn as the background; not in JSON) and ``points`` (flattened)."""

    source: str
    seeded: bool
    encoding: str
    table_shape: tuple[int, int]
    method: str
    explained_variance: tuple[float, float]  # variance of the rows along PC1 and PC2
    explained_variance_ratio: tuple[float, float]  # the same, as shares of the total variance
    total_variance: float  # summed over every dimension
    noise_edge: float  # the top variance a random table of this shape would show
    structure: str  # "isotropic" (PC1 near noise_edge), "weak" or "structured"
    points: list[ProjectedPoint]
    cloud: np.ndarray  # (V, 2) float64: every row of the table on the map

    @property
    def noise_ratio(self) -> float:
        """PC1's variance over ``noise_edge``: about 1 for a random table."""
        return self.explained_variance[0] / self.noise_edge


def chosen_ids(
    text_ids: list[int], top: int | None, listed: list[int] | None, rows: int
) -> list[tuple[int, str, int | None]]:
    """(id, origin, index in the text or None) for each id to show, each once: the text's first,
    then the first ``top`` rows (a BPE vocabulary lists its bytes, then its merges most
    frequent first), then ``listed``. An id outside the table is an error."""
    if top is not None and top > rows:
        raise InputTextError(f"--first-ids {top:,} is more than the table's {rows:,} rows")
    wanted = [
        *((token, "text", index) for index, token in enumerate(text_ids)),
        *((token, "top", None) for token in range(top or 0)),
        *((token, "ids-file", None) for token in listed or ()),
    ]
    if not wanted:
        raise InputTextError("the text has no tokens: there is nothing to place on the map")
    seen: dict[int, tuple[int, str, int | None]] = {}
    for token, origin, index in wanted:
        if not 0 <= token < rows:
            where = "the text" if origin == "text" else "--ids-file"
            raise TokenIdError(
                f"token id {token} (from {where}) is out of range for a token table of {rows:,} "
                "rows; use the encoding the model was trained with"
            )
        seen.setdefault(token, (token, origin, index))
    return list(seen.values())


def project(
    enc: tiktoken.Encoding,
    table: torch.Tensor,
    chosen: list[tuple[int, str, int | None]],
    source: str,
    *,
    seeded: bool,
    device: torch.device | str = "cpu",
    on_rows: RowsDone | None = None,
) -> Projection:
    """The table's first two principal components, every row's place on them, and the
    ``chosen`` tokens' places (with their pieces). ``on_rows(done, total)`` hears the rows
    read over every pass (the PCA counted as PCA_PASSES passes, told when it ends)."""
    import numpy as np
    import torch

    rows, width = table.shape
    chunked = not isinstance(table, torch.Tensor)  # a quantized table: covariance, two passes
    read = RowCount(on_rows, rows * (3 + (2 if chunked else PCA_PASSES)))
    mean = _mean(table, read)  # (d,)
    axes, precision = principal_axes(table, device, read=read)  # (d, 2)
    cloud, total = _project_rows(table, mean, axes, read)  # (V, 2), and the total variance
    variance = cloud.var(axis=0, ddof=1)  # (2,)
    if not total > 0:
        raise WeightsError("every row of the token table is the same: it has no principal axes")
    # Centring leaves V - 1 degrees of freedom: a 2-row table is one direction, whatever d.
    edge = total / width * (1 + math.sqrt(width / (rows - 1))) ** 2
    ratio = float(variance[0]) / edge
    points = [
        ProjectedPoint(
            token_piece(enc, token, index=index),
            origin,
            float(cloud[token, 0]),
            float(cloud[token, 1]),
        )
        for token, origin, index in chosen
    ]
    return Projection(
        source=source,
        seeded=seeded,
        encoding=enc.name,
        table_shape=(rows, width),
        method=(
            "eigenvectors of the covariance, in float64, a chunk of rows at a time"
            if precision == COVARIANCE
            else f"torch.pca_lowrank(q={min(PCA_RANK, rows, width)}, niter={PCA_ITERATIONS}, "
            f"center=True) in {precision}, seed {PCA_SEED}"
        ),
        explained_variance=(float(variance[0]), float(variance[1])),
        explained_variance_ratio=(  # rounding can put a rank-1 table a hair over 1
            min(1.0, float(variance[0]) / total),
            min(1.0, float(variance[1]) / total),
        ),
        total_variance=total,
        noise_edge=edge,
        structure=(
            "structured"
            if ratio > STRUCTURE_RATIO
            else "weak"
            if ratio > WEAK_RATIO
            else "isotropic"
        ),
        points=points,
        cloud=np.ascontiguousarray(cloud),
    )


def principal_axes(
    table: torch.Tensor, device: torch.device | str = "cpu", *, read: RowCount | None = None
) -> tuple[torch.Tensor, str]:
    """(the table's first two principal axes (d, 2), float64 on the CPU; the precision they
    were found in).

    ``torch.pca_lowrank`` runs on ``device`` from a fixed random start, in float64 where the
    device has it, the table holds at most FLOAT64_ELEMENTS values and its copies fit (else in
    float32). An untrained table's top variances
    nearly tie, so that float32's rounding, which changes with the number of threads, moves
    its axes visibly; float64's does not. Each axis is signed so that its largest loading is
    positive (as scikit-learn does), so that a map does not flip between runs. ``read``
    counts the rows read (the PCA's as PCA_PASSES passes)."""
    import torch

    read = read or RowCount(None, 0)

    if isinstance(device, str):
        device = resolve_device(device, allow_meta=False)
    rows, width = table.shape
    if rows < 2 or width < 2:
        raise WeightsError(
            f"a map needs a table of at least 2 rows and 2 dimensions, not {rows} × {width}"
        )
    peak = _check_finite(table, read)
    if not isinstance(table, torch.Tensor):  # a quantized table, read a chunk at a time
        return _signed(_covariance_axes(table, peak or 1.0, read)), COVARIANCE
    scaled = not SAFE_PEAK[0] <= peak <= SAFE_PEAK[1]
    precision = _precision(rows, width, table, device, scaled)
    values = table.detach().to(device, precision)  # (V, d)
    if scaled:
        # Scaled so that products of values neither overflow nor underflow float32 inside
        # the PCA (1e36 squared is inf): the axes of a table are those of any multiple of it.
        # In place only on a copy: .to() hands back the table itself where nothing changes.
        values = values / peak if values.data_ptr() == table.data_ptr() else values.div_(peak)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(PCA_SEED)
        try:
            _, _, components = torch.pca_lowrank(
                values, q=min(PCA_RANK, rows, width), niter=PCA_ITERATIONS, center=True
            )  # components: (d, q)
        except torch.linalg.LinAlgError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise WeightsError(f"the principal axes could not be found: {first}") from None
        except (NotImplementedError, RuntimeError, MemoryError) as exc:
            _pca_failed(exc, rows, width, device)
    read.add(PCA_PASSES * rows)
    axes = components[:, :2].cpu().double()  # (d, 2)
    return _signed(axes), str(precision).removeprefix("torch.")


def _signed(axes: torch.Tensor) -> torch.Tensor:
    """Each axis signed so that its largest loading is positive."""
    import torch

    peak = axes.abs().argmax(dim=0)  # (2,)
    signs = torch.sign(axes[peak, torch.arange(2)])
    return axes * torch.where(signs == 0, 1.0, signs)


COVARIANCE = "float64, covariance"  # the precision named for a table read in chunks


def _covariance_axes(table: Any, peak: float, read: RowCount) -> torch.Tensor:
    """The two leading eigenvectors of the rows' covariance (d, d), summed in float64 a chunk
    of rows at a time: exact principal axes of a table that is never whole in memory (a
    quantized GGUF table); the values scaled by ``peak`` so that squares cannot overflow."""
    import torch

    rows, width = table.shape
    ensure_host_fits(f"the covariance of a {width:,}-wide table (float64)", 3 * width * width * 8)
    mean = _mean(table, read) / peak
    covariance = torch.zeros(width, width, dtype=torch.float64)
    step = max(1, CHUNK_ELEMENTS // width)
    for start in range(0, rows, step):
        chunk = table[start : start + step].double().div_(peak).sub_(mean)  # (R, d)
        covariance.addmm_(chunk.T, chunk)
        read.add(len(chunk))
    _, vectors = torch.linalg.eigh(covariance)  # ascending eigenvalues
    return vectors[:, [-1, -2]]  # (d, 2)


def _pca_failed(exc: BaseException, rows: int, width: int, device: torch.device) -> NoReturn:
    """An allocation that failed inside the PCA is a memory error; anything else off the CPU
    is the device's limit (MPS lacks operations); on the CPU, a bug: raised as it is."""

    said = str(exc)
    if isinstance(exc, MemoryError) or "allocate" in said or "out of memory" in said:
        raise MemoryLimitError(
            f"the principal axes of a {rows:,} × {width:,} table ran out of memory on "
            f"{device}; use a machine with more memory"
        ) from None
    if device.type == "cpu":
        raise exc
    raise WeightsError(
        f"the principal axes cannot be found on {device}: {said.splitlines()[0] if said else exc!r}"
        "; pass --device cpu"
    ) from None


def _check_finite(table: torch.Tensor, read: RowCount) -> float:
    """The table's largest magnitude; a row holding NaN or inf is refused: it has no place on
    a map (and would spoil every axis)."""
    step = max(1, CHUNK_ELEMENTS // table.shape[1])
    peak = 0.0
    for start in range(0, table.shape[0], step):
        rows = table[start : start + step]
        finite = rows.isfinite().all(dim=1)  # (R,)
        if not bool(finite.all()):
            token = start + int((~finite).nonzero()[0])
            raise WeightsError(
                f"the row of token {token} holds NaN or infinite values, so the table has no "
                "principal axes; the table is damaged"
            )
        peak = max(peak, float(rows.abs().max()))
        read.add(len(rows))
    return peak


def _precision(
    rows: int, width: int, table: torch.Tensor, device: torch.device, scaled: bool = False
) -> torch.dtype:
    """float64 where the device has it, the table is no larger than FLOAT64_ELEMENTS and
    pca_lowrank's copies of it (the converted table and its centred copy) fit; else float32,
    where they fit; else an error."""
    import torch

    available = memory.available_memory(device)
    for precision in (torch.float64, torch.float32):
        if precision == torch.float64 and (device.type == "mps" or rows * width > FLOAT64_ELEMENTS):
            continue
        same = table.dtype == precision and table.device == device and not scaled
        copies = 1 if same else 2
        needed = copies * rows * width * precision.itemsize + rows * (PCA_RANK + 2) * 8
        if available is None or needed <= available:
            return precision
    memory.ensure_fits(
        f"the principal axes of a {rows:,} × {width:,} table (float32 copies)",
        needed,
        available,
        str(device),
        "use a machine with more memory",
    )
    return torch.float32  # not reached: ensure_fits raised


def _project_rows(
    table: torch.Tensor, mean: torch.Tensor, axes: torch.Tensor, read: RowCount
) -> tuple[np.ndarray, float]:
    """(every row, centred, on the two axes (V, 2); the sum over dimensions of the rows'
    variance, ddof 1), in float64, in one pass a chunk of rows at a time."""
    import numpy as np

    rows, width = table.shape
    out = np.empty((rows, 2), dtype=np.float64)
    squares = 0.0
    step = max(1, CHUNK_ELEMENTS // width)
    for start in range(0, rows, step):
        chunk = table[start : start + step].detach().cpu().double() - mean  # (R, d)
        out[start : start + len(chunk)] = (chunk @ axes).numpy()  # (R, 2)
        squares += float(chunk.square().sum())
        read.add(len(chunk))
    return out, squares / (rows - 1)


def _mean(table: torch.Tensor, read: RowCount) -> torch.Tensor:
    """The rows' mean (d,), in float64 a chunk of rows at a time."""
    import torch

    rows, width = table.shape
    step = max(1, CHUNK_ELEMENTS // width)
    total = torch.zeros(width, dtype=torch.float64)
    for start in range(0, rows, step):
        chunk = table[start : start + step]  # (R, d)
        total += chunk.detach().cpu().double().sum(dim=0)
        read.add(len(chunk))
    return total / rows


def verdict(report: Projection) -> str:
    """One sentence: is the table an isotropic cloud or does it have structure, and how much."""
    said = (
        f"PC1 carries {report.noise_ratio:.2f}× the top variance of a table of independent "
        "random values of this shape (the Marchenko–Pastur edge): "
    )
    if report.structure == "structured":
        both = report.explained_variance[1] / report.noise_edge > WEAK_RATIO
        which = "PC1 and PC2 stand" if both else "PC1 stands"
        return said + f"{which} out, structure that random values lack (training leaves it)"
    if report.structure == "weak":
        return said + "a little more than chance in a table this size: weak structure"
    if report.seeded:
        return said + (
            "no direction stands out, the isotropic cloud of nn.Embedding's N(0, 1) "
            "initialisation (untrained)"
        )
    return said + "no direction stands out, an isotropic cloud, as in an untrained table"
