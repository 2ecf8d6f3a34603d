"""Checkpoints that lie or are damaged, generated here (never downloaded): every one is refused
with one ``Error:`` line.

Lying headers, truncated and damaged archives, zip bombs, pickles with payloads, and tables of
the wrong shape or dtype, in safetensors, PyTorch and .npz files, through every command that
reads a checkpoint: no traceback, no code run, no memory out of proportion.
"""

from __future__ import annotations

import io
import json
import os
import resource
import struct
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from support.checkpointfiles import (
    COMMANDS,
    C,
    D,
    V,
    good_tables,
    invoke,
    runner,
    write_pt,
    write_safetensors,
    write_tables,
)
from support.helpers import expect_error, run_script

from embedcli.cli import app

MIB = 1 << 20

# the commands that read the token table's values (positions reads a positional table alone,
# which these one-table files do not have)
LOADING = ("embed", "neighbors", "stats")


# ---------------------------------------------------------------- writers


def raw_safetensors(path: Path, header: dict | bytes, data: bytes, size: int | None = None):
    """A safetensors file written byte by byte: ``size`` overrides the header's length field."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text) if size is None else size) + text + data)
    return path


def npy_bytes(shape: tuple[int, ...], dtype: str, data: bytes) -> bytes:
    """A .npy member whose header declares ``shape`` and ``dtype``, whatever ``data`` holds."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        out, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape}
    )
    return out.getvalue() + data


def write_npz(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name + ".npy", content)
    return path


def rezip(
    source: Path,
    target: Path,
    change: Callable[[zipfile.ZipInfo, bytes], bytes] | None,
    compress: int = zipfile.ZIP_STORED,
) -> Path:
    """Copy a zip archive member by member, changing members' bytes or compression."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = old.read(info)
            new.writestr(info.filename, change(info, data) if change else data, compress)
    return target


def zeros_npz(path: Path, name: str, rows: int, width: int) -> Path:
    """A float32 table of zeros, deflated: rows × width × 4 bytes in memory, about 1/200 of that
    on disk; written in slices, so that the test itself stays small."""
    header = npy_bytes((rows, width), "<f4", b"")
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        archive.open(name + ".npy", "w", force_zip64=True) as member,
    ):
        member.write(header)
        left, block = rows * width * 4, bytes(16 * MIB)
        while left:
            member.write(block[: min(left, len(block))])
            left -= min(left, len(block))
    return path


# ---------------------------------------------------------------- tables of the wrong kind


def block() -> dict[str, torch.Tensor]:
    """A stand-in for the rest of a model."""
    return {"h.0.ln_1.weight": torch.ones(D)}


BAD_TABLES = {
    "1-D": (lambda: torch.zeros(V), "is a (64,) float32 tensor; an embedding table is a 2-D"),
    "3-D": (lambda: torch.zeros(V, 2, D), "is a (64, 2, 8) float32 tensor"),
    "no rows": (lambda: torch.zeros(0, D), "has shape (0, 8): an embedding table needs at least"),
    "no columns": (lambda: torch.zeros(V, 0), "has shape (64, 0): an embedding table needs"),
    "int": (lambda: torch.ones(V, D, dtype=torch.int64), "is a (64, 8) int64 tensor; an embedding"),
    "bool": (lambda: torch.ones(V, D, dtype=torch.bool), "is a (64, 8) bool tensor; an embedding"),
}


@pytest.mark.parametrize("fmt", ["safetensors", "pt", "npz"])
@pytest.mark.parametrize("kind", list(BAD_TABLES))
def test_tables_of_the_wrong_kind_are_refused_by_every_command(
    tmp_path: Path, fmt: str, kind: str
) -> None:
    make, message = BAD_TABLES[kind]
    path = write_tables(tmp_path / "bad", fmt, {"wte.weight": make(), **block()})
    for command in COMMANDS:
        result = invoke(command, path)
        if command == "weights":  # it lists what the file holds, and says why no table fits
            assert result.exit_code == 0, result.output
            data = json.loads(invoke(command, path, "--json").stdout)
            assert message in data["detection_error"] and data["layout"] is None
        else:
            expect_error(result, "Error: wte.weight " + message)


@pytest.mark.parametrize("fmt", ["safetensors", "pt", "npz"])
def test_a_bad_positional_table_is_refused_too(tmp_path: Path, fmt: str) -> None:
    tables = {"wte.weight": torch.zeros(V, D), "wpe.weight": torch.zeros(C, D, 2)}
    path = write_tables(tmp_path / "bad", fmt, tables)
    for command in ("embed", "inspect-shapes", "stats", "positions"):
        expect_error(invoke(command, path), "wpe.weight is a (16, 8, 2) float32 tensor")
    narrow = write_tables(
        tmp_path / "narrow", fmt, {"wte.weight": torch.zeros(V, D), "wpe.weight": torch.zeros(C, 3)}
    )
    for command in ("embed", "inspect-shapes", "stats", "positions"):
        expect_error(invoke(command, narrow), "is 8 wide but the positional table wpe.weight is 3")


def test_other_dtypes_are_refused(tmp_path: Path) -> None:
    pt = write_pt(
        tmp_path / "x.pt",
        {"wte.weight": torch.eye(V, D).to_sparse(), "wpe.weight": torch.zeros(C, D)},
    )
    expect_error(invoke("stats", pt), "wte.weight is a (64, 8) float32 (sparse_coo) tensor")
    listed = json.loads(invoke("weights", pt, "--json").stdout)
    assert {"name": "wte.weight", "shape": [V, D], "dtype": "float32 (sparse_coo)"} in (
        listed["tensors"]
    )
    for dtype, name in ((np.complex64, "complex64"), (np.longdouble, np.dtype(np.longdouble).name)):
        npz = tmp_path / f"{name}.npz"
        np.savez(npz, **{"wte.weight": np.zeros((V, D), dtype=dtype)})
        expect_error(invoke("embed", npz), f"wte.weight is a (64, 8) {name} tensor")
    st = tmp_path / "f8.safetensors"
    write_safetensors(st, {"wte.weight": torch.zeros(V, D).to(torch.float8_e4m3fn)})
    expect_error(invoke("neighbors", st), "wte.weight is a (64, 8) f8_e4m3 tensor")


# ---------------------------------------------------------------- damaged and forged files


def st_header_beyond_file(tmp_path: Path) -> Path:
    return raw_safetensors(tmp_path / "x.safetensors", {}, b"\0" * 32, size=10**12)


def st_offsets_beyond_file(tmp_path: Path) -> Path:
    entry = {"dtype": "F32", "shape": [V, D], "data_offsets": [0, V * D * 4]}
    return raw_safetensors(tmp_path / "x.safetensors", {"wte.weight": entry}, b"\0" * 64)


def st_shape_disagrees_with_bytes(tmp_path: Path) -> Path:
    entry = {"dtype": "F32", "shape": [V * 100, D], "data_offsets": [0, V * D * 4]}
    return raw_safetensors(tmp_path / "x.safetensors", {"wte.weight": entry}, bytes(V * D * 4))


def st_overflowing_shape(tmp_path: Path) -> Path:
    entry = {"dtype": "F32", "shape": [2**62, 2**62], "data_offsets": [0, 64]}
    return raw_safetensors(tmp_path / "x.safetensors", {"wte.weight": entry}, bytes(64))


def st_invalid_json(tmp_path: Path) -> Path:
    return raw_safetensors(tmp_path / "x.safetensors", b'{"wte.weight": {"dtype": ', bytes(64))


def st_truncated(tmp_path: Path) -> Path:
    path = write_safetensors(tmp_path / "x.safetensors", good_tables())
    path.write_bytes(path.read_bytes()[:-100])
    return path


def npz_lying_shape(tmp_path: Path) -> Path:
    data = np.zeros((V, D), dtype="<f4").tobytes()
    return write_npz(tmp_path / "x.npz", {"wte.weight": npy_bytes((10**9, D), "<f4", data)})


def npz_short_shape(tmp_path: Path) -> Path:
    data = np.zeros((V, D), dtype="<f4").tobytes()
    return write_npz(tmp_path / "x.npz", {"wte.weight": npy_bytes((2, D), "<f4", data)})


def npz_truncated(tmp_path: Path) -> Path:
    path = write_tables(tmp_path / "x", "npz", good_tables())
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def npz_unknown_version(tmp_path: Path) -> Path:
    content = npy_bytes((V, D), "<f4", bytes(V * D * 4))
    return write_npz(tmp_path / "x.npz", {"wte.weight": content[:6] + b"\x07\x00" + content[8:]})


def npz_huge_header(tmp_path: Path) -> Path:
    content = b"\x93NUMPY\x02\x00" + struct.pack("<I", 10**6) + b" " * 10**6
    return write_npz(tmp_path / "x.npz", {"wte.weight": content})


def npz_duplicate_names(tmp_path: Path) -> Path:
    content = npy_bytes((V, D), "<f4", bytes(V * D * 4))
    path = tmp_path / "x.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("wte.weight.npy", content)
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("wte.weight.npy", content)
    return path


def pt_truncated_zip(tmp_path: Path) -> Path:
    path = write_pt(tmp_path / "x.pt", good_tables())
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def pt_truncated_legacy(tmp_path: Path) -> Path:
    path = tmp_path / "x.pt"
    torch.save(good_tables(), path, _use_new_zipfile_serialization=False)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def pt_short_record(tmp_path: Path) -> Path:
    """A zip whose storage record holds fewer bytes than the tensor in data.pkl needs."""
    source = write_pt(tmp_path / "source.pt", good_tables())
    return rezip(
        source,
        tmp_path / "x.pt",
        lambda info, data: data[:16] if "/data/" in info.filename else data,
    )


def pt_not_a_state_dict(tmp_path: Path) -> Path:
    return write_pt(tmp_path / "x.pt", [torch.zeros(V, D)])


DAMAGED = {  # builder, and what the one error line says
    "safetensors header longer than the file": (
        st_header_beyond_file,
        "looks like safetensors, but its header claims 1,000,000,000,000 bytes",
    ),
    "safetensors offsets beyond the file": (
        st_offsets_beyond_file,
        "the file is truncated or damaged",
    ),
    "safetensors shape × dtype ≠ byte range": (
        st_shape_disagrees_with_bytes,
        "claims 2,048 bytes, but a (6400, 8) F32 tensor takes 204,800",
    ),
    "safetensors shape overflowing": (st_overflowing_shape, "overflow"),
    "safetensors invalid JSON header": (st_invalid_json, "as safetensors: damaged header"),
    "safetensors truncated": (st_truncated, "as safetensors"),
    "npz header declaring more than it holds": (
        npz_lying_shape,
        "wte.weight in {} declares shape (1000000000, 8) of float32 (32,000,000,000 bytes), "
        "but holds 2,048 bytes of data",
    ),
    "npz header declaring less than it holds": (npz_short_shape, "declares shape (2, 8)"),
    "npz truncated": (npz_truncated, "looks like a zip archive but is damaged"),
    "npz unknown .npy version": (npz_unknown_version, "unknown .npy version (7, 0)"),
    "npz huge .npy header": (npz_huge_header, "as a NumPy .npz archive: Header"),
    "npz two members of one name": (npz_duplicate_names, "holds two arrays named"),
    "pt truncated zip": (pt_truncated_zip, "looks like a zip archive but is damaged"),
    "pt truncated legacy pickle": (pt_truncated_legacy, "as a PyTorch checkpoint"),
    "pt record shorter than its tensor": (pt_short_record, "as a PyTorch checkpoint"),
    "pt holding a list": (pt_not_a_state_dict, "holds a Python list, not a state dict of tensors"),
}


@pytest.mark.parametrize("case", list(DAMAGED))
def test_damaged_and_forged_files_are_one_error_line(tmp_path: Path, case: str) -> None:
    build, message = DAMAGED[case]
    path = build(tmp_path)
    for command in COMMANDS:
        expect_error(invoke(command, path), message.format(path))


def npz_damaged_data(tmp_path: Path, how: str) -> Path:
    """A deflated .npz whose directory and headers are sound, but whose table's data is not
    (big enough that reading the header does not reach the damage)."""
    # 1 MiB, with the row of embed's "hi" (5303) in it
    table = torch.randn(1 << 13, 32, generator=torch.Generator().manual_seed(3))
    source = write_tables(tmp_path / "source", "npz", {"wte.weight": table})
    target = rezip(source, tmp_path / "x.npz", None, zipfile.ZIP_DEFLATED)
    raw = bytearray(target.read_bytes())
    with zipfile.ZipFile(target) as archive:
        info = archive.getinfo("wte.weight.npy")
    if how == "crc":  # the checksum in the central directory no longer matches
        at = raw.rindex(struct.pack("<I", info.CRC))
        raw[at : at + 4] = struct.pack("<I", info.CRC ^ 0xFFFF)
    else:  # the deflate stream itself is garbage
        start = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
        raw[start : start + 64] = bytes(range(64))
    target.write_bytes(bytes(raw))
    return target


@pytest.mark.parametrize("how", ["crc", "deflate"])
def test_damaged_data_is_found_when_it_is_read(tmp_path: Path, how: str) -> None:
    path = npz_damaged_data(tmp_path, how)
    for command in LOADING:  # embed reads its rows alone, but to the end of the data
        expect_error(invoke(command, path), f"cannot read wte.weight from {path}")
    for command in ("weights", "inspect-shapes"):  # they read headers only
        assert invoke(command, path).exit_code == 0


def test_unreadable_file(tmp_path: Path) -> None:
    path = write_tables(tmp_path / "x", "safetensors", good_tables())
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads it anyway: nothing to test
        pytest.skip("this user can read any file")
    for command in COMMANDS:
        expect_error(invoke(command, path), f"cannot read {path}: Permission denied")


# ---------------------------------------------------------------- code in pickles never runs


class Payload:
    """Unpickled, it would create the marker file: proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize("fmt", ["pt", "pt-legacy", "npz", "npz-in-table"])
def test_pickles_with_payloads_are_refused_and_never_run(tmp_path: Path, fmt: str) -> None:
    marker = tmp_path / "PWNED"
    payload = Payload(marker)
    path = tmp_path / "evil.bin"
    if fmt == "pt":
        torch.save({**good_tables(), "trap": payload}, path)
    elif fmt == "pt-legacy":
        torch.save({**good_tables(), "trap": payload}, path, _use_new_zipfile_serialization=False)
    elif fmt == "npz":
        np.savez(path, **{k: v.numpy() for k, v in good_tables().items()}, trap=np.array([payload]))
        path = path.with_suffix(".bin.npz")
    else:
        np.savez(path, **{"wte.weight": np.array([[payload]])})
        path = path.with_suffix(".bin.npz")
    for command in COMMANDS:
        expect_error(invoke(command, path), f"refusing to load {path}")
        assert not marker.exists()


# ---------------------------------------------------------------- memory


@pytest.fixture
def little_memory(monkeypatch: pytest.MonkeyPatch) -> int:
    """This machine, as the checks see it, has 64 MiB available."""
    from embedcli.core import memory

    monkeypatch.setattr(memory, "host_available_memory", lambda: 64 * MIB)
    return 64 * MIB


def test_an_npz_bomb_is_refused_before_it_is_inflated(tmp_path: Path, little_memory: int) -> None:
    path = zeros_npz(tmp_path / "bomb.npz", "wte.weight", 1 << 18, 1024)  # 1 GiB of zeros
    assert path.stat().st_size < 8 * MIB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # embed looks up its rows alone, inflating a chunk at a time: nothing to refuse
    looked_up = invoke("embed", path, "--json")
    assert looked_up.exit_code == 0, looked_up.output
    assert not any(json.loads(looked_up.stdout)["input_embeddings"][0][0])
    for command in ("neighbors", "stats"):  # these need the whole table
        expect_error(
            invoke(command, path),
            "the values of wte.weight (262144, 1024) float32 need 1.0 GiB, but only 64.0 MiB is "
            "available on this machine",
        )
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before  # KiB on Linux
    assert grown < 200 * 1024, grown
    for command in ("weights", "inspect-shapes"):  # headers alone: nothing to inflate
        assert invoke(command, path).exit_code == 0


def test_a_pt_with_compressed_records_is_refused_before_it_is_inflated(
    tmp_path: Path, little_memory: int
) -> None:
    source = write_pt(tmp_path / "source.pt", {"wte.weight": torch.zeros(1 << 16, 256)})
    path = rezip(source, tmp_path / "bomb.pt", None, zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < MIB
    for command in COMMANDS:
        expect_error(invoke(command, path), "inflated, need 64.0 MiB, but only 64.0 MiB")


def test_a_pt_with_compressed_records_that_fit_is_read(tmp_path: Path) -> None:
    source = write_pt(tmp_path / "source.pt", good_tables())
    path = rezip(source, tmp_path / "packed.pt", None, zipfile.ZIP_DEFLATED)
    result = runner.invoke(app, ["embed", "--ids", "3", "--weights", str(path), "--json"])
    assert result.exit_code == 0, result.output
    expected = good_tables()["wte.weight"][3] + good_tables()["wpe.weight"][0]
    assert torch.equal(torch.tensor(json.loads(result.stdout)["input_embeddings"])[0, 0], expected)


@pytest.mark.parametrize("fmt", ["safetensors", "npz"])
def test_tables_are_sized_before_they_are_read(
    tmp_path: Path, fmt: str, little_memory: int
) -> None:
    path = write_tables(tmp_path / "big", fmt, {"wte.weight": torch.zeros(1 << 15, 1024)})
    for command in LOADING:
        expect_error(invoke(command, path), "need 128.0 MiB, but only 64.0 MiB is available")


def test_stats_memory_is_the_table_and_a_chunk(tmp_path: Path) -> None:
    """A 512 MiB table of zeros in a 3 MiB file: `stats` peaks at about the table, where
    float64 copies of the whole table would take 3 GiB more."""
    big = zeros_npz(tmp_path / "bomb.npz", "wte.weight", 1 << 17, 1024)
    small = zeros_npz(tmp_path / "small.npz", "wte.weight", 16, 1024)
    peaks = []
    for path in (small, big):
        done = run_script([sys.executable, "-c", PEAK, str(path)], tmp_path)
        assert done.returncode == 0, done.stderr
        peaks.append(int(done.stdout.split()[-1]) * 1024)
        assert "0.0000" in done.stdout
    assert peaks[1] - peaks[0] < 512 * MIB + 160 * MIB, [p // MIB for p in peaks]


PEAK = """
import resource, sys
from embedcli.cli import app
try:
    app(["stats", "--weights", sys.argv[1]], prog_name="embedcli")
except SystemExit as exit:
    assert exit.code in (0, None), exit.code
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


# ---------------------------------------------------------------- NaN and infinite values


# ---------------------------------------------------------------- odd but sound files
