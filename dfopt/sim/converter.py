"""Element-by-element simulation of a layout converter (the oracle for Algorithm 1).

The producer writes its tokens, element by element in its own order, into a buffer of the given
shape (an element at data coordinate ``x`` lands at ``x mod shape``); the consumer then reads in
its order. One phase per iteration of the shared outer loops, each into its own half of the
ping-pong buffer, so a phase's reads see exactly that phase's writes (the last write to each
slot). The converter is *correct* when every element the consumer reads is the one it asked for.

>>> from dfopt.ir.itensor import ITensorType
>>> src = ITensorType("f32", (8, 8), (4, 2), (4, 2), (2, 4), (1, 0))
>>> dst = ITensorType("f32", (8, 8), (4, 2), (4, 2, 2), (2, 1, 4), (2, 0))
>>> simulate_converter(src, dst, (8, 2), 1).ok, simulate_converter(src, dst, (7, 2), 1).ok
(True, False)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dfopt.ir.itensor import ITensorType

MAX_ELEMENTS = 4_000_000  # per side; larger streams are not simulated


@dataclass(frozen=True)
class ConverterRun:
    """The outcome: ``wrong`` reads out of ``reads``; ``first`` describes the first wrong read."""

    ok: bool
    reads: int
    wrong: int
    first: str = ""


def stream_elements(t: ITensorType, shared_loops: int) -> tuple[np.ndarray, np.ndarray]:
    """(phase, flat data index) of every element the stream carries, in stream order.

    The phase is the index of the iteration of the first ``shared_loops`` loops of tripcount > 1.
    """
    trips = np.asarray(t.tripcounts, dtype=np.int64)
    points = np.indices(tuple(t.tripcounts)).reshape(len(trips), -1).T          # (T, depth)
    rank = len(t.shape)
    offsets = np.zeros((len(points), rank), dtype=np.int64)
    for d, m in enumerate(t.map):
        if m is not None:
            offsets[:, d] = points[:, m] * int(t.steps[m])
    inner = np.indices(tuple(t.element)).reshape(rank, -1).T                     # (E, rank)
    coords = (offsets[:, None, :] + inner[None, :, :]).reshape(-1, rank)
    flat = np.ravel_multi_index(tuple(coords.T), tuple(t.shape))
    outer = [i for i, trip in enumerate(t.tripcounts) if trip != 1][:shared_loops]
    if outer:
        phase = np.ravel_multi_index(tuple(points[:, outer].T), tuple(trips[outer]))
    else:
        phase = np.zeros(len(points), dtype=np.int64)
    return np.repeat(phase, len(inner)), flat


def simulate_converter(src: ITensorType, dst: ITensorType, shape: Iterable[int],
                       shared_loops: int) -> ConverterRun:
    """Run the converter with a buffer of ``shape`` and phases of ``shared_loops`` shared loops."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != len(src.shape) or any(s < 1 for s in shape):
        return ConverterRun(False, 0, 0, f"buffer shape {list(shape)} does not match tensor rank {len(src.shape)}")
    w_phase, w_flat = stream_elements(src, shared_loops)
    r_phase, r_flat = stream_elements(dst, shared_loops)
    size = math.prod(shape)

    def keys(phase, flat):
        coords = np.unravel_index(flat, tuple(src.shape))
        addr = np.ravel_multi_index(tuple(c % s for c, s in zip(coords, shape)), shape)
        return phase * size + addr

    w_keys = keys(w_phase, w_flat)
    # the last write to each (phase, slot) wins: first occurrence in the reversed sequence
    uniq, first_rev = np.unique(w_keys[::-1], return_index=True)
    holds = w_flat[::-1][first_rev]
    r_keys = keys(r_phase, r_flat)
    pos = np.searchsorted(uniq, r_keys)
    pos_clipped = np.minimum(pos, len(uniq) - 1)
    written = (pos < len(uniq)) & (uniq[pos_clipped] == r_keys)
    good = written & (holds[pos_clipped] == r_flat)
    wrong = int((~good).sum())
    first = ""
    if wrong:
        i = int(np.flatnonzero(~good)[0])
        coord = [int(c) for c in np.unravel_index(r_flat[i], tuple(src.shape))]
        what = "never written in its phase" if not written[i] else "overwritten before it was read"
        first = (f"read {i} (phase {int(r_phase[i])}) wants element {coord}, "
                 f"which was {what}")
    return ConverterRun(wrong == 0, len(r_flat), wrong, first)


def simulable(src: ITensorType, dst: ITensorType) -> bool:
    """Whether both sides are small enough to simulate element by element."""
    return max(src.tokens * src.element_count, dst.tokens * dst.element_count) <= MAX_ELEMENTS
