"""Memory-block geometry: how many BRAM18 blocks a buffer of ``width`` x ``depth`` needs.

BRAM18 aspect ratios (UltraScale+): 1Kx18, 2Kx9, 4Kx4, 8Kx2, 16Kx1; the cheapest ratio wins.
A FIFO of depth <= 2 is registers and takes no block.

>>> bram18_count(32, 2), bram18_count(32, 3), bram18_count(32, 1024), bram18_count(1, 16384)
(0, 2, 2, 1)
>>> bram18_count(512, 64)
29
"""

from __future__ import annotations

import numpy as np

BRAM18_SHAPES = ((1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
REGISTER_DEPTH = 2


def bram18_count(width: int, depth: int) -> int:
    """BRAM18 blocks of a ``width``-bit, ``depth``-entry FIFO or buffer (0 for depth <= 2)."""
    if depth <= REGISTER_DEPTH or width <= 0:
        return 0
    return min(-(-depth // d) * -(-width // w) for d, w in BRAM18_SHAPES)


def bram18_counts(widths, depths) -> np.ndarray:
    """Vectorised :func:`bram18_count` over arrays of widths and depths."""
    widths = np.asarray(widths, dtype=np.int64)
    depths = np.asarray(depths, dtype=np.int64)
    best = np.full(widths.shape, np.iinfo(np.int64).max, dtype=np.int64)
    for d, w in BRAM18_SHAPES:
        best = np.minimum(best, (-(-depths // d)) * (-(-widths // w)))
    return np.where((depths <= REGISTER_DEPTH) | (widths <= 0), 0, best)
