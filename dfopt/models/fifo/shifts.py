"""The best shift of a witness schedule: per-kernel start-time shifts chosen by one convex-cost
tension LP, solved as a min-cost flow (docs/fifo.md, ``witness-lp``).

Take a *base* schedule ``beta`` of the witness family (:mod:`.witness`: the earliest schedule,
the latest, or a mix) and move every kernel ``k`` by a whole number of cycles ``t_k``: each event
of ``k`` at ``beta + t_k``. Every constraint of the timing model (docs/design.md, the token
timing model) is then a difference constraint on ``t``:

* inside a kernel the spacing of ``beta`` is kept, so nothing changes;
* no event before its nominal offset: ``t_k >= lo_k = max_i (n_i - beta_i)``;
* the run ends by ``M - 1``: ``t_k <= hi_k = M - 1 - (last event of k in beta)``;
* every read after its write: ``t_v - t_u >= L_e = max_k (beta(w_k) + 1 - beta(r_k))``.

``t = 0`` satisfies them (``beta`` is a witness), and any ``t`` that does is a witness schedule
too. The occupancy of stream ``e`` depends on ``tau = t_v - t_u`` alone: with ``W``, ``R`` its
writes and reads in ``beta``, depth ``N`` is too small exactly when some write ``k`` happens no
later than the read of token ``k - N``, so ``occ(tau) = 1 + #{N >= 1 : tau >= theta_N}`` with the
thresholds ``theta_N = min_{k >= N} (W_k - R_{k-N})`` (non-decreasing in N): a non-decreasing
step function of ``tau``, and the problem is a tension problem with step costs.

Its convex relaxation replaces each step function by the lower convex envelope of its corners
``(theta_N, N + 1)`` at a set of levels N (:data:`LEVELS`; a subset of the corners still gives a
function below the step function), with slopes rounded *down* to multiples of
``1 / SLOPE_GRID`` (still below, still convex). A convex piecewise-linear cost of a difference is
a sum of hinges ``slope step x max(0, tau - b)`` (hinges of :func:`dfopt.lp.solve_difference_lp`:
one capacitated arc of its min-cost-flow dual each, no node); the windows go through an origin
``a`` (``t_k - t_a >= lo_k``) and a horizon ``w`` (``t_w - t_k >= -hi_k``) with the hinge
``C x max(0, t_w - t_a)``: the arcs stay acyclic, and the LP is solved by its min-cost-flow dual
with integer start times. Its optimum (plus the constants) is a lower bound
on the objective of *every* shift of ``beta`` that keeps the windows: the relaxed cost is below the
exact one everywhere on the windows, and the penalty is zero there. The exact depths at the LP's
start times are the answer (verified by the checker from the stored shifts).

The fork-join of :mod:`dfopt.models.fifo`: in the earliest schedule ``ab`` already needs a
second slot 7 cycles before its reads start (``theta_1 = -7``), and no shift does better than
the 11 slots of that schedule:

>>> from dfopt.ir import DataflowGraph, Kernel, Stream
>>> from dfopt.sim import simulate
>>> from dfopt.models.fifo.witness import schedule_family
>>> g = DataflowGraph([Kernel("a"), Kernel("c", delay=6), Kernel("b")],
...                   [Stream("ab", "a", "b", 8), Stream("ac", "a", "c", 8), Stream("cb", "c", "b", 8)])
>>> fam = schedule_family(g, simulate(g, unbounded=True, record=True))
>>> beta = fam.schedule(1.0)
>>> thresholds(fam.prog, beta, 1).tolist(), windows(fam.prog, beta, fam.makespan).hi.tolist()
([-7, 0, 0], [8, 1, 0])
>>> lp = solve_shifts(fam.prog, beta, fam.makespan, np.ones(3))
>>> lp.shift.tolist(), lp.bound
([0, 0, 0], 11.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dfopt.sim.events import EventProgram

#: slopes of the relaxed curves are multiples of 1 / SLOPE_GRID tokens per cycle (rounded down)
SLOPE_GRID = 1024


def levels(tokens: int) -> np.ndarray:
    """Depth levels whose thresholds are computed: every level up to 16, then about 12% apart
    (a subset of the corners keeps the relaxation below the step function; more levels only
    tighten it).

    >>> levels(40).tolist()
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 21, 23, 25, 28, 31, 34, 38]
    """
    out = list(range(1, min(16, tokens - 1) + 1))
    n = 16
    while True:
        n = max(n + 1, int(n * 1.12))
        if n > tokens - 1:
            break
        out.append(n)
    return np.array(out, dtype=np.int64)


@dataclass(frozen=True)
class ShiftWindows:
    """The difference constraints of the shifts of one base schedule."""

    lo: np.ndarray       # (K,) least shift per kernel
    hi: np.ndarray       # (K,) largest shift per kernel
    lower: np.ndarray    # (S,) least tau per stream


def windows(prog: EventProgram, beta: np.ndarray, makespan: int) -> ShiftWindows:
    """:class:`ShiftWindows` of ``beta`` (event times by code) for runs ending by ``makespan - 1``."""
    K = prog.n_kernels
    lo, hi = np.zeros(K, dtype=np.int64), np.zeros(K, dtype=np.int64)
    has = np.flatnonzero(np.diff(prog.ev_lo) > 0)
    if len(has):
        flat = beta[prog.ev_code].astype(np.int64)
        lo[has] = np.maximum.reduceat(prog.ev_n.astype(np.int64) - flat, prog.ev_lo[has])
        hi[has] = int(makespan) - 1 - flat[prog.ev_lo[has + 1] - 1]
    lower = np.zeros(prog.n_streams, dtype=np.int64)
    full = np.flatnonzero(prog.tokens > 0)
    if len(full):
        nt = int(prog.base[-1])
        w, r = beta[1:2 * nt:2].astype(np.int64), beta[0:2 * nt:2].astype(np.int64)
        lower[full] = np.maximum.reduceat(w + 1 - r, prog.base[full])
    return ShiftWindows(lo, hi, lower)


def thresholds(prog: EventProgram, beta: np.ndarray, level: int) -> np.ndarray:
    """Per stream, ``theta_level = min_{k >= level} (W_k - R_{k - level})`` in ``beta`` (the
    least ``tau`` at which the stream needs more than ``level`` slots); a huge value for streams
    of at most ``level`` tokens."""
    return _thresholds(prog, *_writes_reads(prog, beta), level)


def _writes_reads(prog: EventProgram, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(W, R): every flat token's write and read time in ``beta``, as contiguous int64 arrays."""
    nt = int(prog.base[-1])
    return beta[1:2 * nt:2].astype(np.int64), beta[0:2 * nt:2].astype(np.int64)


def _thresholds(prog: EventProgram, w: np.ndarray, r: np.ndarray, level: int) -> np.ndarray:
    big = np.iinfo(np.int64).max // 4
    out = np.full(prog.n_streams, big, dtype=np.int64)
    nt = len(w)
    rows = np.flatnonzero(prog.tokens > level)
    if not len(rows) or nt <= level:
        return out
    gap = np.empty(nt, dtype=np.int64)
    np.subtract(w[level:], r[:nt - level], out=gap[level:])
    gap[:level] = big
    gap[_position(prog) < level] = big          # pairs across a stream boundary
    out[rows] = np.minimum.reduceat(gap, prog.base[rows] + level)
    return out


def _position(prog: EventProgram) -> np.ndarray:
    """Each flat token's index within its stream (cached on the program)."""
    cache = prog.__dict__
    if "_token_position" not in cache:
        nt = int(prog.base[-1])
        cache["_token_position"] = np.arange(nt, dtype=np.int64) - np.repeat(prog.base[:-1], prog.tokens)
    return cache["_token_position"]


def sampled_thresholds(prog: EventProgram, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(levels, thresholds per stream and level) of :func:`levels` of the longest stream."""
    lv = levels(int(prog.tokens.max(initial=1)))
    if not len(lv):
        return lv, np.zeros((prog.n_streams, 0), np.int64)
    w, r = _writes_reads(prog, beta)     # once: the strided copy out of beta cost 4x the levels themselves
    return lv, np.stack([_thresholds(prog, w, r, int(n)) for n in lv], axis=1)


def corners(prog: EventProgram, win: ShiftWindows, sampled: tuple[np.ndarray, np.ndarray],
            right_end: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points ``(x, y)`` of every stream's relaxed curve on its window ``[lower, upper]``, grouped
    by stream (``ptr``, CSR): the left end at the largest sampled level reached there, the last
    point of the flat step before each sampled jump inside the window, and the right end (the
    lower convex hull of these is below the step function of the sampled levels, which is below
    the exact one); x strictly increasing per stream. Without ``right_end`` (the answer's model)
    the window ends where the stream is full, or at ``tau = 0`` if later."""
    S = prog.n_streams
    upper = np.maximum(win.hi[prog.dst] - win.lo[prog.src], win.lower)
    lv, theta = sampled
    y = np.broadcast_to(lv + 1, theta.shape)
    valid = lv[None, :] < prog.tokens[:, None]
    if not right_end:
        # the model of the answer: up to where the stream is full, and at least to the base (tau = 0)
        full = np.where(valid, theta, np.iinfo(np.int64).min).max(axis=1, initial=np.iinfo(np.int64).min)
        upper = np.clip(np.maximum(full, 0), win.lower, upper)
    at_left = valid & (theta <= win.lower[:, None])
    y_left = np.maximum(np.where(at_left, y, 1).max(axis=1, initial=1), 1)
    at_right = valid & (theta <= upper[:, None])
    y_right = np.maximum(np.where(at_right, y, 1).max(axis=1, initial=1), 1)
    # the last point of the flat step before each sampled jump: (theta - 1, the level before)
    col = np.arange(theta.shape[1])
    run = np.maximum.accumulate(np.where(np.diff(theta, axis=1, prepend=np.iinfo(np.int64).min) != 0, col, 0), axis=1)
    y = np.where(run > 0, np.take_along_axis(np.broadcast_to(y, theta.shape), np.maximum(run - 1, 0), axis=1), 1)
    theta = theta - 1
    inside = valid & (theta > win.lower[:, None]) & (theta < upper[:, None])
    has_right = upper > win.lower
    count = inside.sum(axis=1) + 1 + has_right
    ptr = np.zeros(S + 1, dtype=np.int64)
    np.cumsum(count, out=ptr[1:])
    xs, ys = np.empty(ptr[-1], dtype=np.int64), np.empty(ptr[-1], dtype=np.int64)
    xs[ptr[:-1]], ys[ptr[:-1]] = win.lower, y_left
    row, col = np.nonzero(inside)
    # the k-th inside corner of stream s goes to ptr[s] + 1 + k
    rank = np.arange(len(row)) - np.repeat(np.cumsum(inside.sum(axis=1)) - inside.sum(axis=1), inside.sum(axis=1))
    slot = ptr[row] + 1 + rank
    xs[slot], ys[slot] = theta[row, col], y[row, col]
    right = np.flatnonzero(has_right)
    xs[ptr[right + 1] - 1], ys[ptr[right + 1] - 1] = upper[right], y_right[right]
    return _dedupe(xs, ys, ptr)


def _dedupe(xs: np.ndarray, ys: np.ndarray, ptr: np.ndarray):
    """Keep, of equal x within a stream, the last point (the highest level)."""
    seg = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    last = np.ones(len(xs), dtype=bool)
    last[:-1] = ~((seg[1:] == seg[:-1]) & (xs[1:] == xs[:-1]))
    xs, ys, seg = xs[last], ys[last], seg[last]
    out = np.zeros(len(ptr), dtype=np.int64)
    np.cumsum(np.bincount(seg, minlength=len(ptr) - 1), out=out[1:])
    return xs, ys, out


def lower_hull(xs: np.ndarray, ys: np.ndarray, ptr: np.ndarray):
    """The lower convex hull of every stream's points (x increasing): removes, pass after pass,
    every interior point on or above the chord of its kept neighbours (such a point is on no
    lower hull, so removing them together is safe)."""
    seg = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    keep = np.ones(len(xs), dtype=bool)
    while True:
        idx = np.flatnonzero(keep)
        s = seg[idx]
        inner = np.zeros(len(idx), dtype=bool)
        inner[1:-1] = (s[:-2] == s[1:-1]) & (s[2:] == s[1:-1])
        a, b, c = idx[:-2], idx[1:-1], idx[2:]
        above = np.zeros(len(idx), dtype=bool)
        # b on or above the chord a-c: (yb - ya) (xc - xa) >= (yc - ya) (xb - xa)
        above[1:-1] = ((ys[b] - ys[a]) * (xs[c] - xs[a]) >= (ys[c] - ys[a]) * (xs[b] - xs[a]))
        drop = inner & above
        if not drop.any():
            break
        keep[idx[drop]] = False
    idx = np.flatnonzero(keep)
    out = np.zeros(len(ptr), dtype=np.int64)
    np.cumsum(np.bincount(seg[idx], minlength=len(ptr) - 1), out=out[1:])
    return xs[idx], ys[idx], out


@dataclass(frozen=True)
class ShiftLP:
    """The relaxed tension LP of one base schedule, solved: shifts, the LP's bound."""

    shift: np.ndarray         # (K,) integer shift per kernel
    bound: float              # the relaxed optimum: a lower bound over every shift of the base
    stats: dict


def solve_shifts(prog: EventProgram, beta: np.ndarray, makespan: int, weights: np.ndarray,
                 right_end: bool = True, sampled: tuple[np.ndarray, np.ndarray] | None = None,
                 time_limit: float = 3600.0) -> ShiftLP:
    """The relaxed shift LP of ``beta`` under ``weights`` (objective per slot of each stream):
    with ``right_end`` the bound's model, else the answer's (:func:`corners`); ``sampled`` are
    :func:`sampled_thresholds` when already computed. The LP's min-cost-flow dual goes to HiGHS's
    dual simplex (``flow-simplex``), which raises
    :class:`~dfopt.lp.difference.DifferenceTimeLimit` past ``time_limit`` seconds."""
    from dfopt.lp.difference import solve_difference_lp

    win = windows(prog, beta, makespan)
    sampled = sampled_thresholds(prog, beta) if sampled is None else sampled
    xs, ys, ptr = lower_hull(*corners(prog, win, sampled, right_end))
    n, src, dst, low, cost, hinges, const = _arcs(prog, win, xs, ys, ptr, np.asarray(weights, dtype=float))
    res = solve_difference_lp(n, src, dst, low, cost, method="flow-simplex", hinges=hinges,
                              shortcuts=False, time_limit=time_limit)
    s = np.rint(res.s).astype(np.int64)
    K = prog.n_kernels
    shift = s[:K] - s[K]
    stats = {"lp_nodes": n, "lp_arcs": len(src), "lp_hinges": len(hinges[0]),
             "lp_pieces": int(len(xs) - (len(ptr) - 1)),
             "lp_flow_time_s": res.stats.get("flow_time_s"), "lp_time_s": res.wall_time_s,
             "penalty": int(max(0, s[K + 1] - s[K]))}
    return ShiftLP(shift, float(res.objective) + const, stats)


def _arcs(prog: EventProgram, win: ShiftWindows, xs, ys, ptr, weights):
    """The acyclic arcs and the hinges of the relaxed LP (module docstring): nodes 0..K-1 the
    kernels, K the origin, K+1 the horizon; a hinge ``max(0, tau - b)`` of a stream is a hinge of
    :func:`dfopt.lp.solve_difference_lp` (one capacitated arc of its flow, no node), the
    horizon's overrun one more. Returns (n, src, dst, lower, cost, hinges, constant), costs on the
    ``1 / SLOPE_GRID`` grid."""
    K, S = prog.n_kernels, prog.n_streams
    npts = np.diff(ptr)
    seg = np.repeat(np.arange(S), npts)
    first = ptr[:-1]
    # slopes of consecutive hull points, rounded down to the grid (still non-decreasing)
    is_piece = np.ones(len(xs), dtype=bool)
    is_piece[first] = False
    p = np.flatnonzero(is_piece)
    slope = np.floor((ys[p] - ys[p - 1]) / (xs[p] - xs[p - 1]) * SLOPE_GRID + 1e-9) / SLOPE_GRID
    step = slope.copy()
    not_first_piece = (p - 1) != first[seg[p]]
    step[not_first_piece] = slope[not_first_piece] - slope[np.flatnonzero(not_first_piece) - 1]
    step = np.maximum(step, 0.0)
    w = weights[seg[p]]
    base_slope = np.zeros(S)
    base_slope[seg[p[~not_first_piece]]] = slope[~not_first_piece]
    const = float((weights * (ys[first] - base_slope * xs[first])).sum())
    hinge = p[not_first_piece]
    hs = seg[hinge]
    # the horizon's penalty outweighs what every stream could gain per cycle of overrun
    big = float((w * np.abs(slope)).sum() + weights.sum() + 1)
    src = np.concatenate([prog.src, np.full(K, K), np.arange(K)])
    dst = np.concatenate([prog.dst, np.arange(K), np.full(K, K + 1)])
    low = np.concatenate([win.lower, win.lo, -win.hi]).astype(float)
    cost = np.concatenate([weights * base_slope, np.zeros(2 * K)])
    hinges = (np.r_[prog.src[hs], K], np.r_[prog.dst[hs], K + 1], np.r_[xs[hinge - 1], 0].astype(float),
              np.r_[(w * step)[not_first_piece], big])
    return K + 2, src, dst, low, cost, hinges, const


def shifted(prog: EventProgram, beta: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """``beta`` with every kernel's events moved by its shift (by code; the last entry stays -1)."""
    kcode = np.zeros(prog.n_events + 1, dtype=np.int64)
    kcode[prog.ev_code] = np.repeat(np.arange(prog.n_kernels), np.diff(prog.ev_lo))
    out = beta.astype(np.int64) + np.asarray(shift, dtype=np.int64)[kcode]
    out[-1] = -1
    return out


def ceil_bound(value: float) -> int:
    """An integer objective at least ``value`` (tolerating float noise)."""
    return int(math.ceil(value - 1e-6))
