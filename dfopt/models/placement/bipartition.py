"""Recursive two-way splits (AutoBridge's method for large graphs).

The device is cut in two along a line (rows first, the SLR boundaries, then columns), the
kernels of the region are split between the halves by a small ILP, and each half is split again
until every region is one slot. Each split's ILP has one binary per unit (same-slot groups are
one unit): the halves' summed capacities, the pins, the wires of the line (minus the crossings
already fixed elsewhere), and a cost of width x the distance between the halves' centres for the
region's own streams plus width x the distance from each half's centre to the current region of
every outside neighbour. Each split's ILP starts from the side the hint (the greedy placement)
gives each unit. A split that finds no solution (the halves' summed capacities can hide a
slot that cannot pack its kernels) makes the whole method fail; the caller then reports it.

>>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
>>> from dfopt.ir.platform import load_preset
>>> from dfopt.models.placement.data import placement_data
>>> ks = [Kernel(f"k{i}", resources={"lut": 150000}) for i in range(4)]
>>> ss = [Stream(f"e{i}", f"k{i}", f"k{i + 1}", tokens=1, width=32) for i in range(3)]
>>> d = placement_data(DataflowGraph(ks, ss), load_preset("u55c"), 0.8)
>>> a = bipartition_placement(d, time_limit=5)
>>> d.evaluate(a).distance
32.0
"""

from __future__ import annotations

import numpy as np

from dfopt import progress
from dfopt.ilp import LinearModel, lin_sum
from dfopt.ilp import solve as solve_model
from dfopt.ilp.rows import RowBuffer
from dfopt.models.placement.data import PlacementData
from dfopt.models.placement.greedy import Units
from dfopt.results import Termination


def _split(d: PlacementData, region: list[int]):
    """(axis, level, low slots, high slots) of the line cutting ``region`` in two."""
    for axis, coord in (("y", d.sy), ("x", d.sx)):
        levels = sorted(set(coord[region].tolist()))
        if len(levels) > 1:
            mid = levels[(len(levels) - 1) // 2]
            low = [s for s in region if coord[s] <= mid]
            high = [s for s in region if coord[s] > mid]
            return axis, mid, low, high
    raise ValueError("a region of one slot has no split")


def _centre(d: PlacementData, slots: list[int]) -> np.ndarray:
    return np.array([d.sx[slots].mean(), d.sy[slots].mean()])


def _line_wires(d: PlacementData, axis: str, level: float) -> float | None:
    for c in d.cuts:
        if c.axis == axis and c.low == level:
            return c.wires
    return None


def bipartition_placement(d: PlacementData, time_limit: float = 60.0, seed: int = 0,
                          backend: str = "cpsat", stats: dict | None = None,
                          hint: np.ndarray | None = None, workers: int = 8,
                          deterministic_time: float | None = None) -> np.ndarray | None:
    """Kernel slots, or None when a split finds no solution. ``hint`` (kernel slots, e.g. the
    greedy placement) seeds each split's ILP with the side it puts each unit on.
    ``deterministic_time`` (CP-SAT's deterministic seconds, shared equally by the splits like
    the time limit) makes the answer independent of the machine's load while the wall-clock
    limit does not bind first. Progress: one phase for all the splits (their count so far)."""
    with progress.phase(f"placement: bipartition ({backend})", time_limit, numbers=False) as ph:
        return _bipartition(d, time_limit, seed, backend, stats, hint, workers, ph, deterministic_time)


def _bipartition(d, time_limit, seed, backend, stats, hint, workers, ph, det_time=None) -> np.ndarray | None:
    units = Units(d)
    hint_slot = None if hint is None else np.array([hint[m[0]] for m in units.members], dtype=np.int64)
    U = len(units)
    region_of = np.zeros(U, dtype=np.int64)          # index into regions
    regions = [list(range(d.num_slots))]
    centres = [_centre(d, regions[0])]
    splits = max(d.num_slots - 1, 1)
    per_split = time_limit / splits
    params = {} if det_time is None else {"max_deterministic_time": det_time / splits}
    queue = [0]
    log: list[dict] = []
    while queue:
        rid = queue.pop(0)
        region = regions[rid]
        if len(region) == 1:
            continue
        axis, level, low, high = _split(d, region)
        members = np.flatnonzero(region_of == rid)
        side = _solve_split(d, units, members, region_of, regions, centres, axis, level, low, high,
                            per_split, seed, backend, log, hint_slot, workers, params)
        ph.update(detail=f"split {len(log)}/{splits}")
        if side is None:
            if stats is not None:
                stats["splits"] = log
            return None
        for part, pick in ((low, members[side == 0]), (high, members[side == 1])):
            regions.append(part)
            centres.append(_centre(d, part))
            region_of[pick] = len(regions) - 1
            queue.append(len(regions) - 1)
    if stats is not None:
        stats["splits"] = log
    slot = np.array([regions[r][0] for r in region_of.tolist()], dtype=np.int64)
    assign = units.expand(slot)
    return assign if d.evaluate(assign).feasible else None


def _solve_split(d, units, members, region_of, regions, centres, axis, level, low, high,
                 time_limit, seed, backend, log, hint_slot=None, workers=8, params=None) -> np.ndarray | None:
    coord = d.sy if axis == "y" else d.sx
    m = LinearModel("bipartition")
    t = m.add_vars(len(members), 0, 1, integer=True, names=[f"t[{u}]" for u in members.tolist()])
    pos = {int(u): i for i, u in enumerate(members.tolist())}
    rows = RowBuffer()
    # pins and fit: a unit must fit one slot of its side
    for i, u in enumerate(members.tolist()):
        ok_low = any(units.allowed[u, s] and (units.demand[u] <= d.limit[s] + 1e-9).all() for s in low)
        ok_high = any(units.allowed[u, s] and (units.demand[u] <= d.limit[s] + 1e-9).all() for s in high)
        if not (ok_low or ok_high):
            log.append({"line": f"{axis} {level:g}", "status": "unit fits neither side"})
            return None
        if not ok_low:
            rows.add([0], [t[i]], [1], 1, 1)
        elif not ok_high:
            rows.add([0], [t[i]], [1], 0, 0)
    # summed capacity per side
    for part, sign in ((low, 0), (high, 1)):
        lim = d.limit[part].sum(axis=0)
        for r in range(len(d.kinds)):
            dem = units.demand[members, r]
            if dem.sum() <= lim[r]:
                continue
            if sign == 1:   # sum dem t <= lim
                rows.add(np.zeros(len(t)), t, dem, -np.inf, lim[r])
            else:           # sum dem (1 - t) <= lim  <=>  sum dem t >= total - lim
                rows.add(np.zeros(len(t)), t, dem, dem.sum() - lim[r], np.inf)
    c_low, c_high = _centre(d, low), _centre(d, high)
    gap = float(np.abs(c_low - c_high).sum())
    obj_cols, obj_coef, const = [], [], 0.0
    wire_cols, wire_coef, wire_const = [], [], 0.0
    for i, u in enumerate(members.tolist()):
        others, ws = units.adj[u]
        for v, w in zip(others.tolist(), ws.tolist()):
            if v in pos:
                if u < v:   # internal stream: y >= |t_u - t_v|
                    y = m.add_vars(1, 0, 1, integer=True, names=[f"y[{u},{v}]"])[0]
                    j = pos[v]
                    rows.add([0, 0, 0], [y, t[i], t[j]], [1, -1, 1], 0, np.inf)
                    rows.add([0, 0, 0], [y, t[i], t[j]], [1, 1, -1], 0, np.inf)
                    obj_cols.append(y)
                    obj_coef.append(w * gap)
                    wire_cols.append(y)
                    wire_coef.append(w)
                continue
            p = centres[region_of[v]]
            d_low, d_high = np.abs(c_low - p).sum(), np.abs(c_high - p).sum()
            const += w * d_low
            obj_cols.append(t[i])
            obj_coef.append(w * (d_high - d_low))
            vslots = regions[region_of[v]]
            if all(coord[s] <= level for s in vslots):      # neighbour below: crossing iff t = 1
                wire_cols.append(t[i])
                wire_coef.append(w)
            elif all(coord[s] > level for s in vslots):     # neighbour above: crossing iff t = 0
                wire_const += w
                wire_cols.append(t[i])
                wire_coef.append(-w)
    wires = _line_wires(d, axis, level)
    if wires is not None and wire_cols:
        budget = wires - _fixed_crossings(d, units, members, region_of, regions, coord, level)
        rows.add(np.zeros(len(wire_cols)), wire_cols, wire_coef, -np.inf, budget - wire_const)
    rows.into(m)
    if obj_cols:
        m.minimize(lin_sum(np.array(obj_cols, dtype=np.int64), obj_coef, const, model=m))
    if hint_slot is not None:
        for i, u in enumerate(members.tolist()):
            if hint_slot[u] in high or hint_slot[u] in low:
                m.hint(m.var(int(t[i])), 1.0 if hint_slot[u] in high else 0.0)
    res = solve_model(m, backend, time_limit=time_limit, seed=seed, deterministic=True, workers=workers,
                      params=params)
    log.append({"line": f"{axis} {level:g}", "units": len(members), "status": res.termination.value,
                "time_s": round(res.wall_time_s, 4)})
    if res.values_array is None or res.termination in (Termination.INFEASIBLE,):
        return None
    return np.round(res.values_array[t]).astype(np.int64)


def _fixed_crossings(d, units, members, region_of, regions, coord, level) -> float:
    """Wires of streams between two units outside ``members`` already on opposite sides."""
    inside = set(members.tolist())
    side = {}
    for r, slots in enumerate(regions):
        vals = coord[slots]
        side[r] = 0 if (vals <= level).all() else (1 if (vals > level).all() else None)
    total = 0.0
    for u in range(len(units)):
        if u in inside:
            continue
        others, ws = units.adj[u]
        for v, w in zip(others.tolist(), ws.tolist()):
            if u < v and v not in inside:
                a, b = side[region_of[u]], side[region_of[v]]
                if a is not None and b is not None and a != b:
                    total += w
    return total
