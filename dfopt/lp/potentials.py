"""Potentials of difference constraints: least solutions by longest paths, with tight arcs.

Pure graph algorithms over arrays (numpy, scipy.sparse.csgraph), used by the flow method of
:mod:`dfopt.lp.difference` to recover optimal start times from an optimal flow.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from dfopt.errors import InfeasibleError, SolverError

__all__ = ["longest_path_potentials", "tight_potentials"]


class _PositiveCycle(InfeasibleError):
    """A cycle of positive total weight; ``arcs`` are indices into the arrays searched."""

    def __init__(self, arcs):
        self.arcs = [int(a) for a in arcs]
        super().__init__(f"a cycle of positive total weight runs through arcs {self.arcs}", self.arcs)


def longest_path_potentials(n: int, tail, head, weight) -> np.ndarray:
    """Least ``d >= 0`` with ``d[head] >= d[tail] + weight`` on every arc.

    Strongly connected parts are relaxed by Bellman-Ford, the rest in one topological pass.
    Raises :class:`~dfopt.errors.InfeasibleError` (``culprits``: the arc indices of a cycle of
    positive total weight) when no such ``d`` exists.

    >>> longest_path_potentials(3, [0, 1, 0], [1, 2, 2], [2, 3, 1]).tolist()
    [0.0, 2.0, 5.0]
    """
    tail = np.asarray(tail, dtype=np.int64)
    head = np.asarray(head, dtype=np.int64)
    weight = np.asarray(weight, dtype=np.float64)
    loops = tail == head
    if loops.any():
        bad = np.flatnonzero(loops & (weight > 0))
        if len(bad):
            raise _PositiveCycle(bad[:1])
        keep = np.flatnonzero(~loops)
        try:
            return longest_path_potentials(n, tail[keep], head[keep], weight[keep])
        except _PositiveCycle as cyc:
            raise _PositiveCycle(keep[cyc.arcs]) from None
    if not len(tail):
        return np.zeros(n)
    graph = sp.csr_matrix((np.ones(len(tail)), (tail, head)), shape=(n, n))
    ncomp, label = csgraph.connected_components(graph, directed=True, connection="strong")
    return _topological_relax(n, ncomp, label, tail, head, weight)


def _topological_relax(n, ncomp, label, tail, head, weight) -> np.ndarray:
    order = np.argsort(tail, kind="stable")
    ptr = np.searchsorted(tail[order], np.arange(n + 1)).tolist()
    heads, ws = head[order].tolist(), weight[order].tolist()
    comp_of = label.tolist()
    members = _group(label, ncomp)
    sizes = [len(g) for g in members]
    cross = label[tail] != label[head]
    indeg = np.bincount(label[head[cross]], minlength=ncomp).tolist()
    internal = _internal_arcs(label, tail, head, ncomp, sizes)
    dist = [0.0] * n
    queue = [c for c in range(ncomp) if indeg[c] == 0]
    for c in queue:  # the queue grows while we walk it (Kahn's algorithm)
        if sizes[c] > 1:
            _bellman_ford(members[c], internal[c], tail, head, weight, dist)
        for v in members[c]:
            dv = dist[v]
            for k in range(ptr[v], ptr[v + 1]):
                h = heads[k]
                x = dv + ws[k]
                if x > dist[h]:
                    dist[h] = x
                ch = comp_of[h]
                if ch != c:
                    indeg[ch] -= 1
                    if indeg[ch] == 0:
                        queue.append(ch)
    return np.asarray(dist)


def _group(label: np.ndarray, ncomp: int) -> list[list[int]]:
    order = np.argsort(label, kind="stable")
    bounds = np.searchsorted(label[order], np.arange(ncomp + 1)).tolist()
    flat = order.tolist()
    return [flat[bounds[c]:bounds[c + 1]] for c in range(ncomp)]


def _internal_arcs(label, tail, head, ncomp, sizes) -> dict[int, np.ndarray]:
    inside = np.flatnonzero(label[tail] == label[head])
    comps = label[tail[inside]]
    return {c: inside[comps == c] for c in np.unique(comps).tolist() if sizes[c] > 1}


def _bellman_ford(nodes: list[int], arcs: np.ndarray, tail, head, weight, dist: list) -> None:
    """Relax the arcs of one strongly connected part in place (Jacobi rounds, vectorised)."""
    size = len(nodes)
    local = {v: i for i, v in enumerate(nodes)}
    lt = np.fromiter((local[v] for v in tail[arcs].tolist()), dtype=np.int64, count=len(arcs))
    lh = np.fromiter((local[v] for v in head[arcs].tolist()), dtype=np.int64, count=len(arcs))
    w = weight[arcs]
    d = np.asarray([dist[v] for v in nodes])
    pred = np.full(size, -1)
    tol = 1e-9 * max(1.0, float(np.abs(w).max(initial=0.0)))
    for rnd in range(size + 1):
        cand = d[lt] + w
        better = np.flatnonzero(cand > d[lh] + tol)
        if not len(better):
            break
        if rnd == size:
            raise _PositiveCycle(arcs[_cycle_from_pred(pred, lt, lh[better[0]], size)])
        best = better[np.lexsort((-cand[better], lh[better]))]
        first = best[np.r_[True, lh[best][1:] != lh[best][:-1]]]
        d[lh[first]] = cand[first]
        pred[lh[first]] = first
    for i, v in enumerate(nodes):
        dist[v] = float(d[i])


def _cycle_from_pred(pred: np.ndarray, lt: np.ndarray, start: int, size: int) -> list[int]:
    v = start
    for _ in range(size):  # walk back far enough to stand on the cycle
        if pred[v] < 0:
            return [int(a) for a in range(len(lt))]
        v = int(lt[pred[v]])
    cycle, u = [], v
    for _ in range(size + 1):
        a = int(pred[u])
        cycle.append(a)
        u = int(lt[a])
        if u == v:
            return cycle[::-1]
    return [int(a) for a in range(len(lt))]


def tight_potentials(n: int, src, dst, lower, tight) -> np.ndarray:
    """Least ``s >= 0`` with every arc ``>= lower`` and the ``tight`` arcs ``== lower``.

    Tight arcs are contracted: offsets inside each tight component come from a BFS tree, and a
    longest-path pass over the contracted arcs places the components.

    >>> tight_potentials(3, [0, 2], [1, 1], [5, 1], [True, True]).tolist()
    [0.0, 5.0, 4.0]
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    lower, tight = np.asarray(lower, dtype=np.float64), np.asarray(tight, dtype=bool)
    comp, off = _tight_offsets(n, src[tight], dst[tight], lower[tight])
    tol = 1e-7 * max(1.0, float(np.abs(lower).max(initial=0.0)))
    gap = off[dst] - off[src] - lower
    same = comp[src] == comp[dst]
    if (np.abs(gap[tight]) > tol).any() or (gap[same & ~tight] < -tol).any():
        raise SolverError("complementary slackness failed: the tight arcs are inconsistent")
    cross = ~same
    t = longest_path_potentials(int(comp.max(initial=-1)) + 1, comp[src[cross]], comp[dst[cross]],
                                -gap[cross] + 0.0)
    return t[comp] + off if n else np.zeros(0)


def _tight_offsets(n: int, src, dst, lower) -> tuple[np.ndarray, np.ndarray]:
    """Components of the tight arcs and offsets (min 0 per component) that make them equal."""
    if not len(src):
        return np.arange(n), np.zeros(n)
    graph = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    ncomp, comp = csgraph.connected_components(graph, directed=False)
    reps = np.unique(comp, return_index=True)[1]
    root = n
    rows = np.r_[src, np.full(len(reps), root)]
    cols = np.r_[dst, reps]
    tree = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n + 1, n + 1))
    order, pred = csgraph.breadth_first_order(tree, root, directed=False, return_predecessors=True)
    step = _tree_steps(n, src, dst, lower, pred, order)
    off = [0.0] * (n + 1)
    for v, p, d in zip(order[1:].tolist(), pred[order[1:]].tolist(), step.tolist()):
        off[v] = off[p] + d
    off_a = np.asarray(off[:n])
    mins = np.full(ncomp, np.inf)
    np.minimum.at(mins, comp, off_a)
    return comp, off_a - mins[comp]


def _tree_steps(n: int, src, dst, lower, pred, order) -> np.ndarray:
    """For each BFS node after the root, ``s[v] - s[pred[v]]`` along its tree arc."""
    width = n + 1
    keys = np.r_[src * width + dst, dst * width + src]
    vals = np.r_[lower, -lower]
    srt = np.argsort(keys, kind="stable")
    keys, vals = keys[srt], vals[srt]
    v = order[1:].astype(np.int64)
    p = pred[v].astype(np.int64)
    at_root = p == n
    q = np.searchsorted(keys, p * width + v)
    q = np.minimum(q, len(keys) - 1)
    return np.where(at_root, 0.0, vals[q])
