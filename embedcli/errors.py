"""Domain errors: everything a user can cause, each with a message that says what to do.

The CLI has one handler that prints ``Error: <message>`` on stderr and exits with ``exit_code``.
"""

from __future__ import annotations

import os
import stat


class EmbedCLIError(Exception):
    """Base class for every expected failure; its message is shown to the user as is."""

    exit_code = 1


class UsageError(EmbedCLIError):
    """The command line itself is wrong (conflicting or missing options)."""

    exit_code = 2


class InputTextError(EmbedCLIError):
    """The input text cannot be used: empty, not UTF-8, or holding disallowed special tokens."""


class EncodingError(EmbedCLIError):
    """An encoding or model name is unknown, or its BPE files are missing or corrupt."""


class DeviceError(EmbedCLIError):
    """A device or dtype is unknown, or not available in this torch build or on this machine."""


class ConfigError(EmbedCLIError):
    """An embedding configuration is invalid (non-positive sizes, unknown positional family)."""


class TokenIdError(EmbedCLIError):
    """A token id is negative or outside the vocabulary of the token table."""


class SequenceTooLongError(EmbedCLIError):
    """A sequence has more tokens than the context length."""


class MemoryLimitError(EmbedCLIError):
    """The requested tables would not fit in the memory available."""


class OutputError(EmbedCLIError):
    """An output file cannot be written (unwritable place, full disk, closed stdout)."""


class OutputFormatError(OutputError):
    """An output name whose suffix (or dtype) no writer handles: a bad option value."""

    exit_code = 2


class VerificationError(EmbedCLIError):
    """A device's result disagrees with the CPU reference beyond the dtype's rounding."""


class BroadcastError(EmbedCLIError):
    """Shapes that cannot be broadcast together."""


class WeightsError(EmbedCLIError):
    """A checkpoint cannot be read, is unsafe to load, or holds no recognisable tables."""


class MissingExtraError(EmbedCLIError):
    """A package the command needs is not installed; the message names the line that
    installs it. One exit code for one cause, in every command (1: the command line was
    right, this environment cannot do it)."""


def os_reason(exc: OSError) -> str:
    """An OSError in the one wording every command uses: "no such file or folder" for a missing
    path (Python says "No such file or directory"), else the system's own words."""
    import errno

    if exc.errno == errno.ENOENT:
        return "no such file or folder"
    return exc.strerror or str(exc)


# What a path that is not a regular file is, in the words count's skips use.
SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISDIR, "a folder"),
)


def not_a_file(path: str | os.PathLike[str]) -> str:
    """Why ``path`` is not a regular file to read: "no such file or folder", or "not a regular
    file (a FIFO)" (a FIFO, a device or a socket exists: it is not missing)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return os_reason(exc)
    kind = next((name for test, name in SPECIAL_KINDS if test(mode)), "")
    return f"not a regular file ({kind})" if kind else "not a regular file"
