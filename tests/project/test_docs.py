"""The README is a front door and docs/ is the manual: every page is in mkdocs.yml's nav, every
relative link and anchor resolves (on GitHub and on the built site alike), the README links to
every page, and `mkdocs build --strict` passes."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.helpers import REPO
from test_readme import PAGES

DOCS = REPO / "docs"
README = REPO / "README.md"
MANUAL = sorted(DOCS.glob("*.md"))
# A page's address on the site is its file name without .md; other code links to these names.
PAGE_NAMES = {
    "index", "embed", "tokenize", "count", "counting-at-scale", "shapes", "windows",
    "checkpoints", "undertrained", "real-models", "gguf", "families", "positions", "project",
    "devices",
    "python-api", "reliability", "benchmarks", "development",
}  # fmt: skip


def without_code(text: str) -> str:
    """Markdown with fenced blocks and code spans blanked: what is left can hold links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def headings(text: str) -> list[str]:
    """The text of every heading outside fenced blocks, as written."""
    return [m.group(1) for m in re.finditer(r"^#{1,6} +(.+?) *#*$", re.sub(
        r"^```.*?^```", "", text, flags=re.S | re.M), flags=re.M)]  # fmt: skip


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text, lower-cased, without punctuation
    (letters, digits, `_` and `-` stay), spaces as hyphens. mkdocs.yml makes the site's the same
    (pymdownx.slugs, case lower)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> list[str]:
    return [github_slug(h) for h in headings(path.read_text(encoding="utf-8"))]


def links(path: Path) -> list[str]:
    """Every link and image target of a page, outside code."""
    text = without_code(path.read_text(encoding="utf-8"))
    return re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)


def relative(target: str) -> bool:
    return not re.match(r"[a-z][a-z0-9+.-]*:", target)  # no scheme: https:, mailto:


def resolve(page: Path, target: str) -> tuple[Path, str]:
    """The file a relative link points to, and its anchor (empty when it has none)."""
    file, _, anchor = target.partition("#")
    return ((page.parent / file).resolve() if file else page), anchor


def nav_files(nav: object) -> list[str]:
    """The files an mkdocs nav lists, at any depth."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for entry in nav for f in nav_files(entry)]
    if isinstance(nav, dict):
        return [f for value in nav.values() for f in nav_files(value)]
    return []


class _Loader(yaml.SafeLoader):
    """mkdocs.yml as data, its python tags (the slugify function) read as nothing."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)


def mkdocs_config() -> dict:
    return yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move text into docs/"


def test_the_manual_has_its_pages() -> None:
    assert {p.stem for p in MANUAL} == PAGE_NAMES
    assert set(PAGES) == {README, *MANUAL}  # every page's examples are run


def test_every_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = mkdocs_config()
    assert config["docs_dir"] == "docs"
    assert config["site_url"] == "https://embedcli.github.io/embedcli/"
    assert config["theme"]["name"] == "material"
    listed = nav_files(config["nav"])
    assert len(listed) == len(set(listed)), listed
    assert set(listed) == {p.name for p in MANUAL}
    assert all((DOCS / name).is_file() for name in listed)


@pytest.mark.parametrize("page", [README, *MANUAL], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in filter(relative, links(page)):
        file, anchor = resolve(page, target)
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif page.parent == DOCS and not file.is_relative_to(DOCS):
            broken.append(f"{target}: outside docs/ (name the file in a code span instead)")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken


@pytest.mark.parametrize("page", [README, *MANUAL], ids=lambda p: p.relative_to(REPO).as_posix())
def test_headings_are_unique_on_a_page(page: Path) -> None:
    """GitHub and MkDocs number a repeated heading's anchor differently (-1, _1): avoid both."""
    slugs = anchors(page)
    assert len(slugs) == len(set(slugs)), sorted(s for s in slugs if slugs.count(s) > 1)


def linked_pages(page: Path) -> set[str]:
    return {
        resolve(page, target)[0].name
        for target in filter(relative, links(page))
        if resolve(page, target)[0].parent == DOCS
    }


def test_the_readme_links_to_every_page() -> None:
    assert linked_pages(README) >= {p.name for p in MANUAL}


def test_the_manual_home_links_to_every_other_page() -> None:
    assert linked_pages(DOCS / "index.md") >= {p.name for p in MANUAL} - {"index.md"}


def flag_table(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    section = text.split("## Flags that mean the same everywhere\n", 1)[1].split("\n## ")[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


def test_the_flag_vocabulary_is_the_same_in_the_readme_and_the_manual() -> None:
    table = flag_table(README)
    assert table.startswith("| concept | flag | where |")
    assert table == flag_table(DOCS / "index.md")


def test_the_readme_names_every_command() -> None:
    import click
    import typer

    from embedcli.cli import app

    group = typer.main.get_command(app)
    names = group.list_commands(click.Context(group))
    section = README.read_text(encoding="utf-8").split("## The commands\n", 1)[1]
    table = "\n".join(line for line in section.split("\n## ")[0].splitlines() if line[:1] == "|")
    assert names and all(f"`{name}`" in table for name in names), names


def test_the_manual_shows_the_pictures_of_samples() -> None:
    """The manual cannot link outside docs/: its images are copies of those in samples/."""
    images = [
        resolve(page, target)[0] for page in MANUAL for target in links(page)
        if relative(target) and target.endswith(".png")
    ]  # fmt: skip
    assert images
    for image in images:
        assert image.read_bytes() == (REPO / "samples" / image.name).read_bytes(), image


@pytest.mark.parametrize("page", [README, *MANUAL], ids=lambda p: p.relative_to(REPO).as_posix())
def test_code_blocks_open_with_a_language_and_close(page: Path) -> None:
    """A stray fence turns the rest of a page inside out, and its examples stop being run."""
    fences = [line for line in page.read_text(encoding="utf-8").splitlines() if line[:3] == "```"]
    assert len(fences) % 2 == 0, fences
    assert all(re.fullmatch(r"```[a-z]+", f) for f in fences[::2]), fences[::2]
    assert all(f == "```" for f in fences[1::2]), fences[1::2]


def test_the_manual_is_plain_markdown() -> None:
    """No MkDocs-only syntax: the pages read the same on GitHub."""
    for page in MANUAL:
        text = without_code(page.read_text(encoding="utf-8"))
        assert not re.search(r"^(!!!|\?\?\?|===) ", text, flags=re.M), page.name
        assert "{{" not in text and "{%" not in text, page.name


def test_mkdocs_builds_the_manual_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install mkdocs mkdocs-material)")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "embed" / "index.html").is_file()
