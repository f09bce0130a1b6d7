"""Route the host channels of a mapping through mem tiles and shim DMAs.

Every compute-tile DMA channel of a host port (see :mod:`.evaluate`) is served by a mem tile of
the region. Input channels that carry the same block sequence of one tensor form one *broadcast
group* (one mem-tile MM2S channel to all their tiles, as an object FIFO with several consumers);
each output channel is its own group (one mem-tile S2MM). Per mem tile and tensor, the groups of
one direction are gathered by one link: inputs come in from the shim through one S2MM channel
and are distributed; outputs are joined and leave through one MM2S channel to the shim. Each such
collection takes one channel of a shim DMA in a region column that has one.

Limits: per mem tile ``mem_out`` MM2S (input groups + output collections) and ``mem_in`` S2MM
(output groups + input collections) and ``mem_bytes`` (two objects of the largest block per
group); per shim column ``shim_out`` MM2S (input collections) and ``shim_in`` S2MM (output
collections). A small CP-SAT model finds an assignment that keeps groups near their tiles'
columns; :func:`route_faults` recounts a routing without it. Its variables are named after
the groups (``{tensor}:{dir}{index}``), mem tiles and shim columns: ``a[group,mem col,row]``,
``coll[mem col,row,tensor,dir]``, ``shim[mem col,row,tensor,dir,column]``; it is solved through
:func:`dfopt.ilp.solve_cp_model`.
"""

from __future__ import annotations

from dfopt.ilp import new_cp_model, solve_cp_model
from dfopt.models.mapping.data import MEM_TILE_DEPTH, MappingData
from dfopt.results import Termination


def host_groups(host: list) -> list[dict]:
    """Broadcast groups of input channels and one group per output channel, in a stable order."""
    groups: list[dict] = []
    index: dict[tuple, int] = {}
    for tile, _cls, dirn, tensor, blocks, size in host:
        key = (tensor, blocks) if dirn == "in" else None
        if key is not None and key in index:
            g = groups[index[key]]
            g["tiles"].append(list(tile))
            g["block_bytes"] = max(g["block_bytes"], size)
            continue
        if key is not None:
            index[key] = len(groups)
        groups.append({"dir": dirn, "tensor": tensor, "tiles": [list(tile)], "block_bytes": size,
                       "blocks": [list(map(list, b)) for b in blocks]})
    return groups


def route(d: MappingData, host: list, time_limit: float = 10.0, seed: int = 0) -> tuple[list | None, str]:
    """Routes (the groups with ``mem`` and ``shim`` coordinates) or ``(None, reason)``."""
    groups = host_groups(host)
    if not groups:
        return [], ""
    lim = d.limits
    mems = d.mem_tiles
    if not d.shim_columns:
        return None, "the region has no column with a shim DMA, so no host data can reach it"
    m = new_cp_model("mapping-route")
    gname = [f"{gr['tensor']}:{gr['dir']}{g}" for g, gr in enumerate(groups)]
    mname = [f"{mem[0]},{mem[1]}" for mem in mems]
    a = {(g, j): m.new_bool_var(f"a[{gname[g]},{mname[j]}]") for g in range(len(groups)) for j in range(len(mems))}
    colls = {(j, g["tensor"], g["dir"]) for g in groups for j in range(len(mems))}
    coll = {k: m.new_bool_var(f"coll[{mname[k[0]]},{k[1]},{k[2]}]") for k in sorted(colls)}
    shim = {(k, c): m.new_bool_var(f"shim[{mname[k[0]]},{k[1]},{k[2]},{c}]") for k in coll for c in d.shim_columns}
    for g in range(len(groups)):
        m.add_exactly_one(a[g, j] for j in range(len(mems)))
    for (j, tensor, dirn), var in coll.items():
        members = [a[g, j] for g, gr in enumerate(groups) if gr["tensor"] == tensor and gr["dir"] == dirn]
        for x in members:
            m.add_implication(x, var)
        m.add_bool_or(members).only_enforce_if(var)
        m.add(sum(shim[(j, tensor, dirn), c] for c in d.shim_columns) == var)
    for j in range(len(mems)):
        ins = [a[g, j] for g, gr in enumerate(groups) if gr["dir"] == "in"]
        outs = [a[g, j] for g, gr in enumerate(groups) if gr["dir"] == "out"]
        m.add(sum(ins) + sum(v for (jj, _, dd), v in coll.items() if jj == j and dd == "out") <= lim["mem_out"])
        m.add(sum(outs) + sum(v for (jj, _, dd), v in coll.items() if jj == j and dd == "in") <= lim["mem_in"])
        m.add(sum(a[g, j] * MEM_TILE_DEPTH * gr["block_bytes"] for g, gr in enumerate(groups)) <= lim["mem_bytes"])
    for c in d.shim_columns:
        m.add(sum(v for ((_, _, dd), cc), v in shim.items() if cc == c and dd == "in") <= lim["shim_out"])
        m.add(sum(v for ((_, _, dd), cc), v in shim.items() if cc == c and dd == "out") <= lim["shim_in"])
    cost = []
    for g, gr in enumerate(groups):
        col = round(sum(t[0] for t in gr["tiles"]) / len(gr["tiles"]))
        cost += [abs(col - mems[j][0]) * a[g, j] for j in range(len(mems))]
    cost += [abs(mems[j][0] - c) * v for ((j, _, _), c), v in shim.items()]
    m.minimize(sum(cost))
    result, solver = solve_cp_model(m, time_limit=time_limit, seed=seed, workers=1, named_values=False,
                                    label="CP-SAT mapping routes")
    if not result.has_solution:
        n_in = sum(g["dir"] == "in" for g in groups)
        n_out = len(groups) - n_in
        why = ("proved impossible" if result.termination is Termination.INFEASIBLE
               else "not found within the limit" if result.termination is Termination.TIME_LIMIT
               else f"not found ({result.message or 'CP-SAT stopped without an answer'})")
        return None, (f"routing {why}: {n_in} input broadcast group(s) and {n_out} output channel(s) through "
                      f"{len(mems)} mem tile(s) ({lim['mem_out']} MM2S / {lim['mem_in']} S2MM each) and shim DMAs in "
                      f"column(s) {d.shim_columns} ({lim['shim_out']} MM2S / {lim['shim_in']} S2MM each)")
    routes = []
    for g, gr in enumerate(groups):
        j = next(j for j in range(len(mems)) if solver.value(a[g, j]))
        c = next(c for c in d.shim_columns if solver.value(shim[(j, gr["tensor"], gr["dir"]), c]))
        routes.append({**gr, "mem": list(mems[j]), "shim": [c, 0]})
    return routes, ""


def route_faults(d: MappingData, host: list, routes: list) -> list[str]:
    """Recount a routing: every host channel served once by a route of its tensor, direction and
    blocks; the mem-tile and shim channel counts and mem-tile memory within their limits."""
    faults = []
    lim = d.limits
    served: dict = {}
    for i, r in enumerate(routes):
        mem, shim = tuple(r.get("mem", ())), tuple(r.get("shim", ()))
        if mem not in d.mem_tiles:
            faults.append(f"route {i} ({r.get('tensor')}): mem tile {list(mem)} is not a mem tile of the region")
        if len(shim) != 2 or shim[0] not in d.shim_columns:
            faults.append(f"route {i} ({r.get('tensor')}): shim {list(shim)} is not a region column with a shim DMA")
        if r.get("dir") == "out" and len(r.get("tiles", [])) != 1:
            faults.append(f"route {i} ({r.get('tensor')}): an output route serves exactly one channel")
        for t in r.get("tiles", []):
            key = (tuple(t), r.get("dir"), r.get("tensor"))
            served.setdefault(key, []).append(i)
    need: dict[tuple, list] = {}
    for tile, _cls, dirn, tensor, blocks, _size in host:
        need.setdefault((tile, dirn, tensor), []).append(blocks)
    for key, seqs in need.items():
        got = served.get(key, [])
        if len(got) != len(seqs):
            faults.append(f"tile({key[0][0]},{key[0][1]}): {len(seqs)} {key[1]}put channel(s) of {key[2]} but "
                          f"{len(got)} route(s) serve it")
            continue
        want = sorted(seqs)
        have = sorted(tuple(tuple(tuple(ax) for ax in b) for b in routes[i].get("blocks", [])) for i in got)
        if want != have:
            faults.append(f"tile({key[0][0]},{key[0][1]}): the routes of {key[2]} carry other blocks than its channels")
    for key in served:
        if key not in need:
            faults.append(f"a route serves tile({key[0][0]},{key[0][1]}) {key[1]} {key[2]}, which has no such channel")
    collections: dict = {}
    for r in routes:
        k = (tuple(r.get("mem", ())), r.get("tensor"), r.get("dir"))
        collections.setdefault(k, set()).add(tuple(r.get("shim", ())))
    for k, shims in collections.items():
        if len(shims) > 1:
            faults.append(f"mem tile {list(k[0])}: {k[2]}put {k[1]} uses {len(shims)} shim channels; one collection "
                          "takes one")
    for mem in d.mem_tiles:
        rs = [r for r in routes if tuple(r.get("mem", ())) == mem]
        mm2s = sum(r["dir"] == "in" for r in rs) + len({r["tensor"] for r in rs if r["dir"] == "out"})
        s2mm = sum(r["dir"] == "out" for r in rs) + len({r["tensor"] for r in rs if r["dir"] == "in"})
        used = sum(MEM_TILE_DEPTH * r.get("block_bytes", 0) for r in rs)
        for what, n, cap in (("MM2S", mm2s, lim["mem_out"]), ("S2MM", s2mm, lim["mem_in"]),
                             ("bytes", used, lim["mem_bytes"])):
            if n > cap:
                faults.append(f"mem tile ({mem[0]},{mem[1]}) uses {n} {what}; it has {cap}")
    shims = [(k, next(iter(s))) for k, s in collections.items()]
    for c in d.shim_columns:
        mm2s = sum(1 for k, s in shims if s[0] == c and k[2] == "in")
        s2mm = sum(1 for k, s in shims if s[0] == c and k[2] == "out")
        if mm2s > lim["shim_out"] or s2mm > lim["shim_in"]:
            faults.append(f"shim column {c} uses {mm2s} MM2S / {s2mm} S2MM; "
                          f"it has {lim['shim_out']} / {lim['shim_in']}")
    return faults
