"""``embed --verify``'s reference: the input embeddings worked out again on the CPU, without the
core module or the loader that fed it.

The tables come from the plain recipe (``torch.manual_seed(seed)``, then ``nn.Embedding`` for
the tokens and, for learned positions, a second ``nn.Embedding``), or, for ``--weights``, from
the checkpoint's files read a second way (safetensors' ``safe_open``, ``numpy.load``,
``torch.load``); sinusoids from their formula in float64; RoPE and no positions add nothing.
Then one lookup and one addition in the device's dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from embedcli.core.devices import torch_dtype
from embedcli.core.sinusoids import sinusoids as family_sinusoids
from embedcli.errors import VerificationError
from embedcli.models.tables import load_tables
from embedcli.pipeline import hfreference
from embedcli.pipeline.referencesteps import arranged, norm, token_dropout
from embedcli.pipeline.rowtables import RowTables

if TYPE_CHECKING:
    import torch

    from embedcli.core.config import EmbedConfig
    from embedcli.models.tables import LoadedTables

_NESTED = ("model", "state_dict", "model_state_dict")  # where PyTorch checkpoints keep weights
_WRAPPERS = ("_orig_mod.", "module.")  # torch.compile's and DistributedDataParallel's prefixes


@dataclass(frozen=True)
class VerifyResult:
    """The device's lookup-and-add compared with the same computation on the CPU."""

    device: str
    reference_device: str
    max_abs_diff: float
    tolerance: float
    reference: str = "the seeded recipe"  # where the reference's tables came from
    # which reference disagrees most: "" (embedcli's own), or the transformers class that does
    disagrees: str = ""

    @property
    def ok(self) -> bool:
        """Whether the device agrees with the CPU to the dtype's rounding."""
        return self.max_abs_diff <= self.tolerance

    def ensure_ok(self) -> None:
        """Raise VerificationError when the device disagrees with the CPU."""
        if not self.ok and self.disagrees:
            raise VerificationError(
                f"the {self.device} result differs from transformers' {self.disagrees} by "
                f"{self.max_abs_diff:.3g} (tolerance {self.tolerance:.3g}): embedcli's reading "
                "of this model's family is not the model's own code; please report it"
            )
        if not self.ok:
            advice = (
                "embedcli's module and its reference differ on the CPU itself: please report it"
                if self.device == "cpu"
                else "its results cannot be trusted: try --device cpu"
            )
            raise VerificationError(
                f"{self.device} disagrees with the CPU by {self.max_abs_diff:.3g} "
                f"(tolerance {self.tolerance:.3g}); {advice}"
            )


def verify(
    config: EmbedConfig,
    ids: torch.Tensor,
    actual: torch.Tensor,
    tables: LoadedTables | None,
    attention_mask: torch.Tensor | None = None,
) -> VerifyResult:
    """The device's (B, T, d) result against the reference, to one rounding of the sum."""
    import torch

    expected, reference = reference_embeddings(config, ids, tables, attention_mask)
    got = actual.detach().cpu().double()
    diff = _difference(got, expected)
    finite = expected[expected.isfinite()]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    tolerance = torch.finfo(torch_dtype(config.dtype)).eps * max(scale, 1.0)
    if tables is not None and tables.folder is not None and by_rows(tables):
        reference += "; the model's own code was not run: its token table is read by rows"
    elif tables is not None and tables.folder is not None:
        second, said = _transformers_reference(config, ids, tables, attention_mask)
        reference = f"{reference}; {said}"
        if second is not None:
            theirs = _difference(got, second.double())
            if theirs > tolerance and theirs > diff:
                run = said.removeprefix("and transformers' ").split(",")[0]
                return VerifyResult(str(actual.device), "cpu", theirs, tolerance, reference, run)
            diff = max(diff, theirs)
    return VerifyResult(str(actual.device), "cpu", diff, tolerance, reference)


def _difference(got: torch.Tensor, expected: torch.Tensor) -> float:
    """The largest difference; a NaN or an infinity both sides hold at the same place is
    agreement (a table that holds them gives them on every device), one side alone is not."""
    if not got.numel():
        return 0.0
    same = (got == expected) | (got.isnan() & expected.isnan())
    gap = (got - expected).abs().masked_fill(same, 0.0)
    return float(gap.nan_to_num(nan=float("inf")).max())


def _transformers_reference(
    config: EmbedConfig, ids: torch.Tensor, tables: LoadedTables, mask: torch.Tensor | None
) -> tuple[torch.Tensor | None, str]:
    """The model's own code up to its first block (transformers, where it is installed)."""
    import torch

    if not hfreference.available():
        return None, "transformers is not installed: the model's own code was not run"
    mask = torch.ones_like(ids) if mask is None else mask
    try:
        hidden, run = hfreference.first_block_input(
            Path(tables.folder), ids, mask, torch_dtype(config.dtype), tables.head_key
        )
    except Exception as exc:  # transformers' own failure is reported, never a traceback
        return None, f"transformers could not run the model ({type(exc).__name__})"
    if hidden is None:
        return None, f"the model's own code was not run: {run}"
    return hidden, f"and transformers' {run}, run up to its first block"


def reference_embeddings(
    config: EmbedConfig,
    ids: torch.Tensor,
    tables: LoadedTables | None = None,
    attention_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, str]:
    """(B, T) ids -> (the (B, T, d) input embeddings, in float64, from the recipe and formulas;
    where the tables came from). A model family's other steps (scale, projection, token type 0,
    offset or counted positions, LayerNorm) are applied as its registry entry says, on tensors
    read again from the files."""
    import torch

    dtype = torch_dtype(config.dtype)
    extras: dict[str, torch.Tensor] = {}
    ids = ids.cpu()
    rows = _rows(config, ids, attention_mask)
    index = ids  # the token table's rows each token reads
    if tables is None:
        (token, position), source = seeded_tables(config), "the seeded recipe"
    elif by_rows(tables):
        learned = rows if config.positional == "learned" else None
        token, position, index, source = reread_rows(tables, ids, learned)
        extras = reread_extras(tables)
    else:
        token, position, source = reread_tables(tables)
        extras = reread_extras(tables)
    hidden = token.to(dtype)[index]  # (B, T, w) in the device's dtype
    if config.embed_scale != 1.0:
        if config.scale_rounding == "dtype":  # Gemma: the scale in the embeddings' dtype
            hidden = hidden * torch.tensor(config.embed_scale, dtype=dtype)
        else:
            hidden = hidden * config.embed_scale
    if config.replaced_id is not None and "replacement" in extras:  # T5Gemma 2's EOI row
        hit = (ids == config.replaced_id).unsqueeze(-1)
        hidden = torch.where(hit, extras["replacement"].to(dtype), hidden)
    if config.token_dropout_id is not None:  # ESM: its mask token's rows zeroed, rescaled
        hidden = token_dropout(hidden, ids, config.token_dropout_id, attention_mask)
    if config.trigram:  # MobileBERT: [row t + 1, row t, row t - 1], zeros past the ends
        zero = torch.zeros_like(hidden[:, :1])
        after = torch.cat([hidden[:, 1:], zero], dim=1)
        before = torch.cat([zero, hidden[:, :-1]], dim=1)
        hidden = torch.cat([after, hidden, before], dim=2)
    for name in (f"concat_{i}" for i in range(len(config.concat_widths))):  # RoCBERT's
        row = extras[name][0].to(dtype)
        hidden = torch.cat([hidden, row.expand(*hidden.shape[:-1], row.shape[0])], dim=2)
    hidden = _after_lookup(config, hidden, _held(extras, dtype), _added(config, rows, position))
    if config.mask_multiply:  # the pads' rows become zeros; the others are multiplied by 1
        mask = torch.ones_like(ids) if attention_mask is None else attention_mask.cpu()
        hidden = hidden * mask.to(dtype)[:, :, None]
    return arranged(config, hidden, extras).double(), source


def _held(extras: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    return {name: tensor.to(dtype) for name, tensor in extras.items()}


def _added(
    config: EmbedConfig, rows: torch.Tensor, position: torch.Tensor | None
) -> torch.Tensor | None:
    """The positional rows added to the sum (float64 for sinusoids); None: nothing added
    (rope, alibi, relative and none)."""
    if config.positional == "learned" and position is not None:
        return position[rows]  # (T, s) or (B, T, s)
    if config.positional != "sinusoidal":
        return None
    width = config.sum_width
    if config.sinusoid == "interleaved":  # its own formula, in float64
        return sinusoids(int(rows.max()) + 1, width)[rows]
    table = family_sinusoids(config.sinusoid, int(rows.max()) + 1, width, config.padding_idx)
    return table[rows]  # a family's own layout, as the family computes it


def _after_lookup(
    config: EmbedConfig,
    hidden: torch.Tensor,
    extras: dict[str, torch.Tensor],
    added: torch.Tensor | None,
) -> torch.Tensor:
    """The steps between the (scaled) lookup and the mask, in the family's order: a projection
    where it sits (after the lookup, before or after the norm), token type 0 and positions in
    the family's order, the norm of its kind. One operation each, in the device's dtype: its
    rounding is IEEE's, the same on every device."""
    import torch

    weight = extras.get("project_in")

    def linear(x: torch.Tensor) -> torch.Tensor:  # (B, T, w) @ (w, d) + b, the models' kernel
        return torch.nn.functional.linear(x, weight, extras.get("project_bias"))

    place = config.projection if weight is not None else None
    if place == "lookup":
        hidden = linear(hidden)
    terms = [extras["token_type"][0] if "token_type" in extras else None]  # type 0
    terms.append(None if added is None else added.to(hidden.dtype))
    ordered = list(reversed(terms) if config.positions_first else terms)
    names = [f"row0_{i}" for i in range(config.row0_tables)]  # a checkpoint's: after positions
    rows = [extras[name][0] for name in names if name in extras]
    at = 1 if config.positions_first else 2  # just after the positions' place
    for term in [*ordered[:at], *rows, *ordered[at:]]:
        hidden = hidden if term is None else hidden + term
    if place == "before_norm":
        hidden = linear(hidden)
    if config.norm_eps is not None:
        hidden = norm(config, hidden, extras.get("norm_weight"), extras.get("norm_bias"))
    return linear(hidden) if place == "after_norm" else hidden


def _rows(
    config: EmbedConfig, ids: torch.Tensor, attention_mask: torch.Tensor | None
) -> torch.Tensor:
    """The positional rows each token reads, counted here again from their definition."""
    import torch

    batch, length = ids.shape
    if config.position_ids == "mask":
        mask = torch.ones_like(ids) if attention_mask is None else attention_mask.cpu().long()
        rows = torch.zeros_like(ids)
        for b in range(batch):
            seen = 0
            for t in range(length):
                seen += int(mask[b, t])
                rows[b, t] = (seen - 1 if mask[b, t] else -1) + config.position_offset
        return rows
    if config.position_ids == "padding":
        rows = torch.zeros_like(ids)
        pad = config.padding_idx
        for b in range(batch):
            seen = 0
            for t in range(length):
                real = int(ids[b, t]) != pad
                seen += real
                rows[b, t] = pad + seen if real else pad
        return rows
    return torch.arange(length) + config.position_offset


def by_rows(tables: LoadedTables) -> bool:
    """Whether the tables stayed in a checkpoint that is read by rows (a hub model's)."""

    return isinstance(tables, RowTables)


def reread_rows(
    tables: RowTables, ids: torch.Tensor, rows: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, str]:
    """(the token rows of ``ids``, the positional table's rows 0 to the last of ``rows`` (None:
    none are added), each token's row in the first, where they came from): read again through
    the loader, and the ids numbered into those rows here, apart from the module's numbering."""
    import torch

    held = sorted({int(i) for i in ids.flatten().tolist()})
    where = {token_id: row for row, token_id in enumerate(held)}
    index = torch.tensor([where[int(i)] for i in ids.flatten().tolist()], dtype=torch.long)
    checkpoint = tables.checkpoint
    token = checkpoint.load_rows(tables.token_key, held)
    position = None
    if tables.position_key is not None and rows is not None and rows.numel():
        last = min(int(rows.max()) + 1, tables.position_shape[0])  # the module read no further
        position = checkpoint.load_rows(tables.position_key, range(last))
    said = "the checkpoint's rows, read again by its loader (not an independent read)"
    return token, position, index.reshape(ids.shape), said


def reread_extras(tables: LoadedTables) -> dict[str, torch.Tensor]:
    """A family's other tensors (norm, token types, projection), read again from the files."""
    files = [Path(f) for f in tables.files or [tables.path]]
    found = {}
    for name, key in tables.extra_keys.items():
        tensor = _read(files, key) if files and all(f.is_file() for f in files) else None
        found[name] = tables.extras[name] if tensor is None else tensor
    return found


def seeded_tables(config: EmbedConfig) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The recipe: ``torch.manual_seed``, the token table, then a learned positional table."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        token = torch.nn.Embedding(config.vocab_size, config.d_model).weight.detach()
        position = None
        if config.positional == "learned":
            position = torch.nn.Embedding(config.context_length, config.d_model).weight.detach()
    return token, position


def sinusoids(length: int, width: int) -> torch.Tensor:
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)), in float64,
    with NumPy, a pair of columns at a time."""
    import numpy as np
    import torch

    positions = np.arange(length, dtype=np.float64)
    table = np.empty((length, width), dtype=np.float64)
    for i in range(0, width, 2):
        rate = math.pow(10000.0, i / width)
        table[:, i] = np.sin(positions / rate)
        table[:, i + 1] = np.cos(positions / rate)
    return torch.from_numpy(table)


def reread_tables(tables: LoadedTables) -> tuple[torch.Tensor, torch.Tensor | None, str]:
    """(token table, positional table, where they came from): read again from the
    checkpoint's files, by a reader of each format's own library; where the files are not on
    this machine (or hold the tables in a way those readers do not), the loader again, and the
    source says so."""
    files = [Path(f) for f in tables.files or [tables.path]]
    if files and all(f.is_file() for f in files):
        token = _read(files, tables.token_key)
        position = None if tables.position_key is None else _read(files, tables.position_key)
        if token is not None and (tables.position_key is None or position is not None):
            return token, position, "the checkpoint's files, read again"

    again = load_tables(tables.path, tables.token_key, tables.position_key)
    return again.token, again.position, "the checkpoint, loaded again (not an independent read)"


def _read(files: list[Path], key: str) -> torch.Tensor | None:
    """The tensor named ``key`` (wrapper prefixes aside) in any of ``files``, or None; only
    that tensor is read."""
    for path in files:
        found = _read_one(path, key)
        if found is not None:
            return found
    return None


def _read_one(path: Path, key: str) -> torch.Tensor | None:
    """``key`` from one file: safetensors, NumPy .npz, or a PyTorch checkpoint."""
    import zipfile

    import torch

    with open(path, "rb") as handle:
        head = handle.read(9)
    if len(head) == 9 and head[8:9] == b"{":  # safetensors: an 8-byte length, then JSON
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as opened:
            name = _match(list(opened.keys()), key)
            return None if name is None else opened.get_tensor(name)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            numpy_file = any(n.endswith(".npy") for n in archive.namelist())
        if numpy_file:
            import numpy as np

            with np.load(path) as arrays:
                name = _match(list(arrays.files), key)
                if name is None:
                    return None
                array = arrays[name]  # in native byte order, as torch needs it
                return torch.from_numpy(np.ascontiguousarray(array, array.dtype.newbyteorder("=")))
    loaded = torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
    for nested in _NESTED:
        if isinstance(loaded, dict) and isinstance(loaded.get(nested), dict):
            loaded = loaded[nested]
            break
    if not isinstance(loaded, dict):
        return None
    names = [n for n, v in loaded.items() if isinstance(n, str) and isinstance(v, torch.Tensor)]
    name = _match(names, key)
    return None if name is None else loaded[name]


def _match(names: list[str], key: str) -> str | None:
    """The name that is ``key`` itself, else one that is ``key`` behind torch.compile's and
    DDP's prefixes."""
    if key in names:
        return key
    for name in names:
        bare = name
        while bare.startswith(_WRAPPERS):
            bare = bare.split(".", 1)[1]
        if key in (name, bare):
            return name
    return None
