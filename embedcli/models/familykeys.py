"""Where a known family keeps its input layer in a checkpoint: the registry's keys, behind the
LM-head class's prefix or not. Only the keys the entry declares are looked up: a checkpoint
that has none of them is refused, with what it does have, never matched by resemblance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from embedcli.errors import WeightsError
from embedcli.models.keys import TableKeys

if TYPE_CHECKING:
    from embedcli.models.config import ModelConfig
    from embedcli.models.protocols import Checkpoint


def _joined(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _stacked(family: object, prefixes: tuple[str, ...], names: set[str]) -> tuple[str, ...]:
    """The prefix of the first stack (encoder, then decoder) whose positional table is there,
    then the plain prefixes (where a shared token table lives)."""
    for prefix in prefixes:
        for stack in family.stacks:  # type: ignore[attr-defined]
            base = _joined(prefix, stack)
            if _joined(base, family.position) in names:  # type: ignore[attr-defined]
                return (base, prefix)
    return prefixes


def family_tables(
    checkpoint: Checkpoint,
    model: ModelConfig,
    token_key: str | None = None,
    position_key: str | None = None,
) -> TableKeys:
    """The keys of ``model``'s family in ``checkpoint`` (``--token-key``/``--position-key``
    replace the tables' keys; the family's other steps still apply)."""

    family = model.family
    assert family is not None
    names = set(checkpoint.names)
    prefixes = (*family.prefixes, "") if "" not in family.prefixes else family.prefixes
    found_prefix = None
    token = None
    stack = None
    if family.stacks and family.position is not None:
        prefixes = _stacked(family, prefixes, names)
        stack = prefixes[0] if len(prefixes) == 2 and prefixes[0] != prefixes[1] else None
    if token_key is not None:
        shape = checkpoint.info(token_key).shape  # an unknown key is an error naming it
        if model.vocab_size is not None and shape[:1] != (model.vocab_size,):
            raise WeightsError(
                f"--token-key {token_key} is a {shape} tensor, but the model's config.json gives "
                f"vocab_size {model.vocab_size:,}: it is not this model's token table"
            )
        token = token_key
    else:
        for prefix in prefixes:
            for candidate in family.token:
                if _joined(prefix, candidate) in names:
                    token, found_prefix = _joined(prefix, candidate), prefix
                    break
            if token is not None:
                break
    if token is None:
        wanted = " or ".join(_joined(p, c) for p in prefixes for c in family.token)
        two_d = [t.name for t in checkpoint.tensors if len(t.shape) == 2][:8]
        raise WeightsError(
            f"{checkpoint.path}: a {family.name} checkpoint keeps its token table at {wanted}, "
            f"and this one has none of them (2-D tensors: {', '.join(two_d) or 'none'}); "
            "pass --token-key"
        )
    search = (found_prefix,) if found_prefix is not None else prefixes
    if stack is not None:
        search = (stack,)  # the stack's positions and norm, under a shared token table

    def locate(key: str | None, what: str, required: bool = True) -> str | None:
        if key is None:
            return None
        for prefix in search:
            if _joined(prefix, key) in names:
                return _joined(prefix, key)
        if not required:
            return None
        raise WeightsError(
            f"{checkpoint.path}: a {family.name} model has {what} at "
            f"{_joined(search[0], key)}, and this checkpoint does not: its files are not "
            f"those of a {family.name} model"
        )

    position = None
    if position_key is not None and position_key.lower() != "none":
        if model.positional != "learned":
            raise WeightsError(
                f"--position-key: a {family.name} model has {model.positional} positions, not a "
                "learned positional table; drop --position-key"
            )
        checkpoint.info(position_key)
        position = position_key
    elif position_key is None and family.positional == "learned" and model.positional == "learned":
        position = locate(family.position, "a learned positional table")
    extras: list[tuple[str, str]] = []
    if model.token_width is not None:
        extras.append(("project_in", locate(family.project_in, "a projection (project_in)")))
        if family.project_bias:
            bias = family.project_in.removesuffix(".weight") + ".bias"  # type: ignore[union-attr]
            extras.append(("project_bias", locate(bias, "the projection's bias")))
    if family.token_type is not None:
        extras.append(("token_type", locate(family.token_type, "a token-type table")))
    if family.altup is not None:  # Gemma 3n: streams - 1 AltUp projections
        for i in range(model.streams - 1):
            extras.append((f"altup_{i}", locate(family.altup.format(i=i), "an AltUp projection")))
        if locate(family.altup.format(i=model.streams - 1), "", required=False):
            raise WeightsError(
                f"{checkpoint.path}: its {model.file} says altup_num_inputs {model.streams}, "
                f"but the checkpoint holds more AltUp projections than {model.streams - 1}: "
                "its config and tensors disagree"
            )
    if model.replaced is not None:  # T5Gemma 2's eoi_embedding
        extras.append(("replacement", locate(model.replaced[1], "the row its EOI id reads")))
    for i, (key, _) in enumerate(model.concat):  # RoCBERT's shape and pronunciation tables
        extras.append((f"concat_{i}", locate(key, "a table whose row 0 is put beside the rows")))
    for i, key in enumerate(model.row0_keys):  # TAPAS's seven type tables, LayoutLM's box's
        extras.append((f"row0_{i}", locate(key, "a table whose row 0 is added")))
    if family.norm is not None:
        extras.append(("norm_weight", locate(f"{family.norm}.weight", "an embedding norm")))
        if family.norm_bias and family.norm_kind != "rmsnorm":
            extras.append(("norm_bias", locate(f"{family.norm}.bias", "an embedding norm")))
    check_extras(checkpoint, model, token, position, extras)
    head = None
    if family.head is not None:
        head = next((n for n in (family.head, _joined(search[0], family.head)) if n in names), None)
    return TableKeys(
        f"{family.name} ({model.model_type})",
        token,
        position,
        head,
        extras=tuple((name, key) for name, key in extras if key is not None),
    )


_FLOATS = ("float32", "float16", "bfloat16", "float64")


def check_extras(
    checkpoint: Checkpoint,
    model: ModelConfig,
    token: str,
    position: str | None,
    extras: list[tuple[str, str | None]],
) -> None:
    """The family's other tensors, from the headers: floating point, and the shapes the steps
    need (a LayerNorm of d_model, a token-type table d_model wide, a (d_model, width)
    projection; a positional table d_model wide)."""
    width = checkpoint.info(token).shape[1] if len(checkpoint.info(token).shape) == 2 else None
    d_model = model.d_model if model.token_width is not None else width
    family = model.family
    placed = family.projection if family is not None and model.token_width is not None else None
    summed = width if placed in ("before_norm", "after_norm") else d_model  # types, positions
    normed = width if placed == "after_norm" else d_model
    wanted: dict[str, tuple[object, ...]] = {
        "norm_weight": (normed,),
        "norm_bias": (normed,),
        "project_in": (d_model, _read_width(family, width, model)),
        "project_bias": (d_model,),
        "replacement": (width,),
        "token_type": (None, summed),  # any number of types, at least one
    }
    checks = [(name, key) for name, key in extras if key is not None]
    if position is not None:
        checks.append(("position", position))
        wanted["position"] = (None, summed)
    for name, key in checks:
        info = checkpoint.info(key)
        if name.startswith("altup_"):
            wanted[name] = (d_model, d_model)
        if name.startswith("concat_"):
            wanted[name] = (None, model.concat[int(name.split("_")[1])][1])
        shape = wanted["token_type" if name.startswith("row0_") else name]
        fits = len(info.shape) == len(shape) and all(
            want is None or got == want for got, want in zip(info.shape, shape, strict=True)
        )
        if not fits or info.dtype not in _FLOATS or 0 in info.shape:
            expected = "(" + ", ".join("N" if w is None else str(w) for w in shape) + ")"
            raise WeightsError(
                f"{key} is a {info.shape} {info.dtype} tensor, but this model's steps need a "
                f"floating-point tensor of shape {expected} there"
            )


def _read_width(family: Any, width: int | None, model: ModelConfig) -> int | None:
    """The width the projection reads: the table's, three tables' (MobileBERT's trigram), and
    the rows put beside it (RoCBERT's)."""
    if width is None:
        return None
    return (3 * width if family and family.trigram else width) + sum(w for _, w in model.concat)
