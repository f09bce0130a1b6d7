"""Virtual-to-physical mapping on an AMD NPU (``problem: mapping``; Dato; DESIGN 5.5).

The instance's graph is a virtual mapping graph (one kernel per task instance, as
:func:`dfopt.dato.to_dataflow_graph` exports it: ``attrs.task``, ``attrs.index``, ``latency`` =
work in cycles, ``resources.bytes`` = local memory, ``attrs.io`` = host ports). A mapping folds
it onto the compute tiles of a region of the array (``options.mapping.region``; default: the
first four columns, all compute rows — the Dato paper's 4x4): every tile holds one physical node,
a chain of bundles (:mod:`.evaluate` has the rules), within 2 input / 2 output DMA channels and
64 KB; host channels are routed through mem tiles and shim DMAs (:mod:`.route`). Objective: the
estimated makespan (the busiest tile's work plus its DMA transfer cycles).

Formulations (``FORMULATIONS``):

* ``search`` (default) — branch-and-reduce over bundle / chain applications with a lower-bound
  priority, the best of the first ``first`` feasible foldings (:mod:`.search`);
* ``cpsat`` — the exact assignment of virtual nodes to tiles (:mod:`.exact`), hinted with the
  search's answer when ``hint``; a routing failure adds a no-good and re-solves.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/mapping/ffn-2x4.json"))
>>> nodes = sol.sections["mapping"]["nodes"]
>>> sol.status, sol.objective, {n["kind"] for n in nodes}, sorted(len(n["members"]) for n in nodes)
('feasible', 544776.0, {'bundle'}, [2, 2, 2, 2, 2, 2, 2, 2])
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dfopt.errors import InfeasibleError, InstanceError, NoSolutionError
from dfopt.models.mapping import exact
from dfopt.models.mapping.checks import check, checks, tile_text
from dfopt.models.mapping.data import STACK_BYTES, MappingData, mapping_data
from dfopt.models.mapping.evaluate import class_text, evaluate, node_kind
from dfopt.models.mapping.route import route
from dfopt.models.mapping.search import Search
from dfopt.models.options import CommonOptions, check_formulation
from dfopt.solution import Solution

__all__ = ["DEFAULT_FORMULATION", "FORMULATIONS", "Options", "check", "checks", "solve"]

DEFAULT_FORMULATION = "search"
ROUTING_RETRIES = 5


@dataclass(frozen=True)
class Options(CommonOptions):
    """Mapping options (also CLI flags and ``options.mapping`` fields)."""

    region: dict | None = None      # {"columns": [first, last], "rows": [first, last]}
    first: int = 5                  # search: stop after this many feasible foldings
    branch: int = 3                 # search: moves tried per state
    max_states: int = 400           # search: states expanded at most
    hint: bool = True               # cpsat: start from the search's answer
    workers: int = 8                # cpsat: workers (deterministic: interleaved search)


def _presolve(d: MappingData) -> list[str]:
    """Reasons no mapping can exist that a single node or a count shows."""
    reasons = []
    for v in d.nodes:
        mem = STACK_BYTES + d.bytes[v]
        if mem > d.limits["compute_bytes"]:
            reasons.append(f"virtual node {v} alone needs {mem} bytes of data memory (with the stack); a compute tile "
                           f"has {d.limits['compute_bytes']}")
        for dirn in ("in", "out"):
            host = {p.role for p in d.ports[v] if p.kind == "host" and p.dir == dirn}
            if len(host) > d.limits[f"compute_{dirn}"]:
                reasons.append(f"virtual node {v} has {len(host)} host {dirn}put ports; a compute tile has "
                               f"{d.limits[f'compute_{dirn}']} {dirn}put DMA channels")
    for dirn, side in (("in", "shim_out"), ("out", "shim_in")):
        tensors = sorted({p.name for v in d.nodes for p in d.ports[v] if p.kind == "host" and p.dir == dirn})
        have = d.limits[side] * len(d.shim_columns)
        if len(tensors) > have:
            reasons.append(f"{len(tensors)} host {dirn}put tensors ({', '.join(tensors)}) each need a shim DMA "
                           f"channel; the region's shim columns {d.shim_columns} have {have}")
    return reasons


def _search(d: MappingData, options: Options, time_limit: float):
    s = Search(d, first=options.first, branch=options.branch, max_states=options.max_states,
               time_limit=time_limit, seed=options.seed)
    s.run()
    return s


def _run_search(ctx) -> dict:
    d, opts = ctx["data"], ctx["options"]
    s = _search(d, opts, opts.time_limit)
    best = s.best()
    if best is None:
        raise NoSolutionError(f"the search found no feasible folding in {s.stats['states']} states "
                              f"({s.stats['leaves_failed']} foldings that fit the tiles failed to place or route); "
                              "raise max_states or branch, or try --formulation cpsat")
    makespan, assign, routes, _ = best
    return {"assign": assign, "routes": routes, "status": "feasible", "bound": None, "solver": "cpsat",
            "stats": {**s.stats, "found": sorted(f[0] for f in s.found)}}


def _run_cpsat(ctx) -> dict:
    d, opts = ctx["data"], ctx["options"]
    t0 = time.perf_counter()
    stats = {}
    hint = None
    if opts.hint:
        s = _search(d, opts, opts.time_limit / 4)
        best = s.best()
        stats["hint_makespan"] = None if best is None else best[0]
        hint = None if best is None else best
    em = exact.build(d)
    stats.update(em.stats)
    if hint is not None:
        exact.set_hint(em, hint[1])
    best_bound = None
    for attempt in range(ROUTING_RETRIES + 1):
        left = max(0.5, opts.time_limit - (time.perf_counter() - t0))
        status, assign, bound, wall = exact.solve(em, left, opts.seed, opts.workers, opts.deterministic)
        stats["time_solver_s"] = stats.get("time_solver_s", 0.0) + wall
        if bound is not None:       # no-goods only cut unroutable answers: every attempt's bound holds
            best_bound = bound if best_bound is None else max(best_bound, bound)
        if status == "infeasible" and attempt:
            raise InfeasibleError(f"no mapping exists on the {len(d.tiles)} compute tiles of the region: the exact "
                                  f"model's {attempt} answer(s) failed routing ({stats['routing_failure']}) and it "
                                  "proved that no other assignment exists; enlarge the region")
        if status == "infeasible":
            raise InfeasibleError(f"no mapping exists on the {len(d.tiles)} compute tiles of the region (the exact "
                                  "model proved it): the nodes cannot be bundled and chained within the DMA channels, "
                                  "the data memory and an acyclic tile order; enlarge the region")
        if assign is None:
            break
        ev = evaluate(d, assign)
        routes, why = route(d, ev.host, seed=opts.seed)
        if routes is not None:
            stats["routing_retries"] = attempt
            status = status if hint is None or ev.makespan <= hint[0] else "feasible"
            return {"assign": assign, "routes": routes, "status": status, "bound": best_bound, "solver": "cpsat",
                    "stats": stats}
        stats["routing_failure"] = why
        exact.forbid(em, assign)
    if hint is not None:
        stats["fell_back_to_search"] = True
        return {"assign": hint[1], "routes": hint[2], "status": "feasible", "bound": best_bound, "solver": "cpsat",
                "stats": stats}
    raise NoSolutionError(f"CP-SAT found no routable mapping within {opts.time_limit:g} s; raise time_limit or "
                          "enlarge the region")


FORMULATIONS = {"search": _run_search, "cpsat": _run_cpsat}


def _validate(instance, options: Options) -> str:
    formulation = check_formulation("mapping", instance, options, FORMULATIONS, DEFAULT_FORMULATION,
                                    {"search": ("cpsat",), "cpsat": ("cpsat",)})
    for name in ("first", "branch", "max_states", "workers"):
        if int(getattr(options, name)) < 1:
            raise InstanceError(f"{name} must be >= 1, got {getattr(options, name)}",
                                pointer=f"/options/mapping/{name}")
    return formulation


def solve(instance, options: Options) -> Solution:
    """Fold and place the virtual graph of ``instance`` on the NPU region; checked."""
    formulation = _validate(instance, options)
    d = mapping_data(instance, options.region)
    reasons = _presolve(d)
    if reasons:
        raise InfeasibleError("no mapping exists: " + "; ".join(reasons[:8]), culprits=reasons)
    t0 = time.perf_counter()
    out = FORMULATIONS[formulation]({"data": d, "options": options})
    t_solve = time.perf_counter() - t0
    ev = evaluate(d, out["assign"])
    bound = None if out["bound"] is None else min(float(out["bound"]), float(ev.makespan))
    status = "optimal" if bound is not None and bound >= ev.makespan - 0.5 else out["status"]
    solution = Solution(instance=instance.name, problem="mapping", status=status, objective=float(ev.makespan),
                        bound=bound, formulation=formulation, solver=out["solver"], seed=options.seed,
                        sections={"mapping": section(d, ev, out["routes"])},
                        stats={**out["stats"], "time_solve_s": t_solve})
    t = time.perf_counter()
    solution.checks = checks(instance, solution)
    solution.stats["time_check_s"] = time.perf_counter() - t
    return solution


def section(d: MappingData, ev, routes: list) -> dict:
    """The solution's ``mapping`` section."""
    nodes = []
    for i, (t, members) in enumerate(ev.members.items()):
        tasks = {}
        for v in members:
            tasks[d.task[v]] = tasks.get(d.task[v], 0) + 1
        nodes.append({"name": f"p{i}", "tile": list(t), "kind": node_kind(d, members), "members": members,
                      "tasks": tasks, "work": sum(d.work[v] for v in members), "estimate": ev.estimate[t],
                      "memory_bytes": ev.memory[t],
                      "channels": {k: [class_text(c) for c in ev.channels[t][k]] for k in ("in", "out")}})
    modes = {"internal": 0, "shared": 0, "dma": 0}
    for (v, i), m in ev.mode.items():
        if d.ports[v][i].kind == "stream" and d.ports[v][i].dir == "out":
            modes[m] += 1
    mems = {}
    for r in routes:
        mem = mems.setdefault(tuple(r["mem"]), {"mm2s": 0, "s2mm": 0, "in_tensors": set(), "out_tensors": set()})
        mem["mm2s" if r["dir"] == "in" else "s2mm"] += 1
        mem[f"{r['dir']}_tensors"].add(r["tensor"])
    shim = {}
    for mem in mems.values():
        mem["s2mm"] += len(mem.pop("in_tensors"))
        mem["mm2s"] += len(mem.pop("out_tensors"))
    for key in {(tuple(r["mem"]), r["tensor"], r["dir"], tuple(r["shim"])) for r in routes}:
        s = shim.setdefault(key[3][0], {"mm2s": 0, "s2mm": 0})
        s["mm2s" if key[2] == "in" else "s2mm"] += 1
    cols = sorted({t[0] for t in d.tiles})
    rows = sorted({t[1] for t in d.tiles})
    use = {"compute_in": sum(len(c["in"]) for c in ev.channels.values()),
           "compute_out": sum(len(c["out"]) for c in ev.channels.values()),
           "compute_in_capacity": d.limits["compute_in"] * len(d.tiles),
           "compute_out_capacity": d.limits["compute_out"] * len(d.tiles),
           "mem_tiles": {f"{m[0]},{m[1]}": v for m, v in sorted(mems.items())},
           "shim": {str(c): v for c, v in sorted(shim.items())}}
    return {"platform": d.platform, "region": {"columns": [cols[0], cols[-1]], "rows": [rows[0], rows[-1]]},
            "tiles": len(d.tiles), "tiles_used": len(nodes), "virtual_nodes": len(d.nodes),
            "makespan": ev.makespan, "nodes": nodes,
            "physical": {v: tile_text(t) for t, members in ev.members.items() for v in members},
            "streams": modes, "channel_use": use, "routes": routes}
