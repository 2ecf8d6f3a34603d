"""The command line as a whole: every command of the app with its options, read from the app
itself (``OPTIONS``), and ``TEXT``, a sentence for the flags to work on."""

from __future__ import annotations

import typer

from embedcli.cli import app

TEXT = "Hello, world! The quick brown fox jumps over the lazy dog again and again."


def command_options() -> dict[str, dict[str, object]]:
    """{command: {--long-name: click parameter}} for every command of the app."""
    group = typer.main.get_command(app)
    found = {}
    for name, command in group.commands.items():
        found[name] = {max(p.opts, key=len): p for p in command.params if p.opts[0].startswith("-")}
    return found


OPTIONS = command_options()
