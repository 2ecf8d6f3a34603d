"""One path from a report to stdout: JSON (never through rich), or tables (rich, plain when
piped: no colour codes, no trailing spaces). Every write to stdout goes through here, so a closed
pipe and a full disk are handled once (see typerapp.py)."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

import typer

from embedcli.errors import OutputError, UsageError
from embedcli.io.jsonstream import json_chunks
from embedcli.render.workprogress import WorkProgress  # rich only once a bar is drawn

if TYPE_CHECKING:
    from rich.console import RenderableType


class ClosedPipe(Exception):
    """The reader of stdout went away (``| head -1``): not an error, stop quietly."""


def stdout() -> BinaryIO:
    """Standard output as bytes; a closed one (``>&-``) is an output error, not a crash."""
    try:
        return typer.get_binary_stream("stdout")
    except RuntimeError:  # sys.stdout is None
        raise OutputError("standard output is closed: there is nowhere to write") from None


def watched() -> bool:
    """Whether a person reads stderr (a terminal): progress bars, and rich for them, only then."""
    import sys

    return sys.stderr is not None and sys.stderr.isatty()


def work_progress(label: str | None, quiet: bool, unit: str = "rows read") -> WorkProgress:
    """``with work_progress("reading the tables", quiet) as progress:``: a bar on stderr for work
    that can run past a second, drawn only where a person watches stderr and -q was not given
    (from its first stage where ``label`` is None)."""
    if quiet or not watched():
        return WorkProgress(None, label, unit=unit)  # draws nothing; its rows() gives None
    from rich.console import Console

    return WorkProgress(Console(stderr=True), label, unit=unit)


def text_progress(text: str, quiet: bool) -> WorkProgress:
    """:func:`work_progress` in characters for the tokenizing of ``text``: drawn only for a
    long text (one that is cut into chunks), as a short one is done before a bar could tell."""
    from embedcli.tokenization.tokens import PARALLEL_MIN_CHARS  # late: cli.output loads early

    return work_progress(None, quiet or len(text) < PARALLEL_MIN_CHARS, unit="characters")


def write(text: str, *, newline: bool = True) -> None:
    """UTF-8 bytes on stdout, whatever the locale (so text passes through unchanged)."""
    out = stdout()
    try:
        write_all(out, text.encode("utf-8") + (b"\n" if newline else b""))
        out.flush()
    except OSError as exc:
        raise _stdout_error(exc) from None


def write_all(out: BinaryIO, data: bytes) -> None:
    """All of ``data``, or an OSError: a buffered stream on a full disk can take part of a write
    and say so only in the count it returns."""
    view = memoryview(data)
    while view:
        written = out.write(view)
        if not written:
            raise OSError(errno.ENOSPC, "the output took no more bytes (is the disk full?)")
        view = view[written:]


def _stdout_error(exc: OSError) -> Exception:
    if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
        return ClosedPipe()
    return OutputError(f"cannot write to standard output: {exc.strerror or exc}")


def write_text(text: str) -> None:
    """Decoded or cut text, byte for byte; a final newline only when a person is reading."""
    write(text, newline=stdout().isatty())


def write_json(data: Any) -> None:
    """One JSON document (or one JSON Lines record) on stdout. Tensors and arrays in ``data`` are
    written row by row, never converted whole; NaN and infinities (not JSON) are written as null.
    """
    out = stdout()
    buffered: list[str] = []
    size = 0
    try:
        for chunk in json_chunks(data):
            buffered.append(chunk)
            size += len(chunk)
            if size > 1 << 20:
                write_all(out, "".join(buffered).encode("utf-8"))
                buffered, size = [], 0
        write_all(out, "".join(buffered).encode("utf-8") + b"\n")
        out.flush()
    except OSError as exc:
        raise _stdout_error(exc) from None


NARROWEST = 40  # the fewest columns drawn: narrower, cells of the --explain table were cut or blank


def show(view: Callable[..., RenderableType], *args: Any, **kwargs: Any) -> None:
    """Render ``view(*args, width=..., plain=..., **kwargs)`` for this terminal: colour on a
    terminal; plain text, without trailing spaces, when piped or with NO_COLOR."""
    import io

    from rich.console import Console

    console = Console()
    if console.width < 20:  # COLUMNS=0 or nonsense: draw for a common terminal instead
        console = Console(width=80)
    elif console.width < NARROWEST:  # a table's last column would get no width at all
        console = Console(width=NARROWEST)
    plain = console.no_color or console.color_system is None
    renderable = view(*args, width=console.width, plain=plain, **kwargs)
    if console.is_terminal and not plain:
        try:
            console.print(renderable)
        except OSError as exc:
            raise _stdout_error(exc) from None
        return
    buffer = Console(
        file=io.StringIO(), width=console.width, color_system=None, no_color=True, highlight=False
    )
    buffer.print(renderable)
    lines = buffer.file.getvalue().splitlines()
    write("\n".join(line.rstrip() for line in lines))


def prefetch(view: str) -> None:
    """Import the modules that show ``view`` (rich's among them) on a thread of their own, while
    this one waits on torch, which lets go of the GIL while it works: drawing GPT-2's seeded
    tables takes 0.2 s on one core, and these imports 30 ms that a second core can spend then.
    :func:`emit` imports the same modules and waits for this import if it is still running."""
    import threading

    from embedcli.render import module_of  # lazy: no view module is loaded at start-up

    name = module_of(view)

    def load() -> None:
        import importlib

        with contextlib.suppress(Exception):  # emit's own import reports any failure
            importlib.import_module(name)

    threading.Thread(target=load, name="embedcli-prefetch", daemon=True).start()


def emit(
    as_json: bool, to_json: Callable[..., Any], view: str, *args: Any, **view_kwargs: Any
) -> None:
    """The ending every command shares: ``to_json(*args)`` as JSON, or the view named ``view``
    in embedcli.render shown (imported only then, so --json never imports rich)."""
    if as_json:
        write_json(to_json(*args))
        return
    import embedcli.render  # lazy: views (rich) load only when shown; --json never does

    show(getattr(embedcli.render, view), *args, **view_kwargs)


def models_listed(ctx: typer.Context, requested: bool, as_json: bool) -> bool:
    """--list-models, wherever -m is taken: print the model names -m knows; True when done.
    Anything else given with it (but --json and -q) is a usage error, as count has it."""
    if requested:
        given = [
            param.opts[-1] if param.opts[-1].startswith("-") else param.human_readable_name
            for param in ctx.command.params
            if param.name not in ("list_models", "as_json", "quiet")
            and getattr(ctx.get_parameter_source(param.name), "name", "") == "COMMANDLINE"
        ]
        if given:
            raise UsageError(f"--list-models prints the model table: drop {' and '.join(given)}")
        from dataclasses import asdict

        from embedcli.tokenization.modelnames import MODELS  # lazy: the table, only to list it

        emit(as_json, lambda models: {"models": [asdict(m) for m in models]}, "models_view", MODELS)
    return requested
