"""The line protocol's reply stream, shared by the worker scripts (each run as a script, with
this folder first on its path)."""

from __future__ import annotations

import ctypes
import os
from typing import Any, TextIO


def replies() -> TextIO:
    """The stream replies go to: the process's stdout, which from here on is stderr for
    everything else (llama.cpp's C code, and the converter, print to file descriptor 1)."""
    stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    return stream


def started_llama_cpp(log: list[str]) -> tuple[Any, Any]:
    """llama_cpp, imported, with its backend started and its log kept in ``log`` (the last 40
    lines, for error messages), and the log callback, which must stay referenced."""
    import llama_cpp

    def keep(level: int, text: bytes, data: object) -> None:
        log.append(text.decode(errors="replace"))
        del log[:-40]

    callback = llama_cpp.llama_log_callback(keep)
    llama_cpp.llama_log_set(callback, ctypes.c_void_p())
    llama_cpp.llama_backend_init()
    return llama_cpp, callback
