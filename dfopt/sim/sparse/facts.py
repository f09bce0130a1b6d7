"""Access facts of every array: how the simulated graph read or wrote it.

Each primitive that touches an array records its accesses in order, with the loop iteration that
made each one (a point of the nest's iteration tree, from which the iteration of every enclosing
loop follows). :func:`facts` turns the records into :class:`AccessFacts`: whether a FIFO can serve
the trace (``in_order``), whether it gathers, and per allocation depth the segment of positions one
iteration of the enclosing loops touches.

>>> from dfopt.sim.sparse.streams import Stream
>>> log = AccessLog("x", "vals", "read", "j", 4)
>>> log.add(np.array([2, 0, 3]), np.arange(3), (np.array([0, 2]), np.array([0, 1, 3])))
>>> f = log.facts(("i", "j"), {})
>>> f.in_order, f.gather, f.segments
(False, True, ((4, 4), (4, 5), (1, 3)))
>>> f.bank_conflicts(banks=2, lanes=2)      # addresses 2 and 0 share bank 0
1
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dfopt.sim.sparse.streams import ancestors


@dataclass(frozen=True, eq=False)
class AccessFacts:
    """How one array was accessed.

    ``tensor``, ``kind`` (``pos``, ``crd``, ``vals``), ``role`` (``read``, ``write``,
    ``accumulate``), ``loop`` (the index whose iterations access it; None: the root), ``length``
    (words), ``accesses``, ``in_order`` (positions 0, 1, 2, ... each once: a FIFO serves it),
    ``gather`` (some access is below the previous one), ``addresses`` (the trace), ``segments``
    (per allocation depth d = 0..len(loops): the largest span of positions one iteration of the
    first d loops touches and the total of those spans: the words of an on-chip copy allocated at
    that depth and the words its bulk copies move).
    """

    tensor: str
    kind: str
    role: str
    loop: str | None
    length: int
    accesses: int
    in_order: bool
    gather: bool
    addresses: np.ndarray = field(repr=False)
    segments: tuple[tuple[int, int], ...]
    _conflicts: dict = field(default_factory=dict, repr=False)

    def bank_conflicts(self, banks: int, lanes: int) -> int:
        """Extra cycles when the trace is served ``lanes`` accesses at a time from ``banks`` banks by
        address modulo banks: per group, the largest count on one bank minus one (memoised).

        >>> f = AccessFacts("x", "vals", "read", "j", 8, 6, False, True, np.array([0, 4, 8, 1, 2, 3]), ((8, 8),))
        >>> f.bank_conflicts(4, 3), f.bank_conflicts(4, 6), f.bank_conflicts(16, 3)
        (2, 2, 0)
        """
        key = (int(banks), int(lanes))
        if key not in self._conflicts:
            self._conflicts[key] = _conflicts(self.addresses, *key)
        return self._conflicts[key]


def _conflicts(addresses: np.ndarray, banks: int, lanes: int) -> int:
    """Per group of ``lanes`` consecutive accesses, the largest count on one bank minus one,
    summed: banks sorted within each group, and the longest run of one bank is 1 plus the number
    of shifts k at which some bank equals the one k places before it."""
    n = len(addresses)
    if n == 0 or lanes <= 1 or banks < 1:
        return 0
    rows = -(-n // lanes)
    grid = np.full(rows * lanes, -1, dtype=np.int64)
    grid[:n] = addresses % banks
    pad = np.arange(rows * lanes - n, dtype=np.int64)
    grid[n:] = -2 - pad                       # distinct fillers match nothing
    grid = np.sort(grid.reshape(rows, lanes), axis=1)
    extra = np.zeros(rows, dtype=np.int64)
    for k in range(1, lanes):
        same = (grid[:, k:] == grid[:, :-k]).any(axis=1)
        if not same.any():
            break
        extra += same
    return int(extra.sum())


@dataclass
class _Record:
    positions: np.ndarray
    ids: np.ndarray                     # the iteration point of each access at depth len(segs)
    segs: tuple[np.ndarray, ...]
    nest: str                           # "" (the main loops) or the consumer's tag


@dataclass
class AccessLog:
    """The accesses of one array, recorded by the primitives in the order they ran."""

    tensor: str
    kind: str
    role: str
    loop: str | None
    length: int
    records: list[_Record] = field(default_factory=list)

    def add(self, positions: np.ndarray, ids: np.ndarray, segs: tuple[np.ndarray, ...], nest: str = "") -> None:
        self.records.append(_Record(np.asarray(positions, dtype=np.int64), np.asarray(ids, dtype=np.int64),
                                    tuple(segs), nest))

    def facts(self, loops: tuple[str, ...], nests: dict[str, tuple[int, tuple[int, ...]]]) -> AccessFacts:
        """The facts, with ``nests[tag] = (outer loops, main depth of each held index)`` mapping a
        consumer's iteration points onto the main loops' depths."""
        records = [r for r in self.records if len(r.positions)]
        trace = np.concatenate([r.positions for r in records]) if records else np.zeros(0, dtype=np.int64)
        if len({r.nest for r in records}) > 1:
            # producer and consumer interleave per iteration of the shared outer loops
            base = min(nests[r.nest][0] for r in records if r.nest) if any(r.nest for r in records) else 0
            outer = np.concatenate([ancestors(r.segs, r.ids, min(base, len(r.segs))) for r in records])
            order = np.argsort(outer, kind="stable")
            trace = trace[order]
        n = len(trace)
        in_order = bool(np.array_equal(trace, np.arange(n)))
        gather = bool(n > 1 and np.any(trace[1:] < trace[:-1]))
        segments = tuple(self._segment(records, d, nests) for d in range(len(loops) + 1))
        return AccessFacts(self.tensor, self.kind, self.role, self.loop, int(self.length), n, in_order, gather,
                           trace, segments)

    @staticmethod
    def _segment(records: list[_Record], d: int, nests) -> tuple[int, int]:
        keys, positions = [], []
        offset = 0
        identities: dict[tuple, int] = {}
        for r in records:
            depth = _nest_depth(r, d, nests)
            ident = (r.nest if depth > (nests[r.nest][0] if r.nest else depth) else "", depth)
            groups = ancestors(r.segs, r.ids, depth)
            if ident not in identities:
                identities[ident] = offset
                offset += int(groups.max(initial=0)) + 1 + 2**40
            keys.append(groups + identities[ident])
            positions.append(r.positions)
        if not keys:
            return 0, 0
        key, pos = np.concatenate(keys), np.concatenate(positions)
        uniq, inverse = np.unique(key, return_inverse=True)
        low = np.full(len(uniq), np.iinfo(np.int64).max, dtype=np.int64)
        high = np.full(len(uniq), -1, dtype=np.int64)
        np.minimum.at(low, inverse, pos)
        np.maximum.at(high, inverse, pos)
        spans = high - low + 1
        return int(spans.max()), int(spans.sum())


def _nest_depth(r: _Record, d: int, nests) -> int:
    """The depth of a record's iteration points that stands for the first ``d`` main loops."""
    if not r.nest:
        return min(d, len(r.segs))
    base, held = nests[r.nest]
    if d <= base:
        return min(d, len(r.segs))
    return min(base + sum(1 for h in held if h <= d), len(r.segs))
