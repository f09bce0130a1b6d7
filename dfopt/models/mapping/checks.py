"""The checker of a mapping, without a solver: everything recounted from the instance and the
solution's ``mapping.physical`` (virtual node -> ``tile(col,row)``) and ``mapping.routes``.

* ``mapping-assignment`` — every virtual node on one compute tile of the region; ``nodes``
  agree with ``physical`` (members, tiles, kinds, work, estimate, data memory) and the counts of
  tiles and nodes are the region's;
* ``mapping-legality`` — bundles isomorphic and independent, chains connected, the tile graph
  acyclic;
* ``mapping-ports`` — DMA channels per tile within 2 in / 2 out (recounted from the ports);
* ``mapping-memory`` — data memory per tile;
* ``mapping-routes`` — every host channel routed through a mem tile and a shim DMA within their
  channel and memory limits, each route with the block size of the channels it serves;
* ``mapping-objective`` — the estimated makespan equals the reported objective.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dfopt.models.mapping.data import mapping_data_of
from dfopt.models.mapping.decision import _pair, parse_tile, tile_text  # noqa: F401  (re-exported)
from dfopt.models.mapping.evaluate import evaluate, node_kind
from dfopt.models.mapping.route import route_faults
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.mapping import Options


def checks(instance: Instance, options: Options, solution: Solution) -> list[Check]:
    """The checks above, in the region of the instance and the options (never the solution's)."""
    sec = solution.sections.get("mapping") or {}
    d = mapping_data_of(instance, options)
    assign, bad = {}, []
    for v, t in solution.decision.physical.items():
        if v not in d.task:
            bad.append(f"mapping.physical names {v!r}, which is no virtual node")
        else:
            assign[v] = t
    ev = evaluate(d, assign)
    bad += ev.problems["assignment"]
    listed = {}
    nodes = sec.get("nodes", [])
    if not isinstance(nodes, list):
        bad.append(f"mapping.nodes is {nodes!r:.40}, not a list of nodes")
        nodes = []
    for node in nodes:
        if not isinstance(node, dict) or not _pair(node.get("tile")) or not isinstance(node.get("members"), list):
            bad.append(f"mapping.nodes entry {node!r:.60} is not an object with a tile [col, row] and members")
            continue
        t = tuple(node["tile"])
        listed[t] = node
        if ev.members.get(t) != node.get("members"):
            bad.append(f"node {node.get('name')}: members {node.get('members')} but the tile holds "
                       f"{ev.members.get(t)} (in member order)")
        elif node.get("kind") != node_kind(d, node["members"]):
            bad.append(f"node {node.get('name')}: kind {node.get('kind')!r}, "
                       f"recounted {node_kind(d, node['members'])!r}")
        else:
            recounted = {"work": sum(d.work[v] for v in node["members"]), "estimate": ev.estimate[t],
                         "memory_bytes": ev.memory[t]}
            bad += [f"node {node.get('name')}: {key} {node[key]}, recounted {want}"
                    for key, want in recounted.items() if key in node and node[key] != want]
    for t in ev.members:
        if t not in listed:
            bad.append(f"{tile_text(t)} holds {ev.members[t]} but no entry of mapping.nodes lists it")
    counts = {"tiles": len(d.tiles), "tiles_used": len(ev.members), "virtual_nodes": len(d.nodes)}
    bad += [f"{key}: reported {sec[key]}, recounted {want}" for key, want in counts.items()
            if key in sec and sec[key] != want]
    out = [Check("mapping-assignment", not bad, bad[:20])]
    for rule in ("legality", "ports", "memory"):
        out.append(Check(f"mapping-{rule}", not ev.problems[rule], ev.problems[rule][:20]))
    routes = route_faults(d, ev.host, [dict(r) for r in solution.decision.routes])
    routes += _block_size_faults(ev.host, solution.decision.routes)
    out.append(Check("mapping-routes", not routes, routes[:20]))
    obj = solution.objective
    ok = obj is not None and abs(float(obj) - ev.makespan) < 0.5
    if sec.get("makespan") is not None and sec["makespan"] != ev.makespan:
        ok = False
    out.append(Check("mapping-objective", ok, [] if ok else [f"recounted makespan {ev.makespan}, reported "
                                                             f"{obj} (section makespan {sec.get('makespan')})"]))
    return out


def _block_size_faults(host: list, routes) -> list[str]:
    """Each route's ``block_bytes`` (what the mem-tile memory is counted with) is the largest block
    of the channels it serves."""
    size: dict[tuple, int] = {}
    for tile, _cls, dirn, tensor, blocks, nbytes in host:
        key = (tuple(tile), dirn, tensor, blocks)
        size[key] = max(size.get(key, 0), nbytes)
    bad = []
    for i, r in enumerate(routes):
        blocks = tuple(tuple(tuple(ax) for ax in b) for b in r.get("blocks", []))
        want = [size[k] for k in ((tuple(t), r.get("dir"), r.get("tensor"), blocks) for t in r.get("tiles", []))
                if k in size]
        if want and r.get("block_bytes", 0) != max(want):
            bad.append(f"route {i} ({r.get('tensor')}): block_bytes {r.get('block_bytes', 0)}, its channels carry "
                       f"blocks of {max(want)} bytes")
    return bad


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    """Violations as text (empty when the mapping is valid); ``options`` default to the instance's."""
    if options is None:
        from dfopt.models.driver import make_options

        options = make_options(instance, problem="mapping")
    return [f"{c.name}: {d}" for c in checks(instance, options, solution) if not c.ok
            for d in (c.details or ["failed"])]
