"""The cases: values drawn for each parameter of each command (mostly small and valid, with extremes
and hostile files mixed in), and the command lines built from the commands' own click parameters."""

from __future__ import annotations

import functools
import os
import re
import shlex
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import typer
from hypothesis import assume
from hypothesis import strategies as st

from embedcli.cli import app
from support.contract.bounds import STREAMING, TRACEBACK_MARKS
from support.contract.inputs import STDIN_FILES

# ---------------------------------------------------------------- values, by parameter

IDS_OF_TEXT = "15496,11,995,0"
INT_EXTREMES = ("0", "-1", str(2**31 - 1), str(2**31), str(2**63 - 1), str(2**63), str(2**64),
                str(10**30), "9" * 5000, f"-{2**63}")  # fmt: skip
NOT_INTS = ("", " ", "abc", "1.5", "1e3", "0x10", "1_000", "٣", " 7", "NaN", "inf")
LOOKS_LIKE_OPTIONS = ("--json", "-d", "--", "-", "--bogus", "-h")
MARKUP = ("[/x]", "[bold]", "[bold red]hi[/]", "[link=file:///etc/passwd]x[/link]")
TEXTS = ("Hello, world!", "hi", "The quick brown fox", " king", "a <|endoftext|> b",
         "<|endoftext|>", "", " ", "\n", "\r\n", "\t", "😀", "Hi 😀", "Ω≈ç√", "\u200b", "e\u0301",
         "\x1b[31mred\x1b[0m", "caf\udce9", "%s %d {0}", "15496 11 995", "99999", "-1",
         "word " * 300, "ab" * 60)  # fmt: skip
SHAPES = ("8,4,256", "4,256", "(8,4,256)", "(3,256)", "[8, 4, 256]", "8x1x6x1", "7x1x5", "()",
          "1", "0", "-1", "0,3", "2,0", ",", "1,,2", "(", "a,b", "٣,4", "8;4", "1e3",
          str(2**63), f"{2**63},2", f"{10**30}x1", "9" * 5000, "1," * 40 + "1")  # fmt: skip
IDS = ("15496,11,995,0", "50256", "0", "1 2 3", "[15496, 11]", "100276")
BAD_IDS = ("", "-1", "50257", "200019", str(2**31), str(2**63 - 1), str(2**63), str(10**30),
           "9" * 5000, "a,b", "1,,2", "٣", "1.5", "0x10", "[]", ",")  # fmt: skip

TEXT_INPUTS = ("in.txt", "lines.txt", "long.txt", "special.txt", "ids.txt", "crlf.txt",
               "bom.txt", "notes.npy")  # fmt: skip
HOSTILE_INPUTS = ("bad-utf8.txt", "empty.txt", "adir", "missing.txt", "/dev/null", "-", "",
                  "tiny.safetensors", "adir/")  # fmt: skip
CHECKPOINTS = ("tiny.safetensors", "tiny.pt", "tiny.npz", "./tiny.safetensors", "model-gpt2",
               "model-llama", "hf:org/tiny", "model-gpt2/model.safetensors", "model-bert",
               "model-opt", "model-bloom", "model-t5", "model-mamba", "model-gemma3",
               "model-granite", "tiny.gguf", "./tiny.gguf", "ollama:tiny",
               "ollama:hostile")  # fmt: skip
BAD_CHECKPOINTS = ("bad.safetensors", "trunc.safetensors", "in.txt", "empty.txt", "adir",
                   "missing.safetensors", "/dev/null", "", "notes.npy", "model-broken",
                   "model-unknown", "model-bert-missing-norm",
                   "hf:org/absent", "hf:", "hf:a/b/c", "hf:org/x@", "hf:org/../x",
                   "model-gpt2/tokenizer.json", "trunc.gguf", "lying.gguf", "ollama:absent",
                   "ollama:", "ollama:../x", "ollama:a:b:c")  # fmt: skip
TOKENIZERS = ("model-gpt2", "model-gpt2/tokenizer.json", "hf:org/tiny", "tiny.gguf",
              "tiny.model", "model-spm", "tekken.json")  # fmt: skip
BAD_TOKENIZERS = ("model-llama", "model-broken/config.json", "hf:org/absent", "missing.json",
                  "tiny.safetensors", "adir", "in.txt", "trunc.gguf", "ollama:absent",
                  "trunc.model", "model-tekken-spm", "empty-pattern/tekken.json")  # fmt: skip
# Outputs are relative paths only: nothing is ever written outside the case's own folder.
OUTPUTS = ("out.npy", "out.pt", "out.safetensors", "OUT.NPY", "sub/../out.npy")
BAD_OUTPUTS = ("out.txt", "out", "adir", "adir/", "adir/out.npy", "nodir/out.npy", "in.txt",
               "notes.npy", "./notes.npy", "tiny.safetensors", "./tiny.pt", "", ".npy",
               "ü [bold].npy", "-", "--json", "long.txt", "out.npy/")  # fmt: skip
PNGS = ("out.png", "OUT.PNG")
PROJECTOR_DIRS = ("proj", "adir", "proj/", "adir/proj")
BAD_PROJECTOR_DIRS = ("in.txt", "nodir/proj", "", "/dev/null", "tiny.safetensors", "-")
BAD_ID_FILES = ("in.txt", "empty.txt", "bad-utf8.txt", "adir", "missing.txt", "/dev/null", "",
                "tiny.safetensors")  # fmt: skip
BAD_PNGS = ("out.jpg", "adir", "adir/x.png", "nodir/x.png", "in.txt", "", "notes.npy", ".png",
            "[bold].png", "out.png/")  # fmt: skip

# Small valid sizes keep every case fast; the extremes above test the refusals.
SMALL_INTS = {"d_model": (1, 16), "context_length": (1, 64), "vocab_size": (1, 60000),
              "seq_len": (1, 16), "batch_size": (1, 8), "stride": (1, 16), "truncate": (0, 20),
              "show": (1, 8), "max_positions": (1, 70), "limit": (1, 5), "k": (1, 20),
              "seed": (0, 2**64 - 1), "pad_id": (0, 60000), "window": (1, 16),
              "max_length": (1, 16), "top": (1, 300), "heads": (1, 16),
              "head": (0, 12)}  # fmt: skip
# Options drawn more often than the rest: a default d of 768 is slow, and --json is checked.
OFTEN = {"d_model": 0.7, "as_json": 0.5}
# Sets of options that lead deep into a command (streaming, checkpoints, ...).
FOCUS = {
    "embed": (("seq_len", "output", "file"), ("lines", "file"), ("lines",), ("output",),
              ("weights",), ("ids",), ("verify", "dtype"), ("texts",)),
    "tokenize": (("decode",), ("count",), ("file",), ("encode",), ("texts",), ("encoding",),
                 ("explain", "texts"), ("explain", "file"), ("offsets", "texts"),
                 ("offsets", "file", "as_json")),
    "windows": (("file",), ("as_jsonl",), ("as_json",), ("texts",)),
    "neighbors": (("weights",), ("ids",), ("texts",)),
    "project": (("texts",), ("top",), ("ids_file",), ("weights", "top"), ("export_projector",),
                ("png", "texts"), ("top", "ids_file", "as_json")),
    "stats": (("weights",),),
    "undertrained": (("weights",), ("weights", "encoding"), ("weights", "reference_ids"),
                     ("weights", "png"), ("weights", "top", "as_json")),
    "positions": (("weights",), ("png",), ("similarity",), ("positional",), ("preset",),
                  ("preset", "head"), ("preset", "as_json"), ("positional", "heads", "head"),
                  ("positional", "rope_theta", "rope_scaling"), ("positional", "similarity"),
                  ("weights", "positional"), ("list_presets",), ("positional", "png")),
    "inspect-shapes": (("preset",), ("weights",), ("device",), ("train", "optimizer")),
    "weights": (("path",), ("path", "download")),
    "broadcast": (("shapes",),),
    "count": (("paths",), ("paths", "as_jsonl"), ("paths", "tree"), ("paths", "as_csv"),
              ("paths", "encoding"), ("engine_info",), ("engine_info", "encoding", "as_json")),
}  # fmt: skip
COUNT_PATHS = (".", "in.txt", "adir", "*.txt", "-", "model-gpt2", "**/*.txt", "long.txt")
BAD_COUNT_PATHS = ("missing", "adir/", "/dev/null", "[", "nodir/*.txt", "", "s3://bucket/x",
                   "file:///nonexistent", "tiny.safetensors", "bad-utf8.txt")  # fmt: skip


def _ints(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(str)


def _odd_strings() -> st.SearchStrategy[str]:
    """Empty, unicode, markup, option-looking: what a careless or hostile user types."""
    return st.one_of(
        st.sampled_from(("", " ", "\t", "😀", "Ω", "caf\udce9", *MARKUP, *LOOKS_LIKE_OPTIONS)),
        _free_text(12),
    )


def _free_text(size: int) -> st.SearchStrategy[str]:
    chars = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
    return st.text(chars, max_size=size).filter(
        lambda text: not any(mark in text for mark in TRACEBACK_MARKS)
    )


Values = tuple[st.SearchStrategy[str], st.SearchStrategy[str]]  # (usual, odd)


@functools.lru_cache(maxsize=1)
def _named_values() -> dict[str, Values]:
    """(usual, odd) values for the parameters whose names say what they hold."""
    from tiktoken.model import MODEL_TO_ENCODING

    from embedcli.core.config import DTYPES
    from embedcli.core.kinds import POSITIONAL_FAMILIES
    from embedcli.models.presets import preset_names
    from embedcli.tokenization.encodings import BUNDLED_ENCODINGS

    # Only models whose encoding is bundled: any other would be downloaded.
    models = sorted(m for m, e in MODEL_TO_ENCODING.items() if e in BUNDLED_ENCODINGS)
    odd = _odd_strings()

    def pair(usual: tuple[str, ...], unusual: tuple[str, ...] = ()) -> Values:
        return st.sampled_from(usual), st.one_of(st.sampled_from(unusual), odd) if unusual else odd

    id_lists = st.lists(st.integers(0, 50256), min_size=1, max_size=6)
    return {
        "encoding": (
            st.sampled_from((*BUNDLED_ENCODINGS, *TOKENIZERS)),
            st.one_of(st.sampled_from(("GPT2", "gtp2", "o200k", "p50k", *BAD_TOKENIZERS)), odd),
        ),
        "model": pair((*models, "gpt-4o-2024-08-06", "gpt-4-0613"), ("GPT-4", "bogus", "gpt-3")),
        "positional": pair(POSITIONAL_FAMILIES, ("Learned", "rop", "alibi")),
        "dtype": pair((*DTYPES, "fp16", "bf16", "half", "torch.float16"), ("float64", "int8")),
        "device": pair(("auto", "cpu", "meta"), ("CPU", " cpu ", "gpu", "cpu:0", "meta:0")),
        "pool": pair(("none", "mean", "last"), ("max",)),
        "preset": pair(preset_names(), ("gpt-2", "GPT2", "Llama-3.1-8B", "llama3")),
        "token_key": pair(
            ("transformer.wte.weight",),
            ("transformer.wpe.weight", "lm_head.weight", "nope", "none"),
        ),
        "position_key": pair(("transformer.wpe.weight", "none"), ("transformer.wte.weight", "x")),
        "ids": (
            st.one_of(st.sampled_from(IDS), id_lists.map(lambda ids: ",".join(map(str, ids)))),
            st.one_of(st.sampled_from(BAD_IDS), st.sampled_from(BAD_IDS), odd),
        ),
        "reference_ids": (
            st.one_of(st.sampled_from(("177,178,179", "0", "5")), id_lists.map(
                lambda ids: ",".join(map(str, ids)))),
            st.one_of(st.sampled_from(BAD_IDS), odd),
        ),
        "shapes": (st.sampled_from(SHAPES[:8]), st.one_of(st.sampled_from(SHAPES), odd)),
        "texts": (st.sampled_from(TEXTS[:6]), st.one_of(st.sampled_from(TEXTS), odd)),
        "file": (st.sampled_from(TEXT_INPUTS), st.sampled_from(HOSTILE_INPUTS)),
        "weights": (st.sampled_from(CHECKPOINTS), st.sampled_from(BAD_CHECKPOINTS)),
        "output": (st.sampled_from(OUTPUTS), st.sampled_from(BAD_OUTPUTS)),
        "png": (st.sampled_from(PNGS), st.sampled_from(BAD_PNGS)),
        "export_projector": (st.sampled_from(PROJECTOR_DIRS), st.sampled_from(BAD_PROJECTOR_DIRS)),
        "ids_file": (st.sampled_from(("ids.txt", "-")), st.sampled_from(BAD_ID_FILES)),
        "paths": (st.sampled_from(COUNT_PATHS), st.sampled_from(BAD_COUNT_PATHS)),
        "ignore": pair(("*.txt", "adir/", "!in.txt", "*.safetensors"), ("[", "**/**/", "\\")),
        "include": pair(("*.txt", "*.md", "in.*"), ("[", "")),
        "max_file_size": pair(("10k", "1M", "100", "2G"), ("big", "-1", "1e9", "", "10Q")),
        "min_share": pair(("0.1", "5%", "0"), ("2", "-1%", "x", "nan")),
        "context": pair(
            ("1000", "gpt-4o", "o3", "1.5k"),
            ("0", "gpt-9", "-5", "1e3", "1.9", "\uff11\uff12\uff18", "1,5k", "1."),
        ),
        "errors": pair(("skip", "replace", "strict"), ("ignore", "SKIP")),
        "old_context": pair(("1000", "gpt-4o"), ("0", "gpt-9", "1e3")),  # count --context
        "sort": pair(("tokens", "path", "bytes"), ("size",)),
        "optimizer": pair(("adamw", "sgd", "adam", "SGD"), ("lion", "adagrad")),
        "engine": pair(("local",), ("dask", "spark")),
        "scheduler": pair(("tcp://127.0.0.1:1",), ("nonsense", "tcp://127.0.0.1:9")),
    }


@functools.lru_cache(maxsize=1)
def _command_values() -> dict[str, dict[str, Values]]:
    """command -> (usual, odd) values of the parameters that mean something of their own there."""
    from embedcli.models.presets import preset_names

    odd = _odd_strings()

    def pair(usual: tuple[str, ...], unusual: tuple[str, ...]) -> Values:
        return st.sampled_from(usual), st.one_of(st.sampled_from(unusual), odd)

    return {
        "positions": {
            # every preset: rope (llama3 scaling, two bases), ALiBi (112 heads), learned, T5
            "preset": pair(preset_names(), ("gpt-2", "GPT2 ", "llama", "t5")),
            "rope_theta": pair(("10000", "500000", "1e6", "2.5"),
                               ("1", "0", "-5", "nan", "inf", "1e400", "abc", "")),
            "rope_scaling": pair(
                ("linear:8", "llama3:8", "llama3:8:1:4:8192", "llama3:16:1:1:8192", "linear:1",
                 "LLAMA3:2", "dynamic:2:4096", "yarn:4:32768", "yarn:40:4096:beta_fast=32:mscale=1:"
                 "mscale_all_dim=1:truncate=false", "proportional:1:0.25", "proportional:2"),
                ("yarn:4", "yarn:4:32:foo=1", "yarn:4:32:mscale=1:mscale=2",
                 "yarn:4:32:truncate=maybe", "yarn:4:beta_fast=2:32", "dynamic:2:0",
                 "longrope:4:16:1,2:3", "proportional:1:1.5", "ntk:4",
                 "linear", "linear:", "linear:0.5", "llama3:8:4:1:8192",
                 "llama3:8:1:4", "linear:nan", "linear:1e400", ":", "llama3:8:1:4:0",
                 "llama3:8:1:4:81.5", "dynamic:2", "linear:2:3"),
            ),
        },
    }  # fmt: skip


def value_strategies(param: Any, command: str | None = None) -> Values:
    """(usual, odd) values for ``param`` (of ``command``): by its name where it says what it
    holds, else by its type. Odd ints are mostly extremes that parse (2**63, 10**30), so they
    reach the code."""
    named = _named_values()
    name, kind = param.name, param.type.name
    if name in _command_values().get(command or "", {}):
        return _command_values()[command][name]
    if name == "path":  # `weights SOURCE`
        return named["weights"]
    if name in named:
        return named[name]
    extremes = st.sampled_from(INT_EXTREMES)
    odd_ints = st.one_of(extremes, extremes, extremes, st.sampled_from(NOT_INTS), _odd_strings())
    if kind in ("int", "int range", "integer", "integer range"):
        low, high = SMALL_INTS.get(name, (0, 20))
        return _ints(low, high), odd_ints
    if kind == "path":
        return named["file"]
    if kind == "float":
        return st.floats(0, 10, allow_nan=False).map(str), odd_ints
    if kind == "choice":
        return st.sampled_from([str(c) for c in param.type.choices]), _odd_strings()
    return named["texts"]


# ---------------------------------------------------------------- cases


@functools.lru_cache(maxsize=1)
def commands() -> dict[str, Any]:
    """{name: click command} of the app."""
    return dict(typer.main.get_command(app).commands)


@dataclass(frozen=True)
class Case:
    """One command line, its standard input (a file of the case folder, or '' for none) and how
    its stdout is connected when it runs as a process."""

    command: str
    args: tuple[str, ...]
    stdin: str = ""
    shell: str = "pipe"

    def __repr__(self) -> str:
        return f"Case({self.line()!r})"

    def line(self) -> str:
        """The shell line that reproduces the case, run in a folder holding the input files."""
        words = " ".join(shell_quote(arg) for arg in ("embedcli", self.command, *self.args))
        stdin = f"< {self.stdin}" if self.stdin else "< /dev/null"
        tail = {"pipe": "", "head": " | head -1", "closed": " >&-", "full": " > /dev/full"}
        prefix = "set -o pipefail; " if self.shell == "head" else ""
        return f"{prefix}{words} {stdin}{tail[self.shell]}"

    @functools.cached_property
    def params(self) -> dict[str, Any]:
        """The values click reads from this command line (what the command really gets:
        '--json' given as a TEXT is still the flag)."""
        try:
            command = commands()[self.command]
            ctx = command.make_context(self.command, list(self.args), resilient_parsing=True)
            return dict(ctx.params)
        except Exception:  # the real run reports what is wrong with the line
            return {}

    @property
    def asks_for_help(self) -> bool:
        return any(arg in ("-h", "--help") for arg in self.args)

    def outputs(self) -> set[str]:
        """The files the command was asked to write, relative to its folder."""
        found = set()
        for name in ("output", "png"):
            value = self.params.get(name)
            if value is not None and str(value) not in ("", "."):
                found.add(os.path.normpath(str(value)))
        folder = self.params.get("export_projector")
        if folder is not None and str(folder) not in ("", "."):
            found.add(os.path.normpath(str(folder)))
            found.update(os.path.join(os.path.normpath(str(folder)), name) for name in (
                "tensors.tsv", "metadata.tsv", "projector_config.pbtxt"))  # fmt: skip
        return found

    def inputs(self) -> set[str]:
        """The files the command reads, relative to its folder (standard input included)."""
        found = {self.stdin} if self.stdin else set()
        for name in ("file", "weights", "path", "paths", "ids_file"):
            value = self.params.get(name)
            for one in value if isinstance(value, list) else [value]:
                if one is not None and str(one) not in ("", ".", "-"):
                    found.add(os.path.normpath(str(one)))
        return found

    def streams(self) -> bool:
        """True for embed --lines and windows --jsonl, which may fail after whole records."""
        return any(self.params.get(flag) for flag in STREAMING.get(self.command, ()))


def shell_quote(arg: str) -> str:
    """One word for bash: long repeats as a printf, bytes that are not UTF-8 or control
    characters with $'...', the rest with shlex."""
    for size in range(1, 11):
        unit, count = arg[:size], len(arg) // size
        if count >= 20 and unit * count == arg and re.fullmatch(r"[\w ,.<>|-]+", unit):
            return f"\"$(printf '{unit}%.0s' $(seq {count}))\""
    if all(ch.isprintable() and not 0xDC80 <= ord(ch) <= 0xDCFF for ch in arg):
        return shlex.quote(arg)
    out = []
    for ch in arg:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in "\\'":
            out.append("\\" + ch)
        elif not ch.isprintable():
            out.append("".join(f"\\x{b:02x}" for b in ch.encode()))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def _estimated_elements(command: str, params: dict[str, Any]) -> int:
    """The largest table (or batch tensor) the command line asks for, in elements."""
    from embedcli.errors import EmbedCLIError
    from embedcli.models.presets import get_preset

    quiet = ("tokenize", "windows", "weights", "broadcast", "devices")  # build no tables
    if params.get("weights") is not None or command in quiet:
        return 0
    if command == "inspect-shapes" and str(params.get("device") or "meta").startswith("meta"):
        return 0
    try:
        preset = get_preset(str(params.get("preset") or "gpt2").strip().lower()).config
    except EmbedCLIError:  # a bad name: refused before any table
        preset = get_preset("gpt2").config
    d = params.get("d_model") or (64 if command == "positions" else preset.d_model)
    vocab = params.get("vocab_size") or (
        preset.vocab_size
        if command == "inspect-shapes"
        else _vocab_size(params.get("encoding"), params.get("model"))
    )
    context = params.get("context_length") or preset.context_length
    batch = (params.get("batch_size") or 8) * (params.get("seq_len") or 4)
    return max(vocab * d, context * d, batch * d)


def _vocab_size(encoding: Any, model: Any) -> int:
    """Rows of the default token table for --encoding/--model (the largest if unknown)."""
    from tiktoken.model import encoding_name_for_model

    sizes = {"gpt2": 50257, "r50k_base": 50257, "cl100k_base": 100277, "o200k_base": 200019}
    if model:
        with suppress(KeyError):
            encoding = encoding_name_for_model(str(model))
    return sizes.get(str(encoding or "gpt2"), max(sizes.values()))


def _fits_this_harness(case: Case) -> bool:
    """False for tables between 1e8 and 1e11 elements (0.4 to 400 GB in float32): whether those
    are built or refused depends on the machine's free memory, and building them is slow, not a
    contract question (o200k_base's default table, 200,019 x 768, is one). Smaller ones are
    cheap; larger ones must be refused everywhere."""
    try:
        elements = _estimated_elements(case.command, case.params)
    except (TypeError, ValueError, OverflowError):
        return True
    return not 1e8 < elements < 1e11


@st.composite
def cases(draw: st.DrawFn, command: str | None = None, shells: tuple[str, ...] = ("pipe",)) -> Case:
    """A command line for ``command`` (or any command), built from its own parameters."""
    name = command or draw(st.sampled_from(sorted(commands())))
    params = [p for p in commands()[name].params if p.name != "help"]
    focus = set(draw(st.sampled_from(((), *FOCUS.get(name, ())))))
    share = draw(st.sampled_from((0.0, 0.05, 0.1, 0.25)))  # of the other options, given
    odd_tenths = draw(st.sampled_from((0, 1, 3, 6)))  # of the values, odd

    def value(param: Any) -> str:
        usual, odd = value_strategies(param, name)
        return draw(odd if draw(st.integers(0, 9)) >= 10 - odd_tenths else usual)

    chunks: list[tuple[str, ...]] = []
    for param in params:
        is_argument = param.param_type_name == "argument"
        if param.name in focus:
            chance = 1.0
        elif is_argument:  # TEXT beside a focus on --ids or -f is mostly a usage error
            chance = 0.9 if param.required else 0.15 if focus else 0.5
        else:
            chance = OFTEN.get(param.name, share) * (0.2 if getattr(param, "hidden", False) else 1)
        if draw(st.integers(0, 99)) < (1 - chance) * 100:  # shrinks to leaving it out
            continue
        if getattr(param, "is_flag", False):
            chunks.append((draw(st.sampled_from([*param.opts, *param.secondary_opts])),))
            continue
        if is_argument:
            count = 1 if param.nargs == 1 else draw(st.integers(1, 3))
            chunks.extend((value(param),) for _ in range(count))
            continue
        times = draw(st.integers(1, 2)) if param.multiple else 1
        for _ in range(times):
            chunks.append((draw(st.sampled_from(param.opts)), value(param)))
    if draw(st.integers(0, 19)) == 19:  # now and then, a word the command does not know
        chunks.append((draw(st.sampled_from(("--bogus", "-Z", "--jsn", "--", "-"))),))
    if draw(st.booleans()):
        chunks = list(draw(st.permutations(chunks)))
    case = Case(
        command=name,
        args=tuple(word for chunk in chunks for word in chunk),
        stdin=draw(st.sampled_from(STDIN_FILES)),
        shell=draw(st.sampled_from(shells)),
    )
    assume(_fits_this_harness(case))
    return case
