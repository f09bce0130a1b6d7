"""Large-neighbourhood search for large placement instances (``formulation: lns``).

Start from the better of the greedy placement and recursive bipartition (given ``START_SHARE``
of the limit), then until the limit: free the units of one neighbourhood (same-slot groups are
one unit), fix every other unit to its slot, solve the sub-model exactly with CP-SAT and keep the
answer when the whole placement, recounted by :meth:`PlacementData.evaluate`, is feasible and no
worse. Neighbourhoods of ``size`` units:

* ``slots`` — two neighbouring slots: the units with a stream between the two first, grown
  breadth-first inside the pair;
* ``window`` — a connected window of the graph, breadth-first from a random unit;
* ``cut`` — around the most loaded cut line (wires used / offered): breadth-first from the
  ends of the streams crossing it, inside the slots along the line.

The sub-model (:func:`sub_model`) is the exact model (:mod:`.exact`) restricted to the free
units: each slot's capacity less what the fixed units use there, the distance to fixed
neighbours as a cost per slot, one ``z`` per stream between free units and line, each line's
wires less the fixed streams crossing it, and with a balance weight ``hi``/``lo`` over the fixed
and free use. A kind is drawn with weights that follow its recent improvements; the size grows by
a quarter after a sub-solve proven optimal in less than half its budget and shrinks by a fifth
after one that ran out of it (a neighbourhood of every movable unit that ran out doubles the
budget). When such a whole neighbourhood is proven optimal the search stops: the placement is
optimal (with a balance weight, up to the model's 1/Q rounding, and then not claimed).

Deterministic: a seeded numpy Generator draws the neighbourhoods and every sub-solve runs on
CP-SAT in deterministic search (the formulation's ``workers``, interleaved; one worker improved
far less on these models) under ``max_deterministic_time``; the wall clock only ends the loop (a
sub-solve it cut is discarded), so one seed gives one sequence of placements whatever the
machine's load, and a longer limit only continues it.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.ir.platform import load_preset
>>> from dfopt.models.placement.data import placement_data
>>> ks = [Kernel(f"k{i}", resources={"lut": 150000}) for i in range(4)]
>>> ss = [Stream(f"e{i}", f"k{i}", f"k{i + 1}", tokens=1, width=32) for i in range(3)]
>>> d = placement_data(DataflowGraph(ks, ss), load_preset("u55c"), 0.8)
>>> stats = {}
>>> a = lns_placement(d, np.array([0, 1, 1, 2]), time_limit=5, stats=stats)
>>> d.evaluate(a).distance, stats["proven_optimal"]
(32.0, True)
"""

from __future__ import annotations

import math
import time
from collections import deque

import numpy as np

from dfopt import progress
from dfopt.ilp import new_cp_model, solve_cp_model, weighted_sum
from dfopt.ilp.cpsat import rational_multiplier
from dfopt.models.placement.data import PlacementData
from dfopt.models.placement.exact import Q, model_units
from dfopt.models.placement.greedy import Units
from dfopt.results import Termination

KINDS = ("slots", "window", "cut")
START_SHARE = 0.7         # of the limit, for bipartition's start: at this size it is the engine, LNS the polish
SUB_BUDGET = 0.2          # CP-SAT deterministic seconds per sub-solve (about 0.8 s, 8 interleaved workers)
START_SIZE, MIN_SIZE = 150, 8
GROW, SHRINK = 1.25, 0.8


class UnitGraph:
    """The unit-level arrays every sub-model reads: streams merged per unit pair, demands and
    limits in half units (the exact model's rounding), cut lines and distances."""

    def __init__(self, d: PlacementData) -> None:
        self.d = d
        self.units = units = Units(d)
        pairs = [(u, v, w) for u, (nb, ws) in enumerate(units.adj) for v, w in zip(nb.tolist(), ws.tolist()) if v > u]
        self.ea = np.array([p[0] for p in pairs], dtype=np.int64)
        self.eb = np.array([p[1] for p in pairs], dtype=np.int64)
        self.ew = np.array([p[2] for p in pairs], dtype=float)
        self.d2 = np.array([np.rint(2 * model_units(d.demand[m])).sum(axis=0) for m in units.members],
                           dtype=np.int64).reshape(len(units), len(d.kinds))
        self.limit2 = np.floor(2 * d.limit + 1e-9).astype(np.int64)
        self.cap2 = np.rint(2 * d.capacity).astype(np.int64)
        self.low = np.array([c.low_side for c in d.cuts], dtype=bool).reshape(len(d.cuts), d.num_slots)
        self.gap = np.array([c.gap for c in d.cuts], dtype=float)
        self.wires = [c.wires for c in d.cuts]
        self.dist = d.distance_matrix()
        self.wmult = rational_multiplier(self.ew) or 1          # wire rows: integer widths
        self.wint = np.ceil(self.ew * self.wmult - 1e-9).astype(np.int64)
        self.movable = np.flatnonzero(units.allowed.sum(axis=1) > 1)
        self.balanced = [r for r in range(len(d.kinds)) if d.balance_weight > 0
                         and self.d2[:, r].sum() > 0 and (d.capacity[:, r] > 0).sum() > 1]
        values = np.concatenate([np.outer(self.ew, np.unique(np.append(self.dist, self.gap))).ravel(),
                                 [d.balance_weight / Q] if self.balanced else []])
        self.omult = _scale(np.unique(values))
        self.nbrs = [nb for nb, _ in units.adj]

    def unit_slots(self, assign: np.ndarray) -> np.ndarray:
        return np.array([assign[m[0]] for m in self.units.members], dtype=np.int64)

    def cut_load(self, slot: np.ndarray) -> np.ndarray:
        """Per line: wires used / offered (used / all stream bits where the line has no limit)."""
        cross = self.low[:, slot[self.ea]] != self.low[:, slot[self.eb]]
        used = (cross * self.ew).sum(axis=1)
        offered = np.array([w if w else max(self.ew.sum(), 1.0) for w in self.wires], dtype=float)
        return used / offered


def _scale(values: np.ndarray) -> float:
    """The multiplier that makes the objective's coefficients integers (exact when they are
    ratios of small integers, else to about six digits: the answer is recounted anyway)."""
    mult = rational_multiplier(values)
    if mult is not None and float(np.abs(values).max(initial=0)) * mult < 2.0**40:
        return float(mult)
    return 1e6 / max(float(np.abs(values).max(initial=0)), 1e-12)


def sub_model(g: UnitGraph, free: np.ndarray, slot: np.ndarray):
    """The CP-SAT model over the ``free`` units, the others fixed at ``slot``; returns
    ``(model, x)`` with ``x[i]`` the (slot, variable) pairs of free unit ``i``, or None when a
    free unit fits no slot beside the fixed ones. The current placement is the hint."""
    d, units = g.d, g.units
    S, C = d.num_slots, len(d.cuts)
    is_free = np.zeros(len(units), dtype=bool)
    is_free[free] = True
    pos = np.full(len(units), -1, dtype=np.int64)
    pos[free] = np.arange(len(free))
    used = np.zeros_like(g.limit2)
    np.add.at(used, slot[~is_free], g.d2[~is_free])
    m = new_cp_model("placement lns")
    x: list[list] = []
    for u in free.tolist():
        ok = units.allowed[u] & (g.d2[u] <= g.limit2 - used).all(axis=1)
        if not ok.any():
            return None
        x.append([(s, m.new_bool_var(f"x[{u},{s}]")) for s in np.flatnonzero(ok).tolist()])
        m.add_exactly_one(v for _, v in x[-1])
        for s, v in x[-1]:
            m.add_hint(v, int(s == slot[u]))
    _add_capacity(m, g, free, x, used)
    fa, fb = is_free[g.ea], is_free[g.eb]
    one = fa ^ fb
    f_end = np.where(fa, g.ea, g.eb)[one]
    v_at = slot[np.where(fa, g.eb, g.ea)[one]]
    cost = np.zeros((len(free), S))
    np.add.at(cost, pos[f_end], g.ew[one][:, None] * g.dist[v_at])
    both = np.flatnonzero(fa & fb)
    fixed = ~(fa | fb)
    terms = [(v, cost[i, s]) for i, xs in enumerate(x) for s, v in xs if cost[i, s]]
    for c in range(C):
        low = g.low[c]
        zs = _add_crossings(m, x, pos, g, both, c, slot)
        terms += [(z, g.gap[c] * g.ew[e]) for e, z in zs]
        if g.wires[c] is None:
            continue
        over = np.zeros((len(free), S), dtype=np.int64)
        np.add.at(over, pos[f_end], g.wint[one][:, None] * (low[None, :] != low[v_at][:, None]))
        fixed_cross = int(g.wint[fixed & (low[slot[g.ea]] != low[slot[g.eb]])].sum())
        row = [(v, int(over[i, s])) for i, xs in enumerate(x) for s, v in xs if over[i, s]]
        row += [(z, int(g.wint[e])) for e, z in zs]
        if row:
            m.add(_wsum(row) <= int(g.wires[c]) * g.wmult - fixed_cross)
    terms += _add_balance(m, g, free, x, used, slot)
    if terms:
        m.minimize(_wsum([(v, int(round(k * g.omult))) for v, k in terms]))
    return m, x


def _wsum(pairs: list):
    """The linear expression sum of coefficient x variable over ``(variable, coefficient)``."""
    return weighted_sum([v for v, _ in pairs], [k for _, k in pairs])


def _add_capacity(m, g: UnitGraph, free: np.ndarray, x: list, used: np.ndarray) -> None:
    d = g.d
    for s in range(d.num_slots):
        on = [(i, v) for i, xs in enumerate(x) for t, v in xs if t == s]
        for r in range(len(d.kinds)):
            dem = [(v, int(g.d2[free[i], r])) for i, v in on if g.d2[free[i], r]]
            if sum(k for _, k in dem) > g.limit2[s, r] - used[s, r]:
                m.add(_wsum(dem) <= int(g.limit2[s, r] - used[s, r]))


def _add_crossings(m, x: list, pos: np.ndarray, g: UnitGraph, both: np.ndarray, c: int,
                   slot: np.ndarray) -> list:
    """``z >= |low_a - low_b|`` for the streams between free units that line ``c`` can split."""
    low = g.low[c]
    out = []
    for e in both.tolist():
        xa, xb = x[pos[g.ea[e]]], x[pos[g.eb[e]]]
        la = [v for s, v in xa if low[s]]
        lb = [v for s, v in xb if low[s]]
        if not ((la and len(lb) < len(xb)) or (lb and len(la) < len(xa))):
            continue        # the line cannot split the two ends
        z = m.new_bool_var(f"z[{e},{c}]")
        m.add(z >= _wsum([(v, 1) for v in la] + [(v, -1) for v in lb]))
        m.add(z >= _wsum([(v, 1) for v in lb] + [(v, -1) for v in la]))
        m.add_hint(z, int(low[slot[g.ea[e]]] != low[slot[g.eb[e]]]))
        out.append((e, z))
    return out


def _add_balance(m, g: UnitGraph, free: np.ndarray, x: list, used: np.ndarray, slot: np.ndarray) -> list:
    """``hi[r]`` / ``lo[r]`` bound each slot's utilisation (fixed and free units) in 1/Q steps."""
    d = g.d
    terms = []
    usage = np.zeros_like(g.limit2)
    np.add.at(usage, slot, g.d2)
    for r in g.balanced:
        hi, lo = m.new_int_var(0, Q, f"hi[{r}]"), m.new_int_var(0, Q, f"lo[{r}]")
        have = np.flatnonzero(d.capacity[:, r] > 0)
        util = usage[have, r] * Q / g.cap2[have, r]
        m.add_hint(hi, int(min(Q, math.ceil(util.max() - 1e-9))))
        m.add_hint(lo, int(max(0, math.floor(util.min() + 1e-9))))
        for s in have.tolist():
            load = _wsum([(v, int(Q * g.d2[free[i], r])) for i, xs in enumerate(x) for t, v in xs
                          if t == s and g.d2[free[i], r]]) + int(Q * used[s, r])
            m.add(load <= int(g.cap2[s, r]) * hi)
            m.add(load >= int(g.cap2[s, r]) * lo)
        terms += [(hi, d.balance_weight / Q), (lo, -d.balance_weight / Q)]
    return terms


def start_budget(seconds: float, kernels: int) -> float:
    """CP-SAT deterministic seconds for bipartition's splits that take about ``seconds`` of wall
    time: measured on this project's 2-core machine with 8 interleaved workers, the deterministic
    clock runs at about 0.075 per second on 500 kernels and 0.36 on 2,000 (the splits' models
    grow with the graph), so about 0.00015 x kernels per second.

    >>> round(start_budget(30, 2000), 3)
    9.0
    """
    return seconds * 0.00015 * max(kernels, 100)


def min_distance(d: PlacementData) -> float:
    """A lower bound on the width x distance: per stream, the least distance between the slots its
    two ends may use (pins, also through same-slot groups). With every pin a single slot this is
    the forced distance of :func:`dfopt.models.placement.forced_distance`; with lists of slots
    it is at least that."""
    units = Units(d)
    allowed = units.allowed[units.unit_of]
    ok = allowed[d.src][:, :, None] & allowed[d.dst][:, None, :]
    near = np.where(ok, d.distance_matrix()[None], np.inf).min(axis=(1, 2), initial=np.inf)
    same = units.unit_of[d.src] == units.unit_of[d.dst]
    near = np.where(same | ~np.isfinite(near), 0.0, near)
    return float((d.width * near).sum())


class Picker:
    """Draws the free units of each neighbourhood kind with a seeded Generator."""

    def __init__(self, g: UnitGraph, rng: np.random.Generator) -> None:
        self.g, self.rng = g, rng
        self.can_move = np.zeros(len(g.units), dtype=bool)
        self.can_move[g.movable] = True
        S = g.d.num_slots
        pairs = set()
        for s in range(S):
            near = min((g.dist[s, t] for t in range(S) if t != s), default=None)
            pairs |= {(min(s, t), max(s, t)) for t in range(S) if t != s and g.dist[s, t] == near}
        self.pairs = sorted(pairs)

    def pick(self, kind: str, slot: np.ndarray, size: int) -> np.ndarray:
        g, rng = self.g, self.rng
        if kind == "slots" and self.pairs:
            s, t = self.pairs[int(rng.integers(len(self.pairs)))]
            inside = self.can_move & ((slot == s) | (slot == t))
            split = (slot[g.ea] == s) & (slot[g.eb] == t) | (slot[g.ea] == t) & (slot[g.eb] == s)
            seeds = np.unique(np.concatenate([g.ea[split], g.eb[split]]))
            return self._bfs(rng.permutation(seeds), size, inside)
        if kind == "cut" and len(g.d.cuts):
            c = int(np.argmax(g.cut_load(slot)))
            cut = g.d.cuts[c]
            coord = g.d.sy if cut.axis == "y" else g.d.sx
            beside = np.isin(coord, [cut.low, cut.high])[slot]        # units in the slots along the line
            cross = np.flatnonzero(g.low[c, slot[g.ea]] != g.low[c, slot[g.eb]])
            seeds = np.stack([g.ea[cross], g.eb[cross]], axis=1)[rng.permutation(len(cross))].ravel()
            return self._bfs(seeds, size, self.can_move & beside)
        return self._bfs(rng.permutation(g.movable), size, self.can_move)

    def _bfs(self, seeds: np.ndarray, size: int, inside: np.ndarray) -> np.ndarray:
        """Breadth-first from the first seed (neighbours in random order) inside ``inside``;
        the next seed when the window runs dry, until ``size`` units."""
        chosen: list[int] = []
        seen = np.zeros(len(inside), dtype=bool)
        queue: deque = deque()
        rest = iter(seeds.tolist())
        while len(chosen) < size:
            if not queue:
                nxt = next((u for u in rest if not seen[u]), None)
                if nxt is None:
                    break
                queue.append(nxt)
            u = queue.popleft()
            if seen[u] or not inside[u]:
                seen[u] = True
                continue
            seen[u] = True
            chosen.append(u)
            nb = self.g.nbrs[u]
            queue.extend(nb[self.rng.permutation(len(nb))].tolist())
        return np.sort(np.array(chosen, dtype=np.int64))


def resolve(g: UnitGraph, free: np.ndarray, slot: np.ndarray, wall: float, budget: float,
            seed: int, workers: int = 1) -> tuple[np.ndarray | None, str, float]:
    """Solve the sub-model of ``free``: (new unit slots or None, outcome, deterministic time).
    Outcome: ``optimal``, ``budget`` (the deterministic budget ran out), ``clock`` (the wall
    clock stopped it: its answer is dropped) or ``none`` (no model, or no solution)."""
    built = sub_model(g, free, slot)
    if built is None:
        return None, "none", 0.0
    m, x = built
    res, _ = solve_cp_model(m, time_limit=wall, seed=seed, deterministic=True, workers=workers,
                            params={"max_deterministic_time": budget}, named_values=False,
                            label="placement: lns sub-model")
    det = float(res.stats.get("deterministic_time", 0.0))
    if res.termination is Termination.OPTIMAL:
        outcome = "optimal"
    elif res.termination is Termination.INFEASIBLE:
        return None, "none", det
    elif det >= 0.99 * budget:
        outcome = "budget"
    else:
        return None, "clock", det
    if res.values_array is None:
        return None, outcome, det
    new = slot.copy()
    for i, xs in enumerate(x):
        new[free[i]] = next(s for s, v in xs if res.values_array[v.index] > 0.5)
    return new, outcome, det


def lns_placement(d: PlacementData, start: np.ndarray, time_limit: float = 60.0, seed: int = 0,
                  stats: dict | None = None, budget: float = SUB_BUDGET, workers: int = 1,
                  max_sub_solves: int | None = None) -> np.ndarray:
    """Improve the feasible placement ``start`` (kernel slots) until ``time_limit`` seconds pass,
    ``max_sub_solves`` sub-solves ran (a budget independent of the clock) or a neighbourhood of
    every movable unit was solved to optimality; each sub-solve gets ``budget`` deterministic
    seconds on ``workers`` CP-SAT workers. ``stats`` receives the counts of sub-solves, accepted
    and improving ones per kind, and ``proven_optimal``."""
    with progress.phase("placement: lns (cpsat)", time_limit, numbers=False) as ph:
        return _search(d, start, time_limit, seed, stats if stats is not None else {}, budget, workers,
                       max_sub_solves, ph)


def _search(d, start, time_limit, seed, stats, budget, workers, max_sub_solves, ph) -> np.ndarray:
    deadline = time.perf_counter() + time_limit
    g = UnitGraph(d)
    slot = g.unit_slots(start)
    best = d.evaluate(start).objective
    rng = np.random.default_rng(seed)
    picker = Picker(g, rng)
    n_mov = len(g.movable)
    size = min(START_SIZE, n_mov)
    weights = np.ones(len(KINDS))
    kinds = {k: {"tried": 0, "improved": 0, "gain": 0.0} for k in KINDS}
    count = dict.fromkeys(("sub_solves", "accepted", "improved", "optimal", "budget", "none", "clock"), 0)
    whole, sizes = False, []
    while n_mov and deadline - time.perf_counter() > 0.05 and count["sub_solves"] != max_sub_solves:
        k = int(rng.choice(len(KINDS), p=weights / weights.sum()))
        free = picker.pick(KINDS[k], slot, size)
        new, outcome, det = resolve(g, free, slot, deadline - time.perf_counter(), budget,
                                    int(rng.integers(2**31)), workers)
        count[outcome] += 1
        if outcome == "clock":
            break
        count["sub_solves"] += 1
        kinds[KINDS[k]]["tried"] += 1
        sizes.append(len(free))
        gain = 0.0
        if new is not None:
            ev = d.evaluate(g.units.expand(new))
            if ev.feasible and ev.objective <= best + 1e-9 * max(1.0, abs(best)):
                gain = best - ev.objective
                count["accepted"] += int(not np.array_equal(new, slot))
                slot, best = new, min(best, ev.objective)
                if gain > 1e-9 * max(1.0, abs(best)):
                    count["improved"] += 1
                    kinds[KINDS[k]]["improved"] += 1
                    kinds[KINDS[k]]["gain"] += gain
                    ph.update(incumbent=best)
        improved = gain > 1e-9 * max(1.0, abs(best))
        weights[k] = max(0.1, 0.8 * weights[k] + 0.2 * improved)
        if outcome == "optimal" and len(free) >= n_mov:
            whole = True         # optimal (up to the balance's 1/Q rounding): nothing left to search
            break
        if outcome == "optimal" and det < budget / 2:
            size = min(n_mov, math.ceil(size * GROW))
        elif outcome == "budget":
            if len(free) >= n_mov:       # the whole placement ran out: the next whole one gets twice the budget
                budget *= 2
            size = max(min(MIN_SIZE, n_mov), int(size * SHRINK))
        ph.update(detail=f"{count['sub_solves']} sub-solves, {count['improved']} improved, size {size}")
    stats.update(lns={**count, "by_kind": kinds, "final_size": size, "final_budget_det_s": budget,
                      "sizes": [min(sizes), max(sizes)] if sizes else None, "objective": best,
                      "whole_solved": whole},
                 proven_optimal=n_mov == 0 or (whole and d.balance_weight == 0))
    return g.units.expand(slot)
