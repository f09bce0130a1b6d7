"""The checker of a fusion solution, written without the solver: recount everything.

* ``fusion-partition`` — every kernel in exactly one group, no unknown kernel;
* ``fusion-convex`` — no path leaves a group and re-enters it, and the groups depend on each
  other without a cycle (they can run one after another through DRAM);
* ``fusion-capacity`` — each group's kernel bytes plus the converter bytes of its internal
  streams (recomputed from the stream types) at most C_max, and equal to the reported cost;
* ``fusion-objective`` — the DRAM traffic of the cut streams recomputed equals the objective.
"""

from __future__ import annotations

import networkx as nx

from dfopt.models.converter import stream_converter
from dfopt.models.fusion.data import stream_traffic_bits
from dfopt.solution import Check


def _partition_faults(graph, groups) -> tuple[dict, list[str]]:
    where, bad = {}, []
    for i, members in enumerate(groups):
        for k in members:
            if k not in graph.kernels:
                bad.append(f"group {i}: unknown kernel {k!r}")
            elif k in where:
                bad.append(f"kernel {k} is in groups {where[k]} and {i}")
            else:
                where[k] = i
    bad += [f"kernel {k} is in no group" for k in graph.kernels if k not in where]
    return where, bad


def _convexity_faults(graph, groups, where) -> list[str]:
    bad = []
    g = graph.nx
    for i, members in enumerate(groups):
        inside = set(members)
        frontier = {w for k in members for w in g.successors(k) if w not in inside}
        seen = set(frontier)
        stack = list(frontier)
        while stack:
            w = stack.pop()
            for z in g.successors(w):
                if z in inside:
                    bad.append(f"group {i} is not convex: a path leaves it and re-enters at {z} via {w}")
                    stack = []
                    break
                if z not in seen:
                    seen.add(z)
                    stack.append(z)
    quotient = nx.DiGraph()
    quotient.add_nodes_from(range(len(groups)))
    quotient.add_edges_from((where[s.src], where[s.dst]) for s in graph.streams.values()
                            if where[s.src] != where[s.dst])
    try:
        cycle = nx.find_cycle(quotient)
        bad.append("the groups depend on each other in a cycle: " + " -> ".join(str(a) for a, _ in cycle))
    except nx.NetworkXNoCycle:
        pass
    return bad


def recount(graph, groups, where) -> dict:
    """Group costs, cut streams and DRAM bytes recomputed from the graph."""
    costs = [sum(int(graph.kernels[k].resources.get("bytes", 0)) for k in members) for members in groups]
    cut, traffic, total = [], 0, 0
    for s in graph.streams.values():
        bits = stream_traffic_bits(s)
        total += bits
        if where[s.src] == where[s.dst]:
            costs[where[s.src]] += stream_converter(s).bytes
        else:
            cut.append(s.name)
            traffic += bits
    return {"costs": costs, "cut": cut, "dram_bytes": traffic / 8, "unfused_dram_bytes": total / 8}


def checks(instance, solution) -> list[Check]:
    graph = instance.graph
    sec = solution.sections.get("fusion") or {}
    groups = sec.get("groups", [])
    where, bad = _partition_faults(graph, groups)
    out = [Check("fusion-partition", not bad, bad)]
    if bad:
        return out
    convex = _convexity_faults(graph, groups, where)
    out.append(Check("fusion-convex", not convex, convex))
    got = recount(graph, groups, where)
    c_max = sec.get("c_max")
    cap = []
    if not isinstance(c_max, int) or c_max <= 0:
        cap.append(f"c_max {c_max!r} is not a positive integer")
    else:
        cap += [f"group {i} needs {c} bytes, C_max is {c_max}" for i, c in enumerate(got["costs"]) if c > c_max]
    if sec.get("group_costs") is not None and list(sec["group_costs"]) != got["costs"]:
        cap.append(f"reported group costs {sec['group_costs']} differ from the recount {got['costs']}")
    out.append(Check("fusion-capacity", not cap, cap))
    obj = []
    if solution.objective is None or abs(float(solution.objective) - got["dram_bytes"]) > 1e-6:
        obj.append(f"objective {solution.objective} differs from the recounted DRAM traffic {got['dram_bytes']}")
    if sec.get("cut_streams") is not None and sorted(sec["cut_streams"]) != sorted(got["cut"]):
        obj.append("reported cut streams differ from the recount")
    if solution.bound is not None and float(solution.bound) > got["dram_bytes"] + 1e-6:
        obj.append(f"bound {solution.bound} exceeds the recounted objective {got['dram_bytes']}")
    out.append(Check("fusion-objective", not obj, obj))
    return out


def check(instance, solution) -> list[str]:
    """Violations only (empty when every check passes)."""
    return [d for c in checks(instance, solution) if not c.ok for d in c.details]
