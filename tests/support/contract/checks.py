"""The contract itself: every way an outcome breaks it, a case's description, and the findings of
a run of many cases."""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass

from support.contract.bounds import BOUND_BYTES, CASE_SECONDS, EXIT_CODES, TRACEBACK_MARKS
from support.contract.cases import Case
from support.contract.running import Outcome

# ---------------------------------------------------------------- the contract


@dataclass(frozen=True)
class Violation:
    """One broken promise: ``rule`` names it, ``detail`` says what was seen, ``key`` tells two
    apart (an exception's type, or the Error line with its numbers blanked)."""

    rule: str
    detail: str
    key: str = ""

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _json_problem(text: bytes) -> str | None:
    """Why ``text`` is not one JSON document, or None."""
    try:
        json.loads(text.decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:120]}"
    return None


def _first_error_line(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("Error: "):
            return line
    return stderr.strip().splitlines()[-1] if stderr.strip() else ""


def _exception_type(outcome: Outcome, stderr: str) -> str:
    if outcome.exception is not None:
        return type(outcome.exception).__name__
    pattern = r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Interrupt|Exit|Warning))\b"
    names = re.findall(pattern, stderr, flags=re.MULTILINE)
    return names[-1] if names else "traceback"


def normalized(line: str) -> str:
    """An Error line with its numbers and quoted values blanked, so one bug is one key."""
    line = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", line)
    return re.sub(r"\d+", "N", line)[:100]


_ALLOCATION_FAILED = re.compile(
    r"can't allocate memory|Cannot allocate memory|MemoryError|bad_alloc|out of memory", re.I
)


def _memory_problem(outcome: Outcome, text: str) -> str | None:
    if outcome.peak_rss is not None and outcome.peak_rss > BOUND_BYTES:
        return f"peak RSS {outcome.peak_rss / 2**20:,.0f} MiB is over {BOUND_BYTES / 2**30:g} GiB"
    # An allocation that failed under the guard asked for more than the bound: a table that
    # should have been refused before it was allocated.
    exception = outcome.exception
    hit = isinstance(exception, MemoryError) or _ALLOCATION_FAILED.search(text) is not None
    if not hit:
        return None
    asked = re.search(r"tried to allocate (\d+) bytes", text)
    if asked and int(asked.group(1)) > _total_memory():
        return None  # more than this machine has: it fails anywhere, and it failed cleanly
    return (
        f"an allocation failed under the {outcome.guard / 2**30:g} GiB address-space guard "
        "(the command tried to use more memory than the bound, instead of refusing first)"
    )


@functools.lru_cache(maxsize=1)
def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 2**40


def check_contract(result: Outcome, case: Case) -> list[Violation]:
    """Every way ``result`` breaks the contract (see the module docstring); [] if none."""
    found: list[Violation] = []
    stdout = result.stdout.decode("utf-8", "replace")
    stderr = result.stderr.decode("utf-8", "replace")
    error_line = _first_error_line(stderr)
    if result.exit_code is None:
        return [Violation("timeout", f"did not finish within {CASE_SECONDS} s", "timeout")]
    if result.exit_code not in EXIT_CODES:
        found.append(
            Violation(
                "exit code",
                f"{result.exit_code} is not one of {EXIT_CODES}",
                f"{result.exit_code} {normalized(error_line)}",
            )
        )
    if result.exception is not None or any(m in stdout + stderr for m in TRACEBACK_MARKS):
        kind = _exception_type(result, stderr)
        message = " ".join(str(result.exception).split())  # torch's run over several lines
        shown = f"{kind}: {message[:160]}" if result.exception else error_line
        found.append(Violation("traceback", shown or "traceback text in the output", kind))
    memory = _memory_problem(result, stderr + str(result.exception or ""))
    if memory:
        found.append(Violation("memory", memory, "memory"))
    if result.exit_code != 0:
        found.extend(_failure_problems(result, case, stderr, error_line))
    else:
        found.extend(_success_problems(result, case, stderr))
    for rule, paths in (
        ("stray file", result.new_files),
        ("temporary file left", result.temp_files),
        ("input changed", result.changed_files),
    ):
        if paths:
            found.append(Violation(rule, ", ".join(paths), normalized(error_line) or rule))
    return found


def _failure_problems(result: Outcome, case: Case, stderr: str, error_line: str) -> list[Violation]:
    found = []
    key = normalized(error_line)
    lines = stderr.split("\n")
    one_line = len(lines) == 2 and lines[1] == ""
    starts = ("Error: ", "Interrupted") if result.exit_code == 130 else ("Error: ",)
    traceback = result.exception is not None or TRACEBACK_MARKS[0] in stderr  # said already
    if not (one_line and lines[0].startswith(starts)) and not traceback:
        shown = " | ".join(stderr.strip().splitlines()[:3])[:200] or "(empty)"
        count = len(stderr.splitlines())
        found.append(
            Violation("stderr on failure", f"not one Error: line ({count} lines): {shown}", key)
        )
    if result.stdout_seen or case.shell == "head":
        if case.streams():
            if result.stdout and not result.stdout.endswith(b"\n"):
                found.append(Violation("stdout on failure", "a half-written JSON line", key))
            for line in result.stdout.splitlines():
                problem = _record_problem(case, line)
                if problem:
                    found.append(Violation("stdout on failure", f"a bad record: {problem}", key))
                    break
        elif result.stdout:
            shown = result.stdout[:80].decode("utf-8", "replace")
            found.append(
                Violation("stdout on failure", f"exit {result.exit_code} after {shown!r}", key)
            )
    return found


def _record_problem(case: Case, line: bytes) -> str | None:
    """What is wrong with one streamed record: a JSON line, or (count --csv) a CSV row of
    path, bytes, a column per encoding, skipped."""
    if not case.params.get("as_csv"):
        return _json_problem(line)
    import csv

    try:
        rows = list(csv.reader([line.decode("utf-8")]))
    except (UnicodeDecodeError, csv.Error) as exc:
        return f"{type(exc).__name__}: {exc}"
    encodings = case.params.get("encoding") or []
    models = case.params.get("model") or []
    wanted = 3 + max(1, len(encodings) + len(models))
    if (
        len(rows) != 1
        or len(rows[0]) < 4
        or (not encodings and not models and len(rows[0]) != wanted)
    ):
        return f"not a CSV row of path, bytes, counts, skipped: {line[:60]!r}"
    return None


def _success_problems(result: Outcome, case: Case, stderr: str) -> list[Violation]:
    found = []
    others = [line for line in stderr.splitlines() if line and not line.startswith("Warning: ")]
    if others:
        found.append(
            Violation("stderr on success", " | ".join(others[:3])[:200], normalized(others[0]))
        )
    if not result.stdout_seen or case.asks_for_help:
        return found
    if case.streams():
        for line in result.stdout.splitlines():
            problem = _record_problem(case, line)
            if problem:
                found.append(Violation("json", f"a bad record: {problem}", problem[:40]))
                break
    elif case.params.get("as_json"):
        problem = _json_problem(result.stdout)
        if problem:
            found.append(
                Violation("json", f"stdout is not one JSON document: {problem}", problem[:40])
            )
    return found


def describe(case: Case, outcome: Outcome, violations: list[Violation]) -> str:
    """A report of one broken case: its reproducer, its exit, and what it broke."""
    stderr = outcome.stderr.decode("utf-8", "replace").strip()
    lines = [
        f"  $ {case.line()}",
        f"  exit {outcome.exit_code}; stderr: {' | '.join(stderr.splitlines()[:2])[:200]}",
    ]
    if outcome.exception is not None:
        message = " ".join(str(outcome.exception).split())
        lines.append(f"  exception: {type(outcome.exception).__name__}: {message}"[:240])
    lines.extend(f"  - {v}" for v in violations)
    return "\n".join(lines)


class Findings:
    """Broken cases, one per distinct violation (command, rule, key), the shortest kept."""

    def __init__(self) -> None:
        self.tried = 0
        self.broken = 0
        self.distinct: dict[tuple[str, str, str], tuple[Case, Outcome, list[Violation], int]] = {}

    def add(self, case: Case, outcome: Outcome, violations: list[Violation]) -> None:
        self.tried += 1
        if not violations:
            return
        self.broken += 1
        for violation in violations:
            signature = (case.command, violation.rule, violation.key)
            seen = self.distinct.get(signature)
            count = seen[3] + 1 if seen else 1
            if seen is None or len(case.line()) < len(seen[0].line()):
                self.distinct[signature] = (case, outcome, violations, count)
            else:
                self.distinct[signature] = (*seen[:3], count)

    def __bool__(self) -> bool:
        return bool(self.distinct)

    def report(self) -> str:
        parts = [
            f"cases tried: {self.tried}, contract kept: {self.tried - self.broken}, "
            f"broken: {self.broken}"
        ]
        for (command, rule, key), (case, outcome, violations, count) in sorted(
            self.distinct.items()
        ):
            parts.append(f"\n[{command}] {rule} ({key}) x{count}")
            parts.append(describe(case, outcome, violations))
        return "\n".join(parts)
