"""A package the command needs that is not installed: one cause, one exit code (1) and one line
naming the install, in every command (count --engine dask exited 2 where positions --png exited
1). The package is blocked for the test (``sys.modules[name] = None`` makes its import fail)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.errors import MissingExtraError

runner = make_runner()


def cases(tmp: Path) -> list[tuple[str, list[str], str]]:
    (tmp / "a.txt").write_text("hello world\n", encoding="utf-8")
    return [
        ("distributed", ["count", str(tmp), "--engine", "dask"], "pip install 'embedcli[dask]'"),
        ("fsspec", ["count", "memory://corpus/"], "pip install fsspec"),
        ("matplotlib", ["positions", "--png", str(tmp / "x.png")], "pip install 'embedcli[plot]'"),
    ]


@pytest.mark.parametrize("index", range(3))
def test_a_missing_extra_exits_1_naming_its_install(tmp_path: Path, monkeypatch, index) -> None:
    module, args, install = cases(tmp_path)[index]
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)
    expect_error(runner.invoke(app, args), install, 1)
    assert not (tmp_path / "x.png").exists()


def test_the_cause_has_its_own_class() -> None:
    assert MissingExtraError("x").exit_code == 1
