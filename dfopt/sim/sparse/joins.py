"""Co-iteration of two fibre streams: the intersect and union joiners, bit-vectors, fibre statistics.

Every method gives the same coordinates and references; they differ in the work. Fibres are joined
pairwise (one pair per iteration of the enclosing loops) on keys ``fibre * (dim + 1) + crd``, so a
whole stream joins in one sorted-array operation.

>>> from dfopt.sim.sparse.streams import Stream
>>> a = Stream("crd", np.array([0, 2, 5]), (np.array([0, 3]),))
>>> b = Stream("crd", np.array([2, 3, 7]), (np.array([0, 3]),))
>>> out = join(a, b, "intersect", 8)
>>> out.crd.data.tolist(), out.index_a.tolist(), out.index_b.tolist()
([2], [1], [0])
>>> out.stats.merge_steps, out.stats.union, two_finger_steps([0, 2, 5], [2, 3, 7], "intersect")
(4, 5, 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dfopt.sim.sparse.streams import BitStream, Stream, fibre_of, offsets_of


@dataclass(frozen=True)
class JoinStats:
    """Fibre statistics of one binary join: ``index``, ``op`` (``intersect`` | ``union``),
    ``operands`` (its two inputs), ``fibers`` (fibre pairs), ``dim`` (size of the index), ``sizes``
    (coordinates of each input), ``inter`` and ``union`` (sizes of the fibres' intersections and
    unions, summed), ``merge_steps`` (exact steps of a two-finger merge) and ``method`` (the one the
    graph used)."""

    index: str
    op: str
    operands: tuple[str, str]
    fibers: int
    dim: int
    sizes: tuple[int, int]
    inter: int
    union: int
    merge_steps: int
    method: str


@dataclass(frozen=True)
class _Counts:
    fibers: int
    sizes: tuple[int, int]
    inter: int
    union: int
    merge_steps: int


@dataclass(frozen=True, eq=False)
class Joined:
    """A join's result: the coordinate stream and, per output coordinate, the position of each
    input's entry in its fibre stream (``-1``: absent, a union)."""

    crd: Stream
    index_a: np.ndarray
    index_b: np.ndarray
    stats: _Counts


def two_finger_steps(a, b, op: str) -> int:
    """Steps of the two-finger merge of two sorted fibres, step by step (the definition)."""
    i = j = steps = 0
    while (i < len(a) and j < len(b)) if op == "intersect" else (i < len(a) or j < len(b)):
        steps += 1
        if j >= len(b) or (i < len(a) and a[i] < b[j]):
            i += 1
        elif i >= len(a) or b[j] < a[i]:
            j += 1
        else:
            i, j = i + 1, j + 1
    return steps


def _keys(s: Stream, dim: int, side: str) -> np.ndarray:
    keys = fibre_of(s.segs[-1]) * (dim + 1) + s.data.astype(np.int64)
    if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        raise ValueError(f"join input {side}: coordinates within a fibre must be unique and increasing")
    return keys


def join(a: Stream, b: Stream, op: str, dim: int) -> Joined:
    """Join two coordinate streams fibre by fibre (see the module docstring)."""
    if a.fibers != b.fibers:
        raise ValueError(f"join inputs have {a.fibers} and {b.fibers} fibres; they must pair up")
    ka, kb = _keys(a, dim, "a"), _keys(b, dim, "b")
    union = sorted_union(ka, kb)
    ia, ib = _find(ka, union), _find(kb, union)
    both = (ia >= 0) & (ib >= 0)
    keep = both if op == "intersect" else np.ones(len(union), dtype=bool)
    out = union[keep]
    fibre = out // (dim + 1)
    crd = Stream("crd", out % (dim + 1), a.segs[:-1] + (offsets_of(np.bincount(fibre, minlength=a.fibers)),))
    stats = _Counts(a.fibers, (len(ka), len(kb)), int(both.sum()), len(union), _steps(a, b, union, dim, op))
    return Joined(crd, ia[keep], ib[keep], stats)


def sorted_union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The union of two increasing arrays (a linear merge: the stable sort of two runs)."""
    out = np.concatenate([a, b])
    out.sort(kind="stable")
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def _find(keys: np.ndarray, union: np.ndarray) -> np.ndarray:
    """Position of each union key in ``keys``, or -1."""
    at = np.searchsorted(keys, union)
    at = np.minimum(at, max(len(keys) - 1, 0))
    hit = keys[at] == union if len(keys) else np.zeros(len(union), dtype=bool)
    return np.where(hit, at, -1)


def _steps(a: Stream, b: Stream, union: np.ndarray, dim: int, op: str) -> int:
    """Exact two-finger steps: a union advances once per coordinate of the union; an intersection
    stops when either fibre is exhausted, after the union's coordinates up to the smaller last one."""
    if op == "union":
        return len(union)
    last = []
    for s in (a, b):
        lens = s.lengths()
        end = np.full(len(lens), -1, dtype=np.int64)
        ne = lens > 0
        end[ne] = s.data[s.segs[-1][1:][ne] - 1]
        last.append(end)
    bound = np.minimum(last[0], last[1])
    fibre = union // (dim + 1)
    return int(np.count_nonzero(union % (dim + 1) <= bound[fibre]))


# --- bit-vectors ----------------------------------------------------------------------------------

def words_per_fibre(dim: int, width: int) -> int:
    return -(-dim // width)


def bv_gen(crd: Stream, dim: int, width: int) -> BitStream:
    """Each fibre's coordinates as ``ceil(dim / width)`` packed words (only nonzero words held).

    >>> bv = bv_gen(Stream("crd", np.array([0, 3, 9]), (np.array([0, 3]),)), 12, 8)
    >>> bv.data.tolist(), bv.word.tolist(), bv.tokens, bv_coordinates(bv, 8).data.tolist()
    ([9, 2], [0, 1], 4, [0, 3, 9])
    """
    w = words_per_fibre(dim, width)
    fibre = fibre_of(crd.segs[-1])
    c = crd.data.astype(np.int64)
    keys = fibre * w + c // width
    bits = np.left_shift(np.uint64(1), (c % width).astype(np.uint64))
    if len(keys) == 0:
        return BitStream(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64),
                         crd.segs[:-1] + (np.zeros(crd.fibers + 1, dtype=np.int64),), w)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    words = np.bitwise_or.reduceat(bits, starts)
    ukeys = keys[starts]
    segs = crd.segs[:-1] + (offsets_of(np.bincount(ukeys // w, minlength=crd.fibers)),)
    return BitStream(words, ukeys % w, segs, w)


def _word_keys(s: BitStream) -> np.ndarray:
    return fibre_of(s.segs[-1]) * s.width + s.word


def bv_join(a: BitStream, b: BitStream, op: str) -> BitStream:
    """Word-wise AND (intersection) or OR (union) of two bit-vector streams."""
    ka, kb = _word_keys(a), _word_keys(b)
    union = sorted_union(ka, kb)
    ia, ib = _find(ka, union), _find(kb, union)
    wa = np.where(ia >= 0, a.data[np.maximum(ia, 0)] if len(a.data) else 0, 0).astype(np.uint64)
    wb = np.where(ib >= 0, b.data[np.maximum(ib, 0)] if len(b.data) else 0, 0).astype(np.uint64)
    words = wa & wb if op == "and" else wa | wb
    keep = words != 0
    keys, words = union[keep], words[keep]
    segs = a.segs[:-1] + (offsets_of(np.bincount(keys // a.width, minlength=a.fibers)),)
    return BitStream(words, keys % a.width, segs, a.width)


def bv_coordinates(s: BitStream, bits: int) -> Stream:
    """The coordinates a bit-vector stream holds (the scan of its set bits)."""
    as_bytes = s.data.astype("<u8").view(np.uint8).reshape(-1, 8)
    flags = np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :bits]
    word, bit = np.nonzero(flags)
    crd = s.word[word] * bits + bit
    fibre = fibre_of(s.segs[-1])[word]
    return Stream("crd", crd.astype(np.int64), s.segs[:-1] + (offsets_of(np.bincount(fibre, minlength=s.fibers)),))


def bv_rank(s: BitStream, crd: Stream, bits: int) -> np.ndarray:
    """For each coordinate of ``crd`` (same fibres as ``s``), its rank among the set bits of its
    fibre in ``s`` (a popcount of the bits below it), or -1 where its bit is clear."""
    fibre = fibre_of(crd.segs[-1])
    c = crd.data.astype(np.int64)
    keys = _word_keys(s)
    want = fibre * s.width + c // bits
    at = _find(keys, want)
    if len(keys) == 0:
        return np.full(len(c), -1, dtype=np.int64)
    pop = np.bitwise_count(s.data).astype(np.int64)
    before = np.concatenate(([0], np.cumsum(pop)))
    safe = np.maximum(at, 0)
    word = s.data[safe]
    shift = (c % bits).astype(np.uint64)
    below = np.bitwise_count(word & (np.left_shift(np.uint64(1), shift) - np.uint64(1))).astype(np.int64)
    rank = before[safe] - before[s.segs[-1][fibre]] + below
    hit = (at >= 0) & ((np.right_shift(word, shift) & np.uint64(1)) == 1)
    return np.where(hit, rank, -1)


def bv_scan(joined: BitStream, a: BitStream, b: BitStream, op: str, dim: int, bits: int) -> Joined:
    """Coordinates of the joined bit-vector and each input's entry by popcount: the set bits of the
    input's earlier fibres plus those below the coordinate in its own fibre."""
    crd = bv_coordinates(joined, bits)
    fibre = fibre_of(crd.segs[-1])
    out = []
    for s in (a, b):
        rank = bv_rank(s, crd, bits)
        per = np.bincount(fibre_of(s.segs[-1]), weights=np.bitwise_count(s.data), minlength=s.fibers)
        start = offsets_of(per.astype(np.int64))
        out.append(np.where(rank >= 0, start[fibre] + rank, -1))
    ca, cb = bv_coordinates(a, bits), bv_coordinates(b, bits)
    union = sorted_union(_keys(ca, dim, "a"), _keys(cb, dim, "b"))
    inter = int(np.bitwise_count(bv_join(a, b, "and").data).sum())
    stats = _Counts(a.fibers, (ca.leaves, cb.leaves), inter, len(union), _steps(ca, cb, union, dim, op))
    return Joined(crd, out[0], out[1], stats)
