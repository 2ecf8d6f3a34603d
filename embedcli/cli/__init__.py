"""The command line, and only that: ``app`` (Typer) and ``main`` (the console script).

- ``app``: the Typer app, its one error handler, and the commands, each built when first run.
- ``options``: every option more than one command has, declared once; ``checks`` checks values
  as the command line is read; ``inputs`` reads TEXT, -f, stdin or --ids one way everywhere.
- ``output``: the one path to stdout (JSON or tables).
- one module per command family: ``embed``, ``tokens``, ``counting``, ``shapes``, ``windows``,
  ``checkpoints``, ``project``, ``positions``, ``devices``.

A command translates flags, asks the packages below for a report, and hands it to ``output``.

Imports: render, pipeline, analysis, corpus, tokenization, models, core, io, errors.
"""

from embedcli.cli.app import app, main

__all__ = ["app", "main"]
