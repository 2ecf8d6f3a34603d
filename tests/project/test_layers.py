"""The house: the packages of embedcli/ import one way, as each package's docstring says.

Each package's ``__init__`` docstring ends with ``Imports: a, b, c.``: the only other parts of
embedcli its modules may import (lazy imports inside functions and TYPE_CHECKING imports count
too: a lazy import is still a dependency). This test reads every module's imports and holds them
against those lines, checks that the lines themselves form layers (no circle), and keeps the
house rules the layout stands on: few loose modules, none over 450 lines, typer only in the
command line and rich only there and in render/.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers import REPO, script_env

PACKAGE = REPO / "embedcli"
LOOSE = {"__init__", "__main__", "errors"}  # modules at the top of embedcli/, by design
MAX_LINES = 450
THIRD_PARTY_HOMES = {"typer": {"cli"}, "rich": {"cli", "render"}}


def packages() -> list[str]:
    return sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


def declared_imports(package: str) -> set[str]:
    """The parts a package's docstring says it may import (errors is always allowed)."""
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or ""
    found = re.search(r"^Imports: ([a-z, ]+)\.$", doc, flags=re.M)
    assert found, f"embedcli/{package}/__init__.py's docstring has no 'Imports: ...' line"
    return {name.strip() for name in found.group(1).split(",")}


def part_of(module: str) -> str:
    """The part of embedcli a dotted module name belongs to: its package, or a loose module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "embedcli"


def absolute_imports(source: str) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every absolute import in ``source``, at any depth (lazy and
    TYPE_CHECKING imports included); ``import a.b`` gives ``(line, "a.b", [])``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names)
    return found


def embedcli_imports(source: str) -> list[tuple[int, str, list[str]]]:
    """The absolute imports of embedcli in ``source``."""
    return [i for i in absolute_imports(source) if i[1].split(".")[0] == "embedcli"]


def violations(package: str, source: str, allowed: set[str]) -> list[str]:
    """What a module of ``package`` imports that its package may not."""
    bad = []
    for line, module, names in embedcli_imports(source):
        targets = {part_of(module)}
        if module == "embedcli":  # `from embedcli import x`: x is a part, or the version
            targets = {name if name != "__version__" else package for name in names}
        for target in targets - {package, "errors"} - allowed:
            bad.append(f"line {line}: imports {module} ({target}, not in 'Imports:')")
    return bad


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_package_says_what_it_owns_and_may_import() -> None:
    for package in packages():
        doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text()))
        assert doc and len(doc.splitlines()) >= 3, f"{package}/__init__.py says too little"
        assert declared_imports(package) <= set(packages()) | {"errors"}, package


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_package_rules(path: Path) -> None:
    relative = path.relative_to(PACKAGE)
    if len(relative.parts) == 1:  # a loose module
        imported = {part_of(m) for _, m, _ in embedcli_imports(path.read_text())}
        if relative.stem == "errors":
            assert imported == set(), "errors.py imports nothing of embedcli"
        return
    package = relative.parts[0]
    assert violations(package, path.read_text(), declared_imports(package)) == []


def test_the_declared_imports_are_layers() -> None:
    """No package may reach, through the packages it imports, back to itself."""
    graph = {package: declared_imports(package) - {"errors"} for package in packages()}

    def reach(start: str) -> set[str]:
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(graph.get(name, ()))
        return seen

    for package in graph:
        assert package not in reach(package), f"{package} can reach itself: a circle"


def test_the_checker_sees_an_import_against_the_rules() -> None:
    """The rule check itself can fail: an upward import, lazy or not, is reported."""
    upward = "def f():\n    from embedcli.cli.output import write\n"
    assert violations("core", upward, declared_imports("core"))
    assert violations("core", "from embedcli import render\n", declared_imports("core"))
    assert not violations("core", "from embedcli.io.outputs import staged\n", {"io"})
    assert not violations("cli", "from embedcli import __version__\n", set())


def test_few_loose_modules_and_none_too_long() -> None:
    loose = {p.stem for p in PACKAGE.glob("*.py")}
    assert loose == LOOSE, loose
    long = [
        f"{p.relative_to(PACKAGE)}: {n} lines"
        for p in modules()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    ]
    assert long == []


def test_typer_only_in_the_command_line_and_rich_only_there_and_in_render() -> None:
    for path in modules():
        relative = path.relative_to(PACKAGE)
        part = relative.parts[0] if len(relative.parts) > 1 else relative.stem
        for line, name, _ in absolute_imports(path.read_text()):
            homes = THIRD_PARTY_HOMES.get(name.split(".")[0])
            assert homes is None or part in homes, f"{relative}:{line} imports {name}"


def test_the_manual_tells_the_same_rules() -> None:
    """docs/development.md's table of packages says what each package's docstring says."""
    table = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z]+)/` \|.*\| ([a-z, ]+) \|$", table, flags=re.M))
    assert set(rows) == set(packages())
    for package, imports in rows.items():
        assert {name.strip() for name in imports.split(",")} == declared_imports(package), package


def test_no_package_hides_a_library_of_the_same_name(tmp_path: Path) -> None:
    """Run as a script (an IDE's "run this file", ``python -m pdb embedcli/__main__.py``),
    ``embedcli/__main__.py`` puts embedcli/ itself first on sys.path: a package named like a
    library embedcli uses would stand in for it (``tokenizers/`` did, and tokenizer.json files
    were refused as if the tokenizers package were missing). Only modules Python has imported
    before any path is searched (``io``) are safe names."""
    imported = {
        m.split(".")[0] for path in modules() for _, m, _ in absolute_imports(path.read_text())
    }
    at_start = subprocess.run(
        [sys.executable, "-c", "import sys; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout.split()  # fmt: skip
    libraries = (imported | set(sys.stdlib_module_names)) - {"embedcli"} - set(at_start)
    assert set(packages()) & libraries == set()
    from tokenizers import Tokenizer, decoders, models
    from tokenizers.pre_tokenizers import ByteLevel

    alphabet = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    tokenizer = Tokenizer(models.BPE(vocab=alphabet, merges=[]))
    tokenizer.pre_tokenizer = ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    command = [sys.executable, str(PACKAGE / "__main__.py"), "tokenize", "hi", "--encode"]
    done = subprocess.run(
        [*command, "-e", str(tmp_path / "tokenizer.json")], cwd=tmp_path, capture_output=True,
        text=True, env=script_env(tmp_path), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(alphabet[c]) for c in "hi"]


# ---------------------------------------------------------------- the house's own rules


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _embedcli_imports(path: Path, names: set[str]) -> set[str]:
    """Every embedcli module ``path`` imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in names else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name in names}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (member := stack.pop()) != module:
                group.append(member)
            if group:
                found.append(sorted([module, *group]))

    for module in graph:
        if module not in index:
            visit(module)
    return found


def test_no_import_circle() -> None:
    """No two modules import each other, directly or round a loop, counting the imports inside
    functions: a lazy import is still a dependency."""
    paths = {_module_name(p): p for p in (REPO / "embedcli").rglob("*.py")}
    names = set(paths)
    graph = {name: _embedcli_imports(path, names) - {name} for name, path in paths.items()}
    assert _circles(graph) == []
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_command_function_is_short() -> None:
    """A command translates flags and hands over: at most 60 lines, its signature included."""
    import importlib

    from embedcli.cli.typerapp import COMMANDS

    long = {}
    for name, (module, function, _) in COMMANDS.items():
        node = importlib.import_module(f"embedcli.cli.{module}").__dict__[function]
        lines = len(inspect.getsource(node).splitlines())
        if lines > 60:
            long[name] = lines
    assert long == {}


def test_no_model_type_test_outside_the_registry() -> None:
    """What a family is lives in embedcli/families/: no `model_type == ...` or
    `model_type in (...)` anywhere else."""
    test = re.compile(r"model_type\s*(==|!=|(not\s+)?in\s*[(\[{])")
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in (REPO / "embedcli").rglob("*.py")
        if "families" not in path.relative_to(REPO / "embedcli").parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if test.search(line)
    ]
    assert found == []


def _late_imports(source: str) -> list[tuple[int, str]]:
    """Imports of embedcli modules inside functions that carry no comment saying why (on the
    import, or on the line above it), as (line, module)."""
    lines = source.splitlines()
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            names = [n for n in names if n == "embedcli" or n.startswith("embedcli.")]
            said = [*lines[node.lineno - 1 : node.end_lineno], lines[node.lineno - 2]]
            if names and not any("#" in line for line in said):
                found.append((node.lineno, names[0]))
    return sorted(set(found))


def test_a_late_import_of_embedcli_says_why() -> None:
    """An embedcli module imported inside a function is there for a reason (start-up: it
    loads torch or rich, or is not loaded by `embedcli --help`), and a comment says which;
    any other import belongs at the top, where a reader sees what the module depends on."""
    unexplained = [
        f"{path.relative_to(PACKAGE)}:{line}: {module}"
        for path in modules()
        for line, module in _late_imports(path.read_text(encoding="utf-8"))
    ]
    assert unexplained == []


def test_the_late_import_check_sees_a_silent_one() -> None:
    silent = "def f():\n    from embedcli.core import memory\n    return memory\n"
    said = "def f():\n    from embedcli.core import memory  # lazy: loads torch\n"
    assert _late_imports(silent) == [(2, "embedcli.core")]
    assert _late_imports(said) == []
