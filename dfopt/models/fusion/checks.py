"""The checker of a fusion solution, written without the solver: recount everything.

* ``fusion-partition`` — every kernel in exactly one group, no unknown kernel;
* ``fusion-convex`` — no path leaves a group and re-enters it, and the groups depend on each
  other without a cycle, listed in an order they can run in one after another through DRAM (no
  stream from a group to an earlier one);
* ``fusion-capacity`` — each group's kernel bytes plus the converter bytes of its internal
  streams (recomputed from the stream types) at most C_max, and equal to the reported cost; the
  reported converters are those of the internal streams;
* ``fusion-objective`` — the DRAM traffic of the cut streams recomputed equals the objective (and
  the reported cut streams, DRAM bytes and unfused bytes; the combinatorial bound is not above it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import networkx as nx

from dfopt.models.converter import stream_converter
from dfopt.models.fusion.data import stream_traffic_bits
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.models.fusion import Options


def _partition_faults(graph, groups) -> tuple[dict, list[str]]:
    where: dict[str, int] = {}
    bad: list[str] = []
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
        back = sorted((a, b) for a, b in quotient.edges if a > b)
        bad += [f"group {a} feeds group {b}, listed before it: the groups are not in an order they can run in"
                for a, b in back[:5]]
    return bad


def recount(graph: DataflowGraph, groups: Sequence[Iterable[str]], where: Mapping[str, int]) -> dict:
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


def partition_faults(graph: DataflowGraph, groups: Sequence[Sequence[str]], c_max: int) -> list[str]:
    """The faults of a bare partition: membership, convexity and order, capacity (what a search
    asserts on every partition it accepts; :func:`checks` also checks the reported figures)."""
    where, bad = _partition_faults(graph, groups)
    if bad:
        return bad
    costs = recount(graph, groups, where)["costs"]
    return _convexity_faults(graph, groups, where) + [f"group {i} needs {c} bytes, C_max is {c_max}"
                                                      for i, c in enumerate(costs) if c > c_max]


def checks(instance: Instance, options: Options, solution: Solution) -> list[Check]:
    """The four checks above; C_max is the instance's and the options' (:func:`c_max_of`)."""
    from dfopt.models.fusion import c_max_of

    graph = instance.graph
    assert graph is not None  # the driver checks the parts a problem needs
    sec = solution.sections.get("fusion") or {}
    groups = [list(g) for g in solution.decision.groups]
    where, bad = _partition_faults(graph, groups)
    out = [Check("fusion-partition", not bad, bad)]
    if bad:
        return out
    convex = _convexity_faults(graph, groups, where)
    out.append(Check("fusion-convex", not convex, convex))
    got = recount(graph, groups, where)
    c_max = c_max_of(instance, options)
    cap = [f"group {i} needs {c} bytes, C_max is {c_max}" for i, c in enumerate(got["costs"]) if c > c_max]
    if sec.get("group_costs") is not None and list(sec["group_costs"]) != got["costs"]:
        cap.append(f"reported group costs {sec['group_costs']} differ from the recount {got['costs']}")
    if sec.get("converters") is not None:
        internal = {s.name: stream_converter(s).to_dict() for s in graph.streams.values()
                    if where[s.src] == where[s.dst] and stream_converter(s).bytes > 0}
        if sec["converters"] != internal:
            cap.append(f"reported converters of {sorted(sec['converters'])} differ from the recount of the internal "
                       f"streams' converters ({sorted(internal)})")
    out.append(Check("fusion-capacity", not cap, cap))
    obj = []
    if solution.objective is None or not abs(float(solution.objective) - got["dram_bytes"]) <= 1e-6:
        obj.append(f"objective {solution.objective} differs from the recounted DRAM traffic {got['dram_bytes']}")
    if sec.get("cut_streams") is not None and sorted(sec["cut_streams"]) != sorted(got["cut"]):
        obj.append("reported cut streams differ from the recount")
    ratio = got["dram_bytes"] / got["unfused_dram_bytes"] if got["unfused_dram_bytes"] else 1.0
    for key, want in (("dram_bytes", got["dram_bytes"]), ("unfused_dram_bytes", got["unfused_dram_bytes"]),
                      ("dram_ratio", ratio)):
        if sec.get(key) is not None and not abs(float(sec[key]) - want) <= 1e-9 * max(1.0, abs(want)):
            obj.append(f"reported {key} {sec[key]} differs from the recount {want}")
    bound = sec.get("combinatorial_bound")
    if bound is not None and float(bound) > got["dram_bytes"] + 1e-6:
        obj.append(f"reported combinatorial_bound {bound} is above the recounted DRAM traffic {got['dram_bytes']}")
    out.append(Check("fusion-objective", not obj, obj))
    return out


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    """Violations only (empty when every check passes); ``options`` default to the instance's."""
    if options is None:
        from dfopt.models.driver import make_options

        options = make_options(instance, problem="fusion")
    return [d for c in checks(instance, options, solution) if not c.ok for d in c.details]
