"""A combinatorial lower bound on the DRAM traffic of any feasible fusion (no solver).

* *forced cuts*: a pair (u, v) cannot be fused when u, v, every kernel on a path between them
  (convexity puts them in the same group) and the pair's converters exceed C_max;
* *star knapsack* (:func:`star_bound`): a kernel's group holds it and the neighbours it fuses
  with, so the weight of its fused incident pairs is at most a fractional knapsack over the
  neighbours (size: neighbour bytes + the pair's converter bytes; capacity: C_max - own bytes).
  Every pair is incident to two kernels, so half the sum of the per-kernel minimum cut weights
  bounds the rest;
* *prefix cuts* (:func:`prefix_bound`): the groups run in an order whose prefixes are down-sets
  growing by at most C_max bytes, so targets C_max apart each meet a prefix whose leaving pairs
  are cut; a pair's weight is shared among the targets it can cross, and each target's least
  cut is at least a minimum s-t cut (scipy's maximum flow). This is the one that sees the capacity shared
  by the whole graph; the star bound only sees one kernel's neighbours.

``lower_bound`` is the forced cuts plus the better of the other two.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.models.fusion.data import fusion_data
>>> g = DataflowGraph([Kernel(n, resources={"bytes": 6}) for n in "abc"],
...                   [Stream("ab", "a", "b", 1, 8), Stream("bc", "b", "c", 1, 16)])
>>> d = fusion_data(g, c_max=12)        # b fuses with a or c; the optimum cuts ab (2 bytes)
>>> star_bound(d, forced_cuts(d)), round(lower_bound(d), 6)
(1.0, 2.0)
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
    """DRAM bytes that every feasible partition cuts at least: the better of the star bound and
    the prefix bound, both over the forced cuts."""
    if not len(data.src):
        return 0.0
    forced = forced_cuts(data, anc)
    return float(max(star_bound(data, forced), prefix_bound(data, forced, anc)))


def star_bound(data: FusionData, forced: np.ndarray) -> float:
    """The forced cuts plus half the per-kernel star knapsack deficits, in DRAM bytes."""
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


def prefix_bound(data: FusionData, forced: np.ndarray, anc: np.ndarray | None = None) -> float:
    """The forced cuts plus what the prefixes of the group order must cut, in DRAM bytes.

    Groups in a running order have prefixes ``P_1 < P_2 < ...``: down-sets (closed under
    predecessors) whose kernel bytes grow by at most C_max a step, so for every target ``t`` in
    ``[C_max, U)`` (U: all kernel bytes) some prefix has bytes in ``(t - C_max, t]``, and every
    pair leaving it is cut. Targets ``C_max`` apart give distinct prefixes. A pair (u, v) can
    leave such a prefix only when u with its ancestors fits in ``t`` bytes and v with its
    descendants in ``U - t + C_max``, so it meets ``c_p`` targets at most; sharing its weight
    ``w_p / c_p`` among them, the targets' least prefix cuts add up to at most the traffic of
    the pairs cut (:func:`_least_prefix_cut`). Four offsets of the targets are tried.
    """
    anc = data.ancestors() if anc is None else anc
    total, c_max = int(data.bytes.sum()), data.c_max
    base = float(data.pair_traffic_bits[forced].sum())
    if total <= c_max:
        return base / 8
    up = anc.astype(np.int64) @ data.bytes + data.bytes           # bytes of k and its ancestors
    down = anc.T.astype(np.int64) @ data.bytes + data.bytes       # bytes of k and its descendants
    first, last = up[data.src], total - down[data.dst]
    w = np.where(forced, 0.0, data.pair_traffic_bits.astype(np.float64))
    best = 0.0
    for offset in (0, c_max // 4, c_max // 2, 3 * c_max // 4):
        targets = np.arange(c_max + offset, total, c_max)
        meets = (first[:, None] <= targets[None, :]) & (last[:, None] > targets[None, :] - c_max)
        share = np.divide(w, meets.sum(axis=1), out=np.zeros_like(w), where=meets.any(axis=1))
        got = 0.0
        for j, t in enumerate(targets.tolist()):
            inside, outside = total - down <= t - c_max, up > t          # in every such prefix / in none
            got += _least_prefix_cut(data, np.where(meets[:, j], share, 0.0), inside, outside)
        best = max(best, got)
    return float(base + best) / 8


def _least_prefix_cut(data: FusionData, w: np.ndarray, inside: np.ndarray, outside: np.ndarray) -> float:
    """``min w(pairs leaving D)`` over down-sets D that hold ``inside`` and miss ``outside`` (a
    relaxation of the target's byte range: the kernels it forces in or out): one maximum flow
    (scipy) with D on the source side — an arc u -> v of capacity w per pair, an unbounded arc
    v -> u (v in D forces u in), unbounded arcs s -> inside and outside -> t. Capacities are
    scaled and rounded down, so the value stays a lower bound."""
    if not w.any() or not inside.any() or not outside.any() or (inside & outside).any():
        return 0.0
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_flow

    n = data.n
    scale = (2.0**28) / float(w.sum())
    s, t, big = n, n + 1, 2**29
    keep = w > 0
    ks = np.arange(n)
    rows = [data.src[keep], data.dst, np.full(int(inside.sum()), s), ks[outside]]
    cols = [data.dst[keep], data.src, ks[inside], np.full(int(outside.sum()), t)]
    caps = [np.floor(w[keep] * scale), np.full(len(data.src), big), np.full(int(inside.sum()), big),
            np.full(int(outside.sum()), big)]
    graph = csr_array((np.concatenate(caps).astype(np.int32), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n + 2, n + 2))
    return maximum_flow(graph, s, t).flow_value / scale
