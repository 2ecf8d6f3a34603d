"""`embedcli project`'s files: the projector files read back as TensorBoard's projector reads
them, the PNG, an export that replaces only its own files, outputs checked before the work, and
a failed or interrupted export that replaces nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from support.helpers import expect_error, make_runner
from support.pcaoracle import structured_checkpoint as structured_checkpoint  # a fixture

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


# ---------------------------------------------------------------- TensorBoard's projector


def read_like_the_projector(folder: Path) -> tuple[np.ndarray, list[dict[str, str]]]:
    """tensors.tsv as TensorBoard's server reads it (floats split on tabs, blank lines
    skipped), metadata.tsv as its front end does (lines on \\n, blank-looking lines skipped,
    a first line with a tab is the header)."""
    rows = [
        [float(v) for v in line.split("\t")]
        for line in (folder / "tensors.tsv").read_text().split("\n")
        if line
    ]
    lines = [line for line in (folder / "metadata.tsv").read_text().split("\n") if line.strip()]
    header = lines[0].split("\t")
    assert len(header) > 1
    # strict: every row has as many columns as the header (a tab in a piece would add one)
    metadata = [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]
    return np.array(rows, dtype=np.float32), metadata


def unescape(piece: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m[1], m[1]), piece)


def test_the_projector_files_load_as_the_projector_reads_them(
    structured_checkpoint: tuple[Path, torch.Tensor], tmp_path: Path
) -> None:
    path, table = structured_checkpoint
    folder = tmp_path / "proj"
    text = "a\tb\nc \\ d  e"
    result = runner.invoke(
        app, ["project", text, "--weights", str(path), "--first-ids", "3", "--export-projector",
              str(folder), "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert str(folder / "tensors.tsv") in result.stdout.splitlines()[-1]
    vectors, metadata = read_like_the_projector(folder)
    enc = get_encoding("gpt2")
    ids = [*dict.fromkeys(enc.encode(text)), 0, 1, 2]
    assert vectors.shape == (len(ids), 16)
    np.testing.assert_array_equal(vectors, table[ids].numpy())  # every float32 exactly
    assert [int(m["id"]) for m in metadata] == ids
    assert [unescape(m["piece"]) for m in metadata] == [enc.decode([i]) for i in ids]
    assert {m["origin"] for m in metadata} == {"text", "top"}
    config = (folder / "projector_config.pbtxt").read_text()
    assert re.findall(r'(\w+_path): "([^"]+)"', config) == [
        ("tensor_path", "tensors.tsv"), ("metadata_path", "metadata.tsv")]  # fmt: skip
    assert [int(n) for n in re.findall(r"tensor_shape: (\d+)", config)] == [len(ids), 16]


def test_export_replaces_its_own_files_and_keeps_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "notes.md").write_text("mine")
    (folder / "tensors.tsv").write_text("old")
    result = runner.invoke(app, ["project", "hi", "-d", "4", "--export-projector", str(folder)])
    assert result.exit_code == 0, result.output
    assert (folder / "notes.md").read_text() == "mine"
    assert read_like_the_projector(folder)[0].shape == (1, 4)
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_export_refuses_a_file_a_missing_parent_and_its_own_input(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    expect_error(
        runner.invoke(app, ["project", "hi", "-d", "4", "--export-projector", str(afile)]),
        "is a file; give a folder",
    )
    expect_error(
        runner.invoke(
            app, ["project", "hi", "-d", "4", "--export-projector", str(tmp_path / "no" / "p")]
        ),
        "does not exist",
    )
    folder = tmp_path / "proj"
    folder.mkdir()
    ids = folder / "metadata.tsv"
    ids.write_text("1 2 3\n")
    result = runner.invoke(
        app, ["project", "--ids-file", str(ids), "-d", "4", "--export-projector", str(folder)]
    )
    expect_error(result, "is the same file as the input")
    assert ids.read_text() == "1 2 3\n"


def test_png_is_written_and_json_stays_alone_on_stdout(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "map.png"
    result = runner.invoke(
        app, ["project", "king queen", "-d", "8", "--first-ids", "20", "--png", str(png), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["structure"] == "isotropic"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_control_characters_are_escaped_in_the_metadata(tmp_path: Path) -> None:
    enc = get_encoding("gpt2")
    ids = [enc.encode_single_token(bytes([b])) for b in (0, 0x1B, 0x7F, ord("\\"), ord("\t"))]
    (tmp_path / "ids.txt").write_text(" ".join(map(str, ids)))
    folder = tmp_path / "proj"
    result = runner.invoke(app, ["project", "--ids-file", str(tmp_path / "ids.txt"), "-d", "4",
                                 "--export-projector", str(folder)])  # fmt: skip
    assert result.exit_code == 0, result.output
    raw = (folder / "metadata.tsv").read_bytes()
    assert not [b for b in raw if b < 0x20 and b not in b"\t\n"] and b"\x7f" not in raw
    _, metadata = read_like_the_projector(folder)
    assert [m["piece"] for m in metadata] == ["\\x00", "\\x1b", "\\x7f", "\\\\", "\\t"]


def test_outputs_are_checked_before_the_work(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import embedcli.analysis.projection as projection

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the map was computed before its output was refused")

    monkeypatch.setattr(projection, "project", never)
    (tmp_path / "dir.png").mkdir()
    (tmp_path / "proj").mkdir()
    refused = [
        (["--png", str(tmp_path / "no" / "map.png")], "does not exist"),
        (["--png", str(tmp_path / "dir.png")], "is a folder, not a PNG file name"),
        (["--export-projector", str(tmp_path / "no" / "p")], "does not exist"),
    ]
    for args, message in refused:
        expect_error(runner.invoke(app, ["project", "hi", "-d", "4", *args]), message)
    good = ["--png", str(tmp_path / "proj" / "map.png"), "--export-projector", str(tmp_path)]
    result = runner.invoke(app, ["project", "hi", "-d", "4", *good])
    assert "was computed before" in str(result.exception)  # got as far as the work


@pytest.mark.parametrize("failure", ["file too large", "interrupted"])
def test_a_failed_export_replaces_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failure: str
) -> None:
    import resource
    import signal

    folder, png = tmp_path / "proj", tmp_path / "map.png"
    first = runner.invoke(app, ["project", "hi", "-d", "4", "--export-projector", str(folder)])
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    fresh = tmp_path / "fresh"
    if failure == "interrupted":  # Ctrl-C while tensors.tsv is written: after the PNG

        def interrupt(*args: object, **kwargs: object) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(np, "savetxt", interrupt)
    for target in (folder, fresh):
        args = ["project", "--first-ids", "3000", "-d", "64", "--png", str(png),
                "--export-projector", str(target)]  # fmt: skip
        if failure == "file too large":  # a real write failure, as a full disk gives one
            limits = resource.getrlimit(resource.RLIMIT_FSIZE)
            old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, limits[1]))
            try:
                result = runner.invoke(app, args)
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, limits)
                signal.signal(signal.SIGXFSZ, old_handler)
            expect_error(result, f"cannot write {target / 'tensors.tsv'}: File too large")
        else:
            result = runner.invoke(app, args)
            assert result.exit_code == 130
            assert "Interrupted: no output file was written or changed" in result.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # all three as they were
    assert not png.exists() and not fresh.exists()  # nor the PNG, nor a folder made for them
    assert not list(tmp_path.rglob(".*.tmp"))


def test_a_signal_during_the_renames_waits_for_them(tmp_path: Path) -> None:
    import os
    import signal

    from embedcli.io.outputs import staged

    real = os.replace
    seen: list[str] = []

    def replace_then_interrupt(source, target) -> None:
        real(source, target)
        seen.append(Path(target).name)
        if len(seen) == 1:  # Ctrl-C between the first rename and the second
            os.kill(os.getpid(), signal.SIGINT)

    # Python's own Ctrl-C handler, whatever this process was started with (under nohup or in
    # the background of a shell, SIGINT is ignored and no KeyboardInterrupt could come)
    started = signal.signal(signal.SIGINT, signal.default_int_handler)
    before = signal.getsignal(signal.SIGINT)
    os.replace = replace_then_interrupt
    try:
        # delivered once both are in place, not dropped
        with pytest.raises(KeyboardInterrupt), staged() as stage:
            for name in ("a.txt", "b.txt"):
                stage.open(tmp_path / name).write(name.encode())
    finally:
        os.replace = real
    assert seen == ["a.txt", "b.txt"]  # the second rename still happened
    assert (tmp_path / "b.txt").read_bytes() == b"b.txt"
    assert signal.getsignal(signal.SIGINT) is before  # and the handler is back
    signal.signal(signal.SIGINT, started)


def test_an_empty_export_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--export-projector "$DIR"` with DIR unset: before, the three files landed in the
    current folder (the contract fuzzer's stray files)."""
    from support.helpers import expect_error

    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["project", "hi", "--export-projector", ""])
    expect_error(result, "name a folder (. for this one), not an empty name", 2)
    blank = runner.invoke(app, ["project", "hi", "--export-projector", " "])
    expect_error(blank, "name a folder (. for this one), not a blank name (' ')", 2)
    assert list(tmp_path.iterdir()) == []
