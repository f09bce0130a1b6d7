"""The three LP formulations of FIFO delays (StreamTensor section 5.3).

Each returns the delay of every stream (start(dst) - start(src), in cycles) that minimises the
weighted sum of delays, where a stream's weight is its objective cost per token divided by the
cycles per token of its curve (so the LP minimises a linear proxy of the total depth or bits):

* ``paths`` — the paper's LP literally: a variable per stream and, for every pair of kernels and
  every path between them, the path's delays summing to at least the longest path of initial
  delays. The number of rows is the number of paths, which explodes with graph size.
* ``potentials`` — the compact LP over start times ``s``: ``s_v >= s_u + D_u`` per stream,
  delay = ``s_v - s_u``, through cvxpy (the ``cvxpy`` method of :mod:`dfopt.lp.difference`).
* ``flow`` — the same LP through the min-cost-flow dual (the ``flow`` method there).

A stream with a per-token schedule has no constant slope: its depth as a function of its delay
(:func:`~dfopt.models.fifo.curves.schedule_curve`) is a non-decreasing step function. ``flow`` and
``potentials`` cost it by the curve's lower convex envelope (:func:`~.curves.convex_pieces`): a
convex piecewise-linear cost of a difference is still a difference LP, with the stream's arc
split into one arc per piece through auxiliary nodes (piece i: lower 0, at most its length, its
slope per cycle; the slopes increase, so the optimum fills the pieces in order). ``paths`` keeps
one linear cost per stream, the envelope's mean slope.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dfopt.errors import InstanceError
from dfopt.ir.analyses import longest_path_potentials
from dfopt.models.fifo.curves import convex_pieces, schedule_curves
from dfopt.models.fifo.edges import StreamArrays

MAX_PATHS = 200_000
SLOPE_GRID = 1024


@dataclass
class DelayResult:
    delays: np.ndarray
    start: np.ndarray | None
    lp_objective: float
    status: str
    solver: str
    stats: dict = field(default_factory=dict)


def stream_costs(arrays: StreamArrays, weights: npt.ArrayLike, pieces: dict | None = None) -> np.ndarray:
    """LP cost of one cycle of delay on each stream: weight / cycles per token of its curve (a
    scheduled stream in ``pieces``: weight x its envelope's mean slope)."""
    weights = np.asarray(weights, dtype=float)
    slope = np.where(arrays.ii_src < arrays.ii_dst, arrays.ii_dst, arrays.ii_src)
    cost = weights / np.maximum(slope, 1)
    for j, (breaks, slopes, hi) in (pieces or {}).items():
        lens = np.diff(np.append(breaks, max(hi, int(breaks[-1]) + 1)))
        cost[j] = float(weights[j]) * float((slopes * lens).sum() / max(lens.sum(), 1))
    return cost


def curve_pieces(ends: dict) -> dict:
    """Per scheduled stream: (breakpoints, slopes, delay of depth T) of its curve's convex envelope,
    in tokens per cycle of delay."""
    out = {}
    for j, (d, f) in schedule_curves(ends).items():
        breaks, slopes = convex_pieces(d, f)
        # slopes on a grid of 1/SLOPE_GRID tokens per cycle: the min-cost-flow solver needs integer
        # costs with a common denominator; rounding keeps them non-decreasing (still convex)
        out[j] = (breaks, np.round(slopes * SLOPE_GRID) / SLOPE_GRID, int(d[-1]))
    return out


def _split_arcs(arrays: StreamArrays, weights: np.ndarray, cost: np.ndarray, pieces: dict):
    """Arcs of the difference LP with every scheduled stream split into its pieces: (nodes, src,
    dst, lower, cost). Steady streams keep one arc at ``cost``. Stream j's pieces run u -> p_1 ->
    ... -> v: the first from its ``lower`` up to the envelope's first breakpoint at no cost (the
    depth is flat there: the consumer waits for the first token anyway), then one per piece at
    ``weights[j]`` x its slope, each but the last capped at its length by a back arc of lower
    ``-length``."""
    n = len(arrays.kernels)
    keep = ~np.isin(np.arange(len(arrays.names)), list(pieces))
    src, dst, low, cst = [arrays.src[keep]], [arrays.dst[keep]], [arrays.lower[keep].astype(float)], [cost[keep]]
    for j, (breaks, slopes, _) in pieces.items():
        m = len(slopes)
        chain = np.array([int(arrays.src[j]), *range(n, n + m), int(arrays.dst[j])], dtype=np.int64)
        n += m
        lower = float(arrays.lower[j])
        seg_low = np.zeros(m + 1)
        seg_low[0] = lower
        caps = np.concatenate([[max(float(breaks[0]), lower) - lower], np.diff(breaks).astype(float)])
        src += [chain[:-1], chain[1:-1]]                     # forward pieces, then back arcs of the bounded ones
        dst += [chain[1:], chain[:-2]]
        low += [seg_low, -(seg_low[:-1] + caps)]
        cst += [np.concatenate([[0.0], float(weights[j]) * slopes]), np.zeros(m)]
    return n, *(np.concatenate(x) for x in (src, dst, low, cst))


def delays_potentials(arrays: StreamArrays, weights: npt.ArrayLike, solver: str, time_limit: float,
                      seed: int, ends: dict | None = None) -> DelayResult:
    """Compact LP over start times, through cvxpy with the LP solver ``solver``; ``ends``
    (:func:`~dfopt.models.fifo.edges.scheduled_ends`) gives the scheduled streams' cycles."""
    return _difference_delays(arrays, weights, ends, "cvxpy", solver, time_limit=time_limit, lp_solver=solver,
                              seed=seed)


def delays_flow(arrays: StreamArrays, weights: npt.ArrayLike, ends: dict | None = None) -> DelayResult:
    """The same LP through the min-cost-flow dual and complementary slackness."""
    return _difference_delays(arrays, weights, ends, "flow", "min-cost-flow")


def _difference_delays(arrays, weights, ends, method: str, solver: str, **options) -> DelayResult:
    """The potentials LP by :func:`dfopt.lp.solve_difference_lp` with ``method``; one row per stream."""
    from dfopt.lp.difference import solve_difference_lp

    weights = np.asarray(weights, dtype=float)
    pieces = curve_pieces(ends or {})
    cost = stream_costs(arrays, weights)
    if not pieces:
        res = solve_difference_lp(len(arrays.kernels), arrays.src, arrays.dst, arrays.lower, cost, method=method,
                                  arc_names=arrays.names, **options)
        n, rows = len(arrays.kernels), len(arrays.names)
    else:
        n, src, dst, lower, arc_cost = _split_arcs(arrays, weights, cost, pieces)
        res = solve_difference_lp(n, src, dst, lower, arc_cost, method=method, **options)
        rows = len(src)
    start = np.asarray(res.s, dtype=float)[:len(arrays.kernels)]
    delays = start[arrays.dst] - start[arrays.src]
    return DelayResult(delays, start, float(res.objective), "optimal", solver,
                       {"lp_rows": rows, "lp_cols": n, "lp_pieces": sum(len(p[1]) for p in pieces.values())})


def enumerate_paths(arrays: StreamArrays, limit: int = MAX_PATHS) -> list[tuple[int, int, tuple[int, ...]]]:
    """Every path of the DAG as (first kernel, last kernel, stream indices); stops past ``limit``."""
    out_edges: list[list[int]] = [[] for _ in arrays.kernels]
    for e, u in enumerate(arrays.src):
        out_edges[u].append(e)
    paths = []
    for u in range(len(arrays.kernels)):
        stack: list[tuple[int, tuple[int, ...]]] = [(e, (e,)) for e in out_edges[u]]
        while stack:
            e, path = stack.pop()
            paths.append((u, int(arrays.dst[e]), path))
            if len(paths) > limit:
                raise InstanceError(
                    f"the paths formulation needs more than {limit} path constraints on this graph; "
                    "use 'potentials' or 'flow' (same optimum, one row per stream)",
                    pointer="/options/fifo/formulation")
            stack.extend((f, path + (f,)) for f in out_edges[arrays.dst[e]])
    return paths


def _longest_from(arrays) -> dict:
    """Longest path (by initial delays) between every connected ordered pair, as a dict."""
    n = len(arrays.kernels)
    longest = {}
    for u in range(n):
        start = np.full(n, -np.inf)
        start[u] = 0.0
        dist = longest_path_potentials(n, arrays.src, arrays.dst, arrays.lower, start=start)
        for v in np.flatnonzero(np.isfinite(dist)).tolist():
            if v != u:
                longest[u, v] = float(dist[v])
    return longest


def delays_paths(arrays: StreamArrays, weights: npt.ArrayLike, solver: str, time_limit: float,
                 seed: int, ends: dict | None = None) -> DelayResult:
    """The paper's path LP: one row per path between every pair of kernels (the longest paths
    from :func:`dfopt.ir.analyses.longest_path_potentials`)."""
    import cvxpy as cp
    import scipy.sparse as sp

    from dfopt.lp import solve_problem

    paths = enumerate_paths(arrays)
    longest = _longest_from(arrays)
    rows = np.repeat(np.arange(len(paths)), [len(p) for _, _, p in paths])
    cols = np.fromiter((e for _, _, p in paths for e in p), dtype=np.int64, count=len(rows))
    P = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(paths), len(arrays.names)))
    rhs = np.array([longest[u, v] for u, v, _ in paths], dtype=float)
    cost = stream_costs(arrays, weights, curve_pieces(ends or {}))
    d = cp.Variable(len(arrays.names), name="delay")
    problem = cp.Problem(cp.Minimize(cost @ d), [P @ d >= rhs, d >= 0])
    result = solve_problem(problem, solver=solver, time_limit=time_limit, seed=seed)
    if not result.has_solution:
        raise _lp_failure("paths", result)
    delays = np.asarray(d.value, dtype=float)
    return DelayResult(delays, None, float(cost @ delays), result.termination.value, result.solver,
                       {"lp_rows": len(paths), "lp_cols": len(arrays.names)})


def _lp_failure(name, result):
    from dfopt.errors import SolverError

    return SolverError(f"{name} LP returned no solution ({result.termination.value}: {result.message})")
