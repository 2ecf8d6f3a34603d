"""Option values converted and checked once, as the command line is read (click ``ParamType``s):
token ids, sizes in bytes, shares and context windows. A bad value is a usage error (exit 2)
that says what was wrong and how to write it. No torch, tiktoken or rich here."""

from __future__ import annotations

import os
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any, NewType

import typer
import typer.core

from embedcli.errors import UsageError
from embedcli.tokenization.idtext import BadIds, read_ids

# click's ParamType, from whichever click typer runs on (typer 0.28 carries a copy of its own):
# a value refused by a ParamType of another click would not be a usage error here.
_click_core = sys.modules[
    next(c for c in typer.core.TyperOption.__mro__ if c.__name__ == "Parameter").__module__
]
ParamType: type = _click_core.types.ParamType

# What the types give (NewTypes: Typer reads a generic type as the shape of the option).
TokenIds = NewType("TokenIds", list)  # one --ids value, read: a list of token ids
Window = NewType("Window", tuple)  # --share-of: (a model's name, or None for a number; tokens)


class TokenIdsType(ParamType):
    """'15496,11' (or '15496 11', '[15496, 11]') -> [15496, 11]; the reading is
    ``tokenization.idtext.read_ids``, as ``--decode`` and ``--ids-file`` have it."""

    name = "str"  # --help shows <str>, as for any text

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, list):  # a default, already read
            return value
        found = read_ids(value)
        if isinstance(found, BadIds):
            raise typer.BadParameter(
                f"{value[:60]!r}: {found.problem()}; pass ids like 15496,11,995",
                ctx=ctx, param=param, param_hint=None if param is not None else "'--ids'",
            )  # fmt: skip
        return found


_SIZE = re.compile(r"^\s*([0-9]{1,20}(?:\.[0-9]{1,20})?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


class SizeType(ParamType):
    """'10M', '512k', '2G', '1000' -> bytes (powers of 1024), at most 2**40."""

    name = "str"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, int):
            return value
        found = _SIZE.match(value)
        if not found:  # the message names no option, as it always has
            raise typer.BadParameter(f"{value!r} is not a size; write e.g. 500k, 10M or 2G")
        number, unit = float(found.group(1)), found.group(2).lower()
        size = number * 1024 ** "_kmgt".index(unit or "_")
        if not size <= 2**40:
            raise typer.BadParameter(f"{value!r} is over 2**40 bytes (1T)")
        return int(size)


class Share(float):
    """A share from 0 to 1, and how it was written: ``--min-share 0`` is the default, while
    any other spelling (``0%``) counts as given."""

    written: str

    def __new__(cls, share: float, written: str) -> Share:
        made = super().__new__(cls, share)
        made.written = written
        return made


class ShareType(ParamType):
    """'0.01' or '1%' -> 0.01, between 0 and 1."""

    name = "str"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, Share):
            return value
        text = value.strip()
        hint = "'--min-share'"
        try:
            share = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise typer.BadParameter(
                f"{value!r} is not a share; write 0.01 or 1%", param_hint=hint
            ) from None
        if not 0 <= share <= 1:
            raise typer.BadParameter(
                f"{value!r} is not a share between 0 and 1 (0% and 100%)", param_hint=hint
            )
        return Share(share, value)


_GROUPED = re.compile(r"^[0-9]{1,3}(?:([,_])[0-9]{3})(?:\1[0-9]{3})*(?:\.[0-9]+)?[kKmM]?$")


class ContextWindowType(ParamType):
    """--share-of N (200000, 200k, 1M) or MODEL -> (label, tokens); label None for a number. A
    bad one is embedcli's usage error, worded as count has always worded it."""

    name = "str"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, tuple):
            return value
        text = value.strip()
        if _GROUPED.match(text):  # 1,000 or 1_000: separators only between groups of three
            text = text.replace("_", "").replace(",", "")
        number = re.match(r"^([0-9]{1,20}(?:\.[0-9]{1,20})?)([kKmM]?)$", text)
        if number is not None:
            scale = {"": 1, "k": 1000, "m": 1000**2}[number.group(2).lower()]
            size = Decimal(number.group(1)) * scale  # exact: 1.5k is 1500, 1.9 is not a count
            if size != size.to_integral_value():
                raise UsageError(f"--share-of must be a whole number of tokens, got {value}")
            if not 1 <= size <= 2**40:
                raise UsageError(f"--share-of must be 1 to 2**40 tokens, got {value}")
            return None, int(size)
        if re.match(r"^-?[0-9][0-9]*$", text):
            raise UsageError(f"--share-of must be 1 to 2**40 tokens, got {value}")
        if re.match(r"^[-+0-9.,_]+[kKmM]?$", text):
            raise UsageError(
                f"--share-of takes a number of tokens written 200000, 200,000, 200k or 1.5M "
                f"(or a model's name), got {value}"
            )
        if any(char.isdigit() and not char.isascii() for char in text):
            raise UsageError(f"--share-of takes the digits 0-9, got {value}")
        from embedcli.tokenization.modelnames import lookup  # lazy: the model table, for a name

        found = lookup(value)
        return found.name, found.context


class NamedPathType(ParamType):
    """A file or folder named on the command line -> Path. An empty name is refused: Path("")
    is ".", so ``-f ''`` read this folder and ``--ids-file ''`` reported "." as a folder."""

    name = "path"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, Path):
            return value
        if value == "":
            raise typer.BadParameter("needs a file name; it got an empty one")
        return Path(value)


class OutputPathType(NamedPathType):
    """A file to write -> Path. A name ending in a slash names a folder: Path("x.npy/") is
    x.npy, so -o x.npy/ wrote (or replaced) the file x.npy."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, str) and value.endswith(("/", os.sep)):
            raise typer.BadParameter(
                f"{value} ends in a slash, so it names a folder; give a file name"
            )
        return super().convert(value, param, ctx)


class SourceType(ParamType):
    """--weights SOURCE, kept as written; an empty one is refused (it was read as ".")."""

    name = "text"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if value == "":
            raise typer.BadParameter(
                "needs a source (a file, a model folder, hf:ORG/NAME, ollama:NAME or sample:NAME); "
                "it got an empty one"
            )
        return value


TOKEN_IDS = TokenIdsType()
NAMED_PATH = NamedPathType()
OUTPUT_PATH = OutputPathType()
SOURCE = SourceType()
SIZE = SizeType()
SHARE = ShareType()
CONTEXT_WINDOW = ContextWindowType()
