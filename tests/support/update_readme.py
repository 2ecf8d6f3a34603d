"""Re-run every `$ command` of the console blocks of README.md and docs/*.md, and paste the real
output under it.

    python tests/support/update_readme.py                  (every file; then review `git diff`)
    python tests/support/update_readme.py docs/embed.md    (only the files named)

Each block runs in a folder of its own holding a copy of samples/, as
tests/project/test_readme.py runs it. Machine-dependent examples (devices, --device cuda) are
re-run too, so run this where their output is the one you want to show.
tests/project/test_readme.py checks the rest stay true.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def run(command: str, workdir: Path) -> str:
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("TIKTOKEN_CACHE_DIR", str(workdir / "tiktoken-cache"))
    done = subprocess.run(
        ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    return "\n".join(line.rstrip() for line in (done.stdout + done.stderr).splitlines())


def update(path: Path, tmp: Path) -> bool:
    """Paste the real output under every command of one file; True if the file changed."""
    text = path.read_text(encoding="utf-8")
    blocks = iter(range(10_000))
    stem = path.relative_to(REPO).as_posix().replace("/", "-")

    def redo(block: re.Match[str]) -> str:
        workdir = tmp / f"{stem}-block-{next(blocks)}"  # one folder per block, as the test
        shutil.copytree(REPO / "samples", workdir / "samples")
        out = []
        for line in block.group(1).splitlines():
            if line.startswith("$ "):
                shown = run(line[2:], workdir)
                out += [line, shown] if shown else [line]
        return "```console\n" + "\n".join(out) + "\n```"

    new = re.sub(r"```console\n(.*?)```", redo, text, flags=re.S)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(arguments: list[str]) -> None:
    pages = [Path(a).resolve() for a in arguments] or PAGES
    with tempfile.TemporaryDirectory() as tmp:
        for page in pages:
            if update(page, Path(tmp)):
                print(f"updated {page.relative_to(REPO)}")


if __name__ == "__main__":
    main(sys.argv[1:])
