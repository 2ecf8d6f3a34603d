"""SentencePiece's precompiled charsmap (``tokenizer.ggml.precompiled_charsmap``) as llama.cpp
reads it (``llm_tokenizer_ugm`` and ``normalize_prefix`` in ``src/llama-vocab.cpp``).

The blob is a little-endian uint32 (the size of the array), an XOR-compressed compact double
array (XCDA: one uint32 per node, BASE in bits 10-30 shifted left 8 more where bit 9 is set,
LEAF in bit 8, LCHECK in bits 0-7 and 31), then NUL-terminated replacement strings. The
longest prefix of the input's bytes that the trie holds is replaced by its string. Its keys are
bytes, not characters, and a NUL byte ends a walk, as in llama.cpp. A walk that leaves the
array, or a replacement that runs past the blob or is not terminated, is the error llama.cpp
throws, raised here as an :class:`~embedcli.errors.EncodingError`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from embedcli.errors import EncodingError


def charsmap_bytes(values: Sequence[int] | bytes, label: str) -> bytes:
    """The blob as llama.cpp keeps it (an int8 or uint8 array), checked as llama.cpp checks it
    on load: a size, and an array that leaves room for at least one replacement byte."""
    bad = next((v for v in values if isinstance(v, bool) or not -128 <= v <= 255), None)
    if bad is not None:
        raise EncodingError(
            f"{label}: tokenizer.ggml.precompiled_charsmap holds {bad!r}, which is no byte"
        )
    blob = bytes(v & 0xFF for v in values)
    if len(blob) < 4:
        raise EncodingError(
            f"{label}: tokenizer.ggml.precompiled_charsmap is too small for its size header "
            "(llama.cpp refuses the file)"
        )
    size = struct.unpack_from("<I", blob)[0]
    if size + 4 >= len(blob):
        raise EncodingError(
            f"{label}: tokenizer.ggml.precompiled_charsmap says its array has {size:,} bytes, "
            f"more than the blob's {len(blob):,} leave (llama.cpp refuses the file)"
        )
    return blob


class Charsmap:
    """The XCDA of a precompiled charsmap, walked over a text's bytes."""

    def __init__(self, blob: bytes, label: str) -> None:
        size = struct.unpack_from("<I", blob)[0]
        count = size // 4
        self.nodes = struct.unpack_from(f"<{count}I", blob, 4)
        self.replacements = blob[4 + size :]
        self.label = label

    def _node(self, index: int) -> int:
        if index >= len(self.nodes):
            raise EncodingError(
                f"{self.label}: the precompiled charsmap's trie leaves its array (llama.cpp "
                "throws: Index out of array bounds in XCDA array!)"
            )
        return self.nodes[index]

    def _base(self, index: int) -> int:
        node = self._node(index)
        return (node >> 10) << ((node & (1 << 9)) >> 6)

    def longest(self, data: bytes, start: int) -> tuple[int, bytes] | None:
        """(length, replacement) of the longest prefix of ``data[start:]`` the charsmap holds."""
        found: tuple[int, int] | None = None
        index = self._base(0)
        for at in range(start, len(data)):
            byte = data[at]
            if byte == 0:
                break
            index ^= byte
            node = self._node(index)
            if node & ((1 << 31) | 0xFF) != byte:  # LCHECK: not a child of the node before
                break
            leaf = (node >> 8) & 1
            index ^= self._base(index)
            if leaf:
                found = (at - start + 1, self._node(index) & ((1 << 31) - 1))
        if found is None:
            return None
        length, offset = found
        return length, self._replacement(offset)

    def _replacement(self, offset: int) -> bytes:
        if offset >= len(self.replacements):
            raise EncodingError(
                f"{self.label}: the precompiled charsmap points past its strings (llama.cpp "
                "throws: Index out of array bounds in precompiled charsmap!)"
            )
        end = self.replacements.find(b"\0", offset)
        if end < 0:
            raise EncodingError(
                f"{self.label}: the precompiled charsmap holds an unterminated string "
                "(llama.cpp throws: Unterminated string in precompiled charsmap!)"
            )
        return self.replacements[offset:end]
