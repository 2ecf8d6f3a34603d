"""Issue 24, the second hardening round: what a signal says, full disks, cuts inside a character,
usage errors before torch, and the other findings that are not count's or the hub's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from support.helpers import expect_error, make_runner, script_env

from embedcli.cli import app
from embedcli.io import outputs
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()
SMALL = ("-d", "4", "--device", "cpu")


# ---------------------------------------------------------------- what a signal says


def default_signals() -> None:
    """In the child: Ctrl-C and SIGHUP as a terminal's foreground job has them (a test run under
    nohup, or in a shell's background, ignores them, and a child would inherit that)."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def test_signal_after_the_output_is_in_place_says_so(tmp_path: Path) -> None:
    """A Ctrl-C that comes while a big --json is still being printed, after -o's file was renamed
    into place, says that file is whole: not "no output file was written"."""
    out = tmp_path / "o3.npy"
    out.write_text("OLD\n")
    text = " ".join(["hello world"] * 200)
    process = subprocess.Popen(
        ["embedcli", "embed", text, "-d", "768", "--device", "cpu", "-o", str(out), "--json"],
        stdout=subprocess.PIPE,  # never read until the end: the JSON fills the pipe and waits
        stderr=subprocess.PIPE,
        env=script_env(tmp_path),
        cwd=tmp_path,
        preexec_fn=default_signals,
    )
    for _ in range(600):  # until the new array is in place
        if out.read_bytes()[:6] == b"\x93NUMPY":
            break
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    said = stderr.decode()
    assert said.startswith(f"Interrupted: {out} had been written whole before the signal"), said
    assert "no output file was written or changed" not in said
    assert np.load(out).shape == (1, 400, 768)


def test_signal_during_the_renames_is_delivered_after_them(tmp_path: Path) -> None:
    """Staged files are renamed as one step: a signal in the middle waits, then is delivered
    (it used to be dropped), and the record says every file is in place."""
    outputs.WRITTEN.reset()
    got: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda s, _: got.append(s))
    started = signal.signal(signal.SIGINT, signal.default_int_handler)  # not SIG_IGN (nohup)
    try:
        stage = outputs.Staging()
        for name in ("a.bin", "b.bin"):
            stage.open(tmp_path / name).write(name.encode())
        real = os.replace

        def replace_then_signal(src: object, dst: object) -> None:
            real(src, dst)
            signal.raise_signal(signal.SIGINT)

        os.replace = replace_then_signal
        try:
            with pytest.raises(KeyboardInterrupt):
                stage.commit()
        finally:
            os.replace = real
    finally:
        signal.signal(signal.SIGUSR1, previous)
        signal.signal(signal.SIGINT, started)
    assert [p.name for p in outputs.WRITTEN.paths] == ["a.bin", "b.bin"]
    assert (tmp_path / "b.bin").read_bytes() == b"b.bin"


def test_cache_entries_are_not_called_outputs(tmp_path: Path) -> None:
    outputs.WRITTEN.reset()
    with outputs.atomic_write(tmp_path / "entry", record=False) as handle:
        handle.write(b"x")
    assert outputs.WRITTEN.paths == []


# ---------------------------------------------------------------- a full disk


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Every temporary output file is /dev/full: the kernel's own ENOSPC on the first write."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    real = tempfile.mkstemp

    def on_full_disk(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, name = real(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(outputs.tempfile, "mkstemp", on_full_disk)
    return tmp_path


@pytest.mark.parametrize("suffix", [".npy", ".pt", ".safetensors"])
def test_full_disk_is_one_line_for_every_format(full_disk: Path, suffix: str) -> None:
    out = full_disk / f"x{suffix}"
    out.write_bytes(b"OLD")
    text = " ".join(["Hello world"] * 50)  # 400 KB: more than one buffer's worth
    result = runner.invoke(app, ["embed", text, "-d", "1024", "--device", "cpu", "-o", str(out)])
    expect_error(result, f"cannot write {out}: No space left on device")
    assert "requested and" not in result.stderr and "enforce fail" not in result.stderr
    assert out.read_bytes() == b"OLD"
    assert [p.name for p in full_disk.iterdir()] == [out.name]


def test_full_disk_while_streaming(full_disk: Path) -> None:
    out = full_disk / "s.npy"
    result = runner.invoke(
        app, ["embed", "-t", "4", *SMALL, "-q", "-o", str(out)], input="a b " * 50
    )
    expect_error(result, f"cannot write {out}: No space left on device")
    assert not out.exists()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A real 256 KiB file system (tmpfs), where a write runs out part way: NumPy's and torch's
    own wording of that ("N requested and M written", "enforce fail") is what users met."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.parametrize("suffix", [".npy", ".pt", ".safetensors"])
def test_a_disk_that_fills_part_way(small_disk: Path, suffix: str) -> None:
    out = small_disk / f"x{suffix}"
    out.write_bytes(b"OLD")
    text = " ".join(["Hello world"] * 50)  # 400 KB of float32
    result = runner.invoke(app, ["embed", text, "-d", "1024", "--device", "cpu", "-o", str(out)])
    expect_error(result, f"cannot write {out}: No space left on device")
    assert out.read_bytes() == b"OLD"
    assert [p.name for p in small_disk.iterdir()] == [out.name]


# ---------------------------------------------------------------- control characters


BREAKERS = ["\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1b", "\u202e"]


@pytest.mark.parametrize("char", BREAKERS)
def test_a_piece_never_breaks_its_row(char: str) -> None:
    """Python and rich break lines at 0x1c-0x1e, 0x85 and U+2028/2029: a table row holding such
    a piece was drawn on two lines. Every row of the table is one line of the box."""
    result = runner.invoke(app, ["tokenize", f"a{char}b"])
    assert result.exit_code == 0, result.output
    body = [line for line in result.stdout.split("\n") if line.startswith("│")]
    assert len(body) == len(get_encoding("gpt2").encode(f"a{char}b"))
    assert all(line.endswith("│") for line in body)
    assert char not in result.stdout


def test_id_217_is_shown_as_its_control_picture() -> None:
    result = runner.invoke(app, ["tokenize", "--ids", "217"])
    assert result.exit_code == 0, result.output
    assert "│ ␝ " in result.stdout and "\x1d" not in result.stdout


def test_tensor_names_are_shown_visibly(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    path = tmp_path / "odd.safetensors"
    save_file({"wte\u2028x\x1d.weight": torch.zeros(10, 4)}, str(path))
    result = runner.invoke(app, ["weights", str(path)])
    assert result.exit_code == 0, result.output
    assert "wte<U+2028>x␝.weight" in result.stdout
    assert "\u2028" not in result.stdout and "\x1d" not in result.stdout


def test_error_lines_escape_every_line_breaker(tmp_path: Path) -> None:
    result = runner.invoke(app, ["tokenize", "-f", str(tmp_path / "no\u2028such\x85file")])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "no\\u2028such\\x85file" in result.stderr


# ---------------------------------------------------------------- flags a script passes everywhere

COMMANDS = ("embed", "tokenize", "count", "inspect-shapes", "broadcast", "windows", "weights")
COMMANDS += ("neighbors", "project", "stats", "positions", "devices")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_quiet(command: str) -> None:
    result = runner.invoke(app, [command, "-q", "--help"])
    assert result.exit_code == 0, result.output
    assert "--quiet" in result.stdout


def test_quiet_changes_nothing_where_there_is_no_progress() -> None:
    for args in (["inspect-shapes"], ["broadcast", "8,4,256", "4,256"], ["tokenize", "hi"]):
        plain, quiet = runner.invoke(app, args), runner.invoke(app, [*args, "-q"])
        assert plain.exit_code == quiet.exit_code == 0, quiet.output
        assert plain.stdout == quiet.stdout


TAKES_MODEL = ("embed", "tokenize", "count", "windows", "neighbors", "project", "stats")


@pytest.mark.parametrize("command", TAKES_MODEL)
def test_list_models_wherever_m_is_taken(command: str) -> None:
    result = runner.invoke(app, [command, "--list-models", "--json"])
    assert result.exit_code == 0, result.output
    models = {m["name"]: m["encoding"] for m in json.loads(result.stdout)["models"]}
    assert models["gpt-4o"] == "o200k_base" and models["gpt-4"] == "cl100k_base"
    table = runner.invoke(app, [command, "--list-models"])
    assert table.exit_code == 0 and "gpt-4o" in table.stdout


@pytest.mark.parametrize("command", ["embed", "tokenize", "neighbors"])
def test_list_models_with_more_is_a_usage_error(command: str) -> None:
    result = runner.invoke(app, [command, "hi", "--list-models"])
    expect_error(result, "--list-models prints the model table: drop TEXT", code=2)


def test_tokenize_count_json_names_the_models_asked_for() -> None:
    args = ["tokenize", "hello world", "--count", "--json", "-m", "gpt-4o", "-m", "gpt-4"]
    result = runner.invoke(app, [*args, "-m", "gpt-4o-mini"])
    assert result.exit_code == 0, result.output
    found = {e["encoding"]: e["models"] for e in json.loads(result.stdout)["encodings"]}
    assert found == {"o200k_base": ["gpt-4o", "gpt-4o-mini"], "cl100k_base": ["gpt-4"]}


# ---------------------------------------------------------------- errors before torch


def _fails_before_torch(args: list[str], code: int, said: str, block: str = "") -> None:
    """The command fails with ``said`` and never imports torch (1-2 s the user waited)."""
    from support.helpers import assert_python_ok

    assert_python_ok(
        "import sys\n"
        f"{block}"
        "from embedcli.cli import app\n"
        "try:\n"
        f"    app({args!r}, prog_name='embedcli')\n"
        "except SystemExit as exit:\n"
        f"    assert exit.code == {code}, exit.code\n"
        "else:\n"
        "    raise AssertionError('it succeeded')\n"
        "assert 'torch' not in sys.modules, 'torch was imported first'\n"
    )
    if not block:
        result = runner.invoke(app, args)
        expect_error(result, said, code)


def test_a_text_too_long_names_seq_len_first(tmp_path: Path) -> None:
    long = tmp_path / "long.txt"
    long.write_text("word " * 3000)
    args = ["embed", "-f", str(long), "-o", str(tmp_path / "o.npy")]
    _fails_before_torch(args, 1, "exceeds the context length (1024); pass -t/--seq-len N with -o")
    assert not (tmp_path / "o.npy").exists()


def test_a_window_beyond_the_context_fails_before_torch(tmp_path: Path) -> None:
    long = tmp_path / "long.txt"
    long.write_text("word " * 3000)
    args = ["embed", "-f", str(long), "-t", "2048", "-o", str(tmp_path / "o.npy")]
    _fails_before_torch(args, 1, "--seq-len (2048) exceeds the context length (1024)")


@pytest.mark.parametrize("command", [["positions"], ["project", "hi"]])
def test_png_without_matplotlib_fails_before_torch(tmp_path: Path, command: list[str]) -> None:
    args = [*command, "-d", "4", "--png", str(tmp_path / "x.png")]
    block = "sys.modules['matplotlib'] = None  # as if it were not installed\n"
    _fails_before_torch(args, 1, "--png needs matplotlib", block)
    assert not (tmp_path / "x.png").exists()


def test_lines_name_the_line_of_an_id_out_of_range() -> None:
    result = runner.invoke(
        app, ["embed", "--lines", *SMALL, "--vocab-size", "10000"], input="hi\nhello\n"
    )
    assert result.exit_code == 1, result.output
    said = "Error: line 2: token id 31373 (position 0) is out of range for a vocabulary of 10000"
    assert result.stderr.startswith(said), result.stderr
    assert [json.loads(x)["line"] for x in result.stdout.splitlines()] == [1]  # streamed, whole


@pytest.mark.parametrize(("pool", "blank"), [("none", []), ("mean", None), ("last", None)])
def test_a_blank_line_keeps_its_record(pool: str, blank: object) -> None:
    result = runner.invoke(app, ["embed", "--lines", "--pool", pool, *SMALL], input="hi\n\nyo\n")
    assert result.exit_code == 0, result.output
    records = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3]
    assert (records[1]["input_ids"], records[1]["input_embeddings"]) == ([], blank)
    assert records[0]["input_embeddings"] is not None


def test_streaming_pt_is_refused_before_torch_and_help_says_so(tmp_path: Path) -> None:
    args = ["embed", "-t", "4", "-d", "4", "-f", __file__, "-o", str(tmp_path / "x.pt")]
    _fails_before_torch(args, 2, "streaming (-t/--seq-len) writes .npy or .safetensors")
    shown = runner.invoke(app, ["embed", "--help"], terminal_width=200).stdout
    assert "(streamed, with -t/--seq-len: .npy or .safetensors)" in " ".join(
        shown.replace("│", " ").split()
    )


# ---------------------------------------------------------------- files a folder holds


@pytest.mark.parametrize("kind", ["fifo", "huge", "folder", "not-json", "a-list"])
def test_an_unreadable_tokenizer_config_is_refused_not_skipped(tmp_path: Path, kind: str) -> None:
    """tokenizer_config.json names the pad and end tokens: one that cannot be read was skipped
    (a FIFO) while config.json's twin was refused; both are refused now, the same way."""
    from support.hub import gpt2_tokenizer_json

    gpt2_tokenizer_json(tmp_path)
    config = tmp_path / "tokenizer_config.json"
    config.unlink()
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "huge":
        with config.open("wb") as handle:
            handle.truncate(200 << 20)  # sparse: 200 MB that take no disk
    elif kind == "folder":
        config.mkdir()
    else:
        config.write_text("{nope" if kind == "not-json" else "[1, 2]")
    result = runner.invoke(app, ["tokenize", "hi", "-e", str(tmp_path)])
    expect_error(result, str(config))
    assert ("not valid JSON" if kind == "not-json" else "") in result.stderr


# ---------------------------------------------------------------- one wording


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


@pytest.mark.parametrize("name", ["gpu", "GPU", "gpu:0", "nvidia", "metal"])
def test_device_gpu_says_what_torch_calls_it(name: str) -> None:
    result = runner.invoke(app, ["embed", "hi", "--device", name])
    expect_error(result, "is not a device name: torch names", code=2)
    assert "did you mean 'cpu'" not in result.stderr
    assert ("mps" if name == "metal" else "cuda") in result.stderr


# ---------------------------------------------------------------- closed streams


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
        "from embedcli.cli.app import main\n"
        f"sys.argv = ['embedcli', *{args!r}]\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"Error: the Python package {module!r} cannot be imported")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_the_wrote_line_shows_a_file_name_visibly(tmp_path: Path) -> None:
    out = tmp_path / "a\x1db\u2028c.npy"
    result = runner.invoke(app, ["embed", "hi", *SMALL, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "a␝b<U+2028>c.npy" in result.stdout and "\x1d" not in result.stdout
    assert out.exists()


# ---------------------------------------------------------------- what the newcomer trial found


def test_gpt_oss_is_harmony_offline() -> None:
    result = runner.invoke(
        app, ["tokenize", "-m", "gpt-oss-20b", "<|start|>hi", "--allow-special", "--encode"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.split()[0] == "200006"  # <|start|>, one special id


def test_a_name_tiktoken_knows_exactly_is_not_taken_for_its_prefix() -> None:
    from embedcli.errors import UsageError
    from embedcli.tokenization import modelnames

    with pytest.raises(UsageError, match="tiktoken says is p50k_base"):
        modelnames.lookup("davinci-codex")
    assert modelnames.lookup("gpt-4o-2024-08-06").encoding == "o200k_base"


def test_bare_embedcli_prints_its_help_once() -> None:
    done = subprocess.run([sys.executable, "-m", "embedcli"], capture_output=True, text=True)
    assert done.returncode == 0
    assert (done.stdout + done.stderr).count("Usage: embedcli") == 1
