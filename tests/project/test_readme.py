"""README.md and the manual (docs/*.md) stay true: their commands run as shown, their Python runs,
and CI runs the README's test command."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

import pytest
from support.helpers import REPO, script_env
from support.samplemodel import MISSING, SAMPLE_CACHE, installed

README = (REPO / "README.md").read_text(encoding="utf-8")
# The README first, then the manual's pages: every file whose examples are run.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Output that depends on the machine (its devices, its torch build) is run but not compared.
MACHINE_DEPENDENT = ("embedcli devices", "--device cuda")


class Example(NamedTuple):
    """One `$ command` of a console block, and the output pasted under it."""

    file: str  # relative to the repository: README.md, docs/embed.md
    block: int  # the console block's number within its file, from 0
    index: int  # the command's place in its block, from 0
    command: str
    expected: str


def console_examples(path: Path) -> list[Example]:
    """Every `$ command` in the console blocks of one file, in order.

    The commands of one block run in order in one folder, so a block can make a file and then
    use it."""
    name = path.relative_to(REPO).as_posix()
    text = path.read_text(encoding="utf-8")
    examples = []
    for number, block in enumerate(re.findall(r"```console\n(.*?)```", text, flags=re.S)):
        commands: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:], []))
            elif commands:
                commands[-1][1].append(line.rstrip())
        examples += [
            Example(name, number, index, command, "\n".join(output))
            for index, (command, output) in enumerate(commands)
        ]
    return examples


EXAMPLES = [example for page in PAGES for example in console_examples(page)]


def run_example(example: Example, workdir: Path) -> subprocess.CompletedProcess[str]:
    env = script_env(workdir)
    if "sample:" in example.command:  # one join of the sample for every example
        if not installed():
            pytest.skip(MISSING)
        env["EMBEDCLI_CACHE_DIR"] = str(SAMPLE_CACHE)
    return subprocess.run(
        ["bash", "-c", example.command],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def block_folder(tmp_path_factory: pytest.TempPathFactory):
    """The folder an example runs in: a copy of samples/ in which the commands before it in its
    block, and none after it, have run.

    The suite's workers take tests in any order, so the commands of one block may be split
    between workers or come out of order: a command before this one that this worker has not run
    is run here first (its output unchecked: its own test checks it), and a folder in which a
    later command already ran is not reused."""
    folders: dict[tuple[str, int], tuple[Path, int]] = {}  # the folder, the commands run in it

    def folder(example: Example) -> Path:
        key = (example.file, example.block)
        workdir, done = folders.get(key, (None, 0))
        if workdir is None or done > example.index:
            stem = Path(example.file).stem.lower()
            workdir = tmp_path_factory.mktemp(f"{stem}-block-{example.block}")
            shutil.copytree(REPO / "samples", workdir / "samples")
            done = 0
        block = [e for e in EXAMPLES if (e.file, e.block) == key]
        for earlier in block[done : example.index]:
            run_example(earlier, workdir)
        folders[key] = (workdir, example.index + 1)
        return workdir

    return folder


def test_the_readme_and_the_manual_have_examples() -> None:
    """A page that documents commands shows them running (a broken fence would hide them)."""
    with_examples = {example.file for example in EXAMPLES}
    pages = ("embed", "tokenize", "count", "shapes", "windows", "checkpoints", "real-models",
             "positions", "project", "devices", "reliability")  # fmt: skip
    assert {"README.md", *(f"docs/{page}.md" for page in pages)} <= with_examples
    assert len([e for e in EXAMPLES if e.file == "README.md"]) >= 6


@pytest.mark.parametrize(
    "example", EXAMPLES, ids=[f"{e.file}:{e.block}:{e.command[:50]}" for e in EXAMPLES]
)
def test_console_example_runs_as_shown(example: Example, block_folder) -> None:
    done = run_example(example, block_folder(example))
    shown = "\n".join(line.rstrip() for line in (done.stdout + done.stderr).splitlines())
    assert "Traceback" not in shown, shown
    if any(marker in example.command for marker in MACHINE_DEPENDENT):
        return
    assert done.returncode == (1 if example.expected.startswith("Error:") else 0), shown
    assert shown == example.expected


def test_an_example_shown_twice_shows_the_same_output() -> None:
    """The README and a page may show the same command: then they show the same output."""
    outputs: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for example in EXAMPLES:
        if not any(marker in example.command for marker in MACHINE_DEPENDENT):
            outputs[example.command][example.expected].append(f"{example.file}:{example.block}")
    differing = {command: dict(shown) for command, shown in outputs.items() if len(shown) > 1}
    assert not differing


PYTHON_BLOCKS = [
    (page.relative_to(REPO).as_posix(), number, code)
    for page in PAGES
    for number, code in enumerate(
        re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    )
]


def test_the_manual_has_python_examples() -> None:
    assert "docs/python-api.md" in {file for file, _, _ in PYTHON_BLOCKS}


@pytest.mark.parametrize(
    ("file", "number", "code"), PYTHON_BLOCKS, ids=[f"{f}:{n}" for f, n, _ in PYTHON_BLOCKS]
)
def test_python_examples_run(file: str, number: int, code: str, tmp_path: Path) -> None:
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


def test_the_manual_installs_as_the_readme_does() -> None:
    """docs/index.md repeats the README's install lines: word for word, so CI's check holds."""
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8").splitlines()
    readme = README.splitlines()
    for line in index:
        if ".venv/bin/pip install" in line:
            assert line in readme, line
