"""``python -m embedcli``."""

from embedcli.cli import main

main()
