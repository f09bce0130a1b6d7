"""Large-neighbourhood search for large fusion instances (``formulation: lns``).

A partition is kept as group ids that never decrease along a stream (a topological numbering of
the quotient graph): that one property makes every group convex and the quotient acyclic, so
every move below only has to keep it. Each step:

1. draws a topological order of the quotient and a *window* of consecutive groups in it:
   ``order`` — a random order (random tie-breaks) and a random start, grown forward (then back
   from the end) until it holds ``size`` kernels; ``adjacent`` — the two
   ends of a quotient edge (drawn by the traffic it carries) with every group on a path between
   them, ordered ancestors | window | rest, which puts them side by side (the window is convex in
   the quotient, so that order is topological);
2. frees up to ``size`` kernels of the window's groups, breadth-first from the ends of the cut
   streams between them (the group boundaries), and fixes every other kernel;
3. re-partitions the free kernels exactly on CP-SAT (:func:`sub_model`). Ids are doubled, so a
   window group ``r`` is id ``2r`` and the odd ids between (and just outside) the window are new
   groups: a free kernel may stay, move to a neighbouring group of the window (merges, when a
   group empties) or open a group between two (splits); ids stay non-decreasing along every
   stream with a free end, and each id's cost (fixed part + free kernels + converters of its
   fused pairs) stays within C_max;
4. keeps the answer when the recounted traffic (:meth:`FusionData.cut_traffic`, never the
   sub-solver's number) is no worse; after an improvement, groups joined by a quotient edge and
   no other path are merged while they fit (:func:`merge_adjacent`, never adds traffic).

The size starts at ``START_SIZE`` kernels, grows by a quarter after a sub-solve proven optimal in
less than half its budget and shrinks by a fifth after one that ran out of it. A neighbourhood
of every kernel is the exact model itself (:func:`resolve_whole`), so solving it to optimality
proves the partition optimal and ends the search (small instances reach the optimum this way);
one that runs out of its budget doubles the budget of the next.

Deterministic: a seeded numpy Generator draws the neighbourhoods and every sub-solve runs on
CP-SAT in deterministic search under ``max_deterministic_time``; the wall clock only ends the
loop (a sub-solve it cut is dropped), so a seed gives one sequence of partitions whatever the
load, and a longer limit continues it.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.models.fusion.data import fusion_data
>>> from dfopt.models.fusion.greedy import algorithm2
>>> g = DataflowGraph([Kernel(n, resources={"bytes": 10}) for n in "abcd"],
...                   [Stream("ab", "a", "b", 16), Stream("bc", "b", "c", 1), Stream("cd", "c", "d", 16)])
>>> d = fusion_data(g, c_max=20)
>>> stats = {}
>>> a = lns_fusion(d, algorithm2(d), time_limit=5, stats=stats)
>>> d.cut_traffic(a), stats["proven_optimal"]
(8.0, True)
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from dfopt import progress
from dfopt.ilp import new_cp_model, solve_cp_model, weighted_sum
from dfopt.ilp import solve as solve_model
from dfopt.models.fusion.data import FusionData, topological_groups
from dfopt.models.fusion.exact import ExactModel, build, decode, set_hint
from dfopt.results import Termination

KINDS = ("order", "adjacent")
SUB_BUDGET = 0.5          # CP-SAT deterministic seconds per sub-solve (one worker)
START_SIZE, MIN_SIZE = 80, 6
GROW, SHRINK = 1.25, 0.8


class Quotient:
    """The quotient graph of a partition (group ids ``0..m-1``): successor and predecessor sets
    and the traffic (bits) of the cut pairs per group pair."""

    def __init__(self, data: FusionData, assign: np.ndarray) -> None:
        self.m = int(assign.max()) + 1
        cut = assign[data.src] != assign[data.dst]
        gs, gd = assign[data.src][cut], assign[data.dst][cut]
        self.succ: list[set] = [set() for _ in range(self.m)]
        self.pred: list[set] = [set() for _ in range(self.m)]
        self.traffic: dict[tuple, float] = {}
        for a, b, w in zip(gs.tolist(), gd.tolist(), data.pair_traffic_bits[cut].tolist()):
            self.succ[a].add(b)
            self.pred[b].add(a)
            self.traffic[a, b] = self.traffic.get((a, b), 0.0) + w

    def reach(self, start: int, forward: bool = True) -> set:
        """Groups reachable from ``start`` (``forward=False``: those that reach it), itself excluded."""
        nxt = self.succ if forward else self.pred
        seen, stack = set(), [start]
        while stack:
            for h in nxt[stack.pop()]:
                if h not in seen:
                    seen.add(h)
                    stack.append(h)
        return seen

    def random_order(self, rng: np.random.Generator) -> list:
        """A topological order with random tie-breaks (Kahn's algorithm)."""
        indeg = [len(p) for p in self.pred]
        ready = [g for g in range(self.m) if indeg[g] == 0]
        order = []
        while ready:
            g = ready.pop(int(rng.integers(len(ready))))
            order.append(g)
            for h in sorted(self.succ[g]):
                indeg[h] -= 1
                if indeg[h] == 0:
                    ready.append(h)
        return order

    def order_around(self, window: set, rng: np.random.Generator) -> list:
        """A topological order with the convex group set ``window`` consecutive: its ancestors,
        the window, the rest (no stream can run from a later part to an earlier one)."""
        above = set().union(*(self.reach(g, forward=False) for g in window)) - window
        rank = {g: i for i, g in enumerate(self.random_order(rng))}
        part = {g: 0 if g in above else 1 if g in window else 2 for g in range(self.m)}
        return sorted(range(self.m), key=lambda g: (part[g], rank[g]))


def merge_adjacent(data: FusionData, assign: np.ndarray) -> np.ndarray:
    """Merge groups joined by a quotient edge and no other path while the union fits C_max,
    heaviest edge first: the merged group stays convex and the quotient acyclic (a second path
    would close a cycle), and no stream is cut that was not, so traffic never rises."""
    a = topological_groups(data, assign)
    while True:
        q = Quotient(data, a)
        costs = data.group_costs(a)
        for (g, h), _ in sorted(q.traffic.items(), key=lambda kv: (-kv[1], kv[0])):
            if costs[g] + costs[h] > data.c_max:
                continue        # converters between them only add to this: a cheap first test
            if any(h in q.reach(k) for k in q.succ[g] - {h}):
                continue
            merged = topological_groups(data, np.where(a == h, g, a))
            if data.group_costs(merged).max() <= data.c_max:
                a = merged
                break
        else:
            return a


def free_kernels(data: FusionData, nbrs: list, assign: np.ndarray, window: list, size: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Up to ``size`` kernels of the ``window`` groups, breadth-first from the ends of the cut
    pairs between them (neighbours in random order; a random kernel when none is left)."""
    inside = np.isin(assign, window)
    if inside.sum() <= size:
        return np.flatnonzero(inside)
    between = inside[data.src] & inside[data.dst] & (assign[data.src] != assign[data.dst])
    seeds = np.concatenate([data.src[between], data.dst[between]])
    seeds = np.concatenate([seeds[rng.permutation(len(seeds))], rng.permutation(np.flatnonzero(inside))])
    chosen: list[int] = []
    seen = np.zeros(data.n, dtype=bool)
    queue: deque = deque()
    rest = iter(seeds.tolist())
    while len(chosen) < size:
        if not queue:
            nxt = next((k for k in rest if not seen[k]), None)
            if nxt is None:
                break
            queue.append(nxt)
        k = queue.popleft()
        if seen[k]:
            continue
        seen[k] = True
        if not inside[k]:
            continue
        chosen.append(k)
        nb = nbrs[k]
        queue.extend(nb[rng.permutation(len(nb))].tolist())
    return np.sort(np.array(chosen, dtype=np.int64))


def pick(kind: str, data: FusionData, nbrs: list, assign: np.ndarray, size: int,
         rng: np.random.Generator) -> tuple[np.ndarray, int, int, np.ndarray]:
    """One neighbourhood: ``(rank, a, b, free)`` — each group's position in the drawn order, the
    window's first and last positions, and the free kernels."""
    q = Quotient(data, assign)
    if kind == "adjacent" and q.traffic:
        edges = sorted(q.traffic)
        w = np.array([q.traffic[e] for e in edges], dtype=float)
        g, h = edges[int(rng.choice(len(edges), p=w / w.sum()))]
        window = {g, h} | (q.reach(g) & q.reach(h, forward=False))
        order = q.order_around(window, rng)
    else:
        order = q.random_order(rng)
        counts = np.bincount(assign, minlength=q.m)
        a = int(rng.integers(q.m))
        b = min(a + 1, q.m - 1)
        while counts[order[a:b + 1]].sum() < size and (a > 0 or b + 1 < q.m):
            a, b = (a, b + 1) if b + 1 < q.m else (a - 1, b)       # forward, then back from the end
        window = set(order[a:b + 1])
    rank = np.empty(q.m, dtype=np.int64)
    rank[order] = np.arange(q.m)
    positions = sorted(int(rank[g]) for g in window)
    free = free_kernels(data, nbrs, assign, sorted(window), size, rng)
    return rank, positions[0], positions[-1], free


def id_domains(data: FusionData, ids: np.ndarray, is_free: np.ndarray, low: int, high: int):
    """Per kernel, the ids it may take: fixed kernels their own; a free kernel the range
    ``[low, high]`` narrowed so it stays after every fixed ancestor and before every fixed
    descendant (kernels are in topological order, so one pass each way)."""
    lo = np.where(is_free, low, ids)
    hi = np.where(is_free, high, ids)
    order = np.argsort(data.dst, kind="stable")
    for u, v in zip(data.src[order].tolist(), data.dst[order].tolist()):
        if is_free[v]:
            lo[v] = max(lo[v], lo[u])
    order = np.argsort(-data.src, kind="stable")
    for u, v in zip(data.src[order].tolist(), data.dst[order].tolist()):
        if is_free[u]:
            hi[u] = min(hi[u], hi[v])
    return lo, hi


def sub_model(data: FusionData, ids: np.ndarray, free: np.ndarray, low: int, high: int, unit: int):
    """The CP-SAT model of the ``free`` kernels, every other kernel fixed at its id; returns
    ``(model, x)`` with ``x[k]`` the (id, variable) pairs of free kernel ``k``. The current ids
    are the hint. The objective is the traffic of the pairs with a free end, in ``unit`` bits."""
    is_free = np.zeros(data.n, dtype=bool)
    is_free[free] = True
    lo, hi = id_domains(data, ids, is_free, low, high)
    m = new_cp_model("fusion lns")
    x: dict[int, dict[int, Any]] = {}
    for k in free.tolist():
        x[k] = {t: m.new_bool_var(f"x[{data.names[k]},{t}]") for t in range(int(lo[k]), int(hi[k]) + 1)}
        m.add_exactly_one(x[k].values())
        for t, v in x[k].items():
            m.add_hint(v, int(t == ids[k]))
    load: dict[int, list] = {t: [] for t in range(low, high + 1)}
    for k in free.tolist():
        for t, v in x[k].items():
            load[t].append((v, int(data.bytes[k])))
    fused = _add_pairs(m, data, ids, is_free, x, load)
    _add_capacity(m, data, ids, is_free, load)
    if fused:
        m.maximize(weighted_sum([v for v, _ in fused], [int(w // unit) for _, w in fused]))
    return m, x


def _id_expr(x: dict, k: int):
    """The id of free kernel ``k``: sum of id x its one-hot literal."""
    return weighted_sum(list(x[k].values()), list(x[k]))


def _add_pairs(m, data: FusionData, ids: np.ndarray, is_free: np.ndarray, x: dict, load: dict) -> list:
    """Order and fusion of every pair with a free end; returns (fused literal, traffic bits)."""
    fused = []
    touch = np.flatnonzero(is_free[data.src] | is_free[data.dst])
    for p in touch.tolist():
        u, v = int(data.src[p]), int(data.dst[p])
        w, conv = int(data.pair_traffic_bits[p]), int(data.pair_conv[p])
        if is_free[u] and is_free[v]:
            m.add(_id_expr(x, v) >= _id_expr(x, u))
            if conv == 0:
                f = m.new_bool_var(f"f[{p}]")
                m.add(_id_expr(x, v) == _id_expr(x, u)).only_enforce_if(f)
                m.add_hint(f, int(ids[u] == ids[v]))
                fused.append((f, w))
                continue
            for t in sorted(set(x[u]) & set(x[v])):
                y = m.new_bool_var(f"y[{p},{t}]")
                m.add_bool_and([x[u][t], x[v][t]]).only_enforce_if(y)
                m.add_bool_or([x[u][t].Not(), x[v][t].Not(), y])
                m.add_hint(y, int(ids[u] == t == ids[v]))
                load[t].append((y, conv))
                fused.append((y, w))
            continue
        k, t = (u, int(ids[v])) if is_free[u] else (v, int(ids[u]))
        if t in x[k]:                     # fused exactly when the free end joins the fixed end's id
            fused.append((x[k][t], w))
            if conv:
                load[t].append((x[k][t], conv))
    return fused


def _add_capacity(m, data: FusionData, ids: np.ndarray, is_free: np.ndarray, load: dict) -> None:
    """Per id: the fixed kernels' bytes and their internal converters plus the free load."""
    fixed = ~is_free
    base = np.bincount(ids[fixed], weights=data.bytes[fixed], minlength=max(load) + 1) if fixed.any() \
        else np.zeros(max(load) + 1)
    both = fixed[data.src] & fixed[data.dst] & (ids[data.src] == ids[data.dst])
    np.add.at(base, ids[data.src][both], data.pair_conv[both])
    for t, terms in load.items():
        room = data.c_max - int(round(base[t])) if 0 <= t < len(base) else data.c_max
        if terms and sum(c for _, c in terms) > room:
            m.add(weighted_sum([v for v, _ in terms], [c for _, c in terms]) <= room)


def _outcome(res, budget: float) -> tuple[str, float]:
    """``optimal``, ``budget`` (the deterministic budget ran out), ``clock`` (the wall clock
    stopped the solve: its answer is dropped) or ``none`` (infeasible or no solution), and the
    deterministic time spent."""
    det = float(res.stats.get("deterministic_time", 0.0))
    if res.termination is Termination.OPTIMAL:
        outcome = "optimal"
    elif res.termination is Termination.INFEASIBLE:
        outcome = "none"
    else:
        outcome = "budget" if det >= 0.99 * budget else "clock"
    if res.values_array is None and outcome != "clock":
        outcome = "none"
    return outcome, det


def resolve(data: FusionData, ids: np.ndarray, free: np.ndarray, low: int, high: int, unit: int,
            wall: float, budget: float, seed: int, workers: int) -> tuple[np.ndarray | None, str, float]:
    """Solve one sub-model: (new ids or None, outcome of :func:`_outcome`, deterministic time)."""
    m, x = sub_model(data, ids, free, low, high, unit)
    res, _ = solve_cp_model(m, time_limit=wall, seed=seed, deterministic=True, workers=workers,
                            params={"max_deterministic_time": budget}, named_values=False,
                            label="fusion: lns sub-model")
    outcome, det = _outcome(res, budget)
    values = res.values_array
    if outcome not in ("optimal", "budget") or values is None:
        return None, outcome, det
    new = ids.copy()
    for k, xs in x.items():
        new[k] = next(t for t, v in xs.items() if values[v.index] > 0.5)
    return new, outcome, det


def resolve_whole(em: ExactModel, data: FusionData, assign: np.ndarray, wall: float, budget: float,
                  seed: int, workers: int) -> tuple[np.ndarray | None, str, float]:
    """A neighbourhood of every kernel: the exact model itself (:mod:`.exact`, with its id windows
    and dominance, which the doubled ids of :func:`sub_model` lack), hinted with ``assign``."""
    set_hint(em, data, assign)
    res = solve_model(em.model, "cpsat", time_limit=wall, seed=seed, deterministic=True, workers=workers,
                      params={"max_deterministic_time": budget})
    outcome, det = _outcome(res, budget)
    if outcome not in ("optimal", "budget") or res.values_array is None:
        return None, outcome, det
    new = decode(em, res.values_array)
    return (new, outcome, det) if (new >= 0).all() else (None, "none", det)


def lns_fusion(data: FusionData, start: np.ndarray, time_limit: float = 60.0, seed: int = 0,
               stats: dict | None = None, budget: float = SUB_BUDGET, workers: int = 1,
               max_sub_solves: int | None = None, bound: float = 0.0,
               verify: Callable[[np.ndarray], None] | None = None) -> np.ndarray:
    """Improve the feasible partition ``start`` (group ids) until ``time_limit`` seconds pass,
    ``max_sub_solves`` sub-solves ran (a budget independent of the clock) or a neighbourhood of
    every kernel was solved to optimality; each sub-solve gets ``budget`` deterministic seconds
    on ``workers`` CP-SAT workers. ``bound`` (DRAM bytes) is shown beside the incumbent;
    ``verify(assign)`` runs on every partition the search accepts. ``stats`` receives the
    counts of sub-solves, accepted and improving ones per kind, and ``proven_optimal``."""
    with progress.phase("fusion: lns (cpsat)", time_limit, numbers=False) as ph:
        return _search(data, start, time_limit, seed, stats if stats is not None else {}, budget, workers,
                       max_sub_solves, bound, verify, ph)


def _search(data, start, time_limit, seed, stats, budget, workers, max_sub_solves, bound, verify, ph):
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    assign = merge_adjacent(data, start)
    best = data.cut_traffic(assign)
    if verify is not None:
        verify(assign)
    ph.update(incumbent=best, bound=bound)
    rng = np.random.default_rng(seed)
    nbrs = _neighbours(data)
    w = data.pair_traffic_bits
    unit = math.gcd(*w.tolist()) if len(w) and w.any() else 8
    em: ExactModel | None = None
    size = min(START_SIZE, data.n)
    weights = np.ones(len(KINDS))
    kinds = {k: {"tried": 0, "improved": 0, "gain": 0.0} for k in KINDS}
    count = dict.fromkeys(("sub_solves", "accepted", "improved", "optimal", "budget", "none", "clock"), 0)
    whole, sizes = False, []
    incumbents = [(time.perf_counter() - t0, best)]
    while (data.n and len(data.src) and best > 0 and deadline - time.perf_counter() > 0.05
           and count["sub_solves"] != max_sub_solves):
        k = int(rng.choice(len(KINDS), p=weights / weights.sum()))
        rank, a, b, free = pick(KINDS[k], data, nbrs, assign, size, rng)
        ids = 2 * rank[assign]
        everything = len(free) == data.n
        sub_seed, wall = int(rng.integers(2**31)), deadline - time.perf_counter()
        if everything:
            em = em or build(data)
            new, outcome, det = resolve_whole(em, data, assign, wall, budget, sub_seed, workers)
        else:
            new, outcome, det = resolve(data, ids, free, 2 * a - 1, 2 * b + 1, unit, wall, budget, sub_seed,
                                        workers)
        count[outcome] += 1
        if outcome == "clock":
            break
        count["sub_solves"] += 1
        kinds[KINDS[k]]["tried"] += 1
        sizes.append(len(free))
        gain = 0.0
        if new is not None:
            cand = topological_groups(data, new)
            traffic = data.cut_traffic(cand)
            if data.group_costs(cand).max() <= data.c_max and traffic <= best:
                gain = best - traffic
                if gain > 0:
                    cand = merge_adjacent(data, cand)
                    gain = best - data.cut_traffic(cand)
                    count["improved"] += 1
                    kinds[KINDS[k]]["improved"] += 1
                    kinds[KINDS[k]]["gain"] += gain
                    incumbents.append((time.perf_counter() - t0, best - gain))
                    ph.update(incumbent=best - gain)
                count["accepted"] += int(not np.array_equal(cand, assign))
                assign, best = cand, best - gain
                if verify is not None:
                    verify(assign)
        weights[k] = max(0.1, 0.8 * weights[k] + 0.2 * (gain > 0))
        if outcome == "optimal" and everything:
            whole = True          # the whole exact problem solved: the partition is optimal
            break
        if outcome == "optimal" and det < budget / 2:
            size = min(data.n, math.ceil(size * GROW))
        elif outcome in ("budget", "none"):
            if everything:
                budget *= 2
            size = max(min(MIN_SIZE, data.n), int(size * SHRINK))
        ph.update(detail=f"{count['sub_solves']} sub-solves, {count['improved']} improved, size {size}")
    proven = whole or best == 0 or not len(data.src)
    stats.update(lns={**count, "by_kind": kinds, "final_size": size, "final_budget_det_s": budget,
                      "sizes": [min(sizes), max(sizes)] if sizes else None, "objective": best,
                      "whole_solved": whole, "incumbents": incumbents},
                 proven_optimal=proven)
    return assign


def _neighbours(data: FusionData) -> list:
    """Per kernel, the kernels it shares a pair with (either direction)."""
    ends = np.concatenate([data.src, data.dst])
    others = np.concatenate([data.dst, data.src])
    order = np.argsort(ends, kind="stable")
    cuts = np.searchsorted(ends[order], np.arange(data.n + 1))
    return [others[order][cuts[k]:cuts[k + 1]] for k in range(data.n)]
