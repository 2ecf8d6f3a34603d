"""Every option that more than one command has, declared once, with one meaning everywhere.

The shared vocabulary (documented once, in the README's flag table):
  input     TEXT... / '-' / stdin, -f/--file, --ids, -e/--encoding, -m/--model, --allow-special,
            --special-as-text
  tables    --vocab-size, -d/--d-model, --context-length, --positional, --seed, --dtype
  shapes    -b/--batch-size (B), -t/--seq-len (T), --truncate N (cut to N tokens)
  places    --device, --weights SOURCE (file, folder, hf:, ollama:, sample:), --download,
            --token-key, --position-key
  output    --json, --jsonl, -o/--output, -q/--quiet

Choices are checked while the command line is parsed (checks.py): a typo is a usage error
(exit 2) with a "did you mean", and shell completion offers the names. No torch or rich here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from embedcli.cli import checks
from embedcli.cli.checks import MAX_SIZE as MAX_SIZE
from embedcli.cli.checks import bounded as bounded
from embedcli.cli.checks import check_device as check_device
from embedcli.cli.checks import check_shapes_device as check_shapes_device
from embedcli.cli.checks import choices as choices
from embedcli.cli.checks import complete_device as complete_device
from embedcli.cli.checks import complete_shapes_device as complete_shapes_device
from embedcli.cli.checks import renamed as renamed
from embedcli.cli.params import NAMED_PATH, OUTPUT_PATH, SOURCE, TOKEN_IDS, TokenIds
from embedcli.core.config import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CONTEXT_LENGTH,
    DEFAULT_D_MODEL,
    DEFAULT_SEQ_LEN,
)


def count(*names: str, **kwargs: object) -> typer.models.OptionInfo:
    """A count or size: at least 1, at most MAX_SIZE (so a 30-digit -d is a usage error, not an
    int64 overflow); everything else as ``typer.Option`` takes it."""
    return typer.Option(*names, min=1, callback=bounded, **kwargs)


WARNINGS = "embedcli.warnings"  # ctx.meta key: lines to print on stderr after a success

# Help panels, in the order they appear.
INPUT = "Input"
TABLES = "Tables"
BATCH = "Batch shape (B, T)"
CHECKPOINT = "Checkpoint"
DEVICE = "Device"
DISPLAY = "Display"
OUTPUT = "Output and streaming"

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
    typer.Option(
        "-f",
        "--file",
        help="Read the text from a file.",
        click_type=NAMED_PATH,
        rich_help_panel=INPUT,
    ),
]
Ids = Annotated[
    list[TokenIds] | None,
    typer.Option(
        "--ids",
        help="Token ids as input instead of text, e.g. 15496,11,995 (repeat for a batch).",
        click_type=TOKEN_IDS,
        show_default=False,
        rich_help_panel=INPUT,
    ),
]
JoinedIds = Annotated[
    list[TokenIds] | None,
    typer.Option(
        "--ids",
        help="Token ids as input instead of text, e.g. 15496,11,995 (repeat to add more).",
        click_type=TOKEN_IDS,
        show_default=False,
        rich_help_panel=INPUT,
    ),
]
Encoding = Annotated[
    str | None,
    typer.Option(
        "-e",
        "--encoding",
        help="tiktoken encoding, a tokenizer file or model folder, hf:ORG/NAME or sample:NAME. "
        "\\[default: gpt2; with --weights, the model's own]",
        show_default=False,
        callback=checks.check_encoding,
        autocompletion=checks.complete_encoding,
        metavar="NAME",
        rich_help_panel=INPUT,
    ),
]
Encodings = Annotated[
    list[str] | None,
    typer.Option(
        "-e",
        "--encoding",
        help="tiktoken encoding, a tokenizer file or model folder, hf:ORG/NAME or sample:NAME; "
        "repeat to compare. \\[default: gpt2]",
        show_default=False,
        callback=checks.check_encoding,
        autocompletion=checks.complete_encoding,
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
        callback=checks.check_model,
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
        callback=checks.check_model,
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
SpecialAsText = Annotated[
    bool,
    typer.Option(
        "--special-as-text",
        help="Encode <|endoftext|> etc. as plain text (llama.cpp's default).",
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
    count(
        help="Rows of the token table. \\[default: the encoding's size, or that of --weights "
        "or --preset where the command takes them]",
        metavar="ROWS",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
DModel = Annotated[
    int | None,
    count(
        "-d",
        "--d-model",
        help=f"Embedding width d. \\[default: {DEFAULT_D_MODEL}, or that of --weights or "
        "--preset where the command takes them]",
        metavar="D",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
ContextLength = Annotated[
    int | None,
    count(
        help="Rows of the positional table: the longest sequence. "
        f"\\[default: {DEFAULT_CONTEXT_LENGTH}, or that of --weights or --preset where the "
        "command takes them]",
        metavar="ROWS",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
Positional = Annotated[
    str | None,
    typer.Option(
        help="Positional embeddings: learned, sinusoidal, rope or none. \\[default: learned, "
        "or the model's with --weights or --preset]",
        callback=checks.positional_check,
        autocompletion=checks.positional_complete,
        metavar="FAMILY",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
Seed = Annotated[
    int,
    typer.Option(
        help="torch.manual_seed before the tables are made, 0 to 2**64 - 1.",
        callback=checks.check_seed,
        metavar="SEED",
        rich_help_panel=TABLES,
    ),
]
DType = Annotated[
    str | None,
    typer.Option(
        help="dtype of the tables and outputs: float32, float16 or bfloat16. \\[default: float32; "
        "with a model folder, its checkpoint's dtype, as transformers loads it]",
        callback=checks.dtype_check,
        autocompletion=checks.dtype_complete,
        metavar="DTYPE",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]
Preset = Annotated[
    str | None,
    typer.Option(
        help="Named configuration: GPT-2's sizes, GPT-3, the book's chapter 2, or a real "
        "model's published config.json (llama-3.1-8b, mixtral-8x7b, gemma-2-9b, bloom-176b, "
        "...; all of them: --list-presets), read as a folder of that model is. "
        "\\[default: gpt2]",
        callback=checks.preset_check,
        autocompletion=checks.preset_complete,
        metavar="NAME",
        show_default=False,
        rich_help_panel=TABLES,
    ),
]

ListPresets = Annotated[
    bool,
    typer.Option(
        "--list-presets",
        help="List the presets by family (parameters, sizes, where the values come from) and exit.",
        rich_help_panel=TABLES,
    ),
]

# ---------------------------------------------------------------- shapes

BatchSize = Annotated[
    int | None,
    count(
        "-b",
        "--batch-size",
        help=f"B: sequences (windows) a batch. \\[default: {DEFAULT_BATCH_SIZE}]",
        metavar="B",
        show_default=False,
        rich_help_panel=BATCH,
    ),
]
SeqLen = Annotated[
    int | None,
    count(
        "-t",
        "--seq-len",
        help=f"T: tokens a sequence (window). \\[default: {DEFAULT_SEQ_LEN}]",
        metavar="T",
        show_default=False,
        rich_help_panel=BATCH,
    ),
]

# ---------------------------------------------------------------- checkpoint and device

Weights = Annotated[
    str | None,
    typer.Option(
        "--weights",
        help="Take the tables (and a model's config and tokenizer) from a checkpoint "
        "(.safetensors, .pt/.pth/.bin, .npz, .gguf), a model folder, hf:ORG/NAME[@REV] "
        "(the Hugging Face cache; offline unless --download), ollama:NAME[:TAG] (a model "
        "Ollama pulled), or sample:gemma-3-270m (a trained model: the sample extra).",
        show_default=False,
        metavar="SOURCE",
        click_type=SOURCE,
        rich_help_panel=CHECKPOINT,
    ),
]
Download = Annotated[
    bool,
    typer.Option(
        "--download",
        help="Let hf: sources use the network (HF_ENDPOINT, HF_TOKEN): only the files and "
        "bytes needed are fetched.",
        rich_help_panel=CHECKPOINT,
    ),
]
DownloadAll = Annotated[
    bool,
    typer.Option(
        "--download-all",
        help="As --download, and let hf: sources fetch whole tables of any size (more than "
        "1 GiB is refused without it).",
        rich_help_panel=CHECKPOINT,
    ),
]
NoAddSpecial = Annotated[
    bool,
    typer.Option(
        "--no-add-special",
        help="Do not add the special tokens a model's tokenizer adds to a text "
        "(Llama's <|begin_of_text|>).",
        rich_help_panel=INPUT,
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
Png = Annotated[
    Path | None,
    typer.Option(
        help="Also write the figure as a PNG (needs the plot extra: "
        "pip install 'embedcli\\[plot]').",
        click_type=OUTPUT_PATH,
        rich_help_panel=OUTPUT,
    ),
]
Quiet = Annotated[
    bool,
    typer.Option(
        "-q",
        "--quiet",
        help="No progress bar (taken by every command, for scripts, even where none is drawn).",
        rich_help_panel=OUTPUT,
    ),
]
ListModels = Annotated[
    bool,
    typer.Option(
        "--list-models",
        help="The model names -m knows (their encodings and context windows), then exit.",
        rich_help_panel=INPUT,
    ),
]
Optimizer = Annotated[
    str | None,
    typer.Option(
        help="The optimizer --train counts: adamw (two moments) or sgd (no state). "
        "\\[default: adamw]",
        show_default=False,
        callback=checks.optimizer_check,
        autocompletion=checks.optimizer_complete,
        metavar="NAME",
        rich_help_panel=TABLES,
    ),
]
Pool = Annotated[
    str,
    typer.Option(
        help="With --lines: none (T×d a line), mean or last (one vector a line; null for a "
        "blank line, which has no tokens).",
        callback=checks.pool_check,
        autocompletion=checks.pool_complete,
        metavar="POOL",
        rich_help_panel=OUTPUT,
    ),
]


def deprecated_alias(
    old: str, new: str, help_panel: str = OUTPUT, click_type: Any = None
) -> typer.models.OptionInfo:
    """A hidden option under an old name (a count, or ``click_type``'s values); using it prints
    one deprecation line on stderr once the command has succeeded (a failing command prints its
    one Error: line alone); the command refuses it beside the new name (see :func:`renamed`)."""

    def warn(ctx: typer.Context, value: Any) -> Any:
        if click_type is None:
            bounded(value)
        if value is not None:
            line = f"Warning: {old} is deprecated and will be removed; use {new}"
            ctx.find_root().meta.setdefault(WARNINGS, []).append(line)
        return value

    kind = {"min": 1} if click_type is None else {"click_type": click_type}
    return typer.Option(old, hidden=True, callback=warn, rich_help_panel=help_panel, **kind)
