"""The interface every checkpoint offers, as a ``typing.Protocol``.

Four classes implement it: ``checkpoint.Checkpoint`` (one safetensors, PyTorch or .npz file),
``hub.shards.ShardedCheckpoint`` (tensors spread over files by an index), its
``hub.shards.RemoteSafetensors`` shards (a hub file read by the byte) and
``gguf.checkpoint.GGUFCheckpoint``. What differs between them is asked through explicit members
(``is_gguf``, ``reads_rows``, ``local_files``), never by probing for attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from embedcli.models.formats import TensorInfo


class Checkpoint(Protocol):
    """Tensors by name: described from headers, each read alone when asked for."""

    @property
    def path(self) -> Path:
        """The file, folder or hub location the tensors come from (as reports name it)."""

    @property
    def format(self) -> str:
        """'safetensors', 'pytorch', 'numpy', 'gguf', or how shards are held."""

    @property
    def extra(self) -> dict[str, Any]:
        """Entries of the file that are not tensors (a PyTorch checkpoint's)."""

    @property
    def is_gguf(self) -> bool:
        """Whether this is a GGUF file (llama.cpp's names; tables that may be quantized)."""

    @property
    def tensors(self) -> list[TensorInfo]:
        """Every tensor's description."""

    @property
    def names(self) -> list[str]:
        """Every tensor's name."""

    def info(self, name: str) -> TensorInfo:
        """The description of one tensor (an error naming it when there is none)."""

    def load(self, name: str) -> torch.Tensor:
        """One whole tensor, on the CPU."""

    def load_rows(self, name: str, rows: Sequence[int]) -> torch.Tensor:
        """Rows of a 2-D table: (len(rows), d)."""

    def reads_rows(self, name: str) -> bool:
        """Whether a lookup in table ``name`` reads the rows it uses alone (``load_rows``)
        rather than the whole table: a GGUF table, or a hub table not on this machine whole."""

    def shares_storage(self, first: str, second: str) -> bool:
        """Whether two tensors are one stored table (a tied head)."""

    def unique_parameters(self) -> int:
        """Elements of all tensors, shared storage counted once."""

    def local_files(self) -> list[Path]:
        """The files on this machine the tensors are read from (outputs must not be these)."""
