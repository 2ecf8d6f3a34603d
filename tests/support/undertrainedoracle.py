"""An independent reading of Land and Bartolo's undertrained indicator in plain NumPy, the oracle
of ``embedcli undertrained``, and GPT-2's known-unused byte tokens."""

from __future__ import annotations

import numpy as np

# GPT-2's single-byte tokens of the bytes UTF-8 never holds (0xC0, 0xC1, 0xF5-0xFF): in GPT-2's
# byte order (! to ~, then ¡ to ¬, then ® to ÿ as ids 106..187), 0xC0 and 0xC1 are ids 124 and
# 125, and 0xF5..0xFF are ids 177..187
NEVER_UTF8_IDS = [124, 125, *range(177, 188)]


def numpy_indicator(matrix: np.ndarray, reference: list[int]) -> np.ndarray:
    """The paper's indicator, read plainly: the first principal component of the centred
    matrix (an SVD), taken out of every row; the reference rows' mean; each row's cosine."""
    matrix = matrix.astype(np.float64)
    _, _, vt = np.linalg.svd(matrix - matrix.mean(axis=0), full_matrices=False)
    first = vt[0]
    without = matrix - np.outer(matrix @ first, first)
    unused = without[reference].mean(axis=0)
    return without @ unused / (np.linalg.norm(without, axis=1) * np.linalg.norm(unused))
