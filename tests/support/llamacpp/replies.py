"""The line protocol's reply stream, shared by the worker scripts (each run as a script, with
this folder first on its path)."""

from __future__ import annotations

import os
from typing import TextIO


def replies() -> TextIO:
    """The stream replies go to: the process's stdout, which from here on is stderr for
    everything else (llama.cpp's C code, and the converter, print to file descriptor 1)."""
    stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    return stream
