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
