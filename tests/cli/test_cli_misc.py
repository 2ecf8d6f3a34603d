"""--help, --version, `devices`, `python -m embedcli`, the console script, and lazy torch import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.helpers import assert_cli_leaves_unimported, assert_python_ok, make_runner, run_script
from test_cli_embed import torch_says_auto

from embedcli import __version__
from embedcli.cli import app

runner = make_runner()


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    for name in ("embed", "tokenize", "devices"):
        assert name in result.stdout


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "Usage" in result.output
    assert "embed" in result.output


def test_embed_help_names_every_option() -> None:
    result = runner.invoke(app, ["embed", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for option in (
        "--ids",
        "--encoding",
        "--model",
        "--vocab-size",
        "--d-model",
        "--context-length",
        "--positional",
        "--seed",
        "--device",
        "--dtype",
        "--truncate",
        "--allow-special",
        "--pad-id",
        "--show",
        "--verify",
        "--output",
        "--json",
    ):
        assert option in result.stdout, option


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"embedcli {__version__}"


def test_unknown_command_is_a_usage_error() -> None:
    result = runner.invoke(app, ["frobnicate"])
    assert result.exit_code == 2


def test_devices_table() -> None:
    result = runner.invoke(app, ["devices"])
    assert result.exit_code == 0, result.output
    assert "cpu" in result.stdout and "cuda" in result.stdout and "mps" in result.stdout
    assert f"torch {torch.__version__}" in result.stdout
    assert f"--device auto → {torch_says_auto()}" in result.stdout


def test_devices_json() -> None:
    result = runner.invoke(app, ["devices", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["torch_version"] == torch.__version__
    assert data["cuda_version"] == torch.version.cuda
    assert data["auto"] == torch_says_auto()
    rows = {row["name"]: row for row in data["devices"]}
    assert rows["cpu"]["available"] is True
    assert rows["cpu"]["memory_total"] > 0
    assert set(rows["cpu"]) == {"name", "available", "description", "memory_total", "memory_free"}
    cuda_names = [n for n in rows if n.startswith("cuda")]
    assert cuda_names == (
        [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        if torch.cuda.is_available()
        else ["cuda"]
    )


def test_console_script_embeds(tmp_path: Path) -> None:
    done = run_script(
        ["embedcli", "embed", "Hello, world!", "-d", "4", "--device", "cpu", "--json"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["input_ids"] == [[15496, 11, 995, 0]]
    assert done.stderr == ""


def test_console_script_error_is_one_line(tmp_path: Path) -> None:
    done = run_script(["embedcli", "embed", "hi", "--device", "tpu"], tmp_path)
    assert done.returncode == 2  # a usage error
    assert done.stdout == ""
    assert done.stderr == (
        "Error: Invalid value for '--device': 'tpu' is not a device here: use auto, cpu, cuda, "
        "cuda:N or mps; did you mean 'cpu'? (see embedcli embed --help)\n"
    )
    done = run_script(["embedcli", "embed", "hi", "--vocab-size", "5"], tmp_path)
    assert done.returncode == 1  # bad data
    assert done.stderr.startswith("Error: token id 5") and done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0", "LANG": "C"}]
)
def test_help_under_a_stream_encoding_that_is_not_utf8(tmp_path: Path, env: dict) -> None:
    """A hostile trial's: the help's non-ASCII examples ended in a UnicodeEncodeError
    traceback; they are written escaped, and a command's own output stays UTF-8."""
    import os

    from support.helpers import script_env

    environ = {k: v for k, v in script_env(tmp_path).items() if k != "PYTHONIOENCODING"}
    environ.update(env)
    run = dict(env=environ, capture_output=True, timeout=300)
    done = subprocess.run(["embedcli", "tokenize", "--help"], **run)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert b"na\\xefve" in done.stdout  # naïve, escaped
    done = subprocess.run(["embedcli", "tokenize", "caf\u00e9", "--json"], **run)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.decode("utf-8"))["tokens"][-1]["piece"] == "\u00e9"
    assert os.environ.get("PYTHONIOENCODING") != "ascii"  # this process's own streams untouched


def test_help_is_drawn_at_most_240_columns_wide(tmp_path: Path) -> None:
    """A hostile trial's: COLUMNS=10000000 padded every help panel to ten million columns
    (27 s, 800 MB)."""
    from support.helpers import script_env

    env = {**script_env(tmp_path), "COLUMNS": "10000000"}
    env.pop("TERMINAL_WIDTH", None)
    done = subprocess.run(
        ["embedcli", "tokenize", "--help"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert max(map(len, done.stdout.splitlines())) == 240
    env["COLUMNS"] = "100"
    done = subprocess.run(
        ["embedcli", "tokenize", "--help"], env=env, capture_output=True, text=True, timeout=60
    )
    assert max(map(len, done.stdout.splitlines())) == 100  # a narrower one is kept


def test_console_script_reads_piped_stdin(tmp_path: Path) -> None:
    done = run_script(
        ["embedcli", "embed", "-d", "4", "--device", "cpu", "--json"],
        tmp_path,
        input="Hello, world!",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["input_ids"] == [[15496, 11, 995, 0]]


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        ("PermissionError(13, 'Permission denied', 'closed/config.json')",
         "Error: closed/config.json: Permission denied"),
        ("OSError(28, 'No space left on device')",
         "Error: cannot write to standard output: No space left on device"),
    ],
)  # fmt: skip
def test_an_unforeseen_os_error_is_told_as_it_is(raised: str, said: str, tmp_path: Path) -> None:
    """The last-resort handler says "cannot write" only where no file is named: a read that
    fails (an unreadable config.json) names its file instead."""
    code = (
        "import importlib\n"
        "cli = importlib.import_module('embedcli.cli.typerapp')  # not the Typer app of that name\n"
        f"def boom(**kwargs):\n    raise {raised}\n"
        "cli.app = boom\n"
        "cli.main()\n"
    )
    done = run_script([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == said


def test_python_dash_m(tmp_path: Path) -> None:
    done = run_script([sys.executable, "-m", "embedcli", "--version"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"embedcli {__version__}"


@pytest.mark.parametrize("args", [["--help"], ["embed", "--help"], ["--version"]])
def test_help_does_not_import_torch(args: list[str]) -> None:
    assert_cli_leaves_unimported(args)


def test_import_embedcli_is_lazy() -> None:
    code = (
        "import sys, embedcli\n"
        "assert 'torch' not in sys.modules\n"
        "embedcli.EmbedConfig()\n"
        "assert 'torch' not in sys.modules\n"
        "embedcli.InputEmbedding\n"
        "assert 'torch' in sys.modules\n"
    )
    assert_python_ok(code)


# Every command family's module, and the rich modules of every view but count's.
OTHER_FAMILIES = tuple(
    f"embedcli.cli.{m}"
    for m in ("embed", "shapes", "windows", "checkpoints", "positions", "devices", "tokens")
)
OTHER_VIEWS = tuple(
    f"embedcli.render.{m}"
    for m in ("checkpoints", "embed", "heatmap", "shapes", "tokens", "windows", "devices")
)


def test_a_run_builds_only_its_own_command() -> None:
    """Commands are built when looked up: `count` imports its own family and view alone."""
    assert_cli_leaves_unimported(["count", "README.md", "-q"], ("torch", *OTHER_FAMILIES))
    assert_cli_leaves_unimported(["count", "README.md", "-q"], OTHER_VIEWS)
    assert_cli_leaves_unimported(["tokenize", "hi", "--count"], ("rich", "embedcli.cli.counting"))


@pytest.mark.parametrize(
    "args",
    [
        ["embed", "hi", "-d", "4", "--json"],
        [
            "embed",
            "-f",
            "samples/lighthouse.txt",
            "-t",
            "8",
            "-d",
            "4",
            "-o",
            "{tmp}/o.npy",
            "--json",
        ],
        ["tokenize", "hi", "--json"],
        ["count", "README.md", "--json", "-q"],
        ["inspect-shapes", "--json"],
        ["windows", "-f", "samples/lighthouse.txt", "-t", "4", "--json"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_json_never_imports_rich(args: list[str], tmp_path: Path) -> None:
    """The JSON twins live in render/ beside the views, but --json goes nowhere near rich (nor
    does streaming into a file, where no person watches a progress bar)."""
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    assert_cli_leaves_unimported(args, ("rich",))


def test_help_still_lists_every_command() -> None:
    from embedcli.cli.typerapp import COMMANDS

    result = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    listed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("│ ")]
    assert [name for name in listed if name in COMMANDS] == list(COMMANDS)


def _entry_point(prelude: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    """The console script's main() in a fresh interpreter, after ``prelude``."""
    code = f"{prelude}\nimport sys\nsys.argv = ['embedcli', *{args!r}]\n"
    code += "from embedcli.cli import main\nmain()\n"
    return run_script([sys.executable, "-c", code], tmp_path)


SAYS_AT_TEARDOWN = (
    "import sys\n"
    "class Said:\n"
    "    def __del__(self):\n"
    "        sys.stderr.write('freed at teardown\\n')\n"
    "held = Said()\n"
    "import atexit\n"
    "atexit.register(lambda: sys.stderr.write('exit handler ran\\n'))\n"
)


@pytest.mark.parametrize(
    ("args", "status", "stdout"),
    [
        (["tokenize", "--count", "Hello, world!"], 0, "4\n"),
        (["tokenize", "--ids", "99999999"], 1, ""),
        (["tokenize", "--no-such-flag"], 2, ""),
    ],
)
def test_the_entry_point_skips_teardown_but_runs_exit_handlers(
    args: list[str], status: int, stdout: str, tmp_path: Path
) -> None:
    """main() ends the process without freeing everything first (0.3 s after torch), yet with
    the command's status, all its output, and every atexit handler run."""
    done = _entry_point(SAYS_AT_TEARDOWN, args, tmp_path)
    assert done.returncode == status, done.stderr
    assert done.stdout == stdout
    assert "exit handler ran" in done.stderr
    assert "freed at teardown" not in done.stderr
    assert "Traceback" not in done.stderr


def test_the_entry_point_waits_for_a_running_thread(tmp_path: Path) -> None:
    """A thread still working when the command ends is waited for, as Python's exit does."""
    marker = tmp_path / "finished"
    prelude = (
        "import threading, time\n"
        "def work():\n"
        "    time.sleep(0.5)\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "threading.Thread(target=work).start()\n"
    )
    done = _entry_point(prelude, ["tokenize", "--count", "hi"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert marker.exists()


def test_the_entry_point_keeps_all_of_a_large_output(tmp_path: Path) -> None:
    """Buffered output is flushed before the process ends: every id of a long text arrives."""
    text = "The verdict was read aloud. " * 20_000
    done = run_script(["embedcli", "tokenize", "--encode", "-"], tmp_path, input=text)
    assert done.returncode == 0, done.stderr
    from embedcli.tokenization.encodings import get_encoding

    assert done.stdout.split() == [str(i) for i in get_encoding("gpt2").encode(text)]


def test_a_short_write_is_an_error_not_a_cut_output() -> None:
    """A buffered stream on a full disk takes part of a write and says so only in its count:
    write_all keeps writing, and a write that takes nothing is an OSError."""
    import io

    from embedcli.cli.output import write_all

    class Full(io.RawIOBase):
        def __init__(self, room: int) -> None:
            self.room, self.got = room, b""

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:
            taken = bytes(data[: min(len(data), self.room, 7)])
            self.room -= len(taken)
            self.got += taken
            return len(taken)

    roomy = Full(100)
    write_all(roomy, b"x" * 50)  # seven bytes a call: every one arrives
    assert roomy.got == b"x" * 50
    with pytest.raises(OSError, match="took no more bytes"):
        write_all(Full(20), b"x" * 50)


def test_bare_embedcli_prints_its_help_once() -> None:
    done = subprocess.run([sys.executable, "-m", "embedcli"], capture_output=True, text=True)
    assert done.returncode == 0
    assert (done.stdout + done.stderr).count("Usage: embedcli") == 1
