"""The exact assignment model of virtual nodes to compute tiles (CP-SAT), with the rules of
:mod:`.evaluate` as constraints and its makespan estimate as the objective.

Variables: ``x[v, t]`` virtual node v on tile t (one tile each); ``p[task, t]`` the task is on t;
``lvl[t]`` a distinct position per tile and ``L[v]`` its node's position (``L[v] = lvl[t]`` when
``x[v, t]``); ``o[s, t]`` / ``i[s, t]`` stream s needs an output / input DMA channel at t;
``ch[t, class]`` the tile uses a channel of the class; ``M`` the makespan.

* bundle: ``x[a, t] + x[b, t] <= 1`` for dependent pairs of one isomorphism class; at most one
  isomorphism class of a task per tile;
* chain: the tasks on a tile form a connected set of the task graph (a table constraint over the
  ``p[., t]``; with more than 10 tasks, pairs of tasks without a stream are kept apart instead),
  each with as many members on the tile (``sum x[task a] == sum x[task b]`` when both are there),
  a power of two (``f[task, c, t]``: the factors the search's pairing makes; a core loop of ``c``
  iterations moves ``1/c`` of each FIFO's bytes per iteration, which a factor like 3 cannot cut);
* acyclic: ``L[src] <= L[dst]`` for every stream: with distinct tile positions, streams between
  tiles go forward, so the tile graph has no cycle;
* channels: ``o[s, t] >= x[src, t] - x[dst, t] - sum(x[dst, n] for n sharing t's memory)``
  (likewise ``i``), ``ch >= o`` for the port's class, a host port ``ch >= x``; per tile and
  direction ``sum(ch) <=`` the DMA channels;
* memory: stack + ``sum(p[task, t] * task bytes) <=`` the tile's memory;
* ``M >= sum(work * x) + sum(cycles * o) + sum(cycles * i) + sum(host cycles * x)`` per tile.

With a ``partition`` (the search's physical nodes) every member of a node shares the node's
tile variables and nodes get distinct tiles: the same model places a fixed folding.

Variable names follow the IR: ``x[node,col,row]`` (or ``y[node+node...,col,row]`` for a node
of a partition), ``p[task,col,row]``, ``q[task,class,col,row]``, ``lvl[col,row]``, ``L[node]``,
``o[stream,col,row]`` / ``i[stream,col,row]``, ``ch[col,row,task:role]``, ``makespan``. The
model is solved through :func:`dfopt.ilp.solve_cp_model`.

>>> from dfopt.instance import load
>>> from dfopt.models.mapping.data import mapping_data
>>> em = build(mapping_data(load("instances/mapping/ffn-2x4.json")))
>>> status, assign, bound, _ = solve(em, time_limit=20, workers=1)
>>> status.value, bound, len(assign) == len(em.d.nodes)
('optimal', 544776.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dfopt import progress
from dfopt.ilp import add_in_values, new_cp_model, solve_cp_model
from dfopt.models.mapping.data import STACK_BYTES, MappingData, connected_task_sets
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.ilp.cpsat import CpModel, IntVar  # the CP-SAT types, as dfopt.ilp names them

TABLE_MAX_TASKS = 10


@dataclass
class ExactModel:
    model: CpModel
    x: dict          # (v, tile index) -> literal
    makespan: IntVar
    d: MappingData
    stats: dict
    scale: int = 1   # objective = scale x makespan + tie-break terms below scale


def _tile_name(tile) -> str:
    return f"{tile[0]},{tile[1]}"


def _role_name(cls) -> str:
    task, role = cls
    return f"{task}:" + "/".join(str(r) for r in role)


def build(d: MappingData, partition: list | None = None) -> ExactModel:
    """The model (of every assignment, or of placements of the fixed folding ``partition``)."""
    m = new_cp_model("mapping" if partition is None else "mapping-folding")
    T = len(d.tiles)
    tiles = range(T)
    tn = [_tile_name(tile) for tile in d.tiles]
    if partition is None:
        units = [[v] for v in d.nodes]
    else:
        units = [list(u) for u in partition]
    unit_name = ["+".join(map(str, members)) for members in units]
    var = "x" if partition is None else "y"
    y = {(u, t): m.new_bool_var(f"{var}[{unit_name[u]},{tn[t]}]") for u in range(len(units)) for t in tiles}
    x = {}
    unit_of = {}
    for u, members in enumerate(units):
        m.add_exactly_one(y[u, t] for t in tiles)
        for v in members:
            unit_of[v] = u
            for t in tiles:
                x[v, t] = y[u, t]
    if partition is not None:
        for t in tiles:
            m.add_at_most_one(y[u, t] for u in range(len(units)))
    # bundle: one isomorphism class per task and tile, dependent pairs apart
    by_task: dict = {}
    for v in d.nodes:
        by_task.setdefault(d.task[v], {}).setdefault(d.iso[v], []).append(v)
    p = {}
    for task, classes in by_task.items():
        members = [v for vs in classes.values() for v in vs]
        for t in tiles:
            p[task, t] = m.new_bool_var(f"p[{task},{tn[t]}]")
            for v in members:
                m.add_implication(x[v, t], p[task, t])
            m.add_bool_or([x[v, t] for v in members] + [p[task, t].Not()])
            if len(classes) > 1:
                qs = []
                for iso, vs in classes.items():
                    q = m.new_bool_var(f"q[{task},{iso},{tn[t]}]")
                    for v in vs:
                        m.add_implication(x[v, t], q)
                    qs.append(q)
                m.add_at_most_one(qs)
    # chain of bundles: every task on a tile has as many members (one loop per core)
    count = {(task, t): sum(x[v, t] for vs in classes.values() for v in vs)
             for task, classes in by_task.items() for t in tiles}
    for i, a in enumerate(d.tasks):
        for b in d.tasks[i + 1:]:
            for t in tiles:
                m.add(count[a, t] == count[b, t]).only_enforce_if([p[a, t], p[b, t]])
    # the most members of a task one tile may hold (options.mapping.max_members)
    for task, cap in d.caps.items():
        for t in tiles:
            m.add(count[task, t] <= cap)
    # bundle factors are powers of two (the search's pairing makes no others): a core loop of c
    # iterations moves 1/c of a FIFO's bytes per iteration, which a factor like 3 cannot cut evenly
    for task, classes in by_task.items():
        n = sum(map(len, classes.values()))
        powers = [1 << k for k in range(n.bit_length()) if 1 << k <= n]
        if n < 3:
            continue
        for t in tiles:
            add_in_values(m, count[task, t], [0, *powers])
    for pair in sorted(d.conflicts, key=sorted):     # a stable model: CP-SAT's answer depends on the order
        a, b = sorted(pair)
        if partition is None or unit_of[a] != unit_of[b]:
            for t in tiles:
                m.add_bool_or([x[a, t].Not(), x[b, t].Not()])
    # chain: connected task sets
    tasks = d.tasks
    if len(tasks) > 1:
        if len(tasks) <= TABLE_MAX_TASKS:
            allowed = [tuple(int(tk in s) for tk in tasks) for s in connected_task_sets(d)]
            allowed.append(tuple(0 for _ in tasks))
            for t in tiles:
                m.add_allowed_assignments([p[tk, t] for tk in tasks], allowed)
        else:
            for i, a in enumerate(tasks):
                for b in tasks[i + 1:]:
                    if frozenset((a, b)) not in d.task_links:
                        for t in tiles:
                            m.add_bool_or([p[a, t].Not(), p[b, t].Not()])
    # acyclic tile graph
    lvl = [m.new_int_var(0, T - 1, f"lvl[{tn[t]}]") for t in tiles]
    m.add_all_different(lvl)
    L = [m.new_int_var(0, T - 1, f"L[{unit_name[u]}]") for u in range(len(units))]
    for u in range(len(units)):
        for t in tiles:
            m.add(L[u] == lvl[t]).only_enforce_if(y[u, t])
    for src, dst, _, _ in d.edges:
        if unit_of[src] != unit_of[dst]:
            m.add(L[unit_of[src]] <= L[unit_of[dst]])
    # channels and transfer cycles
    load: dict[int, list] = {t: [] for t in tiles}
    need: dict[tuple, list] = {}          # (t, dir, class) -> [literals]
    tile_index = {tile: t for t, tile in enumerate(d.tiles)}
    for v in d.nodes:
        for t in tiles:
            load[t].append(d.work[v] * x[v, t])
        for port in d.ports[v]:
            cls = (d.task[v], port.role)
            if port.kind == "host":
                for t in tiles:
                    need.setdefault((t, port.dir, cls), []).append(x[v, t])
                    load[t].append(port.cycles * x[v, t])
                continue
            if partition is not None and unit_of[port.peer] == unit_of[v]:
                continue
            for t in tiles:
                near = [x[port.peer, tile_index[n]] for n in d.neighbours[d.tiles[t]]]
                lit = m.new_bool_var(f"{'o' if port.dir == 'out' else 'i'}[{port.name},{tn[t]}]")
                m.add(lit >= x[v, t] - x[port.peer, t] - sum(near))
                need.setdefault((t, port.dir, cls), []).append(lit)
                load[t].append(port.cycles * lit)
    chans: dict[tuple[int, str], list] = {(t, dirn): [] for t in tiles for dirn in ("in", "out")}
    for (t, dirn, cls), lits in need.items():
        if len(lits) == 1:
            chans[t, dirn].append(lits[0])
            continue
        ch = m.new_bool_var(f"ch[{tn[t]},{_role_name(cls)}]")
        for lit in lits:
            m.add_implication(lit, ch)
        chans[t, dirn].append(ch)
    for (_, dirn), cs in chans.items():
        m.add(sum(cs) <= d.limits[f"compute_{dirn}"])
    for t in tiles:
        m.add(STACK_BYTES + sum(d.task_bytes[task] * p[task, t] for task in by_task) <= d.limits["compute_bytes"])
    total_work = sum(d.work.values())
    ub = total_work + sum(port.cycles for v in d.nodes for port in d.ports[v])
    # a tile's estimate is at least its members' work and host cycles (streams may all be free)
    unit_floor = max(sum(d.work[v] + sum(p.cycles for p in d.ports[v] if p.kind == "host") for v in members)
                     for members in units)
    M = m.new_int_var(max(-(-total_work // T), unit_floor), max(ub, unit_floor, 1), "makespan")
    for t in tiles:
        m.add(M >= sum(load[t]))
    m.minimize(M)
    stats = {"variables": len(m.proto.variables), "constraints": len(m.proto.constraints), "units": len(units)}
    return ExactModel(m, x, M, d, stats)


def set_hint(em: ExactModel, assign: dict) -> None:
    """Start from ``assign`` and, among mappings of equal makespan, prefer the fewest nodes moved
    from it: the objective becomes ``(|V| + 1) x makespan + moved nodes``. The hint passed its
    routing, and an equally good answer elsewhere may not (the exact model leaves routing to a
    later check), so ties go to the hint."""
    index = {tile: t for t, tile in enumerate(em.d.tiles)}
    seen = set()
    for (v, t), lit in em.x.items():
        if lit.index in seen:
            continue
        seen.add(lit.index)
        em.model.add_hint(lit, index[tuple(assign[v])] == t)
    em.scale = len(em.d.nodes) + 1
    em.model.minimize(em.scale * em.makespan + sum(1 - em.x[v, index[tuple(assign[v])]] for v in em.d.nodes))


def forbid(em: ExactModel, assign: dict) -> None:
    """A no-good: not this exact assignment (used when the routing of an answer fails)."""
    index = {tile: t for t, tile in enumerate(em.d.tiles)}
    em.model.add_bool_or([em.x[v, index[tuple(assign[v])]].Not() for v in em.d.nodes])


def solve(em: ExactModel, time_limit: float, seed: int = 0, workers: int = 8, deterministic: bool = True,
          label: str = "mapping: exact model") -> tuple[Termination, dict | None, float | None, float]:
    """``(termination, assign or None, bound, wall seconds)``: termination a
    :class:`~dfopt.results.Termination` (``optimal``, ``feasible``, ``time_limit`` — with or
    without an assignment —, ``infeasible`` or ``error``); ``bound`` a lower bound on the
    makespan when an assignment was found. Progress goes to a phase called ``label`` (in
    makespan units)."""
    with progress.phase(label, time_limit, scale=1.0 / em.scale):
        result, solver = solve_cp_model(em.model, time_limit=time_limit, seed=seed, workers=workers,
                                        deterministic=deterministic, named_values=False, label="CP-SAT mapping")
    assign = bound = None
    if result.has_solution:
        assign = {}
        for (v, t), lit in em.x.items():
            if solver.boolean_value(lit):
                assign[v] = em.d.tiles[t]
        # scale x M + moved >= bound with 0 <= moved < scale, so M >= floor(bound / scale)
        bound = int(solver.best_objective_bound + 1e-6) // em.scale if em.scale > 1 else solver.best_objective_bound
    return result.termination, assign, bound, solver.wall_time
