"""Every command's --help ends with the address of its page of the manual, and that page exists."""

from __future__ import annotations

import re

import pytest
from support.helpers import REPO, make_runner

from embedcli.cli import app
from embedcli.cli.typerapp import COMMANDS, MANUAL, manual_page

runner = make_runner()


def site_url() -> str:
    found = re.search(r"^site_url:\s*(\S+)\s*$", (REPO / "mkdocs.yml").read_text(), flags=re.M)
    assert found, "mkdocs.yml names no site_url"
    return found.group(1)


def test_the_manual_is_where_mkdocs_builds_it() -> None:
    assert site_url() == MANUAL


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_links_to_a_page_that_exists(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    address = manual_page(command)
    assert f"Manual: {address}" in result.stdout
    page = address.removeprefix(MANUAL).strip("/")
    assert (REPO / "docs" / f"{page}.md").is_file(), f"docs/{page}.md is missing"


def test_the_app_help_links_to_the_manual() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"Manual: {MANUAL}" in result.stdout
    assert (REPO / "docs" / "index.md").is_file()
