"""``project --export-projector``: the chosen points as TensorBoard's Embedding Projector loads
them (tensors.tsv, metadata.tsv with a header row, projector_config.pbtxt), checked before any
work and written through a stage, so that the three files are replaced together or not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from embedcli.core.memory import CHUNK_ELEMENTS
from embedcli.errors import OutputError
from embedcli.io.outputs import check_not_an_input, check_png, same_file

if TYPE_CHECKING:
    import torch

    from embedcli.analysis.projection import Projection
    from embedcli.io.outputs import Staging
    from embedcli.tokenization.encodings import Token


PROJECTOR_FILES = ("tensors.tsv", "metadata.tsv", "projector_config.pbtxt")


def check_outputs(
    png: Path | None, folder: Path | None, inputs: list[Path | int | None]
) -> list[Path]:
    """Refuse a --png or --export-projector that cannot be written, before any work: a PNG
    that is a folder, or not named *.png, or in a missing folder; an export folder that is a
    file, or in a missing folder; any output that is one of the ``inputs``. The export's
    files."""

    if png is not None:
        check_png(png)  # a folder, or a name not *.png
        if not png.parent.is_dir():
            raise OutputError(f"cannot write {png}: the folder {png.parent} does not exist")
        _check_not_an_input(png, inputs, "--png")
    if folder is None:
        return []
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"--export-projector {folder} is a file; give a folder")
    if not folder.parent.is_dir():
        raise OutputError(f"cannot write {folder}: the folder {folder.parent} does not exist")
    paths = [folder / name for name in PROJECTOR_FILES]
    for path in paths:
        if path.is_dir():
            raise OutputError(f"--export-projector would replace {path}, which is a folder")
        _check_not_an_input(path, inputs, "--export-projector")
        if png is not None and path.resolve() == png.resolve():
            raise OutputError(f"--png {png} is one of the files --export-projector writes")
    return paths


def _check_not_an_input(path: Path, inputs: list[Path | int | None], flag: str) -> None:
    """As io's check, but true where standard input is not read: with --first-ids or --ids-file
    alone, the file standard input comes from is no input, yet it is not replaced either."""
    if 0 in inputs and same_file(path, 0):
        raise OutputError(
            f"{flag} would replace {path}, the file standard input comes from; embedcli does "
            "not overwrite the file on its standard input, whether it reads it or not: choose "
            "another name, or redirect standard input from elsewhere"
        )
    check_not_an_input(path, inputs, flag)


_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def projector_label(token: Token) -> str:
    """A token's text for metadata.tsv: the piece with backslash, tab, newline and carriage
    return escaped as \\\\ \\t \\n \\r (the projector splits rows on newlines and columns on
    tabs) and every other control character as \\xNN; the bytes as <0x..> where they are not
    UTF-8 alone."""
    if token.piece is None:
        return token.display
    return "".join(
        _ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 else c)
        for c in token.piece
    )


def write_projector(
    folder: Path, table: torch.Tensor, report: Projection, stage: Staging
) -> list[Path]:
    """The points' full vectors (tensors.tsv), their pieces, ids and origins (metadata.tsv,
    with a header row) and a projector_config.pbtxt in ``folder`` (which must exist), as the
    TensorBoard Embedding Projector loads them, written through ``stage``: the three files are
    replaced together or not at all."""
    import numpy as np

    ids = [p.token.id for p in report.points]
    metadata = ["piece\tid\torigin"] + [
        f"{projector_label(p.token)}\t{p.token.id}\t{p.origin}" for p in report.points
    ]
    config = (
        "embeddings {\n"
        '  tensor_name: "token_embeddings"\n'
        '  tensor_path: "tensors.tsv"\n'
        '  metadata_path: "metadata.tsv"\n'
        f"  tensor_shape: {len(ids)}\n"
        f"  tensor_shape: {report.table_shape[1]}\n"
        "}\n"
    )
    paths = [folder / name for name in PROJECTOR_FILES]
    tensors, labels, settings = (stage.open(path) for path in paths)
    step = max(1, CHUNK_ELEMENTS // report.table_shape[1])
    for start in range(0, len(ids), step):
        rows = table[ids[start : start + step]].detach().cpu().float().numpy()
        # %.9g: every float32 value written so that it reads back exactly
        np.savetxt(tensors, rows, fmt="%.9g", delimiter="\t", newline="\n")
    labels.write(("\n".join(metadata) + "\n").encode("utf-8"))
    settings.write(config.encode("utf-8"))
    return paths
