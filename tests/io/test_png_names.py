"""--png names a PNG file to write: a folder (., .., an existing one), an empty name or a blank
name is refused in one true line before any work, by each command
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
        (".", f"--png . is the current folder, {FOLDER}", 1),
        ("..", f"--png .. is a folder, {FOLDER}", 1),
        ("maps", f"--png maps is a folder, {FOLDER}", 1),
        ("maps/", "'--png': maps/ ends in a slash, so it names a folder; give a file name", 2),
        (" ", "--png ' ' has a blank file name; give a file name ending in .png", 2),
        ("maps/ ", "--png 'maps/ ' has a blank file name; give a file name ending in .png", 2),
    ],
)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_png_that_names_no_file_is_refused_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str, value: str, message: str,
    code: int,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "maps").mkdir()
    expect_error(runner.invoke(app, [*COMMANDS[command], "--png", value]), message, code)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["maps"]  # nothing written


@pytest.mark.parametrize("command", COMMANDS)
def test_an_empty_png_name_is_refused_as_empty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str
) -> None:
    """Path("") is ".": the empty name was reported as the current folder (project) or as
    "it got none" (positions); it is a usage error saying the name is empty."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*COMMANDS[command], "--png", ""])
    expect_error(result, "'--png': needs a file name; it got an empty one", 2)
    assert list(tmp_path.iterdir()) == []
