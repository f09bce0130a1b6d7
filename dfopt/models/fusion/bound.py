"""A combinatorial lower bound on the DRAM traffic of any feasible fusion (no solver).

* *forced cuts*: a pair (u, v) cannot be fused when u, v, every kernel on a path between them
  (convexity puts them in the same group) and the pair's converters exceed C_max;
* *star knapsack*: a kernel's group holds it and the neighbours it fuses with, so the weight of
  its fused incident pairs is at most a fractional knapsack over the neighbours (size: neighbour
  bytes + the pair's converter bytes; capacity: C_max - own bytes). Every pair is incident to two
  kernels, so half the sum of the per-kernel minimum cut weights bounds the rest.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.models.fusion.data import fusion_data
>>> g = DataflowGraph([Kernel(n, resources={"bytes": 6}) for n in "abc"],
...                   [Stream("ab", "a", "b", 1, 8), Stream("bc", "b", "c", 1, 16)])
>>> lower_bound(fusion_data(g, c_max=12))   # b fuses with a or c; the optimum cuts ab (2 bytes)
1.0
"""

from __future__ import annotations

import numpy as np

from dfopt.models.fusion.data import FusionData


def forced_cuts(data: FusionData, anc: np.ndarray | None = None) -> np.ndarray:
    """Boolean per pair: the pair cannot be inside one group."""
    anc = data.ancestors() if anc is None else anc
    between = anc.T[data.src] & anc[data.dst]          # kernels w with u -> w -> v
    hull = between.astype(np.int64) @ data.bytes
    return data.bytes[data.src] + data.bytes[data.dst] + hull + data.pair_conv > data.c_max


def _fractional_knapsack(values: np.ndarray, sizes: np.ndarray, capacity: float) -> float:
    free = sizes <= 0
    total = float(values[free].sum())
    v, s = values[~free], sizes[~free].astype(np.float64)
    order = np.argsort(-v / s, kind="stable")
    filled = np.cumsum(s[order])
    full = filled <= capacity
    total += float(v[order][full].sum())
    k = int(full.sum())
    if k < len(order):
        room = capacity - (filled[k - 1] if k else 0.0)
        total += float(v[order][k]) * max(room, 0.0) / float(s[order][k])
    return total


def lower_bound(data: FusionData, anc: np.ndarray | None = None) -> float:
    """DRAM bytes that every feasible partition cuts at least."""
    if not len(data.src):
        return 0.0
    forced = forced_cuts(data, anc)
    w = data.pair_traffic_bits.astype(np.float64)
    bound = float(w[forced].sum())
    free = np.flatnonzero(~forced)
    star = 0.0
    ends = np.concatenate([data.src[free], data.dst[free]])
    others = np.concatenate([data.dst[free], data.src[free]])
    pairs = np.concatenate([free, free])
    order = np.argsort(ends, kind="stable")
    ends, others, pairs = ends[order], others[order], pairs[order]
    cuts = np.flatnonzero(np.diff(ends)) + 1
    for k, nb, ps in zip(np.split(ends, cuts), np.split(others, cuts), np.split(pairs, cuts)):
        if not len(k):
            continue
        cap = data.c_max - int(data.bytes[k[0]])
        sizes = data.bytes[nb] + data.pair_conv[ps]
        star += float(w[ps].sum()) - _fractional_knapsack(w[ps], sizes, cap)
    return float((bound + star / 2) / 8)
