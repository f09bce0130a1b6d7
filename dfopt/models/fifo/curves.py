"""Token curves of one stream (StreamTensor section 5.3): how many tokens a FIFO must hold when
its consumer starts ``delay`` cycles after its producer.

For a stream of ``tokens`` tokens the producer writes token k at ``D + k * ii_src`` (``D`` is the
producer's initial delay) and the consumer asks for token k at ``delay + k * ii_dst``; a read
needs the token written in an earlier cycle, so the consumer stalls when it runs ahead.

Two versions:

* :func:`paper_max_tokens` — the paper's closed forms (StreamTensor section 5.3);
* :func:`exact_max_tokens` — the count under the token timing model (docs/design.md) for the
  pair in isolation: the depth that avoids every full-FIFO stall of the producer.

>>> paper_max_tokens(tokens=8, D=2, ii_src=1, ii_dst=2, delay=2)
5
>>> exact_max_tokens(tokens=8, D=2, ii_src=1, ii_dst=2, delay=2)
5
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def paper_max_tokens(tokens: int, D: int, ii_src: int, ii_dst: int, delay: float) -> int:
    """The paper's closed forms (both clamp to [1, tokens]).

    Source faster: ``min(T, T - floor((L - delay) / ii_dst))`` with ``L = D + (T-1) * ii_src``
    the source's last write offset; source slower or equal: ``min(T, ceil((delay - D) / ii_src))``.
    """
    if tokens <= 0:
        return 0
    last_write = D + (tokens - 1) * ii_src
    if ii_src < ii_dst:
        value = tokens - np.floor((last_write - delay) / ii_dst)
    else:
        value = np.ceil((delay - D) / ii_src)
    return int(min(tokens, max(1, value)))


def consumer_reads(tokens: int, D: int, ii_src: int, ii_dst: int, delay: int) -> tuple[np.ndarray, np.ndarray]:
    """(write times, read times) of the pair in isolation: the consumer stalls on empty only."""
    k = np.arange(tokens, dtype=np.int64)
    writes = D + k * ii_src
    nominal = delay + k * ii_dst
    # a_k = max(a_{k-1} + ii_dst, w_k + 1): the max-plus recurrence closes with one cummax
    reads = nominal + np.maximum.accumulate(np.maximum(writes + 1 - nominal, 0))
    return writes, reads


def occupancy_depth(writes: np.ndarray, reads: np.ndarray) -> int:
    """Smallest depth N with ``reads[k - N] < writes[k]`` for every k (no full-FIFO stall).

    Equals the FIFO's maximum occupancy when a freed slot is usable one cycle later.
    """
    if len(writes) == 0:
        return 0
    read_before = np.searchsorted(reads, writes, side="left")  # reads strictly before each write
    k = np.arange(len(writes))
    return int(max(1, (k + 1 - read_before).max()))


def exact_max_tokens(tokens: int, D: int, ii_src: int, ii_dst: int, delay: float) -> int:
    """Exact no-stall depth of the pair when the consumer starts ``delay`` cycles after the producer."""
    if tokens <= 0:
        return 0
    writes, reads = consumer_reads(tokens, int(D), int(ii_src), int(ii_dst), int(np.ceil(delay - 1e-9)))
    return occupancy_depth(writes, reads)


def exact_max_tokens_array(tokens: npt.ArrayLike, D: npt.ArrayLike, ii_src: npt.ArrayLike, ii_dst: npt.ArrayLike,
                           delay: npt.ArrayLike) -> np.ndarray:
    """Vectorised :func:`exact_max_tokens` through its closed form (one entry per stream).

    Producer not slower (``ii_src <= ii_dst``): the consumer stalls at most once, at its start
    ``d = max(delay, D + 1)``, so occupancy peaks at the last write:
    ``T - max(0, ceil((D + (T-1) * ii_src - d) / ii_dst))``.
    Producer slower: the consumer catches up and occupancy peaks before its first read:
    ``floor((delay - D) / ii_src) + 1``. Both clamp to [1, T]; 0 for T = 0.
    """
    T = np.asarray(tokens, dtype=np.int64)
    D = np.asarray(D, dtype=np.int64)
    a = np.asarray(ii_src, dtype=np.int64)
    b = np.asarray(ii_dst, dtype=np.int64)
    delay = np.ceil(np.asarray(delay, dtype=float) - 1e-9).astype(np.int64)
    start = np.maximum(delay, D + 1)
    late = D + (T - 1) * a - start
    fast = T - np.maximum(0, -(-late // b))
    slow = (delay - D) // a + 1
    occ = np.where(a <= b, fast, slow)
    return np.where(T > 0, np.clip(occ, 1, np.maximum(T, 1)), 0)


def paper_max_tokens_array(tokens: npt.ArrayLike, D: npt.ArrayLike, ii_src: npt.ArrayLike, ii_dst: npt.ArrayLike,
                           delay: npt.ArrayLike) -> np.ndarray:
    """Vectorised :func:`paper_max_tokens`."""
    T = np.asarray(tokens, dtype=float)
    D = np.asarray(D, dtype=float)
    a = np.asarray(ii_src, dtype=float)
    b = np.asarray(ii_dst, dtype=float)
    delay = np.asarray(delay, dtype=float)
    last = D + (T - 1) * a
    value = np.where(a < b, T - np.floor((last - delay) / b), np.ceil((delay - D) / a))
    out = np.minimum(T, np.maximum(1, value))
    return np.where(T > 0, out, 0).astype(np.int64)


# -- streams with per-token schedules ---------------------------------------------------------
#
# A stream end with a per-token schedule (docs/design.md, the token timing model) has no closed
# form: its curve is computed from the cycles. The producer writes token k at ``w_k``; the
# consumer, started ``delay`` cycles later, asks for token k at ``delay + r_k`` and, as in the
# steady case, stalls only on an empty FIFO: ``a_k = max(a_{k-1} + r_k - r_{k-1}, w_k + 1)``.

def schedule_reads(writes: np.ndarray, reads: np.ndarray, delay: int) -> np.ndarray:
    """Read times of the pair in isolation, the consumer started ``delay`` cycles late.

    >>> schedule_reads(np.array([10, 11, 12]), np.array([0, 1, 2]), 0).tolist()
    [11, 12, 13]
    """
    nominal = reads.astype(np.int64) + int(delay)
    return nominal + np.maximum.accumulate(np.maximum(writes + 1 - nominal, 0))


def schedule_max_tokens(writes: np.ndarray, reads: np.ndarray, delay: float) -> int:
    """Exact no-stall depth of a scheduled pair at a start ``delay`` (rounded up to a cycle).

    A burst of 4 writes in 4 cycles read one every 2 cycles needs 3 slots:

    >>> w, r = np.array([27, 28, 29, 30]), np.array([0, 2, 4, 6])
    >>> schedule_max_tokens(w, r, 0), schedule_max_tokens(w, r, 30)
    (3, 4)
    """
    if len(writes) == 0:
        return 0
    return occupancy_depth(writes, schedule_reads(writes, reads, int(np.ceil(delay - 1e-9))))


CURVE_SAMPLES = 64


def schedule_curve(writes: np.ndarray, reads: np.ndarray, samples: int = CURVE_SAMPLES
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(delays, depths) of the scheduled pair's curve from the least useful delay (the first
    read right after the first write) to the one where the first read follows the last write
    (depth T): ``samples`` points, integer delays, depths non-decreasing.

    >>> d, n = schedule_curve(np.array([27, 28, 29, 30]), np.array([0, 2, 4, 6]), samples=4)
    >>> d.tolist(), n.tolist()
    ([28, 29, 30, 31], [3, 3, 4, 4])
    """
    return schedule_curves({0: (writes, reads)}, samples)[0]


def schedule_max_tokens_batch(writes: np.ndarray, reads: np.ndarray, base: np.ndarray,
                              delay: np.ndarray) -> np.ndarray:
    """:func:`schedule_max_tokens` of many pairs at once: stream i owns tokens ``base[i] ..
    base[i+1]-1`` of the concatenated ``writes`` and ``reads``; ``delay`` per stream. The
    consumers' running stall is one segmented running maximum and the reads before each write one
    ``searchsorted`` (each stream lifted above the previous ones), so there is no loop per stream.

    >>> w, r = np.array([27, 28, 29, 30, 0, 1]), np.array([0, 2, 4, 6, 5, 6])
    >>> schedule_max_tokens_batch(w, r, np.array([0, 4, 6]), np.array([0, 0])).tolist()
    [3, 2]
    """
    counts = np.diff(base)
    seg = np.repeat(np.arange(len(counts)), counts)
    nominal = reads + np.repeat(np.ceil(np.asarray(delay, dtype=float) - 1e-9).astype(np.int64), counts)
    excess = np.maximum(writes + 1 - nominal, 0)
    span = int(max(int(excess.max(initial=0)), int(np.abs(nominal).max(initial=0)), int(np.abs(writes).max(initial=0))))
    lift = seg * (4 * span + 4)
    stall = np.maximum.accumulate(excess + lift) - lift
    read_times = nominal + stall
    before = np.searchsorted(read_times + lift, writes + lift, side="left") - base[seg]
    level = np.arange(len(writes)) - base[seg] + 1 - before
    out = np.zeros(len(counts), dtype=np.int64)
    full = np.flatnonzero(counts > 0)
    out[full] = np.maximum(np.maximum.reduceat(level, base[full]), 1)
    return out


def schedule_curves(ends: dict, samples: int = CURVE_SAMPLES) -> dict:
    """:func:`schedule_curve` of every scheduled stream in ``ends`` (index -> (writes, reads)),
    one batched evaluation per sample instead of one call per stream and sample."""
    if not ends:
        return {}
    keys = list(ends)
    w = np.concatenate([ends[j][0] for j in keys]).astype(np.int64)
    r = np.concatenate([ends[j][1] for j in keys]).astype(np.int64)
    counts = np.array([len(ends[j][0]) for j in keys], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(counts)])
    lo = w[base[:-1]] + 1 - r[base[:-1]]
    hi = np.maximum(lo, w[base[1:] - 1] + 1 - r[base[:-1]])
    grid = np.rint(lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, max(2, samples))[None, :]).astype(np.int64)
    depth = np.stack([schedule_max_tokens_batch(w, r, base, grid[:, i]) for i in range(grid.shape[1])], axis=1)
    out = {}
    for i, j in enumerate(keys):
        d, first = np.unique(grid[i], return_index=True)
        out[j] = (d, depth[i, first])
    return out


def convex_pieces(d: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lower convex envelope of the points ``(d, f)`` (``d`` increasing) as (breakpoints,
    slopes): slope ``slopes[i]`` from ``breaks[i]`` to ``breaks[i + 1]`` (the last slope goes on
    past the last breakpoint); slopes increase and are >= 0 when ``f`` never decreases.

    >>> b, s = convex_pieces(np.array([0, 1, 2, 3, 4]), np.array([1, 1, 2, 4, 4]))
    >>> b.tolist(), s.round(3).tolist()
    ([0, 1], [0.0, 1.0])
    """
    hull: list[int] = []
    for i in range(len(d)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b when it lies on or above the chord from a to i
            if (f[b] - f[a]) * (d[i] - d[a]) >= (f[i] - f[a]) * (d[b] - d[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    idx = np.array(hull)
    if len(idx) == 1:
        return d[idx], np.zeros(1)
    slopes = np.diff(f[idx]).astype(float) / np.diff(d[idx])
    keep = np.concatenate([[True], np.diff(slopes) > 1e-12])     # merge collinear pieces
    return d[idx][:-1][keep], slopes[keep]
