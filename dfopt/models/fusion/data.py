"""The fusion problem as arrays: kernels in topological order, kernel-pair edges with their DRAM
traffic and converter bytes, and the cost of a partition recomputed from an assignment.

A partition is an ``assign`` array (group id per kernel, in :attr:`FusionData.names` order).
Group cost = bytes of its kernels + converter bytes of the streams inside it; DRAM traffic = the
bytes the cut streams move through DRAM (the producer writes its tokens, the consumer reads its
own view: ``dst_type`` tokens when given, so a consumer that re-reads tiles reads them again).

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> g = DataflowGraph([Kernel("a", resources={"bytes": 10}), Kernel("b", resources={"bytes": 5})],
...                   [Stream("e", "a", "b", tokens=4, width=32, converter_bytes=3)])
>>> d = fusion_data(g, c_max=20)
>>> d.pair_traffic_bits.tolist(), d.pair_conv.tolist()
([256], [3])
>>> d.cut_traffic(np.array([0, 1])), d.group_costs(np.array([0, 0])).tolist()
(32.0, [18])
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from dfopt.ir.analyses import topological_order
from dfopt.ir.graph import DataflowGraph, Stream
from dfopt.models.converter import StreamConverter, stream_converter


def stream_traffic_bits(stream: Stream) -> int:
    """Bits a stream moves through DRAM when cut: written once, read in the consumer's view."""
    write = stream.tokens * stream.width
    read = stream.dst_type.tokens * stream.dst_type.token_bits if stream.dst_type is not None else write
    return int(write + read)


@dataclass
class FusionData:
    names: list                      # kernels in topological order
    bytes: np.ndarray                # kernel bytes
    src: np.ndarray                  # per kernel pair (u < v in topological order)
    dst: np.ndarray
    pair_traffic_bits: np.ndarray    # summed over the pair's streams
    pair_conv: np.ndarray            # converter bytes summed over the pair's streams
    pair_streams: list               # stream names per pair
    converters: dict                 # stream -> StreamConverter
    traffic_bits: dict               # stream -> bits when cut
    c_max: int
    index: dict = field(default_factory=dict)
    _anc: np.ndarray | None = field(default=None, repr=False)

    def ancestors(self) -> np.ndarray:
        """:func:`ancestors_matrix`, computed once (the bound and the exact model both need it)."""
        if self._anc is None:
            self._anc = ancestors_matrix(self)
        return self._anc

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def pair_traffic(self) -> np.ndarray:
        """Bytes per pair (may be fractional for odd bit widths)."""
        return self.pair_traffic_bits / 8

    def group_costs(self, assign: np.ndarray) -> np.ndarray:
        """Kernel bytes + internal converter bytes per group id 0..max(assign)."""
        groups = int(assign.max()) + 1 if len(assign) else 0
        cost = np.bincount(assign, weights=self.bytes, minlength=groups)
        inside = assign[self.src] == assign[self.dst]
        cost += np.bincount(assign[self.src][inside], weights=self.pair_conv[inside], minlength=groups)
        return np.rint(cost).astype(np.int64)

    def cut_traffic(self, assign: np.ndarray) -> float:
        """DRAM bytes of the streams between groups."""
        cut = assign[self.src] != assign[self.dst]
        return float(self.pair_traffic_bits[cut].sum() / 8)

    def total_traffic(self) -> float:
        """DRAM bytes when no stream is fused."""
        return float(self.pair_traffic_bits.sum() / 8)

    def quotient_edges(self, assign: np.ndarray) -> set:
        cut = assign[self.src] != assign[self.dst]
        return set(zip(assign[self.src][cut].tolist(), assign[self.dst][cut].tolist()))


def fusion_data(graph: DataflowGraph, c_max: int) -> FusionData:
    """Arrays of ``graph`` for the fusion models (converters by Algorithm 1 or explicit bytes)."""
    names = topological_order(graph)
    index = {k: i for i, k in enumerate(names)}
    kbytes = np.array([int(graph.kernels[k].resources.get("bytes", 0)) for k in names], dtype=np.int64)
    converters: dict[str, StreamConverter] = {}
    traffic: dict[str, int] = {}
    pairs: dict[tuple, list] = {}
    for s in graph.streams.values():
        converters[s.name] = stream_converter(s)
        traffic[s.name] = stream_traffic_bits(s)
        pairs.setdefault((index[s.src], index[s.dst]), []).append(s.name)
    keys = sorted(pairs)
    src = np.array([u for u, _ in keys], dtype=np.int64)
    dst = np.array([v for _, v in keys], dtype=np.int64)
    p_traffic = np.array([sum(traffic[s] for s in pairs[k]) for k in keys], dtype=np.int64)
    p_conv = np.array([sum(converters[s].bytes for s in pairs[k]) for k in keys], dtype=np.int64)
    return FusionData(names, kbytes, src, dst, p_traffic, p_conv, [pairs[k] for k in keys],
                      converters, traffic, int(c_max), index)


def ancestors_matrix(data: FusionData) -> np.ndarray:
    """``anc[v, u]`` is true when ``u`` reaches ``v`` (u != v); kernels in topological order."""
    n = data.n
    anc = np.zeros((n, n), dtype=bool)
    order = np.argsort(data.dst, kind="stable")
    src, dst = data.src[order], data.dst[order]
    start = np.searchsorted(dst, np.arange(n))
    end = np.searchsorted(dst, np.arange(n), side="right")
    for v in range(n):
        for u in src[start[v]:end[v]]:
            anc[v] |= anc[u]
            anc[v, u] = True
    return anc


def topological_groups(data: FusionData, assign: np.ndarray) -> np.ndarray:
    """Renumber groups 0..m-1 in a topological order of the quotient graph (first kernel breaks
    ties); raises ValueError when the quotient graph has a cycle."""
    labels = np.unique(assign)
    relabel = {g: i for i, g in enumerate(labels.tolist())}
    a = np.array([relabel[g] for g in assign.tolist()], dtype=np.int64)
    m = len(labels)
    first = np.full(m, data.n)
    np.minimum.at(first, a, np.arange(data.n))
    succ: dict[int, set] = {g: set() for g in range(m)}
    indeg = np.zeros(m, dtype=np.int64)
    for g, h in data.quotient_edges(a):
        if h not in succ[g]:
            succ[g].add(h)
            indeg[h] += 1
    ready = [(int(first[g]), g) for g in range(m) if indeg[g] == 0]
    heapq.heapify(ready)
    new = np.full(m, -1, dtype=np.int64)
    count = 0
    while ready:
        _, g = heapq.heappop(ready)
        new[g] = count
        count += 1
        for h in succ[g]:
            indeg[h] -= 1
            if indeg[h] == 0:
                heapq.heappush(ready, (int(first[h]), h))
    if count < m:
        raise ValueError("the groups form a cycle through DRAM")
    return new[a]
