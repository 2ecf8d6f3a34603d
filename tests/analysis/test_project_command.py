"""`embedcli project` on the command line: which points are placed and where, what it says of a
table's structure, the precision it computes in, its inputs (text, --ids, --ids-file, stdin), and
every error a user can cause."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from support.helpers import expect_error, make_runner
from support.pcaoracle import KEY, numpy_pca, same_up_to_sign
from support.pcaoracle import structured_checkpoint as structured_checkpoint  # a fixture

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


# ---------------------------------------------------------------- the command


def run_json(*args: str) -> dict:
    result = runner.invoke(app, ["project", *args, "--json", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_points_are_the_texts_tokens_then_top_then_the_ids_file(
    structured_checkpoint: tuple[Path, torch.Tensor], tmp_path: Path
) -> None:
    path, table = structured_checkpoint
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("[7, 40000]\n15496,\n 3\n")
    data = run_json(
        "Hello world Hello", "--weights", str(path), "--first-ids", "4", "--ids-file", str(ids_file)
    )
    enc = get_encoding("gpt2")
    text_ids = enc.encode("Hello world Hello")  # 15496, 995, 23748
    expected = [*dict.fromkeys(text_ids), 0, 1, 2, 3, 7, 40000]
    assert [p["id"] for p in data["points"]] == expected
    origins = {p["id"]: p["origin"] for p in data["points"]}
    assert origins[15496] == "text" and origins[3] == "top" and origins[40000] == "ids-file"
    assert [p["index"] for p in data["points"] if p["origin"] == "text"] == [0, 1, 2]
    assert all("index" not in p for p in data["points"] if p["origin"] != "text")
    assert [p["piece"] for p in data["points"][:2]] == ["Hello", " world"]
    # Coordinates: the rows of the table on numpy's axes.
    _, variances, coordinates = numpy_pca(table.double().numpy())
    ours = np.array([[p["x"], p["y"]] for p in data["points"]])
    same_up_to_sign(ours, coordinates[expected], atol=1e-3)
    assert data["explained_variance"] == pytest.approx(list(variances), rel=1e-5)
    assert data["table_shape"] == [50257, 16]
    assert data["structure"] == "structured" and data["seeded"] is False
    assert data["noise_ratio"] == pytest.approx(data["explained_variance"][0] / data["noise_edge"])
    assert "cloud" not in data


def test_seeded_tables_are_said_to_be_an_isotropic_cloud() -> None:
    data = run_json("Hello world", "-d", "32")
    assert data["seeded"] is True and data["structure"] == "isotropic"
    assert data["table_shape"] == [50257, 32]
    result = runner.invoke(app, ["project", "Hello world", "-d", "32", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "isotropic cloud of nn.Embedding's N(0, 1)" in " ".join(result.stdout.split())


def test_a_trained_looking_table_is_said_to_have_structure(
    structured_checkpoint: tuple[Path, torch.Tensor],
) -> None:
    path, _ = structured_checkpoint
    result = runner.invoke(app, ["project", "king", "--weights", str(path), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    prose = " ".join(result.stdout.split())
    assert "PC1 and PC2 stand out, structure that random values lack" in prose
    assert "•king" in result.stdout


def test_a_slightly_stretched_table_is_weak_structure(tmp_path: Path) -> None:
    table = torch.randn(50257, 16, generator=torch.Generator().manual_seed(4))
    table[:, 3] *= 1.2  # PC1 about 1.35x the random edge: more than chance, not much more
    path = tmp_path / "mild.safetensors"
    save_file({KEY: table}, str(path))
    data = run_json("hi", "--weights", str(path))
    assert data["structure"] == "weak" and 1.2 < data["noise_ratio"] < 2
    result = runner.invoke(app, ["project", "hi", "--weights", str(path), "--device", "cpu"])
    assert "a little more than chance in a table this size: weak structure" in " ".join(
        result.stdout.split()
    )


def test_top_alone_reads_no_text_from_stdin() -> None:
    result = runner.invoke(
        app, ["project", "--first-ids", "5", "-d", "8", "--json", "--device", "cpu"], input="Hello"
    )
    assert result.exit_code == 0, result.output
    assert [p["id"] for p in json.loads(result.stdout)["points"]] == [0, 1, 2, 3, 4]
    piped = runner.invoke(
        app,
        ["project", "-", "--first-ids", "2", "-d", "8", "--json", "--device", "cpu"],
        input="Hi",
    )
    assert [p["origin"] for p in json.loads(piped.stdout)["points"]] == ["text", "top", "top"]


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["--first-ids", "0"], "Invalid value for '--first-ids'", 2),
        (["--first-ids", "60000"], "--first-ids 60,000 is more than the table's 50,257 rows", 1),
        (["hi", "-d", "1"], "at least 2 rows and 2 dimensions, not 50257 × 1", 1),
        (["hi", "--device", "meta"], "the meta device holds shapes but no values", 2),
        (["hi", "--device", "cuda:7"], "requested", 1),
        ([""], "the text has no tokens", 1),
        (["hi", "--png", "map.jpg"], "name the file *.png", 2),
    ],
)
def test_bad_command_lines_get_one_error_line(args: list[str], message: str, code: int) -> None:
    result = runner.invoke(app, ["project", *args, "-d", "8"] if "-d" not in args else
                           ["project", *args])  # fmt: skip
    expect_error(result, message, code)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"15496 abc\n", "line 1: 'abc' is not a token id"),
        (b"1\n2\n-3\n", "line 3: '-3' is not a token id"),
        (b"\n\n", "holds no token ids"),
        (b"\xff\n", "not valid UTF-8 (byte 0xFF at offset 0)"),
        (b"50257\n", "token id 50257 (from --ids-file) is out of range"),
    ],
)
def test_a_bad_ids_file_is_a_data_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "ids.txt"
    path.write_bytes(content)
    result = runner.invoke(app, ["project", "--ids-file", str(path), "-d", "8"])
    expect_error(result, message)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.index_fill_(0, torch.tensor([9]), float("nan")), "row of token 9 holds NaN"),
        (lambda t: t.fill_(0.5), "every row of the token table is the same"),
    ],
)
def test_a_damaged_table_is_refused(tmp_path: Path, change, message: str) -> None:
    table = change(torch.randn(50257, 8))
    path = tmp_path / "bad.safetensors"
    save_file({KEY: table}, str(path))
    result = runner.invoke(app, ["project", "hi", "--weights", str(path)])
    expect_error(result, message)


@pytest.mark.parametrize(
    ("device", "free", "expected"),
    [
        ("cpu", None, "float64"),  # unknown free memory: as precise as the device allows
        ("cpu", 10_000_000, "float64"),
        ("cpu", 2_000_000, "float32"),  # float64's two copies (3.2 MB) do not fit; float32's do
        ("mps", None, "float32"),  # MPS has no float64
        ("cuda", 10_000_000, "float64"),
    ],
)
def test_the_precision_is_float64_where_the_device_has_it_and_it_fits(
    monkeypatch: pytest.MonkeyPatch, device: str, free: int | None, expected: str
) -> None:
    from embedcli.analysis import projection
    from embedcli.core import memory

    monkeypatch.setattr(memory, "available_memory", lambda _: free)
    table = torch.randn(10_000, 20)  # float32: 0.8 MB; a float64 copy 1.6 MB
    assert projection._precision(10_000, 20, table, torch.device(device)) == getattr(
        torch, expected
    )


def test_a_table_whose_copies_fit_in_no_precision_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from embedcli.core import memory

    monkeypatch.setattr(memory, "available_memory", lambda _: 1_000_000)
    result = runner.invoke(app, ["project", "hi", "-d", "64", "--device", "cpu"])
    expect_error(result, "the principal axes of a 50,257 × 64 table")


def test_stdin_is_read_once_and_never_replaced(tmp_path: Path) -> None:
    result = runner.invoke(app, ["project", "-", "--ids-file", "-", "-d", "4"], input="1 2")
    expect_error(result, "--ids-file - reads standard input, so the text cannot", 2)
    ids = runner.invoke(app, ["project", "--ids-file", "-", "-d", "4", "--json"], input="1 2")
    assert [p["id"] for p in json.loads(ids.stdout)["points"]] == [1, 2]
    # Standard input redirected from the file the export would replace: refused, kept; with
    # --first-ids alone standard input is not read, so the message does not call the file the input.
    (tmp_path / "metadata.tsv").write_text("mine\n")
    with open(tmp_path / "metadata.tsv", "rb") as stdin:
        done = subprocess.run(
            [Path(sys.executable).parent / "embedcli", "project", "--first-ids", "3", "-d", "4",
             "--export-projector", "."],
            stdin=stdin, capture_output=True, text=True, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "Error: --export-projector would replace metadata.tsv, the file standard input comes "
        "from; embedcli does not overwrite the file on its standard input, whether it reads it"
    ), done.stderr
    assert "the input" not in done.stderr
    assert (tmp_path / "metadata.tsv").read_text() == "mine\n"


def test_ids_are_an_input_like_text() -> None:
    data = run_json("--ids", "15496,995", "-d", "8")
    assert [(p["id"], p["origin"], p["index"]) for p in data["points"]] == [
        (15496, "text", 0), (995, "text", 1)]  # fmt: skip
    expect_error(runner.invoke(app, ["project", "hi", "--ids", "1", "-d", "8"]),
                 "pass only one of TEXT, --file and --ids", 2)  # fmt: skip


def test_no_text_says_how_to_place_ids_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import embedcli.cli.inputs as inputs

    class Terminal:  # stdin on a terminal: nothing is piped in
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(inputs, "stdin", lambda: Terminal())
    result = runner.invoke(app, ["project", "-d", "8"])
    expect_error(result, "or place the table's ids alone with --first-ids N or --ids-file PATH", 2)


def test_an_ids_file_is_read_as_distinct_ids_and_refuses_huge_numbers(tmp_path: Path) -> None:
    path = tmp_path / "ids.txt"
    path.write_text("7 " * 200_000 + "3\n7,3\n")
    data = run_json("--ids-file", str(path), "-d", "4")
    assert [p["id"] for p in data["points"]] == [7, 3]
    path.write_text("1\n2 " + "9" * 5000 + "\n")
    expect_error(
        runner.invoke(app, ["project", "--ids-file", str(path), "-d", "4"]),
        "line 2: '" + "9" * 40 + "…' is far beyond any token table",
    )


def test_the_old_top_still_places_the_first_ids_with_a_warning() -> None:
    # project --top was renamed --first-ids: count's --top lists the N largest files.
    args = ["project", "-d", "8", "--json", "--device", "cpu"]
    new = runner.invoke(app, [*args, "--first-ids", "5"])
    old = runner.invoke(app, [*args, "--top", "5"])
    assert old.exit_code == 0 and old.stdout == new.stdout and new.stderr == ""
    assert old.stderr == "Warning: --top is deprecated and will be removed; use --first-ids\n"
    both = runner.invoke(app, [*args, "--top", "5", "--first-ids", "5"])
    expect_error(both, "pass --first-ids or the old --top, not both", 2)
