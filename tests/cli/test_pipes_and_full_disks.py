"""A closed pipe is not an error, and a closed stdin or stdout, or a full disk, is one error
line, through a real shell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.cliflags import TEXT
from support.helpers import script_env

# ---------------------------------------------------------------- pipes and full disks


STREAMING = [
    "embedcli windows -f {text} -t 2 --jsonl",
    "embedcli embed --lines -d 4 --device cpu -f {lines}",
    "embedcli tokenize -f {text} --encode",
    "embedcli embed {words} -d 4 --device cpu",
    "embedcli inspect-shapes",
    "embedcli --help",
    "embedcli embed --help",
]


@pytest.mark.parametrize("command", STREAMING)
def test_a_closed_pipe_is_not_an_error(command: str, tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text(TEXT * 2000, encoding="utf-8")
    lines = tmp_path / "lines.txt"
    lines.write_text("\n".join([TEXT] * 2000), encoding="utf-8")
    words = " ".join(f"w{i}" for i in range(200))
    line = command.format(text=text, lines=lines, words=words)
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {line} | head -1"],
        env=script_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["tokenize", "hello", "--json"],
        ["tokenize", "hello", "--encode"],
        ["inspect-shapes"],
        ["embed", "hi", "-d", "4", "--device", "cpu", "--json"],
    ],
)
def test_a_full_disk_is_one_error_line(args: list[str], tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "embedcli", *args],
            env=script_env(tmp_path),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr == "Error: cannot write to standard output: No space left on device\n"


# ---------------------------------------------------------------- closed streams, full disks


def _shell(line: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", line],
        env=script_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("embedcli tokenize <&-", "Error: standard input is closed"),
        ("embedcli embed -d 4 --device cpu <&-", "Error: standard input is closed"),
        ("embedcli windows <&-", "Error: standard input is closed"),
        ("embedcli tokenize hi >&-", "Error: standard output is closed"),
        ("embedcli devices --json >&-", "Error: standard output is closed"),
        ("embedcli --help > /dev/full", "Error: cannot write to standard output"),
        ("embedcli embed --help > /dev/full", "Error: cannot write to standard output"),
        ("embedcli --version > /dev/full", "Error: cannot write to standard output"),
    ],
)
def test_closed_streams_and_full_disks_are_one_error_line(
    line: str, message: str, tmp_path: Path
) -> None:
    if "/dev/full" in line and not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    done = _shell(line, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr
