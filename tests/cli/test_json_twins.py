"""Every command's --json output, byte for byte, on the samples and on tiny models of the
families whose input layer does something besides a lookup: the JSON twins are a contract that
scripts depend on, so a change to the code's house must leave them as they are.

The golden files (tests/golden/json/) were written before the package was reorganised;
``pytest --update-golden`` rewrites them after an intended change (then review the diff).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.helpers import GOLDEN, REPO, make_runner

from embedcli.cli import app

runner = make_runner()
JSON_GOLDEN = GOLDEN / "json"

# the tiny models (tests/support/familymodels.py) whose input layers differ from one another
FOLDERS = (
    "gpt2", "opt-projected", "biogpt", "xglm", "bart-full", "bert", "roberta", "bloom", "mpt",
    "falcon-alibi", "t5-full", "mamba", "gptj", "llama-3.1-scaling", "gemma-bf16", "gemma3",
    "granite", "minicpm3", "deepseek_v3", "phi",
)  # fmt: skip

TEXT = "Hello, world! The lighthouse keeper"

COMMANDS: dict[str, str] = {  # shell words; $TEXT stands for TEXT
    "embed-seeded": "embed 'Hello, world!' Hi -d 8 --context-length 16",
    "embed-sinusoidal": "embed $TEXT -d 8 --positional sinusoidal",
    "embed-rope": "embed $TEXT -d 8 --positional rope",
    "embed-none": "embed $TEXT -d 6 --positional none --dtype bfloat16",
    "embed-ids": "embed --ids 15496,11,995 --ids 0 -d 4 --similarity",
    "embed-verify": "embed 'hi there' -d 4 --verify --truncate 1",
    "embed-cl100k": "embed $TEXT -e cl100k_base -d 4 --context-length 32",
    "embed-lines": "embed --lines --pool mean -d 4 -f hello.txt",
    "tokenize": "tokenize $TEXT",
    "tokenize-encode": "tokenize $TEXT --encode -e o200k_base",
    "tokenize-count": "tokenize --count -f lighthouse.txt -e gpt2 -e r50k_base",
    "tokenize-decode": "tokenize --decode --ids 15496,11,995",
    "tokenize-explain": "tokenize --explain 'lighthouse keeper'",
    "tokenize-offsets": "tokenize --offsets -f mixed-scripts.txt",
    "tokenize-models": "tokenize --list-models",
    "count": "count . -e gpt2 -e cl100k_base --workers 1",
    "count-context": "count hello.txt lighthouse.txt --share-of gpt-4o --workers 1",
    "count-engine-info": "count --engine-info -e cl100k_base",
    "shapes": "inspect-shapes",
    "shapes-train": "inspect-shapes --preset gpt2-medium --train -b 2 -t 8",
    "shapes-llama": "inspect-shapes --preset llama-3.1-8b",
    "shapes-mixtral": "inspect-shapes --preset mixtral-8x7b --dtype bfloat16",
    "shapes-custom": "inspect-shapes --preset gemma-2-9b -d 64 --context-length 32",
    "shapes-list": "inspect-shapes --list-presets",
    "broadcast": "broadcast 2,4,8 4,8",
    "broadcast-three": "broadcast 8,1,6,1 7,1,5 1",
    "windows": "windows -f lighthouse.txt -t 6 --stride 3 -b 2 --limit 2",
    "neighbors": "neighbors king -d 16 -k 3",
    "stats": "stats -d 16",
    "project": "project 'the cat sat' -d 16 --first-ids 40",
    "positions": "positions",
    "positions-rope": "positions --positional rope --rope-scaling llama3:8 -d 16 "
    "--context-length 8",
    "positions-alibi": "positions --positional alibi --heads 4 --context-length 6",
    "positions-similarity": "positions --positional sinusoidal --similarity -d 16 "
    "--context-length 8",
    "positions-preset": "positions --preset gemma-3-27b --context-length 8",
    "positions-bloom": "positions --preset bloom-176b --context-length 5 --head 3",
}


def _split(line: str) -> list[str]:
    return [TEXT if word == "$TEXT" else word for word in shlex.split(line)]


# per model folder: what every command that takes --weights says about it
FOLDER_COMMANDS: dict[str, list[str]] = {
    "embed": ["embed", "--ids", "5,6,7,8", "--ids", "9,10"],
    "embed-text": ["embed", "Hello, world!"],
    "weights": ["weights"],
    "shapes": ["inspect-shapes"],
    "stats": ["stats"],
    "neighbors": ["neighbors", "--ids", "5,6", "-k", "2"],
    "positions": ["positions", "--context-length", "6"],
}


def _folder_case(folder: str, name: str) -> list[str]:
    return [*FOLDER_COMMANDS[name], "--weights", f"m-{folder}"]  # m-gpt2: not the encoding


CASES = (
    [(name, _split(line)) for name, line in COMMANDS.items()]
    + [
        (f"{folder}-{name}", _folder_case(folder, name))
        for folder in FOLDERS
        for name in FOLDER_COMMANDS
    ]
    + [
        ("gguf-embed", ["embed", "Hello, world!", "--weights", "model.gguf"]),
        ("gguf-weights", ["weights", "model.gguf"]),
        ("gguf-shapes", ["inspect-shapes", "--weights", "model.gguf"]),
        ("gguf-tokenize", ["tokenize", TEXT, "-e", "model.gguf"]),
        ("gguf-positions", ["positions", "--weights", "model.gguf", "--context-length", "6"]),
        ("gpt2-tokenize", ["tokenize", "Hello, world!", "-e", "gpt2"]),
        ("folder-tokenize", ["tokenize", "Hello, world!", "-e", "m-llama-3.1-scaling"]),
    ]
)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The samples, a GGUF file made by samples/make-gguf.py, and the tiny model folders."""
    from support.familymodels import CASES as BUILT
    from support.familymodels import build

    work = tmp_path_factory.mktemp("json-twins")
    for sample in ("hello.txt", "lighthouse.txt", "mixed-scripts.txt"):
        shutil.copy(REPO / "samples" / sample, work / sample)
    by_name = {case.name: case for case in BUILT}
    for name in FOLDERS:
        build(by_name[name], work / f"m-{name}")
    subprocess.run(
        [sys.executable, str(REPO / "samples" / "make-gguf.py"), "model.gguf"],
        cwd=work,
        check=True,
        capture_output=True,
    )
    return work


@pytest.fixture(autouse=True)
def _fresh_engines() -> None:
    """Each twin is one command, as a user's process is: no fast tables built, and no engine
    noted, by a test that ran before it in this worker (``count --json`` names the engines)."""
    from embedcli.tokenization import engines

    engines._reset()


@pytest.fixture(autouse=True)
def _threads_as_written() -> Iterator[None]:
    """The twins were written with torch's 2 threads on a 2-core machine: a reduction's sum
    (PCA's, in project) depends in its last bits on how it is split, so each twin runs with 2
    threads, whatever this worker's default (one, under xdist: tests/conftest.py)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _weights_first(args: list[str]) -> list[str]:
    """`weights FOLDER` takes its source as an argument, not --weights."""
    if args[0] == "weights" and "--weights" in args:
        at = args.index("--weights")
        return ["weights", args[at + 1], *args[1:at], *args[at + 2 :]]
    return args


@pytest.mark.parametrize(("name", "args"), CASES, ids=[name for name, _ in CASES])
def test_json_twin_unchanged(
    name: str,
    args: list[str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("EMBEDCLI_COUNT_ENGINE", "tiktoken")
    args = _weights_first(args)
    device = ["--device", "cpu"] if _has_device(args) else []
    result = runner.invoke(app, [*args, "--json", *device])
    got = f"exit {result.exit_code}\n{result.stdout}{_stderr(result)}"
    path = JSON_GOLDEN / f"{name}.txt"
    if request.config.getoption("--update-golden"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run pytest --update-golden"
    assert got == path.read_text(encoding="utf-8"), f"--json output differs from {path}"


_DEVICE_COMMANDS = ("embed", "neighbors", "project")


def _has_device(args: list[str]) -> bool:
    return args[0] in _DEVICE_COMMANDS and "--lines" not in args


def _stderr(result: object) -> str:
    try:
        err = result.stderr  # type: ignore[attr-defined]
    except ValueError:
        return ""
    return f"--- stderr\n{err}" if err else ""
