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
import numpy.typing as npt

BRAM18_SHAPES = ((1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
REGISTER_DEPTH = 2


def bram18_count(width: int, depth: int) -> int:
    """BRAM18 blocks of a ``width``-bit, ``depth``-entry FIFO or buffer (0 for depth <= 2)."""
    if depth <= REGISTER_DEPTH or width <= 0:
        return 0
    return min(-(-depth // d) * -(-width // w) for d, w in BRAM18_SHAPES)


def bram18_counts(widths: npt.ArrayLike, depths: npt.ArrayLike) -> np.ndarray:
    """Vectorised :func:`bram18_count` over arrays of widths and depths."""
    widths = np.asarray(widths, dtype=np.int64)
    depths = np.asarray(depths, dtype=np.int64)
    best = np.full(widths.shape, np.iinfo(np.int64).max, dtype=np.int64)
    for d, w in BRAM18_SHAPES:
        best = np.minimum(best, (-(-depths // d)) * (-(-widths // w)))
    return np.where((depths <= REGISTER_DEPTH) | (widths <= 0), 0, best)


# == binding a buffer to a memory kind ========================================================

LUTRAM_BITS_PER_LUT = 64
URAM_SHAPE = (4096, 72)
MEMORY_KINDS = ("register", "lutram", "bram18", "uram")
# The platform resource each memory kind consumes; ``bram`` counts 36Kb blocks (two BRAM18).
KIND_RESOURCE = {"register": "ff", "lutram": "lut", "bram18": "bram", "uram": "uram"}


def memory_cost(kind: str, width: int, depth: int) -> float:
    """Platform resource units (``KIND_RESOURCE[kind]``) a ``width`` x ``depth`` buffer takes in
    ``kind``: flip-flops for registers, LUTs for LUTRAM (64 bits each), BRAM36 blocks for BRAM18
    (half a block per BRAM18), URAM blocks (4Kx72).

    >>> [memory_cost(k, 32, 1024) for k in MEMORY_KINDS]
    [32768, 512, 1.0, 1]
    >>> memory_cost("uram", 144, 5000), memory_cost("bram18", 8, 100)
    (4, 0.5)
    """
    if width <= 0 or depth <= 0:
        return 0
    if kind == "register":
        return width * depth
    if kind == "lutram":
        return -(-width * depth // LUTRAM_BITS_PER_LUT)
    if kind == "bram18":
        return bram18_count(width, max(depth, REGISTER_DEPTH + 1)) / 2
    if kind == "uram":
        return -(-depth // URAM_SHAPE[0]) * -(-width // URAM_SHAPE[1])
    raise KeyError(kind)


def memory_options(width: int, depth: int, fifo: bool = False) -> dict[str, float]:
    """The kinds a buffer may take with their cost: a FIFO of depth <= 2 is registers only;
    anything else is LUTRAM, BRAM18 or URAM.

    >>> memory_options(32, 2, fifo=True)
    {'register': 64}
    >>> memory_options(16, 64)
    {'lutram': 16, 'bram18': 0.5, 'uram': 1}
    """
    if fifo and depth <= REGISTER_DEPTH:
        return {"register": memory_cost("register", width, depth)}
    return {k: memory_cost(k, width, depth) for k in ("lutram", "bram18", "uram")}
