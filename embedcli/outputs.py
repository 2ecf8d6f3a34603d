"""Writing tensors to files: chosen by suffix, written atomically, never left half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from embedcli.errors import OutputError

if TYPE_CHECKING:
    import torch

OUTPUT_SUFFIXES = (".npy", ".pt", ".safetensors")


def check_output_path(path: Path, dtype: str) -> Path:
    """Refuse a bad --output before any work is done: suffix, folder, permissions, dtype."""
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise OutputError(
            f"cannot tell the format of {path} from its suffix {suffix or '(none)'!r}; "
            f"use one of: {', '.join(OUTPUT_SUFFIXES)}"
        )
    if suffix == ".npy" and dtype == "bfloat16":
        raise OutputError(
            "NumPy has no bfloat16, so .npy cannot hold it exactly; write .pt or .safetensors, "
            "or pass --dtype float32"
        )
    if path.is_dir():
        raise OutputError(f"{path} is a directory; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: the folder {folder} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"cannot write {path}: the file exists and is read-only")
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_tensor(path: Path, tensor: torch.Tensor, name: str = "input_embeddings") -> None:
    """Write ``tensor`` as .npy, .pt or .safetensors, via a temporary file and a rename."""
    suffix = path.suffix.lower()
    data = tensor.detach().cpu().contiguous()
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        if suffix == ".npy":
            import numpy as np

            with open(tmp, "wb") as handle:
                np.save(handle, data.numpy())
        elif suffix == ".pt":
            import torch

            torch.save(data, tmp)
        else:
            from safetensors.torch import save_file

            save_file({name: data}, str(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        # Reached with the file still there only on failure or Ctrl-C: leave nothing behind.
        tmp.unlink(missing_ok=True)
