"""Trained checkpoints: find the token and positional tables, safely, reading only what is needed.

Files are read by checkpoint.py (safetensors, PyTorch with ``weights_only=True``, NumPy ``.npz``
without pickles). A model's tables are where its family keeps them (familykeys.py); a bare
checkpoint's are matched by key against the registry's layouts (Hugging Face GPT-2, nanoGPT, also
compiled, ``_orig_mod.``, the "from scratch" GPTModel, TransformerLens, Llama-style models),
embedcli's own, and modules with ``token_embedding(s)``/``token_embed`` names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from embedcli.core.config import DEFAULT_CONTEXT_LENGTH, DTYPES, EmbedConfig
from embedcli.errors import ConfigError, WeightsError
from embedcli.families.registry import Layout, layouts
from embedcli.models.formats import strip_prefixes
from embedcli.models.keys import TableKeys

if TYPE_CHECKING:
    import torch

    from embedcli.core.config import EmbedConfig, Overrides
    from embedcli.models.config import ModelConfig
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint
    from embedcli.models.protocols import Checkpoint


# embedcli's own InputEmbedding, saved with torch.save(module.state_dict()); the families'
# bare layouts (GPT-2's, nanoGPT, the book's, TransformerLens, Llama's) come from the registry
OWN_LAYOUT = Layout(
    name="embedcli InputEmbedding",
    token="token_embedding.weight",
    position="position_embedding.weight",
)
# Module names matched at the end of a key, for models built by hand.
_SUFFIXES: tuple[tuple[str, str | None], ...] = (
    ("token_embeddings.weight", "position_embeddings.weight"),
    ("token_embedding.weight", "position_embedding.weight"),
    ("token_embed.weight", "position_embed.weight"),
    ("embed_tokens.weight", None),  # Llama-style inside a wrapper (Gemma 3, Llama 4: multimodal)
)


def find_tables(
    checkpoint: Checkpoint,
    token_key: str | None = None,
    position_key: str | None = None,
    model: ModelConfig | None = None,
) -> TableKeys:
    """The tables where a model's family keeps them (``model``, from its config.json), or a
    known layout of bare checkpoints, or --token-key/--position-key; errors list candidates.

    The tables found are checked from the header alone (2-D, floating point, no empty
    dimension, equal widths), so that every command refuses a bad table before reading it."""
    if checkpoint.is_gguf:
        # lazy, as the two below: this module is loaded at start-up (the presets), GGUF is not
        from embedcli.models.gguf.source import gguf_tables

        keys = gguf_tables(cast("GGUFCheckpoint", checkpoint), model, token_key, position_key)
    elif model is not None and model.family is not None:
        from embedcli.models.familykeys import family_tables  # lazy: see gguf_tables above

        keys = family_tables(checkpoint, model, token_key, position_key)
    else:
        keys = _detect_tables(checkpoint, token_key, position_key)
    check_table_headers(checkpoint, keys)
    return keys


def _detect_tables(
    checkpoint: Checkpoint, token_key: str | None, position_key: str | None
) -> TableKeys:
    names = set(checkpoint.names)
    stripped: dict[str, list[str]] = {}
    for name in names:
        stripped.setdefault(strip_prefixes(name), []).append(name)

    def actual(key: str | None) -> str | None:
        found = stripped.get(key, []) if key else []
        return found[0] if len(found) == 1 else None

    if token_key is not None:
        keys = TableKeys(
            "chosen with --token-key",
            _require(checkpoint, token_key),
            _optional_position(checkpoint, position_key),
            None,
        )
        return keys
    matches = []
    for layout in (*layouts(), OWN_LAYOUT):
        token = actual(layout.token)
        if token is not None:
            position = actual(layout.position)
            matches.append(
                TableKeys(layout.name, token, position, actual(layout.head), layout.head_transposed)
            )
    if not matches:
        for token_suffix, position_suffix in _SUFFIXES:
            tokens = sorted(n for n in names if n.endswith(token_suffix))
            if len(tokens) > 1:
                raise WeightsError(_candidates(checkpoint, "several token tables match", tokens))
            if tokens:
                positions = sorted(
                    n for n in names if position_suffix and n.endswith(position_suffix)
                )
                matches.append(
                    TableKeys(
                        f"modules named *{token_suffix}",
                        tokens[0],
                        positions[0] if len(positions) == 1 else None,
                        actual("lm_head.weight") if position_suffix is None else None,
                    )
                )
                break
    if len(matches) > 1:
        raise WeightsError(
            _candidates(
                checkpoint, "the checkpoint matches several layouts", [m.token for m in matches]
            )
        )
    if not matches:
        two_d = [t.name for t in checkpoint.tensors if len(t.shape) == 2]
        raise WeightsError(_candidates(checkpoint, "no token table found", two_d))
    keys = matches[0]
    if position_key is not None:
        keys = TableKeys(
            keys.layout,
            keys.token,
            _optional_position(checkpoint, position_key),
            keys.head,
            keys.head_transposed,
        )
    return keys


def _candidates(checkpoint: Checkpoint, problem: str, names: Iterable[str]) -> str:
    listed = [f"{n} {checkpoint.info(n).shape}" for n in list(names)[:12]]
    return (
        f"{problem} in {checkpoint.path}; candidates: {', '.join(listed) or 'none'}; "
        "pass --token-key (and --position-key)"
    )


def _require(checkpoint: Checkpoint, key: str) -> str:
    checkpoint.info(key)  # an unknown key is an error naming it
    return key


TABLE_DTYPES = ("float32", "float16", "bfloat16", "float64")


def _table_problem(name: str, shape: tuple[int, ...], dtype: str) -> str | None:
    """Why a tensor of this shape and dtype cannot be an embedding table, or None."""
    if len(shape) != 2 or dtype not in TABLE_DTYPES:
        return (
            f"{name} is a {shape} {dtype} tensor; an embedding table is a 2-D floating-point "
            f"tensor ({', '.join(TABLE_DTYPES)})"
        )
    if 0 in shape:
        return f"{name} has shape {shape}: an embedding table needs at least one row and one column"
    return None


def _width_problem(keys: TableKeys, token_width: int, position_width: int) -> str | None:
    if token_width == position_width:
        return None
    return (
        f"the token table {keys.token} is {token_width} wide but the positional table "
        f"{keys.position} is {position_width} wide; they must match"
    )


def check_table_headers(checkpoint: Checkpoint, keys: TableKeys) -> None:
    """The tables ``keys`` names, as the header describes them, can be embedding tables."""
    infos = [checkpoint.info(keys.token)]
    if keys.position is not None:
        infos.append(checkpoint.info(keys.position))
    for info in infos:
        problem = _table_problem(info.name, info.shape, info.dtype)
        if problem:
            raise WeightsError(problem)
    if len(infos) == 2 and not any(name == "project_in" for name, _ in keys.extras):
        problem = _width_problem(keys, infos[0].shape[1], infos[1].shape[1])
        if problem:
            raise WeightsError(problem)


def _optional_position(checkpoint: Checkpoint, key: str | None) -> str | None:
    if key is None or key.lower() == "none":
        return None
    return _require(checkpoint, key)


@dataclass
class LoadedTables:
    """The tables read from a checkpoint, on the CPU, as stored."""

    path: str
    layout: str
    token_key: str
    position_key: str | None
    token: torch.Tensor  # (vocab_size, d_model)
    position: torch.Tensor | None  # (context_length, d_model)
    model: dict[str, Any] | None = None  # what a model folder's config.json says, summarised
    files: list[str] | None = None  # the local files the tables come from (never overwritten)
    extras: dict[str, torch.Tensor] = field(default_factory=dict)  # norm, token types, ...
    extra_keys: dict[str, str] = field(default_factory=dict)  # their keys in the checkpoint
    folder: str | None = None  # a model folder on this machine (config.json and weights)
    head_key: str | None = None  # the output head, which runs after the blocks

    def quantization(self, dtype: str) -> dict[str, Any] | None:
        """How a GGUF table was read, where its rows were looked up (RowTables); else None."""
        return None


def load_tables(
    source: str | Path, token_key: str | None = None, position_key: str | None = None
) -> LoadedTables:
    """Open a checkpoint file, model folder or hub model and read only its input layer."""
    from embedcli.models.sources import open_source  # lazy: not loaded at start-up

    opened = open_source(source)
    checkpoint = opened.checkpoint
    return read_tables(checkpoint, find_tables(checkpoint, token_key, position_key, opened.config))


def read_tables(checkpoint: Checkpoint, keys: TableKeys) -> LoadedTables:
    """Read the two tables ``keys`` names from an opened checkpoint, and check them."""
    # a quantized GGUF table stays in its file, read a chunk of rows at a time
    gguf = cast("GGUFCheckpoint", checkpoint) if checkpoint.is_gguf else None
    if gguf is not None and gguf.quantized(keys.token):
        token: Any = gguf.rows_view(keys.token)
    else:
        token = checkpoint.load(keys.token)
    position = None if keys.position is None else checkpoint.load(keys.position)
    check_tables(token, position, keys)
    extras = {name: checkpoint.load(key) for name, key in keys.extras}
    return LoadedTables(
        str(checkpoint.path), keys.layout, keys.token, keys.position, token, position,
        extras=extras, extra_keys=dict(keys.extras), head_key=keys.head,
    )  # fmt: skip


def check_tables(token: torch.Tensor, position: torch.Tensor | None, keys: TableKeys) -> None:
    """Both tables are dense, 2-D, floating point, not empty, and of the same width."""
    import torch

    for name, table in ((keys.token, token), (keys.position, position)):
        if table is None:
            continue
        dtype = str(table.dtype).removeprefix("torch.")
        if table.layout != torch.strided:
            dtype = f"{dtype} ({str(table.layout).removeprefix('torch.')})"
        problem = _table_problem(name, tuple(table.shape), dtype)
        if problem:
            raise WeightsError(problem)
        if table.device.type == "meta":  # saved from a model built on the meta device
            raise WeightsError(f"{name} holds no values (it was saved from the meta device)")
    if position is not None and not any(name == "project_in" for name, _ in keys.extras):
        problem = _width_problem(keys, token.shape[1], position.shape[1])
        if problem:
            raise WeightsError(problem)


def position_rows_before(model: ModelConfig | None) -> int:
    """Rows of a learned positional table before position 0 (OPT: 2, RoBERTa: padding_idx+1)."""
    if model is None:
        return 0
    if model.padding_idx is not None and model.positional == "learned":
        return model.padding_idx + 1
    return model.position_offset


def check_sizes(
    token_shape: Sequence[int],
    position_shape: Sequence[int] | None,
    given: Overrides,
    model: ModelConfig | None = None,
) -> None:
    """A size flag (``given``) that disagrees with the checkpoint's tables is an error."""
    width = token_shape[1]
    if model is not None and model.token_width is not None and model.d_model is not None:
        width = model.d_model  # a projection widens the token table to hidden_size
    implied = {"vocab_size": token_shape[0], "d_model": width}
    if position_shape is not None:
        implied["context_length"] = position_shape[0] - position_rows_before(model)
    for name, value in implied.items():
        flagged = getattr(given, name)
        if flagged is not None and flagged != value:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} {flagged} conflicts with the checkpoint, whose tables give {name} "
                f"{value}; drop {flag}"
            )


def check_model_flags(model: ModelConfig, given: Overrides) -> None:
    """A flag that disagrees with the model's config.json is an error naming both values."""
    said = {
        "vocab_size": (model.vocab_size, "vocab_size"),
        "d_model": (model.d_model, model.keys.get("d_model", "hidden_size")),
        "context_length": (
            model.context_length,
            model.keys.get("context_length", "max_position_embeddings"),
        ),
        "positional": (model.positional, "positions"),
    }
    for name, (value, key) in said.items():
        flagged = getattr(given, name)
        if value is not None and flagged is not None and flagged != value:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} {flagged} conflicts with the model's {model.file}, which gives {key} "
                f"{value}; drop {flag}"
            )


def check_model_tables(
    model: ModelConfig, token_shape: Sequence[int], position_shape: Sequence[int] | None
) -> None:
    """config.json and the tables it describes must agree (a Gemma scale from a wrong
    hidden_size, or a context from a wrong n_positions, would be silently wrong)."""
    width = model.token_width if model.token_width is not None else model.d_model
    family = model.family
    width_key = None
    if model.token_width is not None:  # the family's own field (NeoMME's embedding_rank)
        width_key = family.width[0] if family is not None and family.width else "hidden_size"
    found = {
        family.vocab if family is not None else "vocab_size": (
            model.vocab_size,
            token_shape[0],
            "rows of the token table",
        ),
        width_key or model.keys.get("d_model", "hidden_size"): (
            width,
            token_shape[1],
            "columns of the token table",
        ),
    }
    if position_shape is not None and model.positional == "learned":
        key = model.keys.get("context_length", "max_position_embeddings").split(" - ")[0]
        before = position_rows_before(model)
        said = None if model.context_length is None else model.context_length + before
        found[key] = (said, position_shape[0], "rows of the positional table")
    for key, (said, actual, what) in found.items():
        if said is not None and said != actual:
            raise WeightsError(
                f"the model's {model.file} gives {key} {said:,}, but its weights have "
                f"{actual:,} {what}: "
                + (
                    "its metadata and tensors disagree"
                    if model.file.endswith(" metadata")
                    else "the folder's files disagree"
                )
            )


def check_source(
    token_shape: Sequence[int],
    position_shape: Sequence[int] | None,
    given: Overrides,
    model: ModelConfig | None = None,
) -> None:
    """Every check of a loaded source, in one order for every command: the flags against a
    model's config.json, config.json against the tables, the flags against the tables."""
    if model is not None:
        check_model_flags(model, given)
        check_model_tables(model, token_shape, position_shape)
    check_sizes(token_shape, position_shape, given, model)


def tables_config(
    token_shape: Sequence[int],
    position_shape: Sequence[int] | None,
    given: Overrides,
    default_context: int = DEFAULT_CONTEXT_LENGTH,
    model: ModelConfig | None = None,
    table_dtype: str | None = None,
) -> EmbedConfig:
    """The configuration the tables (and a model's config.json, read through its family)
    imply, with the flags' dtype and positional family; a size flag that disagrees with either
    is an error. The default dtype of a model source is the checkpoint's, as transformers
    loads it."""
    check_source(token_shape, position_shape, given, model)
    vocab, width = token_shape
    positional = given.positional or (model.positional if model else None)
    if positional == "learned" and position_shape is None:
        if given.positional is None and model is not None:  # the family's, left out by the flag
            raise ConfigError(
                f"the model's {model.file} says learned positions, but --position-key none "
                "leaves its positional table out; drop --position-key"
            )
        raise ConfigError(
            "--positional learned, but the checkpoint has no learned positional table "
            "(pass --position-key if it has one under another name)"
        )
    family = positional or ("learned" if position_shape is not None else "none")
    fields = {} if model is None else model.embed_fields()
    limited = fields.pop("context_limit", True) or given.context_length is not None
    if position_shape is not None and family == "learned":
        context = position_shape[0] - position_rows_before(model)
        if model is not None and model.padding_idx is not None:
            fields["position_offset"] = 0  # RoBERTa's rows are counted from padding_idx
    else:
        context = given.context_length
        if context is None and model is not None:
            context = model.context_length
    if family == "sinusoidal" and position_shape is None and model is not None:
        context = context or default_context
    rope = {}
    if model is not None and family == "rope":
        rope = {
            "rope_theta": model.rope_theta or 10000.0,
            "rope_dim": model.rope_dim,
            "rope_scaling": model.rope_scaling_params,
        }
    d_model = model.d_model if model is not None and model.token_width is not None else width
    if given.dtype is None and model is not None and model.unknown_dtype is not None:
        raise ConfigError(
            f"the model's {model.file} names {model.unknown_dtype}, a dtype embedcli does not "
            f"know (it knows {', '.join(DTYPES)}); pass --dtype to choose one"
        )
    dtype = given.dtype or (model.dtype if model is not None else None)
    if dtype is None and model is not None and table_dtype in DTYPES:
        dtype = table_dtype  # no dtype in config.json: the checkpoint's own
    return EmbedConfig(
        vocab_size=vocab,
        d_model=d_model,
        context_length=(context or default_context) if limited else 1,
        positional=family,
        dtype=dtype or "float32",
        **fields,
        **rope,
        context_limit=limited,
    )
