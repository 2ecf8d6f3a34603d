"""Closed standard streams, as scripts and service managers leave them: a closed stdin matters only
to a command that reads it, and a failure is never exit 0 because stderr is gone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.helpers import script_env


@pytest.mark.parametrize(
    ("line", "code", "out"),
    [
        ("embedcli tokenize hi --count <&-", 0, "1\n"),
        ("embedcli tokenize -f {file} --count <&-", 0, "2\n"),
        ("embedcli embed --ids 5 -d 4 --json <&- | head -c 1", 0, "{"),
        ("embedcli tokenize --count <&-", 1, ""),
    ],
)
def test_a_closed_stdin_matters_only_when_read(tmp_path: Path, line, code, out) -> None:
    (tmp_path / "in.txt").write_text("hello world")
    line = line.format(file=tmp_path / "in.txt")
    done = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, env=script_env(tmp_path)
    )
    assert (done.returncode, done.stdout) == (code, out), done.stderr
    if code:
        assert done.stderr.startswith("Error: standard input is closed")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["tokenize", "-f", "/nope"], 1),
        (["embed", "--ids", "99999999", "-d", "4"], 1),
        (["tokenize", "--bogus"], 2),
        (["tokenize", "hi"], 0),
    ],
)
def test_a_failure_is_not_exit_0_when_stderr_is_gone(tmp_path: Path, args, code) -> None:
    """Writing the Error line to a closed pipe used to end the run as a closed stdout does."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            ["embedcli", *args], stderr=write, stdout=subprocess.DEVNULL, env=script_env(tmp_path)
        )
    finally:
        os.close(write)
    assert done.returncode == code
