""".npz tables are read as far as a command uses them: a stored member (np.savez) is mapped where
it lies in the zip, so a lookup brings in the pages of its rows; a compressed one
(np.savez_compressed) is inflated a chunk at a time, keeping only the rows looked up. Either way
the values are those of the same table as safetensors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from support.checkpointfiles import good_tables, runner, write_safetensors

from embedcli.cli import app

# Peak resident memory a few lookups add, in a process of its own: VmHWM is reset (clear_refs 5)
# after the imports, so the peak is the lookups' own, not torch's start-up.
PROBE = """
import sys
from pathlib import Path
import torch
from embedcli.models.checkpoint import Checkpoint

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024

checkpoint = Checkpoint(Path(sys.argv[1]))
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")
before = status("VmRSS:")
rows = checkpoint.load_rows("wte.weight", [3, 40000, 7])
if sys.argv[2] == "whole":
    rows = checkpoint.load("wte.weight")[[3, 40000, 7]]
print(status("VmHWM:") - before, float(rows.sum()))
"""

ROWS, WIDTH = 65536, 256  # a 64 MiB float32 table


def _grown(path: Path, how: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), how], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[0])


@pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc/self/clear_refs"
)
@pytest.mark.parametrize(
    ("save", "how"),
    [(np.savez, "rows"), (np.savez, "whole"), (np.savez_compressed, "rows")],
    ids=["stored, rows", "stored, whole table indexed", "compressed, rows"],
)
def test_a_lookup_in_a_large_npz_table_does_not_read_the_table(
    tmp_path: Path, save, how: str
) -> None:
    path = tmp_path / "big.npz"
    table = np.zeros((ROWS, WIDTH), dtype=np.float32)
    save(path, **{"wte.weight": table, "wpe.weight": np.zeros((16, WIDTH), dtype=np.float32)})
    table_bytes = table.nbytes
    grown = _grown(path, how)
    # reading the table whole would add 64 MiB; the chunked inflate holds a few MiB at a time
    assert grown < table_bytes // 4, f"{grown:,} bytes for 3 rows of a {table_bytes:,}-byte table"


def _npz(path: Path, arrays: dict[str, np.ndarray], compressed: bool) -> Path:
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path


@pytest.mark.parametrize("compressed", [False, True], ids=["stored", "compressed"])
@pytest.mark.parametrize("order", ["native", "big-endian", "fortran"])
def test_npz_lookups_give_the_safetensors_values(
    tmp_path: Path, compressed: bool, order: str
) -> None:
    tables = good_tables()
    token, position = tables["wte.weight"].numpy(), tables["wpe.weight"].numpy()
    if order == "big-endian":
        token, position = token.astype(">f4"), position.astype(">f4")
    elif order == "fortran":
        token, position = np.asfortranarray(token), np.asfortranarray(position)
    npz = _npz(tmp_path / "t.npz", {"wte.weight": token, "wpe.weight": position}, compressed)
    reference = write_safetensors(tmp_path / "t.safetensors", tables)
    got = {}
    for path in (npz, reference):
        args = ["embed", "--ids", "5 3 5 60", "--weights", str(path), "--verify", "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        got[path.suffix] = json.loads(result.stdout)["input_embeddings"]
    assert got[".npz"] == got[".safetensors"]
    expected = tables["wte.weight"][[5, 3, 5, 60]] + tables["wpe.weight"][:4]
    assert torch.equal(torch.tensor(got[".npz"])[0], expected)
