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

__all__ = ["tight_potentials"]


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
