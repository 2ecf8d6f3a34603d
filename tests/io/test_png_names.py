"""--png names a PNG file to write: a folder (., .., an existing one, or the empty name, which a
path reads as .) or a blank name is refused in one true line before any work, by each command
that draws one."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner

from embedcli.cli import app

runner = make_runner()

COMMANDS = {
    "project": ["project", "hi", "-d", "4", "--device", "cpu"],
    "positions": ["positions", "--context-length", "8", "-d", "4"],
}
FOLDER = "not a PNG file name; give a file name ending in .png"


@pytest.mark.parametrize(
    ("value", "message", "code"),
    [
        (".", f"--png . (or an empty name) is the current folder, {FOLDER}", 1),
        ("..", f"--png .. is a folder, {FOLDER}", 1),
        ("maps", f"--png maps is a folder, {FOLDER}", 1),
        ("maps/", f"--png maps is a folder, {FOLDER}", 1),
        (" ", "--png ' ' has a blank file name; give a file name ending in .png", 2),
        ("maps/ ", "--png 'maps/ ' has a blank file name; give a file name ending in .png", 2),
    ],
)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_png_that_names_no_file_is_refused_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str, value: str, message: str,
    code: int,
) -> None:  # fmt: skip
    if command == "positions" and value == ".":
        pytest.skip("positions refuses a name-less --png in cli/checks.check_png_name first")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "maps").mkdir()
    expect_error(runner.invoke(app, [*COMMANDS[command], "--png", value]), message, code)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["maps"]  # nothing written


def test_an_empty_png_name_is_the_current_folder_for_project(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*COMMANDS["project"], "--png", ""])
    expect_error(result, "--png . (or an empty name) is the current folder, not a PNG file", 1)
