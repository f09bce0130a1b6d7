"""Difference-constraint LPs: the special structure of FIFO sizing, with a fast flow path.

Nodes carry potentials ``s`` (start times); arc ``e`` asks ``s[dst[e]] - s[src[e]] >= lower[e]``
and costs ``cost[e] >= 0`` per unit of that difference::

    minimise  sum_e cost[e] * (s[dst[e]] - s[src[e]])   s.t.  s[dst[e]] - s[src[e]] >= lower[e]

Optional *hinges* ``h`` add convex piecewise-linear costs of differences (no constraint):
``hinge_cost[h] * max(0, s[hinge_dst[h]] - s[hinge_src[h]] - hinge_break[h])``, so a sum of
hinges on one pair is any convex piecewise-linear cost of its difference (slopes >= 0).

``s`` is normalised so that its minimum over every weakly connected component (arcs and hinges)
is 0.

Methods (:data:`METHODS`):

``flow``
    The LP dual is a min-cost flow: maximise ``sum lower*f`` with node balance
    ``sum_in f - sum_out f = sum_in cost - sum_out cost`` and ``f >= 0``. OR-Tools
    ``SimpleMinCostFlow`` (cost scaling) solves it on integer data (floats are scaled exactly by
    their common denominator, or rejected). A hinge is one arc of the flow, from its ``dst`` to its
    ``src``, of capacity ``hinge_cost`` and gain ``-hinge_break`` (no node of its own). Cost
    scaling slows down with the hop depth of the graph, so implied shortcut arcs are added along
    the tight trees of the earliest and latest starts, and nodes are numbered topologically.
    Optimal potentials come from complementary slackness: arcs with flow are tight; a hinge with
    flow has its difference at least its break (equal below its capacity), one without at most
    its break. Tight arcs are contracted
    (offsets along a BFS tree), and one longest-path pass over the contracted graph in
    topological order (Bellman-Ford inside any strongly connected part) gives the least optimal
    ``s`` (hinges' upper limits added only where the pass breaks them, until none is broken:
    :func:`dfopt.lp.potentials.hinge_potentials`). No time limit: the flow
    solver has none. Fastest by far on shallow DAGs; on deep pipeline-like DAGs ``highs`` can
    be faster (``benchmarks/difference_speed.py``).
``flow-simplex``
    The same flow (same integer data, same potentials from complementary slackness) as an LP of
    one row per node, solved by HiGHS's dual simplex (one thread, ``time_limit``); its basic
    solution is an integral flow, which is rounded and checked for conservation. On the deep DAGs
    of FIFO sizing it does not slow down with depth as cost scaling does: the same 100k-kernel
    witness LP in 50 s instead of 258 s, a tie at 10k kernels (``docs/fifo.md``).
``highs``
    The primal LP as a sparse matrix straight to highspy (dual simplex); a hinge is a column
    ``y >= 0, y >= difference - break`` of cost ``hinge_cost``.
``cvxpy``
    The primal LP through cvxpy, built as one ``A @ s >= lower`` over the incidence matrix, the
    hinges as ``hinge_cost @ pos(H @ s - hinge_break)``.

Every method checks feasibility first (a cycle with positive total ``lower`` raises
:class:`~dfopt.errors.InfeasibleError` naming its arcs), checks the returned ``s`` against every
arc, and reports the objective recomputed from ``s``.

>>> r = solve_difference_lp(3, [0, 1, 0], [1, 2, 2], [2, 3, 1], [1, 1, 4])
>>> r.s.tolist(), r.objective
([0.0, 2.0, 5.0], 25.0)

A hinge of slope 3 beyond a difference of 1 on the pair (0, 1), which costs 1 per unit and must
be at least -5: the cost ``max(s1 - s0, 3 (s1 - s0) - 2)`` is least at ``s1 - s0 = -5``:

>>> r = solve_difference_lp(2, [0], [1], [-5], [1], hinges=([0], [1], [1], [2]))
>>> r.s.tolist(), r.objective
([5.0, 0.0], -5.0)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.sparse import csgraph

from dfopt.errors import InfeasibleError, InstanceError, SolverError, unknown_name_error
from dfopt.ir.analyses import PositiveCycleError, longest_path_potentials
from dfopt.lp.potentials import hinge_potentials, tight_potentials

__all__ = ["solve_difference_lp", "DifferenceResult", "DifferenceTimeLimit", "METHODS", "incidence_matrix"]

METHODS = ("flow", "flow-simplex", "highs", "cvxpy")


class DifferenceTimeLimit(SolverError):
    """A method with a time limit (``flow-simplex``, ``highs``) reached it before the optimum."""


@dataclass(frozen=True)
class DifferenceResult:
    """Potentials ``s`` (one per node), the objective recomputed from them, and timings."""

    s: np.ndarray
    objective: float
    method: str
    wall_time_s: float
    stats: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class _Hinges:
    """Validated hinge arrays (costless ones and self-loops removed: ``constant`` holds the
    latter's cost)."""

    src: np.ndarray
    dst: np.ndarray
    brk: np.ndarray
    cost: np.ndarray
    constant: float = 0.0

    def value(self, s: np.ndarray) -> float:
        return float(self.cost @ np.maximum(0.0, s[self.dst] - s[self.src] - self.brk)) + self.constant


NO_HINGES = _Hinges(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))


@dataclass(frozen=True)
class _Arcs:
    """Validated arc arrays (self-loops removed); ``ids`` are the caller's arc indices."""

    n: int
    src: np.ndarray
    dst: np.ndarray
    lower: np.ndarray
    cost: np.ndarray
    ids: np.ndarray
    names: Sequence[str] | None

    def name(self, e: int) -> str:
        k = int(self.ids[e])
        label = self.names[k] if self.names is not None else f"arc {k}"
        return f"{label} ({int(self.src[e])}->{int(self.dst[e])}, lower {self.lower[e]:g})"


def solve_difference_lp(n: int, src: npt.ArrayLike, dst: npt.ArrayLike, lower: npt.ArrayLike,
                        cost: npt.ArrayLike, method: str = "flow", *,
                        hinges: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike, npt.ArrayLike] | None = None,
                        arc_names: Sequence[str] | None = None, time_limit: float = 60.0,
                        lp_solver: str = "highs", seed: int = 0, shortcuts: bool = True) -> DifferenceResult:
    """Solve the difference-constraint LP (module docstring) with ``method``.

    ``hinges`` are ``(src, dst, break, cost)`` arrays (``cost >= 0``); ``arc_names`` name the
    arcs in errors; ``time_limit`` bounds the ``flow-simplex``, ``highs`` and ``cvxpy`` methods
    (:class:`DifferenceTimeLimit` when the first two reach it); ``lp_solver`` and ``seed`` are the
    cvxpy solver of the ``cvxpy`` method and its seed; ``shortcuts=False`` leaves out the flow
    methods' shortcut arcs (a graph whose arcs from one origin to every node already
    give short paths solves faster without them).

    >>> solve_difference_lp(2, [0], [1], [3.5], [2.0], method="highs").objective
    7.0
    """
    if method not in METHODS:
        raise unknown_name_error("difference-LP method", method, METHODS)
    start = time.perf_counter()
    arcs = _validate(n, src, dst, lower, cost, arc_names)
    hin = NO_HINGES if hinges is None else _validate_hinges(arcs.n, hinges)
    _check_feasible(arcs)
    if not len(arcs.src) and not len(hin.src):
        s, stats = np.zeros(arcs.n), {"trivial": True}  # no arcs: s = 0 is optimal
    elif method in ("flow", "flow-simplex"):
        s, stats = _solve_flow(arcs, hin, shortcuts, method == "flow-simplex", time_limit)
    elif method == "highs":
        s, stats = _solve_highs(arcs, hin, time_limit)
    else:
        s, stats = _solve_cvxpy(arcs, hin, time_limit, lp_solver, seed)
    s = _normalise(arcs, hin, s)
    _check_solution(arcs, s, method)
    objective = float(arcs.cost @ (s[arcs.dst] - s[arcs.src])) + hin.value(s)
    dual = stats.get("dual_objective")
    if dual is not None and abs(objective - dual) > 1e-6 * max(1.0, abs(dual)):
        raise SolverError(f"the flow method's potentials give {objective:g} but the flow optimum is "
                          f"{dual:g}; try method='highs'")
    return DifferenceResult(s, objective, method, time.perf_counter() - start, stats)


# ---------------------------------------------------------------------------- input
def _validate(n, src, dst, lower, cost, names) -> _Arcs:
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise InstanceError(f"n: expected a non-negative integer number of nodes, got {n!r}")
    src_a, dst_a = (np.asarray(a, dtype=np.int64).ravel() for a in (src, dst))
    low_a, cost_a = (np.asarray(a, dtype=np.float64).ravel() for a in (lower, cost))
    m = len(src_a)
    if not (len(dst_a) == len(low_a) == len(cost_a) == m):
        raise InstanceError(f"src, dst, lower and cost must have one length, got "
                            f"{m}, {len(dst_a)}, {len(low_a)}, {len(cost_a)}")
    if names is not None and len(names) != m:
        raise InstanceError(f"arc_names: expected {m} names, got {len(names)}")
    for label, a in (("src", src_a), ("dst", dst_a)):
        if m and (a.min() < 0 or a.max() >= n):
            raise InstanceError(f"{label}: node indices must lie in 0..{n - 1}")
    for label, values in (("lower", low_a), ("cost", cost_a)):
        if not np.isfinite(values).all():
            raise InstanceError(f"{label}: expected finite numbers, got {values[~np.isfinite(values)][0]}")
    if (cost_a < 0).any():
        e = int(np.flatnonzero(cost_a < 0)[0])
        raise InstanceError(f"cost: expected cost >= 0 (else the LP may be unbounded), "
                            f"got {cost_a[e]} on arc {e}")
    loops = src_a == dst_a
    arcs = _Arcs(int(n), src_a, dst_a, low_a, cost_a, np.arange(m), names)
    if loops.any():
        bad = np.flatnonzero(loops & (low_a > 0))
        if len(bad):
            raise _infeasible(arcs, bad[:1])
        keep = ~loops
        arcs = _Arcs(int(n), src_a[keep], dst_a[keep], low_a[keep], cost_a[keep], np.flatnonzero(keep), names)
    return arcs


def _validate_hinges(n: int, hinges) -> _Hinges:
    if not (isinstance(hinges, (tuple, list)) and len(hinges) == 4):
        raise InstanceError("hinges: expected four arrays (src, dst, break, cost)")
    src, dst = (np.asarray(a, dtype=np.int64).ravel() for a in hinges[:2])
    brk, cost = (np.asarray(a, dtype=np.float64).ravel() for a in hinges[2:])
    m = len(src)
    if not (len(dst) == len(brk) == len(cost) == m):
        raise InstanceError(f"hinges: src, dst, break and cost must have one length, got "
                            f"{m}, {len(dst)}, {len(brk)}, {len(cost)}")
    for label, a in (("src", src), ("dst", dst)):
        if m and (a.min() < 0 or a.max() >= n):
            raise InstanceError(f"hinges: {label}: node indices must lie in 0..{n - 1}")
    for label, values in (("break", brk), ("cost", cost)):
        if not np.isfinite(values).all():
            raise InstanceError(f"hinges: {label}: expected finite numbers, got {values[~np.isfinite(values)][0]}")
    if (cost < 0).any():
        h = int(np.flatnonzero(cost < 0)[0])
        raise InstanceError(f"hinges: cost: expected cost >= 0 (a concave cost is not an LP), got {cost[h]} on "
                            f"hinge {h}")
    loop = src == dst
    constant = float(cost[loop] @ np.maximum(0.0, -brk[loop]))
    keep = ~loop & (cost > 0)
    return _Hinges(src[keep], dst[keep], brk[keep], cost[keep], constant)


def _infeasible(arcs: _Arcs, cycle) -> InfeasibleError:
    total = float(arcs.lower[list(cycle)].sum())
    listed = ", ".join(arcs.name(e) for e in cycle)
    culprits = [arcs.names[int(arcs.ids[e])] if arcs.names is not None else f"arc {int(arcs.ids[e])}"
                for e in cycle]
    return InfeasibleError(
        f"the difference constraints are infeasible: the cycle {listed} has total lower bound "
        f"{total:g} > 0, so no potentials satisfy it; relax the lower bound of one of these arcs",
        culprits)


def _check_feasible(arcs: _Arcs) -> None:
    """Raise :class:`InfeasibleError` for a cycle of positive total ``lower``."""
    if not len(arcs.src):
        return
    graph = sp.csr_matrix((np.ones(len(arcs.src)), (arcs.src, arcs.dst)), shape=(arcs.n, arcs.n))
    ncomp, label = csgraph.connected_components(graph, directed=True, connection="strong")
    if ncomp == arcs.n:
        return  # a DAG: always feasible
    inside = np.flatnonzero(label[arcs.src] == label[arcs.dst])
    try:
        longest_path_potentials(arcs.n, arcs.src[inside], arcs.dst[inside], arcs.lower[inside])
    except PositiveCycleError as cyc:
        raise _infeasible(arcs, inside[cyc.arcs]) from None


# ------------------------------------------------------------------------ the flow
def _integer_scale(values: np.ndarray, label: str) -> tuple[np.ndarray, int]:
    """``values * k`` as exact int64 for the least ``k``; InstanceError when impossible."""
    k = 1
    frac = values[values != np.round(values)]
    for v in np.unique(frac).tolist():
        fr = Fraction(v).limit_denominator(10**6)
        if float(fr) != v:
            raise InstanceError(f"{label}: the flow method needs rational data (ratios of integers "
                                f"with denominators up to 10^6), got {v!r}; use method='highs'")
        k = math.lcm(k, fr.denominator)
    scaled = np.round(values * k)
    if len(scaled) and np.abs(scaled).max() * max(1, len(scaled)) >= 2.0**62:
        raise InstanceError(f"{label}: values too large for the integer flow solver; use method='highs'")
    return scaled.astype(np.int64), k


def _solve_flow(arcs: _Arcs, hin: _Hinges, shortcuts: bool = True, simplex: bool = False,
                time_limit: float = 60.0) -> tuple[np.ndarray, dict]:
    m, H = len(arcs.src), len(hin.src)
    low_all, low_k = _integer_scale(np.r_[arcs.lower, hin.brk], "lower")
    cost_all, cost_k = _integer_scale(np.r_[arcs.cost, hin.cost], "cost")
    low_i, brk_i = low_all[:m], low_all[m:]
    cost_i, cap_i = cost_all[:m], cost_all[m:]
    n = arcs.n
    t0 = time.perf_counter()
    asap = longest_path_potentials(n, arcs.src, arcs.dst, low_i.astype(np.float64))
    tails, heads, lows = _with_shortcuts(arcs, low_i, asap) if shortcuts else (arcs.src, arcs.dst, low_i)
    label = _flow_labels(arcs, asap)
    supply = (np.bincount(label[arcs.src], weights=cost_i, minlength=n)
              - np.bincount(label[arcs.dst], weights=cost_i, minlength=n)).astype(np.int64)
    # the flow's arcs: the constraints (uncapacitated, gain lower), then the hinges
    f_tail = np.r_[label[tails], label[hin.dst]]
    f_head = np.r_[label[heads], label[hin.src]]
    f_cost = np.r_[-lows, brk_i]
    t1 = time.perf_counter()
    if simplex:
        f = _highs_flow(n, f_tail, f_head, f_cost, cap_i, supply, cost_k, time_limit)
    else:
        f = _ortools_flow(n, f_tail, f_head, f_cost, cap_i, supply)
    flow, hflow = f[:len(tails)], f[len(tails):]
    t2 = time.perf_counter()
    if H:
        s_int, rounds = hinge_potentials(n, tails, heads, lows.astype(np.float64), flow > 0, hin.src, hin.dst,
                                         brk_i.astype(np.float64), hflow, cap_i)
    else:
        s_int, rounds = tight_potentials(n, tails, heads, lows.astype(np.float64), flow > 0), 0
    stats = {"prepare_time_s": t1 - t0, "flow_time_s": t2 - t1,
             "potentials_time_s": time.perf_counter() - t2, "tight_arcs": int((flow > 0).sum()),
             "shortcut_arcs": len(tails) - len(arcs.src), "hinges": H, "potential_rounds": rounds,
             "dual_objective": (float(lows @ flow) - float(brk_i @ hflow)) / (low_k * cost_k) + hin.constant,
             "scale_lower": low_k, "scale_cost": cost_k}
    return s_int / low_k, stats


def _ortools_flow(n, tail, head, cost, cap, supply) -> np.ndarray:
    """The min-cost flow by OR-Tools' cost scaling; the first ``len(tail) - len(cap)`` arcs are
    uncapacitated (no time limit: the solver has none)."""
    from ortools.graph.python import min_cost_flow

    free = len(tail) - len(cap)
    capacity = int(supply[supply > 0].sum()) + int(cap.sum())   # more than any arc can carry
    mcf = min_cost_flow.SimpleMinCostFlow()
    ids = mcf.add_arcs_with_capacity_and_unit_cost(
        tail.astype(np.int32), head.astype(np.int32), np.r_[np.full(free, capacity, dtype=np.int64), cap],
        cost.astype(np.int64))
    mcf.set_nodes_supplies(np.arange(n, dtype=np.int32), supply)
    status = mcf.solve()
    if status != mcf.OPTIMAL:
        raise SolverError(f"min-cost flow returned {status}; try method='highs'")
    return np.asarray(mcf.flows(ids), dtype=np.int64)


def _highs_flow(n, tail, head, cost, cap, supply, unit: int, time_limit: float) -> np.ndarray:
    """The same min-cost flow as an LP (one row per node: out - in = supply) by HiGHS's dual
    simplex. Capacities and supplies go in divided by ``unit`` (the cost scale: HiGHS is 3x
    slower on the 10k-kernel FIFO LP scaled up by 1024); its basic solution is integral in
    ``1 / unit`` (a network matrix), rounded back to the integers and checked for conservation."""
    import highspy

    from dfopt.ilp.highs import new_highs

    m, free = len(tail), len(tail) - len(cap)
    cols = np.arange(m)
    A = sp.csc_matrix((np.r_[np.ones(m), -np.ones(m)], (np.r_[tail, head], np.r_[cols, cols])), shape=(n, m))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = m, n
    lp.col_cost_ = cost.astype(np.float64)
    lp.col_lower_ = np.zeros(m)
    lp.col_upper_ = np.r_[np.full(free, np.inf), cap / unit]
    lp.row_lower_ = lp.row_upper_ = supply / unit
    mat = lp.a_matrix_
    mat.format_ = highspy.MatrixFormat.kColwise
    mat.num_col_, mat.num_row_ = m, n
    mat.start_, mat.index_, mat.value_ = A.indptr, A.indices, A.data
    h = new_highs()
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("solver", "simplex")
    h.setOptionValue("simplex_strategy", 1)      # dual simplex
    h.passModel(lp)
    h.run()
    status = h.getModelStatus().name
    if status == "kTimeLimit":
        raise DifferenceTimeLimit(f"HiGHS stopped at the time limit ({time_limit:g} s) on the flow LP")
    if status != "kOptimal":
        raise SolverError(f"HiGHS returned {status} on the flow LP; try method='flow'")
    x = np.asarray(h.getSolution().col_value, dtype=np.float64) * unit
    flow = np.rint(x).astype(np.int64)
    net = np.bincount(tail, weights=flow, minlength=n) - np.bincount(head, weights=flow, minlength=n)
    if np.abs(x - flow).max(initial=0.0) > 1e-4 or not np.array_equal(net, supply.astype(np.float64)):
        raise SolverError("HiGHS's flow is not an integral vertex; try method='flow'")
    return flow


def _flow_labels(arcs: _Arcs, asap: np.ndarray) -> np.ndarray:
    """Node numbering for the flow solver, whose speed depends on it (measured on 10k-node
    DAGs: a topological numbering 2-3x faster than a random one, and the caller's own
    topological numbering, kept when it is one, faster again than sorting by ``asap``)."""
    if (arcs.src < arcs.dst).all():
        return np.arange(arcs.n)
    label = np.empty(arcs.n, dtype=np.int64)
    label[np.lexsort((np.arange(arcs.n), asap))] = np.arange(arcs.n)
    return label


#: levels of implied shortcut arcs (to the 2nd .. 2^SHORTCUT_LEVELS-th tree ancestor)
SHORTCUT_LEVELS = 4


def _with_shortcuts(arcs: _Arcs, low_i: np.ndarray, asap: np.ndarray):
    """The arcs plus implied shortcuts along the tight trees of the earliest and latest starts.

    A walk of arcs that are tight under some feasible potentials ``p`` has length
    ``p[end] - p[start]``, so ``s[end] - s[start] >= p[end] - p[start]`` is implied by the
    constraints: adding it changes neither the feasible set nor the optimum. In the flow it
    gives paths of few hops, which the cost-scaling flow solver needs on deep graphs.
    """
    n, src, dst = arcs.n, arcs.src, arcs.dst
    low = low_i.astype(np.float64)
    alap = asap.max(initial=0.0) - longest_path_potentials(n, dst, src, low)
    parts = [(src, dst, low)]
    for pot, up in ((asap, True), (alap, False)):
        parts.append(_tree_jumps(n, src, dst, low, pot, up))
    tails, heads, lows = (np.concatenate([p[k] for p in parts]) for k in range(3))
    return tails, heads, np.round(lows).astype(np.int64)


def _tree_jumps(n, src, dst, low, pot, up: bool):
    """Arcs from each node's 2^k-th ancestor (``up``: predecessors) in the tight tree of ``pot``."""
    tight = np.flatnonzero(pot[dst] - pot[src] == low)
    parent = np.arange(n)
    if up:
        parent[dst[tight]] = src[tight]
    else:
        parent[src[tight]] = dst[tight]
    nodes = np.arange(n)
    anc = parent
    tails, heads = [nodes[:0]], [nodes[:0]]
    for _ in range(SHORTCUT_LEVELS):
        anc, prev = anc[anc], anc
        jump = np.flatnonzero((anc != nodes) & (anc != prev))
        tails.append(anc[jump] if up else jump)
        heads.append(jump if up else anc[jump])
    t, h = np.concatenate(tails), np.concatenate(heads)
    return t, h, pot[h] - pot[t]


# -------------------------------------------------------------- the LP methods
def incidence_matrix(n: int, src: npt.ArrayLike, dst: npt.ArrayLike) -> sp.csr_matrix:
    """Arc-node incidence (one row per arc: -1 at its source, +1 at its destination), so that
    ``A @ s`` is every arc's difference ``s[dst] - s[src]``.

    >>> incidence_matrix(3, [0, 1], [1, 2]).toarray().tolist()
    [[-1.0, 1.0, 0.0], [0.0, -1.0, 1.0]]
    """
    src, dst = np.asarray(src), np.asarray(dst)
    m = len(src)
    indptr = np.arange(0, 2 * m + 1, 2)
    indices = np.c_[src, dst].ravel()
    data = np.tile([-1.0, 1.0], m)
    return sp.csr_matrix((data, indices, indptr), shape=(m, n))


def _incidence(arcs: _Arcs) -> sp.csr_matrix:
    return incidence_matrix(arcs.n, arcs.src, arcs.dst)


def _node_costs(arcs: _Arcs) -> np.ndarray:
    return (np.bincount(arcs.dst, weights=arcs.cost, minlength=arcs.n)
            - np.bincount(arcs.src, weights=arcs.cost, minlength=arcs.n))


def _solve_highs(arcs: _Arcs, hin: _Hinges, time_limit: float) -> tuple[np.ndarray, dict]:
    import highspy

    from dfopt.ilp.highs import new_highs

    n, m, H = arcs.n, len(arcs.src), len(hin.src)
    # rows: the arcs, then per hinge y_h - (s[dst] - s[src]) >= -break; columns: s, then y
    A = sp.vstack([sp.hstack([_incidence(arcs), sp.csr_matrix((m, H))]),
                   sp.hstack([-incidence_matrix(n, hin.src, hin.dst), sp.identity(H)])], format="csr")
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n + H, m + H
    lp.col_cost_ = np.r_[_node_costs(arcs), hin.cost]
    lp.col_lower_, lp.col_upper_ = np.zeros(n + H), np.full(n + H, np.inf)
    lp.row_lower_, lp.row_upper_ = np.r_[arcs.lower, -hin.brk], np.full(m + H, np.inf)
    mat = lp.a_matrix_
    mat.format_ = highspy.MatrixFormat.kRowwise
    mat.num_col_, mat.num_row_ = n + H, m + H
    mat.start_, mat.index_, mat.value_ = A.indptr, A.indices, A.data
    h = new_highs()
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("solver", "simplex")
    h.passModel(lp)
    h.run()
    status = h.getModelStatus().name
    if status == "kTimeLimit":
        raise DifferenceTimeLimit(f"HiGHS stopped at the time limit ({time_limit:g} s) on the difference LP")
    if status not in ("kOptimal", "kModelEmpty"):
        raise SolverError(f"HiGHS returned {status} on the difference LP (time limit {time_limit} s)")
    s = np.asarray(h.getSolution().col_value, dtype=np.float64)[:n]
    return _snap(arcs, hin, s), {"status": status, "simplex_iterations": int(h.getInfo().simplex_iteration_count)}


def _solve_cvxpy(arcs: _Arcs, hin: _Hinges, time_limit: float, lp_solver: str,
                 seed: int) -> tuple[np.ndarray, dict]:
    import cvxpy as cp

    from dfopt.lp.cvx import solve_problem
    from dfopt.results import Termination

    s = cp.Variable(arcs.n, name="s")
    objective = _node_costs(arcs) @ s
    if len(hin.src):
        objective = objective + hin.cost @ cp.pos(incidence_matrix(arcs.n, hin.src, hin.dst) @ s - hin.brk)
    cons = [_incidence(arcs) @ s >= arcs.lower] if len(arcs.src) else []
    problem = cp.Problem(cp.Minimize(objective), [*cons, s >= 0])
    result = solve_problem(problem, solver=lp_solver, time_limit=time_limit, seed=seed)
    if result.termination is not Termination.OPTIMAL or s.value is None:
        raise SolverError(f"cvxpy/{lp_solver} returned {result.termination.value} on the difference "
                          f"LP: {result.message}")
    return _snap(arcs, hin, np.asarray(s.value, dtype=np.float64)), dict(result.stats)


def _snap(arcs: _Arcs, hin: _Hinges, s: np.ndarray) -> np.ndarray:
    """Round to integers when the data are integers and the LP vertex is integral to 1e-6."""
    if np.all(arcs.lower == np.round(arcs.lower)) and np.all(hin.brk == np.round(hin.brk)):
        r = np.round(s)
        if np.abs(s - r).max(initial=0.0) <= 1e-6:
            return r
    return s


# --------------------------------------------------------------------- finishing
def _normalise(arcs: _Arcs, hin: _Hinges, s: np.ndarray) -> np.ndarray:
    """Shift ``s`` so that its minimum over each weakly connected component (of the arcs and the
    hinges: a hinge's cost depends on its pair's difference) is 0."""
    if not arcs.n:
        return s
    tails, heads = np.r_[arcs.src, hin.src], np.r_[arcs.dst, hin.dst]
    graph = sp.csr_matrix((np.ones(len(tails)), (tails, heads)), shape=(arcs.n, arcs.n))
    ncomp, comp = csgraph.connected_components(graph, directed=False)
    mins = np.full(ncomp, np.inf)
    np.minimum.at(mins, comp, s)
    return s - mins[comp] + 0.0


def _check_solution(arcs: _Arcs, s: np.ndarray, method: str) -> None:
    if not len(arcs.src):
        return
    slack = s[arcs.dst] - s[arcs.src] - arcs.lower
    tol = 1e-6 * max(1.0, float(np.abs(arcs.lower).max()))
    worst = int(np.argmin(slack))
    if slack[worst] < -tol:
        raise SolverError(f"method {method!r} returned potentials that violate {arcs.name(worst)} "
                          f"by {-slack[worst]:g}; try another method")
