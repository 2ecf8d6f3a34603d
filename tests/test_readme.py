"""README.md stays true: its commands run as shown, and CI runs its test command."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, script_env

README = (REPO / "README.md").read_text(encoding="utf-8")
# Output that depends on the machine (its devices, its torch build) is run but not compared.
MACHINE_DEPENDENT = ("embedcli devices", "--device cuda")


def console_examples() -> list[tuple[int, str, str]]:
    """Every `$ command` in a console block: (block number, command, the output pasted under it).

    The commands of one block run in order in one folder, so a block can make a file and then
    use it."""
    examples = []
    for number, block in enumerate(re.findall(r"```console\n(.*?)```", README, flags=re.S)):
        command, output = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    examples.append((number, command, "\n".join(output)))
                command, output = line[2:], []
            else:
                output.append(line.rstrip())
        if command is not None:
            examples.append((number, command, "\n".join(output)))
    return examples


EXAMPLES = console_examples()


@pytest.fixture(scope="module")
def block_folder(tmp_path_factory: pytest.TempPathFactory):
    """One working folder per console block, holding a copy of samples/."""
    folders: dict[int, Path] = {}

    def folder(number: int) -> Path:
        if number not in folders:
            folders[number] = tmp_path_factory.mktemp(f"readme-block-{number}")
            shutil.copytree(REPO / "samples", folders[number] / "samples")
        return folders[number]

    return folder


def test_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize(
    ("number", "command", "expected"), EXAMPLES, ids=[c[:60] for _, c, _ in EXAMPLES]
)
def test_console_example_runs_as_shown(
    number: int, command: str, expected: str, block_folder
) -> None:
    workdir = block_folder(number)
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=workdir,
        env=script_env(workdir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    shown = "\n".join(line.rstrip() for line in (done.stdout + done.stderr).splitlines())
    assert "Traceback" not in shown, shown
    if any(marker in command for marker in MACHINE_DEPENDENT):
        return
    assert done.returncode == (1 if expected.startswith("Error:") else 0), shown
    assert shown == expected


def test_python_examples_run(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    for code in blocks:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env=script_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr


def test_readme_opens_with_the_two_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, flags=re.S).group(1)
    commands = [line for line in first_block.splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2
    assert commands[0].endswith('embedcli embed "Hello, world!"')
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, flags=re.S).group(1)
    test_command = next(line for line in first_block.splitlines() if "pytest" in line)
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()
    assert "torch==2.13.0" in ci


CPU_INDEX = "torch --index-url https://download.pytorch.org/whl/cpu"


def test_ci_runs_the_readme_cpu_wheel_install() -> None:
    """The README's one-line CPU-wheel install is CI's first step, with the CPU wheel CI has on
    disk in place of PyTorch's index (unreachable there), and CI checks the build stayed CPU."""
    lines = [line for line in README.splitlines() if CPU_INDEX in line]
    assert len(lines) == 1, lines
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert lines[0].replace(CPU_INDEX, "torch==2.13.0") in ci
    after = ci[ci.index(lines[0].replace(CPU_INDEX, "torch==2.13.0")) + 1]
    assert "torch.version.cuda is None" in after
    # the same shape as the first command: a venv, torch first, then the project, then embed
    first = re.search(r"```sh\n(.*?)```", README, flags=re.S).group(1).splitlines()[1]
    torch_first = f"pip install {CPU_INDEX} && .venv/bin/pip install ."
    assert lines[0] == first.replace("pip install .", torch_first)
