"""The Typer app: the one error handler, --version, and the command families registered.

torch is imported only inside the commands that need tensors, so ``embedcli --help`` and
``embedcli tokenize`` start fast.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from embedcli import __version__
from embedcli.cli import process
from embedcli.cli.options import WARNINGS
from embedcli.cli.output import ClosedPipe
from embedcli.errors import EmbedCLIError
from embedcli.io.outputs import WRITTEN
from embedcli.tokenization.display import UNSEEN

# Click's usage error (bad option, bad value), from whichever click typer runs on.
_ClickUsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


# One module per command family; each command reads as parse -> core -> emit.
# name -> (module in embedcli.cli, function, its page of the manual), in the order --help lists
# them. Each page is docs/<page>.md (tests/test_help_links.py checks that it exists).
COMMANDS = {
    "embed": ("embed", "embed", "embed"),
    "tokenize": ("tokens", "tokenize", "tokenize"),
    "count": ("counting", "count", "count"),
    "inspect-shapes": ("shapes", "inspect_shapes", "shapes"),
    "broadcast": ("shapes", "broadcast", "shapes"),
    "windows": ("windows", "windows", "windows"),
    "weights": ("checkpoints", "weights", "checkpoints"),
    "neighbors": ("checkpoints", "neighbors", "checkpoints"),
    "project": ("project", "project", "project"),
    "stats": ("checkpoints", "stats", "checkpoints"),
    "undertrained": ("undertrained", "undertrained", "undertrained"),
    "positions": ("positions", "positions", "positions"),
    "devices": ("devices", "devices", "devices"),
}
MANUAL = "https://embedcli.github.io/embedcli/"  # the manual (docs/, built by MkDocs)


def manual_page(command: str) -> str:
    """The address of a command's page of the manual."""
    return f"{MANUAL}{COMMANDS[command][2]}/"


class _LazyCommands(Mapping[str, Any]):
    """The commands, each built (its module imported, its options read by Typer) the first time
    it is looked up: a run builds the one command it runs, not all thirteen (about 30 ms of
    start-up, measured), as click's documentation does for lazily loaded subcommands."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            module, function, _ = COMMANDS[name]  # KeyError: not a command
            single = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False)
            single.command(name, epilog=f"Manual: {manual_page(name)}")(
                getattr(importlib.import_module(f"embedcli.cli.{module}"), function)
            )
            self._built[name] = typer.main.get_command(single)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class _Group(TyperGroup):
    """The one error handler: a domain error is one ``Error:`` line on stderr (exit 1), a usage
    error too (exit 2), never a traceback; a closed stdout (``| head -1``) ends the command
    quietly with exit 0. Its commands are built when first looked up."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _LazyCommands()

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except _ClickUsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # `embedcli` alone: the help, exit 0
                # Typer's rich help is printed as the error is made (get_help prints, and
                # returns ""); a plain one is the message: printed here, once either way.
                shown = exc.format_message()
                if shown.strip():
                    typer.echo(shown)
                ctx.exit(0)
            message = one_line(exc.format_message())
            _err(f"Error: {message} (see {ctx.command_path} --help)")
            ctx.exit(exc.exit_code)

    def resolve_command(self, ctx: typer.Context, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta["embedcli.command"] = name  # for the usage-error line
        return name, command, rest

    def invoke(self, ctx: typer.Context) -> Any:
        WRITTEN.reset()
        try:
            with warnings.catch_warnings():
                # torch and numpy warn on stderr about things that are not the user's concern
                # (a read-only NumPy array, a deprecated torch call): the contract is one line.
                warnings.simplefilter("ignore")
                done = super().invoke(ctx)
            for line in ctx.meta.get(WARNINGS, ()):
                _err(line)
            return done
        except EmbedCLIError as exc:
            _err(f"Error: {one_line(str(exc))}")
            ctx.exit(exc.exit_code)
        except _ClickUsageError as exc:
            command = _command_path(ctx, exc)
            hint = _RENAMED.get((command.rsplit(" ", 1)[-1], exc.format_message()), "")
            message = one_line(exc.format_message())
            _err(f"Error: {message}{hint} (see {command} --help)")
            ctx.exit(exc.exit_code)
        except (ClosedPipe, BrokenPipeError):
            process.quiet_stdout()
            ctx.exit(0)
        except ModuleNotFoundError as exc:  # a requirement uninstalled or broken after install
            package = (exc.name or "?").split(".")[0]
            _err(
                f"Error: the Python package {package!r} cannot be imported ({one_line(str(exc))}),"
                f" and embedcli needs it here; reinstall it in this environment "
                f"({sys.executable} -m pip install {_PIP_NAMES.get(package, package)})"
            )
            ctx.exit(1)
        except KeyboardInterrupt:
            _err(f"Interrupted: {_what_was_written()}")
            ctx.exit(130)
        except process.Terminated as signalled:
            what = "Hung up" if signalled.signum == signal.SIGHUP else "Terminated"
            _err(f"{what}: {_what_was_written()}")
            ctx.exit(128 + signalled.signum)


def _what_was_written() -> str:
    """The truth about the output files when a signal ends a command: every one is either
    whole, put in place before the signal came, or as it was (a temporary file is removed)."""
    if not WRITTEN.paths:
        return "no output file was written or changed"
    names = ", ".join(one_line(str(path)) for path in WRITTEN.paths)
    return (
        f"{names} had been written whole before the signal came; no other output file was "
        "written or changed (what it was printing may be incomplete)"
    )


_PIP_NAMES = {"yaml": "pyyaml", "google": "protobuf"}  # import name -> pip name, where they differ

# What the old spelling of a renamed flag now means, said where its use fails.
_RENAMED = {
    ("tokenize", "Option '--ids' requires an argument."): (
        " --ids now gives ids as input; to print the ids of a text, use --encode"
    ),
    ("embed", "Option '--truncate' requires an argument."): (
        " --truncate N cuts to N tokens; to cut to the context length, use --truncate-to-context"
    ),
}


def one_line(message: str) -> str:
    """A message as the one line the contract promises: line breaks and every other control
    character (from a file name or a checkpoint's key; 0x85 and U+2028 break lines too) written
    as escapes."""
    return message.translate(_ESCAPES)


_ESCAPES = {
    code: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(
        chr(code), f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    )
    for code in UNSEEN
}


def _command_path(ctx: typer.Context, exc: Exception) -> str:
    """'embedcli embed' for an error in embed's options, else 'embedcli'."""
    failed = getattr(exc, "ctx", None)
    if failed is not None and failed is not ctx:
        return failed.command_path
    name = ctx.meta.get("embedcli.command")
    return f"{ctx.command_path} {name}" if name else ctx.command_path


app = typer.Typer(
    cls=_Group,
    name="embedcli",
    help=(
        "See the input layer of a GPT-style transformer: text -> BPE tokens -> token ids -> "
        "token embeddings (B, T, d) + positional embeddings (T, d) -> the tensor the first "
        "block reads.\n\n"
        "\b\n"
        "Examples:\n"
        '  embedcli embed "Hello, world!"\n'
        '  embedcli tokenize "Hello" --encode\n'
        "  embedcli tokenize -f notes.txt --count\n"
        '  embedcli embed "hi" --json | jq .config'
    ),
    epilog=f"Manual: {MANUAL}",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"embedcli {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    pass


def main() -> None:
    """Console-script entry point."""
    process.prepare()
    try:
        app(prog_name="embedcli")
    except SystemExit as exit:
        # rich (help text) and click turn a closed stdout met outside a command into exit 1:
        # that is a closed pipe (`embedcli --help | head -1`), not an error.
        closed = isinstance(exit.__context__, BrokenPipeError)
        if exit.code == 1 and (closed or type(sys.stdout).__name__ == "PacifyFlushWrapper"):
            process.quiet_stdout()
            process.leave(0)
        process.leave(exit.code)
    except OSError as exc:  # help or --version written to a full disk, and the unforeseen
        # an error that names a file may come from reading it: say the file, not "cannot write"
        said = f"{exc.filename}: " if exc.filename else "cannot write to standard output: "
        _err(f"Error: {said}{exc.strerror or exc}")
        process.quiet_stdout()
        process.leave(1)
    process.leave(0)


def _err(line: str) -> None:
    """A line on stderr; a stderr that is closed or full (``2>&-``, a reader gone) loses it,
    but never turns a failure into exit 0: the status still says what happened."""
    with contextlib.suppress(OSError, ValueError):
        typer.echo(line, err=True)
