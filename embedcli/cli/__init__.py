"""The command line, and only that: ``app`` (Typer) and ``main`` (the console script)."""

from embedcli.cli.app import app, main

__all__ = ["app", "main"]
