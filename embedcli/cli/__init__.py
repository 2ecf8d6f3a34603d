"""The command line, and only that: ``app`` (Typer) and ``main`` (the console script).

- ``typerapp``: ``app``, the Typer app (loaded on first use), its one error handler, and the
  commands, each built when first run.
- ``quick``: ``tokenize --count`` of a TEXT or file under a bundled encoding, without typer.
- ``process``: the process around a command: SIGTERM and SIGHUP, the collector, the fast exit.
- ``params``: click ParamTypes that read a value once: token ids, sizes, shares, context windows.
- ``options``: every option more than one command has, declared once.
- ``checks``: checks of names and numbers as the command line is read (choices, devices).
- ``inputs``: TEXT, -f, stdin, --ids or --ids-file, read one way everywhere.
- ``output``: the one path to stdout (JSON or tables).
- ``embed``: embed, its own options, and its three jobs (a batch, --lines, --seq-len).
- ``tokens``: tokenize.
- ``counting``: count, and its own options.
- ``shapes``: inspect-shapes and broadcast.
- ``windows``: windows.
- ``checkpoints``: weights, neighbors and stats.
- ``project``: project.
- ``undertrained``: undertrained.
- ``positions``: positions, and its own options.
- ``devices``: devices.

A command translates flags into a request, asks the packages below for a report, and hands it
to ``output``; the checks of what the flags mean together live with the request, below.

Imports: render, pipeline, analysis, corpus, tokenization, models, core, io, errors.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point: the quick path where it takes the command line, else the
    app (both end through process.leave: no interpreter teardown)."""
    from embedcli.cli import process, quick  # late: this package's import stays empty

    process.prepare()
    if quick.counted(sys.argv[1:]):
        process.leave(0)
    from embedcli.cli.typerapp import main as run_app  # late: typer, only when it is needed

    run_app()


def __getattr__(name: str) -> Any:
    if name == "app":  # loaded on first use: the quick path never loads typer
        from embedcli.cli.typerapp import app

        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
