"""What a case may take and give: memory, time, exit codes, and how its stdout is connected."""

from __future__ import annotations

BOUND_BYTES = 2 * 2**30  # peak memory of a case: a subprocess's RSS, or growth in process
# Address space a case may reserve (in process: beyond what the process has): a safety net for
# this machine, so that a runaway allocation fails instead of swapping; not the bound itself.
GUARD_BYTES = 6 * 2**30
SCRIPT_GUARD_BYTES = 8 * 2**30
CASE_SECONDS = 60
EXIT_CODES = (0, 1, 2, 130)
TRACEBACK_MARKS = ("Traceback", 'File "')
SHELLS = ("pipe", "head", "closed", "full")  # how a subprocess's stdout is connected
# command -> the flags that stream records (JSON Lines, CSV rows)
STREAMING = {"embed": ("lines",), "windows": ("as_jsonl",), "count": ("as_jsonl", "as_csv")}
