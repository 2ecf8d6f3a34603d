"""Every command keeps the contract of the README ("Flags that mean the same everywhere",
"Errors") whatever its command line: random command lines built from each command's own
parameters (tests/support/contract/), most run in process, a few through the console script
with real pipes, `| head -1`, a closed stdout and a full disk. Each case runs in a fresh folder,
which must hold afterwards only the requested output and the input files, unchanged.

A bounded, derandomized run for CI; `bench/fuzz --minutes N` runs the same cases for longer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support import contract

IN_PROCESS_EXAMPLES = 160  # a command; hypothesis repeats itself, repeats run once
# The slowest commands draw fewer (each of their cases reads or builds a table, 0.1-0.15 s):
# the suite stays within its time; bench/fuzz runs them all for as long as it is given.
FEWER_EXAMPLES = {"project": 70, "count": 90, "neighbors": 110, "stats": 130, "undertrained": 80}
SCRIPT_EXAMPLES = 5  # a way of connecting stdout; each case starts a Python (and torch)
# The commands that write most come first: hypothesis starts with the simplest choices.
SCRIPT_COMMANDS = ("embed", "windows", "tokenize", "stats", "neighbors", "positions",
                   "inspect-shapes", "weights", "broadcast", "devices", "count",
                   "project", "undertrained")  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> contract.Workspace:
    return contract.Workspace(tmp_path_factory.mktemp("contract"))


def fuzz(
    strategy: st.SearchStrategy[contract.Case],
    run: Callable[[contract.Case], contract.Outcome],
    examples: int,
) -> contract.Findings:
    """Every distinct case ``strategy`` draws in ``examples`` tries, run and checked."""
    found = contract.Findings()
    seen: set[contract.Case] = set()

    # No shrinking: each broken case is reported with its reproducer, and the run stays bounded.
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def one(case: contract.Case) -> None:
        if case in seen:
            return
        seen.add(case)
        outcome = run(case)
        found.add(case, outcome, contract.check_contract(outcome, case))

    one()
    return found


@pytest.mark.parametrize("command", sorted(contract.commands()))
def test_every_command_keeps_the_contract(command: str, workspace: contract.Workspace) -> None:
    examples = FEWER_EXAMPLES.get(command, IN_PROCESS_EXAMPLES)
    found = fuzz(contract.cases(command), workspace.run_in_process, examples)
    assert found.tried >= 10, f"only {found.tried} distinct cases drawn"
    assert not found, found.report()


@pytest.mark.parametrize("shell", contract.SHELLS)
def test_the_console_script_keeps_the_contract(shell: str, workspace: contract.Workspace) -> None:
    assert set(SCRIPT_COMMANDS) == set(contract.commands())
    strategy = st.sampled_from(SCRIPT_COMMANDS).flatmap(
        lambda command: contract.cases(command, shells=(shell,))
    )
    found = fuzz(strategy, workspace.run_script, SCRIPT_EXAMPLES)
    assert not found, found.report()


# ---------------------------------------------------------------- the checker itself


def outcome(code: int, stdout: str = "", stderr: str = "", **kw: object) -> contract.Outcome:
    return contract.Outcome(code, stdout.encode(), stderr.encode(), **kw)  # type: ignore[arg-type]


def rules(result: contract.Outcome, *args: str, command: str = "tokenize") -> set[str]:
    return {v.rule for v in contract.check_contract(result, contract.Case(command, args))}


def test_the_checker_passes_what_keeps_the_contract() -> None:
    assert rules(outcome(0, "15496 11\n")) == set()
    assert rules(outcome(0, '{"a": 1}\n', "Warning: --x is deprecated\n"), "hi", "--json") == set()
    assert rules(outcome(1, "", "Error: no\n")) == set()
    assert rules(outcome(2, "", "Error: Invalid value\n")) == set()
    lines = '{"line": 1}\n{"line": 2}\n'
    assert rules(outcome(1, lines, "Error: line 3: bad\n"), "--lines", command="embed") == set()


@pytest.mark.parametrize(
    ("result", "args", "broken"),
    [
        (outcome(3, "", "Error: x\n"), (), "exit code"),
        (
            outcome(1, "", 'Traceback (most recent call last):\n  File "x"\nValueError\n'),
            (),
            "traceback",
        ),
        (outcome(1, "", "", exception=ValueError("x")), (), "traceback"),
        (outcome(1, "", "Error: a\nError: b\n"), (), "stderr on failure"),
        (outcome(1, "", "Warning: old\nError: a\n"), (), "stderr on failure"),
        (outcome(1, "", ""), (), "stderr on failure"),
        (outcome(1, "partial", "Error: a\n"), (), "stdout on failure"),
        (outcome(0, '{"a": NaN}\n'), ("--json",), "json"),
        (outcome(0, '{"a": 1}\n{"b": 2}\n'), ("--json",), "json"),
        (outcome(0, "table\n"), ("--json",), "json"),
        (outcome(0, "ok\n", "some noise\n"), (), "stderr on success"),
        (outcome(0, new_files=["x.txt"]), (), "stray file"),
        (outcome(0, temp_files=[".out.npy.abc.tmp"]), (), "temporary file left"),
        (outcome(0, changed_files=["in.txt"]), (), "input changed"),
        (outcome(0, peak_rss=3 * 2**30), (), "memory"),
        (outcome(None), (), "timeout"),
    ],
)
def test_the_checker_sees_what_breaks_the_contract(
    result: contract.Outcome, args: tuple[str, ...], broken: str
) -> None:
    assert broken in rules(result, *args)


def test_a_streamed_record_cut_in_half_breaks_the_contract() -> None:
    half = json.dumps({"line": 1}) + "\n" + '{"line": '
    assert "stdout on failure" in rules(outcome(1, half, "Error: x\n"), "--lines", command="embed")


def test_outputs_and_inputs_are_read_as_click_reads_them(tmp_path: Path) -> None:
    case = contract.Case("embed", ("-f", "./notes.npy", "-o", "notes.npy", "--json", "-d", "4"))
    assert case.outputs() == {"notes.npy"} and "notes.npy" in case.inputs()
    assert case.params["as_json"] is True
    # '--json' as a TEXT is still the flag, as click reads it
    assert contract.Case("tokenize", ("hi", "--json")).params["as_json"] is True
    assert contract.Case("windows", ("--jsonl",)).streams()


def test_a_reproducer_is_the_command_that_ran(tmp_path: Path) -> None:
    case = contract.Case("tokenize", ("caf\udce9", "9" * 5000, "a b"), stdin="in.txt")
    line = case.line()
    assert line.startswith("embedcli tokenize $'caf\\xe9' \"$(printf '9%.0s' $(seq 5000))\"")
    assert line.endswith("'a b' < in.txt")
