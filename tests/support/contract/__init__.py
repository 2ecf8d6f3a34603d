"""The contract every command keeps, whatever its command line, and a fuzzer that tries to break it.

The contract (README, "Flags that mean the same everywhere" and "Errors"), for every command:

- the exit code is 0, 1 (bad input or data), 2 (bad usage) or 130 (Ctrl-C);
- no traceback anywhere, on stdout or stderr;
- a failure prints exactly one ``Error: `` line on stderr and nothing on stdout; only
  ``embed --lines`` and ``windows --jsonl`` stream records, so they may have printed whole JSON
  lines before failing (``Warning:`` lines belong to successes only);
- a success with ``--json`` prints exactly one JSON document (no NaN or Infinity, which are not
  JSON); the streamed records are one JSON document a line;
- no file appears in the working folder but the requested output (``-o``, ``--png``), no
  temporary ``.*.tmp`` file is left, and every input file is byte for byte what it was;
- memory stays under a bound (2 GiB) for the small tables drawn here.

Command lines are built from each command's own click parameters (names, flags, repeatable
options, int, str or path values, hidden ones), so a new option is fuzzed without a change here.
Values are mostly small and valid (so the commands run deep and fast), with extremes (0, -1,
2**63, 10**30, 5000 digits), empty and unicode strings, rich markup, option-looking values and
hostile files (a directory, /dev/null, a missing path, non-UTF-8 text, an empty file, a tiny
checkpoint) mixed in. Each case runs in a fresh folder holding copies of the input files.

Used by tests/cli/test_contract.py (a bounded run) and bench/fuzz (long runs), as
``from support import contract`` then ``contract.cases``, ``contract.Workspace``...:

- bounds.py   what a case may take and give: memory, time, exit codes, stdout's connection
- inputs.py   the input files every case finds in its folder (texts, checkpoints, model folders)
- cases.py    values drawn per parameter, and the command lines (``Case``, ``cases``, ``commands``)
- running.py  running a case in process or as a script, under guards (``Workspace``, ``Outcome``)
- checks.py   the contract itself (``check_contract``), and the findings of a run (``Findings``)
"""

from support.contract.bounds import SHELLS
from support.contract.cases import Case, cases, commands
from support.contract.checks import Findings, Violation, check_contract, describe
from support.contract.inputs import make_fixtures
from support.contract.running import Outcome, Workspace, refuse_network

__all__ = [
    "SHELLS",
    "Case",
    "Findings",
    "Outcome",
    "Violation",
    "Workspace",
    "cases",
    "check_contract",
    "commands",
    "describe",
    "make_fixtures",
    "refuse_network",
]
