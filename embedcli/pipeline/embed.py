"""The embed job: texts or ids -> padded batch -> core module -> a plain report.

The report holds numbers, lists, strings and CPU tensors (never converted to Python lists
whole: tables slice what they show, and JSON is written from the tensors row by row), so its
memory stays proportional to the batch; render/ turns it into tables or JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from embedcli.core.broadcast import BroadcastPlan
from embedcli.core.config import EmbedConfig
from embedcli.core.devices import check_dtype_on_device, dtype_size, resolve_device
from embedcli.core.memory import available_memory, host_available_memory, refuse_largest
from embedcli.core.rope import rope_attention_factor, rope_sequence_length
from embedcli.core.windowpad import window_padded
from embedcli.errors import (
    InputTextError,
    TokenIdError,
)
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.pipeline.reference import verify as against_reference
from embedcli.pipeline.rowtables import RowTables, held_ids
from embedcli.pipeline.sourceinfo import SourceInfo, source_info
from embedcli.tokenization.encodings import (
    Token,
    added_specials,
    encode,
    get_encoding,
    token_piece,
    with_specials,
)
from embedcli.tokenization.specialtext import Specials

if TYPE_CHECKING:
    import tiktoken
    import torch

    from embedcli.core.embedding import InputEmbedding
    from embedcli.core.shapeplan import TraceStep
    from embedcli.models.tables import LoadedTables
    from embedcli.pipeline.reference import VerifyResult


@dataclass
class EmbedReport:
    """Everything ``embedcli embed`` shows, as plain data."""

    config: EmbedConfig  # the real vocabulary's, also where the module held only some rows
    source: SourceInfo  # the tables' source, the encoding, padding and device
    input_ids: list[list[int]]
    attention_mask: list[list[int]]
    tokens: list[list[Token]]  # with index and pad
    truncated: list[int]  # tokens dropped from the end of each sequence by --truncate
    steps: list[TraceStep]
    broadcast: BroadcastPlan | None  # None when nothing is added (positional "none")
    token_embeddings: torch.Tensor  # (B, T, d) float32 on the CPU: tables slice what they show
    position_embeddings: torch.Tensor | None  # (T, d)
    input_embeddings: torch.Tensor  # (B, T, d)
    verify: VerifyResult | None = None
    rope_angles: torch.Tensor | None = None  # (T, d/2) with positional rope
    rope_attention_factor: float | None = None  # what attention multiplies cos and sin by
    rope_sequence_length: int | None = None  # dynamic scaling: the length its angles are for
    scaled_embeddings: torch.Tensor | None = None  # (B, T, d): a model's input scaling (Gemma)
    projected_embeddings: torch.Tensor | None = None  # (B, T, d): OPT's project_in
    token_type_embeddings: torch.Tensor | None = None  # (B, T, d): BERT's type 0 rows
    row0_embeddings: torch.Tensor | None = None  # (B, T, d): TAPAS's, LayoutLM's row-0 sum
    block_input: torch.Tensor | None = None  # what block 0 reads, where not (B, T, d)
    position_ids: torch.Tensor | None = None  # (T,) or (B, T): the positional rows read
    similarity: torch.Tensor | None = None  # (B, T, T) cosine in float64, when asked for


@dataclass
class EmbedResult:
    """The report, and the output tensor itself for --output."""

    report: EmbedReport
    input_embeddings: torch.Tensor = field(repr=False)  # what block 0 reads: -o writes it
    name: str = "input_embeddings"  # its name: block_input where the layout is not (B, T, d)


def tokenize_texts(
    enc: tiktoken.Encoding, texts: Sequence[str], *, allow_special: Specials, add_special: bool
) -> list[list[int]]:
    """Encode each text with the encoding's rules for special tokens, with the special tokens
    a model's tokenizer adds by default (unless ``add_special`` is False)."""
    return [
        with_specials(enc, encode(enc, text, allow_special=allow_special), add_special)
        for text in texts
    ]


def added_positions(
    enc: tiktoken.Encoding, full: Sequence[int], kept: Sequence[int], add_special: bool
) -> list[set[int]]:
    """Per sequence, the positions holding a special token the tokenizer added (``full``: each
    sequence's length with them, ``kept``: its length after --truncate)."""
    before, after = added_specials(enc, add_special)
    return [
        {i for i in range(len(before)) if i < cut}
        | {i for i in range(length - len(after), length) if i < cut}
        for length, cut in zip(full, kept, strict=True)
    ]


def fit_to_context(
    sequences: list[list[int]],
    config: EmbedConfig,
    *,
    truncate: int | None = None,
    to_context: bool = False,
    fix: str = "",
) -> tuple[list[list[int]], list[int]]:
    """Cut sequences to ``truncate`` tokens (or to the context length, ``to_context``), then
    require each to fit the context length; return them and the tokens dropped from each."""
    truncate = config.cut_length(truncate, to_context)
    dropped = [0 if truncate is None else max(0, len(seq) - truncate) for seq in sequences]
    fitted = [seq if truncate is None else seq[:truncate] for seq in sequences]
    for index, seq in enumerate(fitted):
        which = f"sequence {index}: length" if len(fitted) > 1 else "sequence length"
        config.check_length(len(seq), which, fix)
        if not seq:
            raise InputTextError(f"sequence {index} has no tokens: there is nothing to embed")
    return fitted, dropped


def model_pad(config: EmbedConfig, eot: int | None) -> int | None:
    """The id shorter sequences are padded with: the model's own where its positions or its
    window read it (RoBERTa's padding_idx, Longformer's pad_token_id), else end-of-text."""
    if config.window is not None:
        return config.window_pad_id
    return config.padding_idx if config.position_ids == "padding" else eot


def pad_batch(
    sequences: list[list[int]], pad_id: int | None, vocab_size: int
) -> tuple[list[list[int]], list[list[int]]]:
    """Right-pad to the longest sequence; return (ids, attention_mask)."""
    length = max(len(seq) for seq in sequences)
    if any(len(seq) < length for seq in sequences) and pad_id is None:
        raise TokenIdError(
            "the sequences differ in length and there is no padding or end-of-text token to pad "
            "them with (the tokenizer has none, or there is no tokenizer); "
            "pass --pad-id"
        )
    if any(len(seq) < length for seq in sequences) and not 0 <= pad_id < vocab_size:
        raise TokenIdError(
            f"--pad-id {pad_id} is outside the vocabulary of {vocab_size} "
            f"(valid ids: 0 to {vocab_size - 1}); pass a --pad-id inside it"
        )
    ids = [seq + [pad_id] * (length - len(seq)) for seq in sequences]
    mask = [[1] * len(seq) + [0] * (length - len(seq)) for seq in sequences]
    return ids, mask


@dataclass(frozen=True)
class Keep:
    """What a job keeps besides the module's own tensors: the CPU copies of a report (the
    three (B, T, d) tensors, in float32) and the (B, T, T) similarity matrices."""

    report: bool = False
    similarity: bool = False


def check_memory(
    config: EmbedConfig,
    device: torch.device,
    batch: int,
    length: int,
    *,
    verify: bool = False,
    keep: Keep = Keep(),
) -> None:
    """Count every byte the job will hold (tables, activations, what the report keeps) and
    refuse before allocating, naming the largest part and what to lower."""
    if device.type == "meta":
        return  # shapes only: nothing is allocated
    d, size = config.d_model, dtype_size(config.dtype)
    rows = config.vocab_size + (config.context_length if config.has_positional_table else 0)
    # The tables are always created on the CPU in float32 first; --verify makes a CPU copy.
    # (and transformers' reference of a model folder, one more: counted for every --verify)
    tables = rows * d * 4 * (3 if verify else 1)
    # token, position and input embeddings, and a model's scaled token embeddings (Gemma)
    count = 3 + sum(
        (
            config.embed_scale != 1.0,
            config.width != d,  # OPT's projection
            config.token_types,
            config.norm_eps is not None,
            config.streams if config.block_layout != "tokens" else 0,  # block_input's copies
        )
    )
    activations = count * batch * length * d * size
    kept = count * batch * length * d * 4 if keep.report else 0
    if keep.similarity:
        kept += batch * length * (length + d) * 8  # float64: normalised rows, then (T, T)
    on_cpu = device.type == "cpu"
    if on_cpu and config.dtype != "float32":
        tables += rows * d * size
    from embedcli.core.embedding import BUFFER_ROWS  # lazy: core.embedding loads torch

    # The module's buffers: arange(context_length) as int64 position ids, and a sinusoidal
    # table, computed in float64 and kept in float32.
    context = min(config.context_length, BUFFER_ROWS)  # the buffers stop there
    buffers = context * 8 + (context * d * (8 + 4) if config.positional == "sinusoidal" else 0)
    tables += buffers
    parts = {
        f"the float32 tables ({config.vocab_size:,} + {rows - config.vocab_size:,} rows × d "
        f"{d:,}) and the position buffers ({context:,} positions)": (
            tables,
            "lower --d-model, --vocab-size or --context-length",
        ),
        f"the activations ({batch:,} × {length:,} tokens × d {d:,}, "
        f"{_COUNTS.get(count, count)} tensors)": (
            activations,
            "lower -b/--batch-size or -t/--seq-len, or embed fewer or shorter texts (--truncate N)",
        ),
        f"what the report keeps ({batch:,} × {length:,} positions)": (
            kept,
            "cut the text (--truncate N), drop --similarity, or stream windows to a file "
            "(-t T -o out.npy)",
        ),
    }
    host_need = tables + kept + (activations if on_cpu else 0)
    refuse_largest(parts, host_need, host_available_memory(), "this machine")
    if not on_cpu:  # the device holds the tables in the dtype, and the activations
        table_name, activation_name = list(parts)[:2]
        on_device = {
            table_name: (rows * d * size, parts[table_name][1]),
            activation_name: parts[activation_name],
        }
        need = rows * d * size + activations
        refuse_largest(on_device, need, available_memory(device), str(device))


_COUNTS = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}


def _on_cpu(tensor: torch.Tensor | None) -> torch.Tensor | None:
    """A float32 CPU copy for the report (tables slice it; JSON streams it row by row)."""
    return None if tensor is None else tensor.detach().float().cpu()


def _token_rows(
    enc: tiktoken.Encoding,
    ids: list[list[int]],
    mask: list[list[int]],
    added: list[set[int]] | None = None,
) -> list[list[Token]]:
    added = added or [set() for _ in ids]
    return [
        [
            token_piece(
                enc, token_id, index=position, pad=not real, added=(position in marks) or None
            )
            for position, (token_id, real) in enumerate(zip(seq, seq_mask, strict=True))
        ]
        for seq, seq_mask, marks in zip(ids, mask, added, strict=True)
    ]


def id_hint(config: EmbedConfig, tables: LoadedTables | None) -> str:
    """What to do about a token id beyond the token table."""
    if tables is None:
        return "raise --vocab-size or fix the ids"
    return (
        f"the checkpoint's token table has {config.vocab_size:,} rows: give ids below "
        f"{config.vocab_size:,}, or text in the encoding the model was trained with"
    )


def prepare_module(
    config: EmbedConfig,
    device: str,
    tables: tuple[torch.Tensor, torch.Tensor | None] | None,
    batch: int,
    length: int,
    *,
    verify: bool = False,
    allow_meta: bool = False,
    keep: Keep = Keep(),
    extras: dict[str, torch.Tensor] | None = None,
) -> tuple[InputEmbedding, torch.device]:
    """Resolve the device, check the dtype on it and the memory for a (batch, length) job, then
    build the module there: the one way every command gets its module."""
    from embedcli.core.embedding import build_embedding  # lazy: core.embedding loads torch

    target = resolve_device(device, allow_meta=allow_meta)
    check_dtype_on_device(config.dtype, target)
    check_memory(config, target, batch, length, verify=verify, keep=keep)
    return build_embedding(config, target, tables, extras), target


def _module_for(
    config: EmbedConfig,
    device: str,
    tables: LoadedTables | None,
    ids: torch.Tensor,
    verify: bool,
    keep: Keep,
) -> tuple[InputEmbedding, torch.device, torch.Tensor]:
    """(module, its device, the ids to look up) for a batch of (B, T) ``ids``: on the whole
    tables; or, where the source reads its table by rows, on the rows the batch uses, with
    the ids renumbered into them (the module's vocabulary is those rows; reports keep the
    real ids and ``config``). Exact: the module reads an id's value only to look it up, and
    to compare it with padding_idx (RoBERTa), which held_ids keeps in place."""
    from embedcli.core.embedding import build_embedding  # lazy: core.embedding loads torch

    extras = None if tables is None else tables.extras
    if not isinstance(tables, RowTables):
        pair = None if tables is None else (tables.token, tables.position)
        module, target = prepare_module(
            config, device, pair, *ids.shape, verify=verify, keep=keep, extras=extras
        )
        return module, target, ids
    held = held_ids(config, ids)
    compact = dataclasses.replace(config, vocab_size=len(held))  # the module's alone
    target = resolve_device(device)
    check_dtype_on_device(config.dtype, target)
    check_memory(compact, target, *ids.shape, verify=verify, keep=keep)  # before any fetch
    rows = tables.rows(config, held, ids.shape[1])
    module = build_embedding(compact, target, (rows.token, rows.position), extras)
    return module, target, rows.local(ids)  # (B, T): rows of rows.token


def _table_type(tables: LoadedTables | None, dtype: str) -> dict[str, Any] | None:
    """A GGUF table's GGML type, lookup dtype and (quantized) worst error."""
    return None if tables is None else tables.quantization(dtype)


def run_embed(
    config: EmbedConfig,
    encoding: str,
    *,
    texts: Sequence[str] | None = None,
    ids: Sequence[Sequence[int]] | None = None,
    device: str = "auto",
    allow_special: bool | Specials = False,
    truncate: int | None = None,
    truncate_to_context: bool = False,
    pad_id: int | None = None,
    verify: bool = False,
    tables: LoadedTables | None = None,
    similarity: bool = False,
    add_special: bool = True,
    access: HubAccess = OFFLINE,
) -> EmbedResult:
    """Embed a batch of texts (or of id sequences) and report every step; with ``tables``,
    through a checkpoint's trained tables instead of the seeded ones (``access``: what this
    command allows of the hub, for an hf: tokenizer)."""
    enc = get_encoding(encoding, access)
    if (texts is None) == (ids is None):
        raise ValueError("give exactly one of texts and ids")
    if texts is not None:
        sequences = tokenize_texts(enc, texts, allow_special=allow_special, add_special=add_special)
    else:
        sequences = [list(seq) for seq in ids or ()]
    full = [len(seq) for seq in sequences]
    # Windows over the whole text first: what someone embedding a long file wants. A model's
    # context is its own: raising --context-length is no way out there.
    fix = (
        "pass -t/--seq-len N with -o out.npy (and the text as -f FILE or on stdin) to embed all "
        "of it window by window, or --truncate-to-context (or --truncate N) to keep its start"
        + (", or raise --context-length" if tables is None else "")
    )
    sequences, dropped = fit_to_context(
        sequences, config, truncate=truncate, to_context=truncate_to_context, fix=fix
    )
    import torch  # only now: an input that cannot fit fails before torch's 1-2 s import

    # lazy: core.embedding loads torch
    from embedcli.core.embedding import check_token_ids, cosine_similarity

    marks = None
    if texts is not None:
        marks = added_positions(enc, full, [len(seq) for seq in sequences], add_special)
    pad = model_pad(config, enc.eot_token) if pad_id is None else pad_id
    padded, mask = window_padded(*pad_batch(sequences, pad, config.vocab_size), config)
    # a window's pads were measured as they were added (Longformer's take no position)
    ids_cpu = check_token_ids(padded, config, id_hint(config, tables), length=not config.window)
    keep = Keep(report=True, similarity=similarity)
    module, target, looked_up = _module_for(config, device, tables, ids_cpu, verify, keep)
    with torch.inference_mode():
        trace = module.trace(looked_up, checked=True, attention_mask=torch.tensor(mask))
    checked = None
    if verify:
        # Worked out again on the CPU from the recipe and the formulas, not by the module.
        checked = against_reference(
            config, ids_cpu, _block_input(trace), tables, torch.tensor(mask)
        )
    report = EmbedReport(
        config=config,
        source=source_info(
            tables,
            device=str(target),
            requested_device=device,
            encoding=enc.name,
            pad_id=pad,
            table_type=_table_type(tables, config.dtype),
        ),
        input_ids=padded,
        attention_mask=mask,
        tokens=_token_rows(enc, padded, mask, marks),
        truncated=dropped,
        steps=trace.steps,
        broadcast=trace.addition,
        token_embeddings=_on_cpu(trace.token_embeddings),
        position_embeddings=_on_cpu(trace.position_embeddings),
        input_embeddings=_on_cpu(trace.input_embeddings),
        verify=checked,
        rope_angles=_on_cpu(trace.rope_angles),
        **_rope_numbers(config, trace.rope_angles, trace.position_ids),
        scaled_embeddings=_on_cpu(trace.scaled_embeddings),
        projected_embeddings=_on_cpu(trace.projected_embeddings),
        token_type_embeddings=_on_cpu(trace.token_type_embeddings),
        row0_embeddings=_on_cpu(trace.row0_embeddings),
        block_input=_on_cpu(trace.block_input),
        position_ids=None if trace.position_ids is None else trace.position_ids.cpu(),
        similarity=(
            torch.stack([cosine_similarity(seq) for seq in trace.input_embeddings.cpu()])
            if similarity
            else None
        ),
    )
    name = "input_embeddings" if trace.block_input is None else "block_input"
    return EmbedResult(report, _block_input(trace), name)


def _block_input(trace: Any) -> torch.Tensor:
    """What block 0 reads: the input embeddings, arranged where the family's block takes
    another layout (hyper-connection streams, time-major)."""
    return trace.input_embeddings if trace.block_input is None else trace.block_input


def _rope_numbers(
    config: EmbedConfig, angles: torch.Tensor | None, position_ids: torch.Tensor | None
) -> dict[str, Any]:
    """Beside rope's angles: the attention factor on cos and sin (yarn, longrope), and the
    sequence length dynamic scaling's angles are for."""
    if angles is None or position_ids is None:
        return {}
    length = int(position_ids.max()) + 1 if position_ids.numel() else 0
    return {
        "rope_attention_factor": rope_attention_factor(config.rope_scaling),
        "rope_sequence_length": rope_sequence_length(config.rope_scaling, length),
    }
