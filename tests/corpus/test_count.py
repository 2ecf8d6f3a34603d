"""`embedcli count`: selection as git sees it, exact counts, every view and machine output.

The oracle for every count is one pass of tiktoken over the whole file's text,
``len(enc.encode(text, disallowed_special=()))``, computed here.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.corpus import count as countjob
from embedcli.corpus import engine_local, selection
from embedcli.corpus import pieces as corpus_pieces
from embedcli.errors import InputTextError
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


def one_pass(path: Path, name: str = "gpt2") -> int:
    text = path.read_bytes().decode("utf-8")
    return len(get_encoding(name).encode(text, disallowed_special=()))


def count_json(*args: str, cwd: Path | None = None, input: bytes | None = None) -> dict:
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = runner.invoke(app, ["count", *args, "--json"], input=input)
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small repository: nested .gitignore with a negation, hidden files, a binary, a file
    that is not UTF-8, special-token text, CRLF, and unusual whitespace."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "docs").mkdir()
    (root / ".hidden").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src" / ".gitignore").write_text("*.tmp\n!keep.tmp\n")
    files = {
        "README.md": "# Title\n\nSome words, and <|endoftext|> as text.\r\n",
        "src/main.py": "def main():\n    return 'héllo wörld'  # ünïcode\n",
        "src/pkg/util.py": "x\u3000=\u20281\x85 + 2\n",
        "src/drop.tmp": "ignored by src/.gitignore\n",
        "src/keep.tmp": "kept by the negation\n",
        "build/out.txt": "ignored folder\n",
        "app.log": "ignored by pattern\n",
        "docs/guide.md": "A guide. " * 50,
        ".hidden/secret.txt": "hidden\n",
        ".env": "KEY=1\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8", newline="")
    (root / "src" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    (root / "src" / "latin1.txt").write_bytes("café crème\n".encode("latin-1"))
    return root


def test_selection_as_git_sees_it(tree: Path) -> None:
    data = count_json(".", cwd=tree)
    paths = {f["path"] for f in data["files"]}
    assert paths == {"README.md", "src/main.py", "src/pkg/util.py", "src/keep.tmp", "docs/guide.md"}
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert skipped["src/logo.png"] == "binary"
    assert skipped["src/latin1.txt"].startswith("not UTF-8 (byte 0xE9 at offset 3)")
    for f in data["files"]:
        assert f["tokens"]["gpt2"] == one_pass(tree / f["path"]), f["path"]
        assert f["bytes"] == (tree / f["path"]).stat().st_size
    assert data["totals"] == {
        "files": 5,
        "skipped": 2,
        "bytes": sum(f["bytes"] for f in data["files"]),
        "tokens": {"gpt2": sum(f["tokens"]["gpt2"] for f in data["files"])},
    }


def test_hidden_no_ignore_ignore_include(tree: Path) -> None:
    hidden = {f["path"] for f in count_json(".", "--hidden", cwd=tree)["files"]}
    assert {".hidden/secret.txt", ".env", ".gitignore", "src/.gitignore"} <= hidden
    everything = {f["path"] for f in count_json(".", "--no-ignore", cwd=tree)["files"]}
    assert {"build/out.txt", "app.log", "src/drop.tmp"} <= everything
    fewer = {
        f["path"]
        for f in count_json(".", "--ignore", "docs/", "--ignore", "*.md", cwd=tree)["files"]
    }
    assert fewer == {"src/main.py", "src/pkg/util.py", "src/keep.tmp"}
    only = {f["path"] for f in count_json(".", "--include", "*.py", cwd=tree)["files"]}
    assert only == {"src/main.py", "src/pkg/util.py"}


def test_globs_files_and_stdin(tree: Path) -> None:
    py = {f["path"] for f in count_json("src/**/*.py", cwd=tree)["files"]}
    assert py == {"src/main.py", "src/pkg/util.py"}
    named = count_json("build/out.txt", cwd=tree)  # named outright: counted, ignored or not
    assert [f["path"] for f in named["files"]] == ["build/out.txt"]
    piped = count_json("-", "-e", "o200k_base", input=b"Hello, world! <|endoftext|>")
    expected = len(
        get_encoding("o200k_base").encode("Hello, world! <|endoftext|>", disallowed_special=())
    )
    assert piped["files"] == [{"path": "-", "bytes": 27, "tokens": {"o200k_base": expected}}]
    expect_error(runner.invoke(app, ["count", str(tree / "nothing/*.py")]), "no file matches")
    expect_error(runner.invoke(app, ["count", str(tree / "missing.txt")]), "no such file")


@pytest.mark.parametrize("mode", ["skip", "replace", "strict"])
def test_errors_modes(tree: Path, mode: str) -> None:
    target = tree / "src" / "latin1.txt"
    result = runner.invoke(app, ["count", str(target), "--errors", mode, "--json"])
    if mode == "strict":
        expect_error(result, "latin1.txt is not UTF-8 (byte 0xE9 at offset 3) (--errors strict)")
        return
    data = json.loads(result.stdout)
    if mode == "skip":
        assert data["files"] == [] and data["skipped"][0]["reason"].startswith("not UTF-8")
    else:
        text = target.read_bytes().decode("utf-8", errors="replace")
        assert data["files"][0]["tokens"]["gpt2"] == len(get_encoding("gpt2").encode(text))


def test_max_file_size(tree: Path) -> None:
    data = count_json(".", "--max-file-size", "100", cwd=tree)
    assert "docs/guide.md" in {s["path"] for s in data["skipped"]}
    expect_error(runner.invoke(app, ["count", ".", "--max-file-size", "big"]), "not a size", code=2)


def test_several_encodings_and_models(tree: Path) -> None:
    data = count_json(".", "-e", "gpt2", "-m", "gpt-4o", "-m", "gpt-4", cwd=tree)
    assert data["encodings"] == ["gpt2", "o200k_base", "cl100k_base"]
    for f in data["files"]:
        for name in data["encodings"]:
            assert f["tokens"][name] == one_pass(tree / f["path"], name)


@pytest.mark.parametrize(
    ("name", "encoding"),
    [("gpt-5", "o200k_base"), ("o3-mini", "o200k_base"), ("gpt-4.1-2025-04-14", "o200k_base"),
     ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k_base"), ("gpt-4.5-preview", "o200k_base"),
     ("o4-mini", "o200k_base"), ("gpt-3.5-turbo-0125", "cl100k_base")],
)  # fmt: skip
def test_model_table_knows_current_names(name: str, encoding: str) -> None:
    result = runner.invoke(app, ["count", "-", "-m", name, "--json"], input=b"hi")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["encodings"] == [encoding]


def test_unknown_model_lists_close_matches() -> None:
    result = runner.invoke(app, ["count", "-", "-m", "gtp-4o"], input=b"hi")
    expect_error(result, "unknown model 'gtp-4o'; did you mean gpt-4o", code=2)
    listed = json.loads(runner.invoke(app, ["count", "--list-models", "--json"]).stdout)
    names = {m["name"]: m for m in listed["models"]}
    assert names["gpt-4o"]["context"] == 128_000 and names["o3"]["encoding"] == "o200k_base"


def test_views_table_tree_context_csv_jsonl(tree: Path) -> None:
    old = Path.cwd()
    os.chdir(tree)
    try:
        table = runner.invoke(app, ["count", ".", "--top", "2", "--share-of", "gpt-4o"])
        tree_out = runner.invoke(app, ["count", ".", "--tree", "--depth", "2"])
        small = runner.invoke(app, ["count", ".", "--tree", "--min-share", "50%"])
        as_csv = runner.invoke(app, ["count", ".", "--csv", "-e", "gpt2", "-e", "cl100k_base"])
        lines = runner.invoke(app, ["count", ".", "--jsonl"])
        data = count_json(".", "--share-of", "1000")
    finally:
        os.chdir(old)
    total = data["totals"]["tokens"]["gpt2"]
    assert "showing 2 of 5 files" in table.stdout
    assert "of gpt-4o's 128,000-token context" in table.stdout
    first = max(data["files"], key=lambda f: f["tokens"]["gpt2"])
    assert table.stdout.index(first["path"]) < table.stdout.index("5 files counted")
    src = sum(f["tokens"]["gpt2"] for f in data["files"] if f["path"].startswith("src/"))
    assert "src/ " in tree_out.stdout and f"{src:,}" in tree_out.stdout
    assert "branches under 50.0% of the total are hidden" in small.stdout
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert rows[0] == ["path", "bytes", "gpt2", "cl100k_base", "skipped"]
    assert {r[0] for r in rows[1:] if not r[-1]} == {f["path"] for f in data["files"]}
    records = [json.loads(line) for line in lines.stdout.splitlines()]
    assert sum(r["tokens"]["gpt2"] for r in records if "tokens" in r) == total
    assert {r["path"] for r in records if "skipped" in r} == {s["path"] for s in data["skipped"]}
    assert data["context"] == {"name": None, "tokens": 1000, "share": {"gpt2": total / 1000}}
    assert [f["path"] for f in data["files"]] == [
        f["path"] for f in sorted(data["files"], key=lambda f: (-f["tokens"]["gpt2"], f["path"]))
    ]


def test_small_things_a_user_met(tree: Path) -> None:
    empty = runner.invoke(app, ["count", str(tree), "--include", "nothing*", "--csv"])
    assert empty.stdout == "path,bytes,gpt2,skipped\n"  # the header, even with no file
    k = runner.invoke(app, ["count", str(tree / "README.md"), "--share-of", "200k"])
    assert "of a 200,000-token context (gpt2)" in k.stdout
    model = runner.invoke(app, ["count", str(tree / "README.md"), "--share-of", "gpt-4o", "--json"])
    assert json.loads(model.stdout)["encodings"] == ["o200k_base"]  # counted as gpt-4o counts
    expect_error(runner.invoke(app, ["count", ".", "--depth", "2"]), "add --tree", code=2)
    expect_error(runner.invoke(app, ["count", ".", "--share-of", "-5"]), "1 to 2**40", code=2)


def test_usage_errors() -> None:
    expect_error(
        runner.invoke(app, ["count", ".", "--json", "--csv"]), "cannot be combined", code=2
    )
    expect_error(
        runner.invoke(app, ["count", ".", "--scheduler", "tcp://x:1"]),
        "needs --engine dask",
        code=2,
    )
    expect_error(runner.invoke(app, ["count", ".", "--errors", "ignore"]), "--errors", code=2)
    expect_error(runner.invoke(app, ["count", ".", "--sort", "size"]), "--sort", code=2)


# ---------------------------------------------------------------- exact when cut into blocks

PIECES = st.sampled_from(
    ["word", " ", "  ", "\n", "\r\n", "\t", "\x0b", "\x85", "\u2028", "\u3000", "\xa0", "é",
     "日本", "😀", "<|endoftext|>", "123", "'s", "!!", "a b"]
)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(PIECES, max_size=400),
    extra=st.text(st.characters(exclude_characters="\x00"), max_size=200),
    block=st.integers(8, 200),
)
def test_blocks_add_up_to_one_pass(
    tmp_path: Path, parts: list[str], extra: str, block: int
) -> None:
    text = "".join(parts) + extra
    path = tmp_path / "big.txt"
    data = text.encode("utf-8", errors="surrogatepass")
    path.write_bytes(data)
    found = [selection.Found("big.txt", str(path), len(data))]
    pieces = corpus_pieces.pieces_of(found, block_bytes=block)
    assert pieces[0].start == 0 and pieces[-1].end == len(data)
    assert all(a.end == b.start for a, b in itertools.pairwise(pieces))
    for name in ("gpt2", "o200k_base"):
        results = [r for p in pieces for r in corpus_pieces.count_task([p], (name,), "replace")]
        decoded = data.decode("utf-8", errors="replace")
        expected = len(get_encoding(name).encode(decoded, disallowed_special=()))
        assert sum(r.counts[0] for r in results) == expected


def test_a_large_tree_through_the_process_pool(tmp_path: Path) -> None:
    # Over TASK_BYTES in all: counted by a pool of processes, largest first, big files in blocks.
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(300):
        (root / f"f{i:03d}.txt").write_text(f"file {i} says " + "hello world, " * (i % 40 + 1))
    big = root / "big.txt"
    big.write_text("The keeper counted ships. \u3000Then\u2028more. " * 200_000)
    items = list(countjob.count_paths([str(root)], ["gpt2"], block_bytes=1 << 20, workers=2))
    counts = {i.path: i.tokens["gpt2"] for i in items}
    assert len(counts) == 301
    for path in (big, root / "f007.txt", root / "f299.txt"):
        assert counts[selection._display(path)] == one_pass(path)


def test_dask_engine_through_the_installed_command(tree: Path) -> None:
    # The console script, real pipes: a LocalCluster of two worker processes, the same counts.
    import subprocess
    import sys

    from support.helpers import script_env

    local = count_json(".", cwd=tree)
    argv = [str(Path(sys.executable).parent / "embedcli"), "count", ".", "--engine", "dask",
            "--workers", "2", "--json"]  # fmt: skip
    env = script_env(tree.parent)  # its caches outside the counted tree
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""  # no cluster chatter: stderr is for errors and progress
    remote = json.loads(done.stdout)
    key = lambda f: f["path"]  # noqa: E731
    assert sorted(remote["files"], key=key) == sorted(local["files"], key=key)
    assert sorted(remote["skipped"], key=key) == sorted(local["skipped"], key=key)
    assert remote["totals"] == local["totals"]


def test_the_process_pool_ends_quietly(tmp_path: Path) -> None:
    # Workers inherited the command's SIGTERM handler, and the pool's terminate() made them
    # print tracebacks: the pool is now closed and joined, and workers leave signals alone.
    import subprocess
    import sys

    from support.helpers import script_env

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "big.txt").write_text("The keeper counted ships and wrote them down. " * 360_000)
    argv = [str(Path(sys.executable).parent / "embedcli"), "count", str(corpus), "--json"]
    for _ in range(3):
        done = subprocess.run(argv, env=script_env(tmp_path), capture_output=True, timeout=120)
        assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
        assert json.loads(done.stdout)["totals"]["tokens"]["gpt2"] == one_pass(corpus / "big.txt")


# ---------------------------------------------------------------- selection against git itself


def _git_files(root: Path, *paths: str) -> set[str]:
    import subprocess

    done = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", *paths],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {
        line
        for line in done.stdout.splitlines()
        if not any(p.startswith(".") for p in line.split("/"))
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with the .gitignore idioms people write (git is the oracle)."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("secret.txt\n")
    (root / ".gitignore").write_text(
        "*.log\n/build\n**/tmp/\ndist/**\n!dist/keep.txt\ndocs/*.txt\n!docs/keep.txt\n"
    )
    (root / "sub" / ".gitignore").parent.mkdir()
    (root / "sub" / ".gitignore").write_text("*.md\n!README.md\n")
    for name in ("a.txt", "x.log", "build/b.txt", "src/build/c.txt", "a/tmp/t.txt",
                 "src/deep/tmp/u.txt", "dist/x.txt", "dist/keep.txt", "docs/d.txt",
                 "docs/keep.txt", "docs/more/e.txt", "sub/n.md", "sub/README.md", "sub/s.txt",
                 "secret.txt", "sub/secret.txt", "logs/z.log"):  # fmt: skip
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"text of {name}\n")
    return root


@pytest.mark.parametrize("where", [".", "ABSOLUTE", "sub", "src", "docs"])
def test_selection_equals_gits(repo: Path, where: str) -> None:
    target = str(repo) if where == "ABSOLUTE" else where
    data = count_json(target, cwd=repo)
    ours = {f["path"] for f in data["files"]}
    if where == "ABSOLUTE":
        ours = {str(Path(p).relative_to(repo)) if Path(p).is_absolute() else p for p in ours}
    assert ours == _git_files(repo, *([] if where in (".", "ABSOLUTE") else [where]))


def test_ignore_include_and_globs_below_the_top(repo: Path) -> None:
    ours = {f["path"] for f in count_json(".", "--ignore", "*.txt", cwd=repo)["files"]}
    assert ours == {"sub/README.md"}
    only = {f["path"] for f in count_json(".", "--include", "docs/*.txt", cwd=repo)["files"]}
    assert only == {"docs/keep.txt"}
    two = {f["path"] for f in count_json("*/*.txt", cwd=repo)["files"]}
    assert two == {p for p in _git_files(repo) if p.count("/") == 1 and p.endswith(".txt")}


def test_urls_keep_the_selection_rules(repo: Path) -> None:
    pytest.importorskip("fsspec")
    (repo / ".hidden").mkdir()
    (repo / ".hidden" / "h.txt").write_text("hidden\n")
    data = count_json(f"file://{repo}", "--ignore", "*.log", "--ignore", "sub/")
    paths = {f["path"].split(str(repo), 1)[1].lstrip("/") for f in data["files"]}
    assert not any(p.startswith((".git/", ".hidden/")) or p.endswith(".log") for p in paths)
    assert not any(p.startswith("sub/") for p in paths) and "a.txt" in paths
    expect_error(runner.invoke(app, ["count", f"file://{repo}/nothing*"]), "no file matches")


# ---------------------------------------------------------------- hostile trees


def test_a_run_with_no_space_is_refused_not_swallowed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(corpus_pieces, "MAX_PIECE_BYTES", 1 << 16)
    path = tmp_path / "nospace.txt"
    path.write_text("ab" * (1 << 16))  # 128 KiB, no place to cut
    items = list(countjob.count_paths([str(path)], ["gpt2"], block_bytes=1 << 14, workers=1))
    assert len(items) == 1 and "no place to cut" in items[0].reason


def _die(*args: object) -> None:
    os._exit(9)


def test_a_dead_worker_is_an_error_not_a_hang(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(engine_local, "count_task", _die)  # forked workers die
    tasks = [
        (corpus_pieces.Piece(i, str(tmp_path / "x"), 0, corpus_pieces.TASK_BYTES),)
        for i in range(4)
    ]
    with pytest.raises(InputTextError, match="a counting process died"):
        list(engine_local.local_results(tasks, ("gpt2",), "skip", workers=2))


def test_a_deep_tree(tmp_path: Path) -> None:
    folder = tmp_path / "deep"
    for _ in range(300):
        folder = folder / "d"
    folder.mkdir(parents=True)
    (folder / "leaf.txt").write_text("at the bottom\n")
    result = runner.invoke(app, ["count", str(tmp_path / "deep"), "--tree", "--depth", "5000"])
    assert "1 file counted" in result.stdout
    assert result.exit_code == 0, result.output[-300:]


def test_tree_of_an_absolute_folder_starts_at_that_folder(tree: Path) -> None:
    """The folders every file shares are one root row, so --depth counts from what was asked
    for, not from /."""
    # Wide enough that the root row is never shortened, however deep the test's tmp folder is
    # (pytest-xdist adds a level).
    args = ["count", str(tree / "src"), "--tree", "--depth", "2", "-q"]
    result = runner.invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    rows = [line.split("│")[1].rstrip() for line in result.stdout.splitlines() if "│" in line]
    rows = [r for r in rows if r.strip() != "path"]
    assert rows[0].strip() == f"{tree / 'src'}/"
    assert {r.strip() for r in rows[1:]} >= {"main.py", "pkg/"}
    data = count_json(str(tree / "src"))
    root_total = sum(f["tokens"]["gpt2"] for f in data["files"])
    first_row = next(line for line in result.stdout.splitlines() if "│" in line and "/" in line)
    assert first_row.split("│")[2].strip() == f"{root_total:,}"


@pytest.mark.parametrize("mode", ["--csv", "--jsonl"])
def test_a_count_that_fails_at_once_prints_nothing(tmp_path: Path, mode: str) -> None:
    """A missing path, or an encoding that cannot be loaded, fails before the CSV header (or
    any record) reaches stdout: `count x --csv > out.csv` leaves no half-made file behind it."""
    (tmp_path / "a.txt").write_text("hello\n")
    missing_tokenizer = [str(tmp_path), "-e", str(tmp_path / "no.json")]
    for args in (["nosuchdir"], ["nomatch/*.zz"], missing_tokenizer):
        expect_error(runner.invoke(app, ["count", *args, mode]), "")  # nothing on stdout
