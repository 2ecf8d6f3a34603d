"""What every command does alike: help whose examples are whole lines at 80 columns, old
spellings that say what they became, deprecation warnings only after success, a bare command
that prints the help, tables at any terminal width, -q everywhere, and --list-models wherever -m
is taken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from support.cliflags import OPTIONS, TEXT
from support.helpers import expect_error, make_runner

from embedcli.cli import app

runner = make_runner()


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
