"""Potentials of difference constraints with tight arcs: the least optimal start times of the
flow method of :mod:`dfopt.lp.difference`, recovered from an optimal flow.

Pure graph algorithms over arrays (numpy, scipy.sparse.csgraph); the longest-path pass is
:func:`dfopt.ir.analyses.longest_path_potentials`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.sparse import csgraph

from dfopt.errors import SolverError
from dfopt.ir.analyses import longest_path_potentials

__all__ = ["tight_potentials", "hinge_potentials"]

#: rounds of :func:`hinge_potentials` that add the hinges' broken upper limits before it adds all
HINGE_ROUNDS = 50


def tight_potentials(n: int, src: npt.ArrayLike, dst: npt.ArrayLike, lower: npt.ArrayLike,
                     tight: npt.ArrayLike) -> np.ndarray:
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


def hinge_potentials(n: int, src: npt.ArrayLike, dst: npt.ArrayLike, lower: npt.ArrayLike, tight: npt.ArrayLike,
                     h_src: npt.ArrayLike, h_dst: npt.ArrayLike, h_break: npt.ArrayLike, h_flow: npt.ArrayLike,
                     h_cap: npt.ArrayLike) -> tuple[np.ndarray, int]:
    """:func:`tight_potentials` with hinges (:mod:`dfopt.lp.difference`) whose dual flow is
    ``h_flow`` of ``h_cap``: a hinge with flow keeps its difference at least its break (equal to
    it below the capacity), one without at most its break. The lower limits are arcs from the
    start; an upper limit (an arc against the graph's direction, which may close cycles) is added
    only once the potentials break it, round after round, and after :data:`HINGE_ROUNDS` rounds
    all of them at once. The least potentials of a subset of the constraints that meet them all
    are the least of all of them. Returns the potentials and the rounds taken.

    >>> s, rounds = hinge_potentials(2, [0], [1], [-5], [True], [0], [1], [1], [0], [2])
    >>> s.tolist(), rounds
    ([5.0, 0.0], 1)
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    lower, tight = np.asarray(lower, dtype=np.float64), np.asarray(tight, dtype=bool)
    h_src, h_dst = np.asarray(h_src, dtype=np.int64), np.asarray(h_dst, dtype=np.int64)
    h_break = np.asarray(h_break, dtype=np.float64)
    h_flow, h_cap = np.asarray(h_flow), np.asarray(h_cap)
    has = h_flow > 0
    partial = has & (h_flow < h_cap)
    free = ~has                               # at most the break
    tails, heads = np.r_[src, h_src[has]], np.r_[dst, h_dst[has]]
    lows, tights = np.r_[lower, h_break[has]], np.r_[tight, partial[has]]
    tol = 1e-7 * max(1.0, float(np.abs(np.r_[lower, h_break]).max(initial=0.0)))

    def with_limits(added: np.ndarray) -> np.ndarray:
        up = np.flatnonzero(added)
        return tight_potentials(n, np.r_[tails, h_dst[up]], np.r_[heads, h_src[up]], np.r_[lows, -h_break[up]],
                                np.r_[tights, np.zeros(len(up), dtype=bool)])

    added = np.zeros(len(h_src), dtype=bool)
    for rounds in range(1, HINGE_ROUNDS + 1):
        s = with_limits(added)
        broken = free & ~added & (s[h_dst] - s[h_src] > h_break + tol)
        if not broken.any():
            return s, rounds
        added |= broken
    return with_limits(free), HINGE_ROUNDS + 1
