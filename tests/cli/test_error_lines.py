"""A failure is one ``Error:`` line on stderr, whatever caused it: numbers too big for any type, a
library's warnings (never printed before the error), file names with line breakers or markup, a
missing file (said one way by every command), a missing optional requirement."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.errors import InputTextError

runner = make_runner()


SMALL = ("-d", "4", "--device", "cpu")


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["embed", "hi", "--vocab-size", str(10**30)], "is too large", 2),
        (["inspect-shapes", "-b", str(10**30)], "is too large", 2),
        (["positions", "-d", str(10**30)], "is too large", 2),
        (["stats", "-d", str(10**11)], "need", 1),
        (["neighbors", "hi", "-d", str(10**11)], "need", 1),
        (["positions", "--context-length", str(10**12)], "need", 1),
        (["embed", "--ids", str(2**63), *SMALL], "is out of range for a vocabulary", 1),
        (["broadcast", "1" + "0" * 5000, "3"], "sizes of at most 19 digits", 2),
        (
            ["inspect-shapes", "--d-model", str(2**31 - 1), "--vocab-size", str(2**31 - 1)],
            "table has more bytes than torch can count",
            1,
        ),
        (
            ["inspect-shapes", "-b", str(2**40), "-t", "1024", "-d", str(2**40)],
            "more bytes than torch can count",
            1,
        ),
    ],
)
def test_huge_numbers_are_one_error_line(args: list[str], message: str, code: int) -> None:
    expect_error(runner.invoke(app, args), message, code=code)


def test_library_warnings_do_not_precede_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from embedcli.pipeline import sources

    def noisy(*args, **kwargs):
        warnings.warn("a torch internal detail", UserWarning, stacklevel=1)
        raise InputTextError("the real reason")

    monkeypatch.setattr(sources, "embed_source", noisy)
    result = runner.invoke(app, ["embed", "hi", *SMALL])
    expect_error(result, "the real reason")
    assert result.stderr == "Error: the real reason\n"


@pytest.mark.parametrize(
    "args",
    [
        ["tokenize", "-f", "no\nsuch\rfile\x07"],
        ["project", "--ids-file", "no\nsuch", "-d", "4"],
    ],
)
def test_an_error_naming_a_strange_file_is_still_one_line(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("Error: ") and "no\\nsuch" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["tokenize", "-f", "{missing}"],
        ["embed", "-f", "{missing}"],
        ["embed", "-f", "{missing}", "-t", "4", "-o", "{out}"],
        ["count", "{missing}"],
        ["weights", "{missing}"],
        ["embed", "hi", "--weights", "{missing}"],
        ["tokenize", "hi", "-e", "{missing}/tokenizer.json"],
        ["project", "hi", "--ids-file", "{missing}"],
    ],
)
def test_a_missing_file_is_said_one_way(tmp_path: Path, args: list[str]) -> None:
    missing, out = tmp_path / "nope", tmp_path / "o.npy"
    args = [a.format(missing=missing, out=out) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code in (1, 2), result.output
    assert "no such file or folder" in result.stderr, result.stderr
    assert "No such file or directory" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tokenize", "-f", ""], "'-f' / '--file': needs a file name; it got an empty one"),
        (["embed", "-f", ""], "'-f' / '--file': needs a file name; it got an empty one"),
        (["neighbors", "-f", "", "-d", "4"], "'-f' / '--file': needs a file name"),
        (["embed", "hi", "-o", ""], "'-o' / '--output': needs a file name; it got an empty one"),
        (["embed", "hi", "--weights", ""], "'--weights': needs a source (a file, a model folder"),
        (["stats", "--weights", ""], "'--weights': needs a source"),
        (["project", "--ids-file", "", "-d", "4"], "'--ids-file': needs a file name"),
        (["embed", "hi", "-o", "x.npy/"], "x.npy/ ends in a slash, so it names a folder"),
        (["positions", "--png", "x.png/"], "x.png/ ends in a slash, so it names a folder"),
    ],
)
def test_an_empty_name_is_refused_as_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    """Path("") is ".": an empty -f, -o or --weights was read as this folder, and the error said
    "." is a folder, or holds no weights (a name the user never wrote). Path("x.npy/") is x.npy:
    an output named with a trailing slash wrote the file x.npy."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert list(tmp_path.iterdir()) == []
    expect_error(result, message, code=2)
    assert "'.'" not in result.stderr and " . " not in result.stderr


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("tiktoken", ["tokenize", "hi"]),
        ("torch", ["embed", "hi", "-d", "4"]),
        ("safetensors", ["embed", "hi", "-d", "4", "-o", "x.safetensors"]),
    ],
)
def test_a_missing_requirement_is_one_line(tmp_path: Path, module: str, args: list[str]) -> None:
    """A requirement uninstalled after embedcli was: one Error line naming it, not a traceback."""
    code = (
        "import sys\n"
        f"sys.modules[{module!r}] = None\n"
        "from embedcli.cli.typerapp import main\n"
        f"sys.argv = ['embedcli', *{args!r}]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"Error: the Python package {module!r} cannot be imported")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("command", [["embed", "hi"], ["weights"], ["stats"]])
def test_a_fifo_given_as_weights_is_not_called_missing(tmp_path: Path, command: list[str]) -> None:
    """--weights FIFO was refused as "no such file": it exists, and is not a regular file (it is
    never opened: that would wait for a writer)."""
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    args = [*command, str(fifo)] if command == ["weights"] else [*command, "--weights", str(fifo)]
    result = runner.invoke(app, args)
    expect_error(result, f"cannot read {fifo}: not a regular file (a FIFO)", code=1)
    assert "no such file" not in result.stderr


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this system")
def test_an_endless_ids_file_is_refused_at_a_list_of_ids_worth(monkeypatch) -> None:
    """project --ids-file /dev/zero read until this machine's free memory was full (1.45 GB)
    and then told the user to stream it with embed -t, which reads text, not ids."""
    from embedcli.cli import inputs

    monkeypatch.setattr(inputs, "IDS_FILE_LIMIT", 1 << 20)  # the bound, not the machine's memory
    result = runner.invoke(app, ["project", "--ids-file", "/dev/zero", "-d", "4"])
    expect_error(result, "--ids-file /dev/zero is larger than 1,048,576 bytes, more than a list", 1)
    assert "embed -t" not in result.stderr
