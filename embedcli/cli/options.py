"""Every option that more than one command has, declared once, with one meaning everywhere.

The shared vocabulary (documented once, in the README's flag table):
  input     TEXT... / '-' / stdin, -f/--file, --ids, -e/--encoding, -m/--model, --allow-special
  tables    --vocab-size, -d/--d-model, --context-length, --positional, --seed, --dtype
  shapes    -b/--batch-size (B), -t/--seq-len (T), --truncate N (cut to N tokens)
  places    --device, --weights, --token-key, --position-key
  output    --json, --jsonl, -o/--output, -q/--quiet

Choices are checked while the command line is parsed: a typo is a usage error (exit 2) with a
"did you mean", and shell completion offers the names. No torch, tiktoken or rich here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated

import typer

from embedcli.config import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_D_MODEL,
    DEFAULT_SEQ_LEN,
    DTYPES,
    POSITIONAL_FAMILIES,
    PRESETS,
)
from embedcli.encodings import BUNDLED_ENCODINGS

WARNINGS = "embedcli.warnings"  # ctx.meta key: lines to print on stderr after a success

# Help panels, in the order they appear.
INPUT = "Input"
TABLES = "Tables"
BATCH = "Batch shape (B, T)"
CHECKPOINT = "Checkpoint"
DEVICE = "Device"
DISPLAY = "Display"
OUTPUT = "Output and streaming"

_DTYPE_ALIASES = {"fp32": "float32", "float": "float32", "fp16": "float16", "half": "float16"}
_DTYPE_ALIASES["bf16"] = "bfloat16"
_DEVICE = re.compile(r"^(auto|cpu|mps|meta|cuda)(:\d+)?$")
DEVICE_NAMES = ("auto", "cpu", "cuda", "mps", "meta")


def suggest(value: str, names: Sequence[str]) -> str:
    """'; did you mean 'x'?' for a near miss, else ''."""
    close = difflib.get_close_matches(value, list(names), n=2, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def choices(
    names: Sequence[str], aliases: dict[str, str] | None = None, *, fold: bool = True
) -> tuple[Callable[[str | None], str | None], Callable[[str], list[str]]]:
    """A (callback, completion) pair: the value must be one of ``names`` (or an alias)."""
    aliases = aliases or {}

    def check(value: str | None) -> str | None:
        if value is None:
            return None
        key = value.strip().lower() if fold else value
        key = key.removeprefix("torch.")
        if key in names:
            return key
        if key in aliases:
            return aliases[key]
        close = difflib.get_close_matches(key, [*names, *aliases], n=3, cutoff=0.6)
        close = list(dict.fromkeys(aliases.get(c, c) for c in close))[:2]
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise typer.BadParameter(f"{value!r} is not one of: {', '.join(names)}{hint}")

    return check, lambda incomplete: [n for n in names if n.startswith(incomplete)]


def check_device(value: str) -> str:
    """auto, cpu, cuda, cuda:N or mps."""
    return _device(value, meta=False)


def _device(value: str, *, meta: bool) -> str:
    """auto, cpu, cuda, cuda:N, mps (and meta where shapes alone are wanted)."""
    key = value.strip().lower()
    names = DEVICE_NAMES if meta else tuple(n for n in DEVICE_NAMES if n != "meta")
    if key == "meta" and not meta:
        raise typer.BadParameter(
            "the meta device holds shapes but no values, so there is nothing to compute here; "
            "use auto, cpu, cuda or mps (inspect-shapes takes meta)"
        )
    if _DEVICE.match(key) is None:
        raise typer.BadParameter(
            f"{value!r} is not a device here: use {', '.join(names[:-1])}, cuda:N or {names[-1]}"
            + suggest(key.split(":")[0], names)
        )
    if ":" in key and not key.startswith("cuda"):
        raise typer.BadParameter(f"{value!r}: only cuda takes an index (cuda:N)")
    return key


MAX_SIZE = 2**40  # above any size a machine could hold; far below int64, where torch overflows


def bounded(value: int | None) -> int | None:
    """A size or count no larger than MAX_SIZE: a 30-digit -d is a usage error, not a crash."""
    if value is not None and value > MAX_SIZE:
        raise typer.BadParameter(f"{value} is too large (at most 2**40 = {MAX_SIZE:,})")
    return value


def _check_seed(value: int) -> int:
    if not 0 <= value < 2**64:  # torch.manual_seed's range
        raise typer.BadParameter(f"{value} is not in the range 0 to 2**64 - 1")
    return value


def check_shapes_device(value: str) -> str:
    """--device of inspect-shapes: meta too."""
    return _device(value, meta=True)


def complete_device(incomplete: str) -> list[str]:
    """Device names for shell completion."""
    return [d for d in DEVICE_NAMES if d.startswith(incomplete) and d != "meta"]


def complete_shapes_device(incomplete: str) -> list[str]:
    """Device names for shell completion, meta included."""
    return [d for d in DEVICE_NAMES if d.startswith(incomplete)]


def _known_encodings() -> list[str]:
    """Every encoding tiktoken can name here (its plugins included), bundled ones first."""
    import tiktoken

    return list(dict.fromkeys([*BUNDLED_ENCODINGS, *tiktoken.list_encoding_names()]))


def _check_encoding(value: str | list[str] | None) -> str | list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    for name in values:
        if name not in BUNDLED_ENCODINGS and name not in (known := _known_encodings()):
            raise typer.BadParameter(
                f"unknown encoding {name!r}; choose one of: {', '.join(known)}"
                + suggest(name, known)
            )
    return value


def _check_model(value: str | list[str] | None) -> str | list[str] | None:
    if value is None:
        return None
    from tiktoken.model import MODEL_PREFIX_TO_ENCODING, MODEL_TO_ENCODING

    for name in [value] if isinstance(value, str) else value:
        if name not in MODEL_TO_ENCODING and not name.startswith(tuple(MODEL_PREFIX_TO_ENCODING)):
            raise typer.BadParameter(
                f"unknown model {name!r}: tiktoken cannot map it to an encoding (pass "
                f"--encoding instead){suggest(name, list(MODEL_TO_ENCODING))}"
            )
    return value


def _complete_encoding(incomplete: str) -> list[str]:
    return [n for n in _known_encodings() if n.startswith(incomplete)]


_dtype_check, _dtype_complete = choices(DTYPES, _DTYPE_ALIASES)
_positional_check, _positional_complete = choices(POSITIONAL_FAMILIES)
_preset_check, _preset_complete = choices(tuple(PRESETS))
_pool_check, _pool_complete = choices(("none", "mean", "last"))


# ---------------------------------------------------------------- input

Texts = Annotated[
    list[str] | None,
    typer.Argument(
        help="Texts, one sequence each (B = number of texts); '-' or none reads stdin.",
        metavar="TEXT...",
        show_default=False,
    ),
]
JoinedText = Annotated[
    list[str] | None,
    typer.Argument(
        help="Text (arguments are joined with single spaces); '-' or none reads stdin.",
        metavar="TEXT...",
        show_default=False,
    ),
]
File = Annotated[
    Path | None,
    typer.Option("-f", "--file", help="Read the text from a file.", rich_help_panel=INPUT),
]
Ids = Annotated[
    list[str] | None,
    typer.Option(
        "--ids",
        help="Token ids as input instead of text, e.g. 15496,11,995 (repeat for a batch).",
        show_default=False,
        rich_help_panel=INPUT,
    ),
]
JoinedIds = Annotated[
    list[str] | None,
    typer.Option(
        "--ids",
        help="Token ids as input instead of text, e.g. 15496,11,995 (repeat to add more).",
        show_default=False,
        rich_help_panel=INPUT,
    ),
]
Encoding = Annotated[
    str | None,
    typer.Option(
        "-e",
        "--encoding",
        help="tiktoken encoding. \\[default: gpt2]",
        show_default=False,
        callback=_check_encoding,
        autocompletion=_complete_encoding,
        metavar="NAME",
        rich_help_panel=INPUT,
    ),
]
Encodings = Annotated[
    list[str] | None,
    typer.Option(
        "-e",
        "--encoding",
        help="tiktoken encoding; repeat to compare. \\[default: gpt2]",
        show_default=False,
        callback=_check_encoding,
        autocompletion=_complete_encoding,
        metavar="NAME",
        rich_help_panel=INPUT,
    ),
]
Model = Annotated[
    str | None,
    typer.Option(
        "-m",
        "--model",
        help="Model name, mapped to its encoding (gpt-4o, gpt2).",
        show_default=False,
        callback=_check_model,
        metavar="NAME",
        rich_help_panel=INPUT,
    ),
]
Models = Annotated[
    list[str] | None,
    typer.Option(
        "-m",
        "--model",
        help="Model name, mapped to its encoding; repeatable.",
        show_default=False,
        callback=_check_model,
        metavar="NAME",
        rich_help_panel=INPUT,
    ),
]
AllowSpecial = Annotated[
    bool,
    typer.Option(
        "--allow-special",
        help="Encode <|endoftext|> etc. as special ids.",
        rich_help_panel=INPUT,
    ),
]
Truncate = Annotated[
    int | None,
    typer.Option(
        "--truncate",
        help="Cut to the first N tokens.",
        min=0,
        callback=bounded,
        metavar="N",
        show_default=False,
        rich_help_panel=INPUT,
    ),
]

# ---------------------------------------------------------------- tables

VocabSize = Annotated[
    int | None,
    typer.Option(
        help="Rows of the token table. \\[default: the encoding's size]",
        min=1,
        callback=bounded,
        metavar="ROWS",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
DModel = Annotated[
    int | None,
    typer.Option(
        "-d",
        "--d-model",
        help=f"Embedding width d. \\[default: {DEFAULT_D_MODEL}]",
        min=1,
        callback=bounded,
        metavar="D",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
ContextLength = Annotated[
    int | None,
    typer.Option(
        help="Rows of the positional table: the longest sequence. "
        f"\\[default: {DEFAULT_CONTEXT_LENGTH}]",
        min=1,
        callback=bounded,
        metavar="ROWS",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
Positional = Annotated[
    str | None,
    typer.Option(
        help="Positional embeddings: learned, sinusoidal, rope or none. \\[default: learned]",
        callback=_positional_check,
        autocompletion=_positional_complete,
        metavar="FAMILY",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
Seed = Annotated[
    int,
    typer.Option(
        help="torch.manual_seed before the tables are made, 0 to 2**64 - 1.",
        callback=_check_seed,
        metavar="SEED",
        rich_help_panel=TABLES,
    ),
]
DType = Annotated[
    str | None,
    typer.Option(
        help="dtype of the tables and outputs: float32, float16 or bfloat16. \\[default: float32]",
        callback=_dtype_check,
        autocompletion=_dtype_complete,
        metavar="DTYPE",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
Preset = Annotated[
    str | None,
    typer.Option(
        help="Named configuration (see --list-presets). \\[default: gpt2]",
        callback=_preset_check,
        autocompletion=_preset_complete,
        metavar="NAME",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]

# ---------------------------------------------------------------- shapes

BatchSize = Annotated[
    int | None,
    typer.Option(
        "-b",
        "--batch-size",
        help=f"B: sequences (windows) a batch. \\[default: {DEFAULT_BATCH_SIZE}]",
        min=1,
        callback=bounded,
        metavar="B",
        show_default=False,
        rich_help_panel=BATCH,
    ),
]
SeqLen = Annotated[
    int | None,
    typer.Option(
        "-t",
        "--seq-len",
        help=f"T: tokens a sequence (window). \\[default: {DEFAULT_SEQ_LEN}]",
        min=1,
        callback=bounded,
        metavar="T",
        show_default=False,
        rich_help_panel=BATCH,
    ),
]

# ---------------------------------------------------------------- checkpoint and device

Weights = Annotated[
    Path | None,
    typer.Option(
        "--weights",
        help="Checkpoint (.safetensors, .pt/.pth/.bin, .npz) to take the tables from, "
        "instead of seeded random ones.",
        show_default=False,
        rich_help_panel=CHECKPOINT,
    ),
]
TokenKey = Annotated[
    str | None,
    typer.Option(
        help="Checkpoint key of the token table (when not detected).",
        show_default=False,
        rich_help_panel=CHECKPOINT,
    ),
]
PositionKey = Annotated[
    str | None,
    typer.Option(
        help="Checkpoint key of the positional table; 'none' for no table.",
        show_default=False,
        rich_help_panel=CHECKPOINT,
    ),
]
Device = Annotated[
    str,
    typer.Option(
        help="auto, cpu, cuda, cuda:N or mps.",
        metavar="DEVICE",
        callback=check_device,
        autocompletion=complete_device,
        rich_help_panel=DEVICE,
    ),
]

# ---------------------------------------------------------------- output

AsJson = Annotated[
    bool, typer.Option("--json", help="JSON on stdout, and nothing else.", rich_help_panel=OUTPUT)
]
Quiet = Annotated[
    bool,
    typer.Option("-q", "--quiet", help="No progress bar.", rich_help_panel=OUTPUT),
]
Pool = Annotated[
    str,
    typer.Option(
        help="With --lines: none (T×d a line), mean or last (one vector a line).",
        callback=_pool_check,
        autocompletion=_pool_complete,
        metavar="POOL",
        rich_help_panel=OUTPUT,
    ),
]


def deprecated_alias(old: str, new: str, help_panel: str = OUTPUT) -> typer.models.OptionInfo:
    """A hidden option under an old name; using it prints one deprecation line on stderr once
    the command has succeeded (a failing command prints its one Error: line alone); the command
    refuses it beside the new name (see :func:`renamed`)."""

    def warn(ctx: typer.Context, value: int | None) -> int | None:
        bounded(value)
        if value is not None:
            line = f"Warning: {old} is deprecated and will be removed; use {new}"
            ctx.find_root().meta.setdefault(WARNINGS, []).append(line)
        return value

    return typer.Option(old, hidden=True, callback=warn, min=1, rich_help_panel=help_panel)


def renamed(new: int | None, old: int | None, new_flag: str, old_flag: str) -> int | None:
    """The value of a renamed option, from its new or its old name, never both."""
    if new is not None and old is not None:
        from embedcli.errors import UsageError

        raise UsageError(f"pass {new_flag} or the old {old_flag}, not both")
    return old if new is None else new


def parse_ids(values: list[str]) -> list[list[int]]:
    """'15496,11' (or '15496 11', '[15496, 11]') per --ids -> one sequence each; a bad list is a
    usage error."""
    sequences = []
    for value in values:
        parts = value.strip().strip("[]").replace(",", " ").split()
        try:
            if not all(p.isascii() for p in parts):
                raise ValueError  # int() would read other scripts' digits
            sequences.append([int(p) for p in parts])
        except ValueError:
            raise typer.BadParameter(
                f"{value!r} is not a list of token ids like 15496,11,995", param_hint="'--ids'"
            ) from None
        if not parts:
            raise typer.BadParameter("empty list; pass ids like 15496,11,995", param_hint="'--ids'")
    return sequences
