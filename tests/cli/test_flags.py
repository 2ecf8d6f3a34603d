"""The shared flags mean one thing everywhere: one table of flags, driven through every command
that has them (README: "Flags that mean the same everywhere")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from support.helpers import expect_error, make_runner, script_env

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()
TEXT = "Hello, world! The quick brown fox jumps over the lazy dog again and again."
GPT2_IDS = get_encoding("gpt2").encode(TEXT)
O200K_IDS = get_encoding("o200k_base").encode(TEXT)


def run(*args: str, input: str | None = None) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, result.output
    return result.stdout


def run_json(*args: str, input: str | None = None) -> dict:
    return json.loads(run(*args, "--json", input=input))


def command_options() -> dict[str, dict[str, object]]:
    """{command: {--long-name: click parameter}} for every command of the app."""
    group = typer.main.get_command(app)
    found = {}
    for name, command in group.commands.items():
        found[name] = {max(p.opts, key=len): p for p in command.params if p.opts[0].startswith("-")}
    return found


OPTIONS = command_options()

# Commands that tokenize text, and so take -e/-m; those that read text, and so take -f.
TOKENIZING = ("embed", "tokenize", "windows", "neighbors", "stats")
READING = ("embed", "tokenize", "windows", "neighbors")


@pytest.mark.parametrize("command", TOKENIZING)
def test_every_tokenizing_command_has_encoding_and_model(command: str) -> None:
    assert {"--encoding", "--model"} <= set(OPTIONS[command])
    assert {"-e", "-m"} <= {o for p in OPTIONS[command].values() for o in p.opts}


@pytest.mark.parametrize("command", READING)
def test_every_reading_command_has_file(command: str) -> None:
    assert "-f" in OPTIONS[command]["--file"].opts


def test_one_name_per_concept() -> None:
    """T is -t/--seq-len and B is -b/--batch-size everywhere; the old names are hidden."""
    for command in ("embed", "windows", "inspect-shapes"):
        assert OPTIONS[command]["--seq-len"].opts == ["-t", "--seq-len"]
        assert OPTIONS[command]["--batch-size"].opts == ["-b", "--batch-size"]
    assert OPTIONS["embed"]["--window"].hidden and OPTIONS["windows"]["--max-length"].hidden
    every = {name for options in OPTIONS.values() for name in options}
    assert "--max-length" not in OPTIONS["inspect-shapes"] and "--window" not in every - {
        n for n, p in OPTIONS["embed"].items() if p.hidden
    }


def test_a_shared_option_is_declared_once() -> None:
    """Same long name -> same short names, type and help, except where a command says why."""
    differ = {
        # embed's -b is a speed knob (the output is the same); -t there switches on streaming.
        ("embed", "--batch-size"),
        ("embed", "--seq-len"),
        # inspect-shapes defaults to the meta device; positions draws a smaller picture.
        ("inspect-shapes", "--device"),
        ("positions", "--d-model"),
        ("positions", "--context-length"),
        ("positions", "--positional"),
        # without --preset, positions draws from its flags: no gpt2 default there
        ("positions", "--preset"),
        # tokenize and count compare encodings: -e and -m repeat.
        ("tokenize", "--encoding"),
        ("tokenize", "--model"),
        ("count", "--encoding"),
        ("count", "--model"),
        # count's --jsonl streams one record per file, as windows' streams one per window.
        ("count", "--jsonl"),
        # windows' --stride is a data-loader option (Tables panel), embed's a streaming one.
        ("windows", "--stride"),
        # The similarity of what each command shows: tokens, or positions.
        ("positions", "--similarity"),
        # embed makes a batch of repeated --ids; tokenize, neighbors and project join them.
        ("tokenize", "--ids"),
        ("neighbors", "--ids"),
        ("project", "--ids"),
        # count's --top lists the largest files; project's places the table's first N ids.
        ("project", "--top"),
    }
    seen: dict[str, tuple[str, object, str | None, list[str]]] = {}
    for command, options in OPTIONS.items():
        for name, param in options.items():
            if (command, name) in differ or param.hidden or name in ("--help", "--json"):
                continue
            here = (command, type(param.type).__name__, param.help, sorted(param.opts))
            first = seen.setdefault(name, here)
            assert here[1:] == first[1:], f"{name}: {command} differs from {first[0]}"


# ---------------------------------------------------------------- --truncate N


def test_truncate_cuts_to_n_tokens_everywhere() -> None:
    assert run("tokenize", TEXT, "--truncate", "2") == "Hello,"
    data = run_json("embed", TEXT, "-d", "4", "--device", "cpu", "--truncate", "2")
    assert data["input_ids"] == [GPT2_IDS[:2]]


@pytest.mark.parametrize("command", ["embed", "tokenize"])
def test_a_number_after_truncate_never_becomes_a_text(command: str) -> None:
    args = [command, "Hello", "--truncate", "12"]
    if command == "embed":
        data = run_json(*args, "-d", "4", "--device", "cpu")
        assert data["input_ids"] == [[15496]]  # one sequence, not "Hello" and "12"
    else:
        assert run(*args) == "Hello"


# ---------------------------------------------------------------- --ids is input


def test_ids_are_input_everywhere() -> None:
    ids = ",".join(map(str, GPT2_IDS[:3]))
    assert run_json("tokenize", "--ids", ids)["tokens"][1]["id"] == GPT2_IDS[1]
    assert run_json("embed", "--ids", ids, "-d", "4", "--device", "cpu")["input_ids"] == [
        GPT2_IDS[:3]
    ]
    data = run_json("neighbors", "--ids", ids, "-d", "8", "-k", "2", "--device", "cpu")
    assert [t["id"] for t in data["tokens"]] == GPT2_IDS[:3]


@pytest.mark.parametrize("command", ["embed", "tokenize", "neighbors"])
def test_ids_and_text_together_is_a_usage_error(command: str) -> None:
    expect_error(runner.invoke(app, [command, "hi", "--ids", "1"]), "pass only one of", code=2)


# ---------------------------------------------------------------- -e / -m / -f


def _ids_seen(command: str, *args: str, input: str | None = None) -> list[int]:
    """The token ids a command worked on, from its JSON."""
    if command == "tokenize":
        return [t["id"] for t in run_json(command, *args, input=input)["tokens"]]
    if command == "embed":
        return run_json(command, *args, "-d", "4", "--device", "cpu", input=input)["input_ids"][0]
    if command == "neighbors":
        data = run_json(command, *args, "-d", "8", "-k", "1", "--device", "cpu", input=input)
        return [t["id"] for t in data["tokens"]]
    data = run_json(command, *args, "-t", "4", "-b", "1", "--limit", "1000", input=input)
    return [*data["batches"][0]["inputs"][0], *[b["inputs"][0][-1] for b in data["batches"][1:]]]


@pytest.mark.parametrize("command", ["embed", "tokenize", "neighbors"])
@pytest.mark.parametrize(("flag", "value"), [("-e", "o200k_base"), ("-m", "gpt-4o")])
def test_encoding_and_model_choose_the_tokenizer(command: str, flag: str, value: str) -> None:
    assert _ids_seen(command, TEXT) == GPT2_IDS
    assert _ids_seen(command, TEXT, flag, value) == O200K_IDS


def test_windows_and_stats_follow_the_encoding() -> None:
    data = run_json("windows", TEXT, "-e", "o200k_base", "-t", "4", "-b", "1")
    assert data["encoding"] == "o200k_base" and data["num_tokens"] == len(O200K_IDS)
    assert (
        run_json("windows", TEXT, "-m", "gpt-4o", "-t", "4", "-b", "1")["encoding"] == "o200k_base"
    )
    rows = run_json("stats", "-m", "gpt-4o", "-d", "4")["tables"][0]["shape"][0]
    assert rows == get_encoding("o200k_base").n_vocab


@pytest.mark.parametrize("command", READING)
def test_file_equals_text_equals_stdin(command: str, tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(TEXT, encoding="utf-8")
    from_text = _ids_seen(command, TEXT)
    assert _ids_seen(command, "-f", str(path)) == from_text
    assert _ids_seen(command, input=TEXT) == from_text


# ---------------------------------------------------------------- -t / -b / -d


def test_seq_len_is_t_everywhere(tmp_path: Path) -> None:
    shapes = run_json("inspect-shapes", "-t", "3", "-b", "2")
    assert shapes["tensors"][0]["shape"] == [2, 3]
    windows = run_json("windows", TEXT, "-t", "3", "-b", "2")
    assert {len(x) for x in windows["batches"][0]["inputs"]} == {3}
    assert windows["batch_size"] == 2 and windows["seq_len"] == 3
    out = tmp_path / "e.npy"
    run("embed", "-t", "3", "-b", "2", "-d", "4", "-o", str(out), "--device", "cpu", input=TEXT)
    assert np.load(out).shape == (len(GPT2_IDS) // 3, 3, 4)


def test_one_default_batch_size() -> None:
    from embedcli.core.config import DEFAULT_BATCH_SIZE

    assert run_json("inspect-shapes")["tensors"][0]["shape"][0] == DEFAULT_BATCH_SIZE
    assert run_json("windows", TEXT * 3, "-t", "2")["batch_size"] == DEFAULT_BATCH_SIZE


@pytest.mark.parametrize(
    "args",
    [
        ["embed", "hi", "--device", "cpu"],
        ["inspect-shapes"],
        ["neighbors", "hi", "-k", "1", "--device", "cpu"],
        ["stats"],
        ["positions"],
    ],
)
def test_d_model_is_the_width_everywhere(args: list[str]) -> None:
    data = run_json(*args, "-d", "6")
    found = json.dumps(data)
    if args[0] == "embed":
        assert data["config"]["d_model"] == 6
    elif args[0] == "inspect-shapes":
        assert data["tensors"][1]["shape"][-1] == 6
    elif args[0] == "stats":
        assert data["tables"][0]["shape"][1] == 6
    elif args[0] == "positions":
        assert data["shape"][1] == 6
    else:
        assert "neighbors" in found


# ---------------------------------------------------------------- usage errors are exit 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["embed", "hi", "--device", "cdua"], "did you mean 'cuda'"),
        (["inspect-shapes", "--device", "cdua"], "did you mean 'cuda'"),
        (["neighbors", "hi", "--device", "cdua"], "did you mean 'cuda'"),
        (["embed", "hi", "--dtype", "float8"], "is not one of: float32, float16, bfloat16"),
        (["inspect-shapes", "--dtype", "float8"], "is not one of: float32, float16, bfloat16"),
        (["embed", "hi", "--positional", "sinus"], "did you mean 'sinusoidal'"),
        (["inspect-shapes", "--positional", "sinus"], "did you mean 'sinusoidal'"),
        (["positions", "--positional", "sinus"], "did you mean 'sinusoidal'"),
        (["embed", "--lines", "--pool", "maen"], "did you mean 'mean'"),
        (["inspect-shapes", "--preset", "gtp2"], "did you mean 'gpt2'"),
        (["tokenize", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["windows", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["neighbors", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["stats", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["embed", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["embed", "hi", "-d", "0"], "0 is not in the range x>=1"),
        (["inspect-shapes", "-d", "0"], "0 is not in the range x>=1"),
        (["stats", "-d", "0"], "0 is not in the range x>=1"),
        (["positions", "-d", "0"], "0 is not in the range x>=1"),
        (["windows", "hi", "-t", "0"], "0 is not in the range x>=1"),
        (["inspect-shapes", "-b", "0"], "0 is not in the range x>=1"),
        (["embed", "hi", "--show", "0"], "0 is not in the range x>=1"),
    ],
)
def test_usage_errors_exit_2_everywhere(args: list[str], message: str) -> None:
    expect_error(runner.invoke(app, args), message, code=2)


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


# ---------------------------------------------------------------- help


@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_help_examples_are_whole_lines_at_80_columns(command: str) -> None:
    """Every example of a command's help stays on one line, copy-pasteable, at 80 columns."""
    group = typer.main.get_command(app)
    examples = [
        line.strip()
        for line in (group.commands[command].help or "").splitlines()
        if line.strip().startswith("embedcli ")
    ]
    assert examples
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    shown = [line.strip() for line in result.stdout.splitlines()]
    for example in examples:
        assert example in shown, example


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["tokenize", "Hello", "--ids"], "to print the ids of a text, use --encode"),
        (
            ["embed", "Hello", "--truncate"],
            "to cut to the context length, use --truncate-to-context",
        ),
    ],
)
def test_an_old_spelling_says_what_it_became(args: list[str], hint: str) -> None:
    result = runner.invoke(app, args)
    expect_error(result, hint, code=2)
    assert f"(see embedcli {args[0]} --help)" in result.stderr


def test_a_bad_top_level_option_is_one_line() -> None:
    expect_error(runner.invoke(app, ["--bogus"]), "No such option: --bogus", code=2)


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


def test_a_deprecation_warning_only_after_success(tmp_path: Path) -> None:
    """A failing command's stderr is its one Error: line, even with an old flag."""
    result = runner.invoke(app, ["windows", "a b c", "--max-length", "4"])
    expect_error(result, "too few for one window")
    assert "deprecated" not in result.stderr
    result = runner.invoke(app, ["windows", TEXT, "--max-length", "2", "-b", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert (
        result.stderr == "Warning: --max-length is deprecated and will be removed; use --seq-len\n"
    )


def test_bare_command_prints_the_help_and_succeeds() -> None:
    result = runner.invoke(app, [])
    assert result.exit_code == 0 and "Usage" in result.stdout and result.stderr == ""


def test_ids_take_ascii_digits_only() -> None:
    expect_error(runner.invoke(app, ["embed", "--ids", "١٢"]), "'١٢' is not a token id", code=2)


@pytest.mark.parametrize("columns", ["0", "-5", "abc"])
def test_a_nonsense_terminal_width_still_shows_the_tables(columns: str) -> None:
    result = runner.invoke(app, ["broadcast", "8,4,256", "4,256"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    assert "result: (8,4,256)" in result.stdout


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
