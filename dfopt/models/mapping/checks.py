"""The checker of a mapping, without a solver: everything recounted from the instance and the
solution's ``mapping.physical`` (virtual node -> ``tile(col,row)``) and ``mapping.routes``.

* ``mapping-assignment`` — every virtual node on one compute tile of the region; ``nodes``
  agree with ``physical`` (members, tiles, kinds);
* ``mapping-legality`` — bundles isomorphic and independent, chains connected, the tile graph
  acyclic;
* ``mapping-ports`` — DMA channels per tile within 2 in / 2 out (recounted from the ports);
* ``mapping-memory`` — data memory per tile;
* ``mapping-routes`` — every host channel routed through a mem tile and a shim DMA within their
  channel and memory limits;
* ``mapping-objective`` — the estimated makespan equals the reported objective.
"""

from __future__ import annotations

import re

from dfopt.models.mapping.data import mapping_data
from dfopt.models.mapping.evaluate import evaluate, node_kind
from dfopt.models.mapping.route import route_faults
from dfopt.solution import Check

TILE = re.compile(r"^tile\((\d+),\s*(\d+)\)$")


def parse_tile(text) -> tuple | None:
    m = TILE.match(str(text))
    return (int(m.group(1)), int(m.group(2))) if m else None


def tile_text(t) -> str:
    return f"tile({t[0]},{t[1]})"


def checks(instance, solution) -> list[Check]:
    sec = solution.sections.get("mapping")
    if not sec or "physical" not in sec:
        return [Check("mapping-assignment", False, ["the solution has no mapping.physical"])]
    d = mapping_data(instance, sec.get("region"))
    assign, bad = {}, []
    for v, text in sec["physical"].items():
        t = parse_tile(text)
        if v not in d.task:
            bad.append(f"mapping.physical names {v!r}, which is no virtual node")
        elif t is None:
            bad.append(f"{v}: {text!r} is not tile(col,row)")
        else:
            assign[v] = t
    ev = evaluate(d, assign)
    bad += ev.problems["assignment"]
    listed = {}
    for node in sec.get("nodes", []):
        t = tuple(node.get("tile", ()))
        listed[t] = node
        if ev.members.get(t) != node.get("members"):
            bad.append(f"node {node.get('name')}: members {node.get('members')} but the tile holds "
                       f"{ev.members.get(t)} (in member order)")
        elif node.get("kind") != node_kind(d, node["members"]):
            bad.append(f"node {node.get('name')}: kind {node.get('kind')!r}, "
                       f"recounted {node_kind(d, node['members'])!r}")
    for t in ev.members:
        if t not in listed:
            bad.append(f"{tile_text(t)} holds {ev.members[t]} but no entry of mapping.nodes lists it")
    out = [Check("mapping-assignment", not bad, bad[:20])]
    for rule in ("legality", "ports", "memory"):
        out.append(Check(f"mapping-{rule}", not ev.problems[rule], ev.problems[rule][:20]))
    routes = route_faults(d, ev.host, sec.get("routes", []))
    out.append(Check("mapping-routes", not routes, routes[:20]))
    obj = solution.objective
    ok = obj is not None and abs(float(obj) - ev.makespan) < 0.5
    out.append(Check("mapping-objective", ok, [] if ok else [f"recounted makespan {ev.makespan}, reported {obj}"]))
    if solution.bound is not None and obj is not None and solution.bound > float(obj) + 0.5:
        out.append(Check("mapping-bound", False, [f"bound {solution.bound} above the objective {obj}"]))
    return out


def check(instance, solution) -> list[str]:
    """Violations as text (empty when the mapping is valid)."""
    return [f"{c.name}: {d}" for c in checks(instance, solution) if not c.ok for d in (c.details or ["failed"])]
