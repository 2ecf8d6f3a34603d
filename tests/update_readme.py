"""Re-run every `$ command` of README.md's console blocks and paste the real output under it.

    python tests/update_readme.py        (then review `git diff README.md`)

Machine-dependent examples (devices, --device cuda) are re-run too, so run this where their
output is the one you want to show. tests/test_readme.py checks the rest stay true.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(command: str, workdir: Path) -> str:
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.setdefault("TIKTOKEN_CACHE_DIR", str(workdir / "tiktoken-cache"))
    done = subprocess.run(
        ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=300
    )
    return "\n".join(line.rstrip() for line in (done.stdout + done.stderr).splitlines())


def main() -> None:
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        blocks = iter(range(10_000))

        def redo(block: re.Match[str]) -> str:
            workdir = Path(tmp) / f"block-{next(blocks)}"  # one folder per block, as the test
            shutil.copytree(REPO / "samples", workdir / "samples")
            lines, out = block.group(1).splitlines(), []
            for line in lines:
                if line.startswith("$ "):
                    shown = run(line[2:], workdir)
                    out += [line, shown] if shown else [line]
            return "```console\n" + "\n".join(out) + "\n```"

        text = re.sub(r"```console\n(.*?)```", redo, text, flags=re.S)
    readme.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
