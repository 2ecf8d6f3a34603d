"""The command line, and only that: ``app`` (Typer) and ``main`` (the console script).

- ``app``: the Typer app, its one error handler, and the commands, each built when first run.
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
- ``positions``: positions, and its own options.
- ``devices``: devices.

A command translates flags into a request, asks the packages below for a report, and hands it
to ``output``; the checks of what the flags mean together live with the request, below.

Imports: render, pipeline, analysis, corpus, tokenization, models, core, io, errors.
"""

from embedcli.cli.app import app, main

__all__ = ["app", "main"]
