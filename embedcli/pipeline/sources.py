"""Where the input layer comes from: the flags (seeded tables, or a preset), a checkpoint file,
a model folder or a hub model (``--weights SOURCE``).

Every command that needs a config or tables asks here, so defaults, preset merging and the
checkpoint-versus-flags decision are made once. A model source's config.json (positions, rope
theta, input scaling) is applied here too, and a flag that disagrees with it is an error.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from embedcli.core.config import EmbedConfig, Overrides, Preset
from embedcli.errors import UsageError
from embedcli.models import tables as model_tables
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.models.inventory import inspect_weights
from embedcli.models.presets import preset_config
from embedcli.models.sources import open_source
from embedcli.models.tables import check_source, position_rows_before
from embedcli.pipeline.embed import check_memory
from embedcli.pipeline.rowtables import RowTables
from embedcli.tokenization.encodings import get_encoding

if TYPE_CHECKING:
    import torch

    from embedcli.models.checkpoint import Checkpoint
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint
    from embedcli.models.keys import TableKeys
    from embedcli.models.sources import ModelSource
    from embedcli.models.tables import LoadedTables
    from embedcli.pipeline.rowtables import RowTables

Source = str | Path  # a checkpoint file, a model folder, or hf:ORG/NAME[@REVISION]


def _loaded(
    weights: Source,
    token_key: str | None,
    position_key: str | None,
    *,
    by_rows: bool = False,
    given: Overrides | None = None,
    access: HubAccess = OFFLINE,
) -> tuple[LoadedTables, ModelSource]:
    """The two tables of a source, labelled for reports, and the opened source. ``by_rows``:
    a table the source reads by rows stays there (RowTables), once the flags (``given``) and
    config.json are checked against its header."""
    source = open_source(weights, access)
    keys = model_tables.find_tables(source.checkpoint, token_key, position_key, source.config)
    if by_rows and source.by_rows(keys.token):
        tables = _row_tables(source, keys, given or Overrides())
    else:
        tables = model_tables.read_tables(source.checkpoint, keys)
    named = source.folder is not None or source.hub or source.spec.startswith("ollama:")
    tables.path = source.spec if named else tables.path
    tables.model = source.summary()
    tables.files = source.local_files()
    if source.folder is not None and not source.remote and source.config is not None:
        tables.folder = str(source.folder)
    return tables, source


def _row_tables(source: ModelSource, keys: TableKeys, given: Overrides) -> RowTables:
    """A source's tables, left where they are: checked from the header before anything is
    read; only a family's small other tensors (norm, token types, projection) are read now."""

    checkpoint = source.checkpoint
    position = None if keys.position is None else checkpoint.info(keys.position).shape
    check_source(checkpoint.info(keys.token).shape, position, given, source.config)
    return RowTables(checkpoint, keys, {name: checkpoint.load(key) for name, key in keys.extras})


def _shape(table: torch.Tensor | None) -> tuple[int, ...] | None:
    return None if table is None else tuple(table.shape)


def _table_shapes(
    tables: LoadedTables,
) -> tuple[tuple[int, ...], tuple[int, ...] | None, str]:
    """(token shape, positional shape or None, the token table's stored dtype), from the
    header where the tables stay in the checkpoint."""

    if isinstance(tables, RowTables):
        return tables.token_shape, tables.position_shape, tables.token_dtype
    stored = str(tables.token.dtype).removeprefix("torch.")
    return tuple(tables.token.shape), _shape(tables.position), stored


def _keys_need_weights(weights: Source | None, *keys: str | None) -> None:
    """--token-key and --position-key name tables of a checkpoint: alone they mean nothing."""
    if weights is None and any(key is not None for key in keys):
        raise UsageError("--token-key and --position-key name tables in --weights: pass --weights")


def embed_source(
    encoding: str,
    overrides: Overrides,
    weights: Source | None = None,
    token_key: str | None = None,
    position_key: str | None = None,
    *,
    access: HubAccess = OFFLINE,
) -> tuple[EmbedConfig, LoadedTables | None]:
    """(config, loaded tables or None): seeded tables sized by the flags (vocabulary: the
    encoding's), or a checkpoint's tables with the flags checked against them (RowTables where
    the source reads a table by rows: nothing of it is read yet)."""

    _keys_need_weights(weights, token_key, position_key)
    if weights is None:
        vocab = get_encoding(encoding, access).n_vocab
        return overrides.apply(EmbedConfig(vocab_size=vocab)), None

    # a hub table not on this machine whole is read by rows, after tokenising (run_embed)
    tables, source = _loaded(
        weights, token_key, position_key, by_rows=True, given=overrides, access=access
    )
    token, position, stored = _table_shapes(tables)
    config = model_tables.tables_config(
        token, position, overrides, model=source.config, table_dtype=stored
    )
    return config, tables


def source_tables(
    seeded: EmbedConfig,
    weights: Source | None = None,
    token_key: str | None = None,
    position_key: str | None = None,
    given: Overrides | None = None,
    *,
    access: HubAccess = OFFLINE,
) -> tuple[torch.Tensor, torch.Tensor | None, str]:
    """(token table, positional table or None, where they came from): a checkpoint's trained
    tables, or the tables ``seeded`` describes, made by the seeded recipe. A size in ``given``
    (the flags) that disagrees with the checkpoint's tables is an error, as in embed."""
    _keys_need_weights(weights, token_key, position_key)
    if weights is not None:
        tables, source = _loaded(weights, token_key, position_key, access=access)
        shapes = (tables.token.shape, _shape(tables.position))
        check_source(*shapes, given or Overrides(), source.config)
        return tables.token, tables.position, f"{source.label}, {tables.layout}"
    import torch

    from embedcli.core.embedding import InputEmbedding  # lazy: core.embedding loads torch

    check_memory(seeded, torch.device("cpu"), 1, 1)  # the seeded tables, before they are made
    module = InputEmbedding(seeded)
    position = module.position_embedding
    return (
        module.token_embedding.weight.detach(),
        None if position is None else position.weight.detach(),
        f"seeded nn.Embedding tables, seed {seeded.seed}",
    )


@dataclass(frozen=True)
class LearnedPositions:
    """A source's learned positional table, checked from the headers and not read yet."""

    source: ModelSource
    keys: TableKeys
    key: str  # the positional table's (keys.position)
    before: int  # rows before position 0 (OPT's 2)
    rows: int  # positions from position 0
    width: int
    label: str  # where it comes from, as reports say it

    def read(self, rows: int) -> torch.Tensor:
        """Positions 0 to ``rows`` - 1, (rows, d) as stored: where the source reads by rows (a
        hub table not in the cache whole), only those rows are read."""
        checkpoint, key = self.source.checkpoint, self.key
        span = range(self.before, self.before + rows)
        if rows < self.rows and self.source.by_rows(key):
            table = checkpoint.load_rows(key, span)
        else:
            table = checkpoint.load(key)[span.start : span.stop]
        # checked as a table: 2-D, dense, floating point (its width was checked from the header)
        model_tables.check_tables(table, None, replace(self.keys, token=key))
        return table


def learned_positions(
    weights: Source,
    position_key: str | None = None,
    given: Overrides | None = None,
    *,
    access: HubAccess = OFFLINE,
) -> LearnedPositions | None:
    """A source's learned positional table (None where it has none), the flags (``given``) and
    config.json checked against both tables' headers as embed checks them; the token table is
    never read (embedcli positions shows the positional table alone)."""
    source = open_source(weights, access)
    checkpoint = source.checkpoint
    keys = model_tables.find_tables(checkpoint, None, position_key, source.config)
    position = None if keys.position is None else checkpoint.info(keys.position).shape
    check_source(checkpoint.info(keys.token).shape, position, given or Overrides(), source.config)
    if keys.position is None or position is None:
        return None
    before = position_rows_before(source.config)
    label = f"{source.label}, {keys.layout}" + (
        f", from row {before} (position 0)" if before else ""
    )
    rows, width = position[0] - before, position[1]
    return LearnedPositions(source, keys, keys.position, before, rows, width, label)


def shapes_source(
    preset: str | None,
    overrides: Overrides,
    weights: Source | None = None,
    token_key: str | None = None,
    position_key: str | None = None,
    *,
    load: bool = False,
    access: HubAccess = OFFLINE,
) -> tuple[Preset, EmbedConfig, tuple[torch.Tensor, torch.Tensor | None] | None]:
    """(preset, config, tables or None) for inspect-shapes: a named preset with the flags
    applied (a real family's read through its registry entry), or a checkpoint's shapes (its
    tables too when ``load``)."""
    _keys_need_weights(weights, token_key, position_key)
    if weights is None:
        base, config = preset_config(preset, overrides)
        return base, config, None
    if preset is not None:
        raise UsageError("pass --preset or --weights, not both")
    base, tables = checkpoint_preset(
        weights, token_key, position_key, overrides, load=load, access=access
    )
    return base, base.config, tables


_ITEM_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1}
_ITEM_BYTES |= {"float8_e4m3fn": 1, "float8_e5m2": 1, "int64": 8, "int32": 4, "int16": 2}


def _stored(checkpoint: Checkpoint, key: str) -> tuple[str, int]:
    """(its type in the file, its bytes there): a GGUF table's GGML type and block bytes, any
    other checkpoint's dtype."""
    if checkpoint.is_gguf:
        gguf = cast("GGUFCheckpoint", checkpoint)
        return gguf.ggml_type(key), gguf.record(key).nbytes
    info = checkpoint.info(key)
    return info.dtype, info.numel * _ITEM_BYTES.get(info.dtype, 4)


def checkpoint_preset(
    path: Source,
    token_key: str | None,
    position_key: str | None,
    overrides: Overrides,
    *,
    load: bool,
    access: HubAccess = OFFLINE,
) -> tuple[Preset, tuple[torch.Tensor, torch.Tensor | None] | None]:
    """A preset from a checkpoint's table shapes (read from its header alone unless ``load``),
    counting the whole checkpoint's parameters; with ``load``, the tables too."""
    # opened once: headers, parameter count, and tables if asked
    source = open_source(path, access)
    checkpoint = source.checkpoint
    keys = model_tables.find_tables(checkpoint, token_key, position_key, source.config)
    position_shape = None if keys.position is None else checkpoint.info(keys.position).shape
    token = checkpoint.info(keys.token)
    config = model_tables.tables_config(
        token.shape, position_shape, overrides, model=source.config, table_dtype=token.dtype
    )
    counted = inspect_weights(source, token_key, position_key).parameters
    stored = tuple(
        (table, *_stored(checkpoint, key))
        for table, key in (("token_embeddings", keys.token), ("position_embeddings", keys.position))
        if key is not None
    )
    preset = Preset(
        "checkpoint", f"{source.label}, {keys.layout}", config, parameters=counted, stored=stored
    )
    if not load:
        return preset, None
    tables = model_tables.read_tables(checkpoint, keys)
    return preset, (tables.token, tables.position, tables.extras)
