"""The flows of a design before assembly: :class:`_Fifo` and :class:`_Flow` (a FIFO, or the FIFOs of
one link through a mem tile), built for the host routes and for the streams between tiles (merged
per channel class, linked through the nearest mem tile with free channels), then sized: objects per
flow and per core iteration, deadlock-free depth bounds, element types."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx

from dfopt.codegen.aie.mapping.recount import _Mapping, _tile_text
from dfopt.errors import CodegenError
from dfopt.models.mapping.evaluate import class_text

#: Depth of a stream FIFO whose stream sets none, and of every host FIFO (ping-pong).
DEFAULT_DEPTH = 2
WORD_BYTES = 4


@dataclass
class _Fifo:
    """One object FIFO before sizing: it moves ``bytes`` over the run in ``units`` tokens or blocks
    (``blocks`` for a host route), asking for ``depth``; ``elem`` (bytes per object) and ``counts``
    (objects per iteration of the core on each compute tile at its ends) are set by :func:`_size`."""

    name: str
    producer: tuple
    consumers: tuple
    bytes: int
    units: int = 0
    depth: int = DEFAULT_DEPTH
    blocks: tuple = ()
    elem: int = 0
    counts: dict = field(default_factory=dict)


@dataclass
class _Flow:
    """A FIFO (``hub`` None), or the FIFOs of one link through the mem tile ``via``: the ``parts``
    and the ``hub``, the FIFO on the other side (it feeds a distribute or drains a join)."""

    parts: list
    hub: _Fifo | None = None
    via: tuple | None = None
    tensor: str | None = None
    dtype: str = "i8"
    n: int = 0
    offsets: tuple = ()         # bytes: where each part sits in the hub object

    @property
    def fifos(self) -> list:
        """The FIFOs in data order: a distribute's hub first, a join's last."""
        if self.hub is None:
            return list(self.parts)
        return self.parts + [self.hub] if self.join else [self.hub] + self.parts

    @property
    def join(self) -> bool:
        return self.hub is not None and self.hub.producer == self.via


def _blocks(route: dict) -> tuple:
    return tuple(tuple(tuple(ax) for ax in b) for b in route["blocks"])


def _route_ends(m: _Mapping, routes: list) -> list[list]:
    """Per route, the (tile, class) host channel each of its tiles serves; every channel served once."""
    pool: dict = {}
    for t, cls, dirn, tensor, blocks, _ in m.ev.host:
        pool.setdefault((t, dirn, tensor, blocks), []).append(cls)
    out = []
    for k, r in enumerate(routes):
        tiles = [tuple(t) for t in r["tiles"]]
        if len(set(tiles)) != len(tiles):
            raise CodegenError(f"route {k} ({r['dir']} {r['tensor']}) lists a tile twice; one FIFO reaches a tile once")
        ends = []
        for t in tiles:
            left = pool.get((t, r["dir"], r["tensor"], _blocks(r)))
            if not left:
                raise CodegenError(f"route {k} ({r['dir']} {r['tensor']}) serves {_tile_text(t)}, which has no such "
                                   "host channel in the mapping")
            ends.append((t, left.pop(0)))
        out.append(ends)
    missing = [f"{_tile_text(key[0])} {class_text(c)}" for key, cls in pool.items() for c in cls]
    if missing:
        raise CodegenError(f"host channel(s) without a route: {', '.join(missing)}")
    return out


def _host_flows(m: _Mapping, routes: list) -> list[_Flow]:
    """One flow per (mem tile, tensor, direction): the route FIFOs linked to one shim FIFO."""
    ends = _route_ends(m, routes)
    groups: dict = {}
    for k, r in enumerate(routes):
        groups.setdefault((tuple(r["mem"]), r["tensor"], r["dir"]), []).append(k)
    flows = []
    for (mem, tensor, dirn), ks in groups.items():
        shims = {tuple(routes[k]["shim"]) for k in ks}
        if len(shims) > 1:
            raise CodegenError(f"mem tile {list(mem)}: the {dirn}put routes of {tensor} use shims {sorted(shims)}; "
                               "one collection takes one shim channel")
        shim, block_bytes = shims.pop(), m.layouts[tensor][1]
        parts = []
        for k in ks:
            blocks = _blocks(routes[k]) or ((),)
            tiles = tuple(t for t, _ in ends[k])
            if dirn == "in":
                name, producer, consumers = f"{tensor}_mem{mem[0]}_to_{_at(tiles[0])}", mem, tiles
            else:
                name, producer, consumers = f"{tensor}_{_at(tiles[0])}_to_mem{mem[0]}", tiles[0], (mem,)
            f = _Fifo(m.unique(name), producer, consumers, len(blocks) * block_bytes, len(blocks), blocks=blocks)
            parts.append(f)
            for t, cls in ends[k]:
                _use(m, t, cls, f.name)
        total = sum(p.bytes for p in parts)
        if dirn == "in":
            hub = _Fifo(m.unique(f"{tensor}_shim{shim[0]}_to_mem{mem[0]}"), shim, (mem,), total)
        else:
            hub = _Fifo(m.unique(f"{tensor}_mem{mem[0]}_to_shim{shim[0]}"), mem, (shim,), total)
        flows.append(_Flow(parts, hub, mem, tensor))
    return flows


def _use(m: _Mapping, tile: tuple, cls: tuple, fifo: str) -> None:
    """Record that the ports of class ``cls`` on ``tile`` use ``fifo``."""
    for v in m.ev.members[tile]:
        for i, _ in enumerate(m.d.ports[v]):
            if m.cls(v, i) == cls:
                m.fifo_of[(v, i)] = fifo


def _mem_use(flows: list) -> dict:
    """S2MM / MM2S channels the flows' links take per mem tile."""
    use: dict = {}
    for f in flows:
        u = use.setdefault(f.via, {"in": 0, "out": 0})
        u["in" if f.join else "out"] += len(f.parts)
        u["out" if f.join else "in"] += 1
    return use


def _inter_tile_streams(m: _Mapping):
    """``(stream, (producer tile, class), (consumer tile, class), mode)`` per stream between tiles."""
    for s in m.streams.values():
        a, b = m.where[s.src], m.where[s.dst]
        if a == b:
            continue
        i, j = m.port(s.src, s.name, "out"), m.port(s.dst, s.name, "in")
        yield s, (a, m.cls(s.src, i)), (b, m.cls(s.dst, j)), m.ev.mode[(s.src, i)]


def _stream_groups(m: _Mapping) -> list[tuple]:
    """``(out ends, in ends, edges)`` per FIFO group, an edge being ``(stream, out end, in end)``:
    shared streams per pair of class ends; dma streams per connected set of class ends (a class end
    is one DMA channel)."""
    shared: dict = {}
    dma, edges = nx.Graph(), []
    for s, out, inn, mode in _inter_tile_streams(m):
        if mode == "shared":
            shared.setdefault((out, inn), []).append((s, out, inn))
        else:
            dma.add_edge(("out", out), ("in", inn))
            edges.append((s, out, inn))
    groups = [([o], [i], es) for (o, i), es in shared.items()]
    for comp in nx.connected_components(dma):
        outs = sorted(e[1] for e in comp if e[0] == "out")
        ins = sorted(e[1] for e in comp if e[0] == "in")
        groups.append((outs, ins, [e for e in edges if ("out", e[1]) in comp]))
    return groups


def _stream_flows(m: _Mapping, mem_use: dict) -> list[_Flow]:
    """The FIFOs of the inter-tile streams (the merging rule of the package docstring)."""
    flows = []
    for outs, ins, edges in _stream_groups(m):
        if len(outs) > 1 and len(ins) > 1:
            # no single FIFO per class end (a link is a distribute or a join, not both): one FIFO per
            # pair of class ends, each one more DMA channel at its ends than the mapping counted
            pairs: dict = {}
            for e in edges:
                pairs.setdefault((e[1], e[2]), []).append(e[0])
            ends = ", ".join(f"{_tile_text(t)} {class_text(c)}" for t, c in outs + ins)
            m.notes.append(f"streams {', '.join(e[0].name for e in edges)} fan out and in at once between the class "
                           f"ends {ends}: one DMA FIFO per pair of ends ({len(pairs)}), more channels than the "
                           "mapping counts at those ends")
            flows += [_Flow([_stream_fifo(m, ss, o[0], i[0])]) for (o, i), ss in pairs.items()]
        elif len(outs) == 1 and len(ins) == 1:
            flows.append(_Flow([_stream_fifo(m, [e[0] for e in edges], outs[0][0], ins[0][0])]))
        else:
            flows.append(_stream_link(m, outs, ins, edges, mem_use))
    return flows


def _at(t: tuple) -> str:
    return f"{t[0]}_{t[1]}"


def _stream_fifo(m: _Mapping, streams: list, producer: tuple, consumer: tuple, name: str = "") -> _Fifo:
    """A FIFO carrying ``streams`` from ``producer`` to ``consumer`` (a compute tile or a link's mem
    tile), recorded as the FIFO of the stream ports on the compute tiles it touches."""
    s0 = streams[0]
    name = name or m.unique(f"{m.d.task[s0.src]}_{_at(producer)}_to_{m.d.task[s0.dst]}_{_at(consumer)}")
    for s in streams:
        if m.where[s.src] == producer:
            m.fifo_of[(s.src, m.port(s.src, s.name, "out"))] = name
        if m.where[s.dst] == consumer:
            m.fifo_of[(s.dst, m.port(s.dst, s.name, "in"))] = name
    unit = math.gcd(*(-(-s.width // 8) for s in streams))
    total = sum(s.tokens * -(-s.width // 8) for s in streams)
    return _Fifo(name, producer, (consumer,), total, total // unit, max(s.depth or DEFAULT_DEPTH for s in streams))


def _stream_link(m: _Mapping, outs: list, ins: list, edges: list, mem_use: dict) -> _Flow:
    """A distribute (one out end: one part per in end) or a join (one in end: one part per out end)
    of dma streams through a mem tile."""
    join = len(outs) > 1
    fan = outs if join else ins
    streams = [e[0] for e in edges]
    via = _pick_mem(m, mem_use, [t for t, _ in outs + ins], len(fan) if join else 1, 1 if join else len(fan), streams)
    mem = f"mem{via[0]}"
    parts = []
    for end in fan:
        ss = [s for s, o, i in edges if (o if join else i) == end]
        tile, task = end[0], end[1][0]
        if join:
            parts.append(_stream_fifo(m, ss, tile, via, m.unique(f"{task}_{_at(tile)}_to_{mem}")))
        else:
            parts.append(_stream_fifo(m, ss, via, tile, m.unique(f"{mem}_to_{task}_{_at(tile)}")))
    tile, task = (ins if join else outs)[0][0], (ins if join else outs)[0][1][0]
    if join:
        hub = _stream_fifo(m, streams, via, tile, m.unique(f"{mem}_to_{task}_{_at(tile)}"))
    else:
        hub = _stream_fifo(m, streams, tile, via, m.unique(f"{task}_{_at(tile)}_to_{mem}"))
    return _Flow(parts, hub, via)


def _pick_mem(m: _Mapping, use: dict, tiles: list, need_in: int, need_out: int, streams: list) -> tuple:
    """The region's mem tile nearest the tiles' mean column with the link's channels free."""
    lim = m.d.limits
    col = sum(t[0] for t in tiles) / len(tiles)
    for mem in sorted(m.d.mem_tiles, key=lambda t: (abs(t[0] - col), t[0])):
        u = use.setdefault(mem, {"in": 0, "out": 0})
        if u["in"] + need_in <= lim["mem_in"] and u["out"] + need_out <= lim["mem_out"]:
            u["in"] += need_in
            u["out"] += need_out
            return mem
    raise CodegenError(f"streams {', '.join(s.name for s in streams)} need a link through a mem tile with {need_in} "
                       f"S2MM and {need_out} MM2S channels free; no mem tile of the region has them")


# -- sizes, types, depths ----------------------------------------------------------------------------

def _size(flow: _Flow, iterations: dict) -> None:
    """Objects per flow, bytes per object and objects per core iteration (package docstring)."""
    cores = {t for f in flow.fifos for t in (f.producer, *f.consumers) if t in iterations}
    lcm = math.lcm(*(iterations[t] for t in cores))
    gcd = math.gcd(*(p.units for p in flow.parts))
    flow.n = gcd if gcd % lcm == 0 else lcm
    for p in flow.parts:
        if p.bytes % flow.n:
            raise CodegenError(f"fifo {p.name}: {p.bytes} bytes cannot be cut into {flow.n} equal objects (the "
                               f"iterations {sorted(iterations[t] for t in cores)} of its cores)")
        p.elem = p.bytes // flow.n
    flow.offsets = tuple(sum(p.elem for p in flow.parts[:k]) for k in range(len(flow.parts)))
    if flow.hub is not None:
        flow.hub.elem = sum(p.elem for p in flow.parts)
    for f in flow.fifos:
        f.counts = {t: flow.n // iterations[t] for t in (f.producer, *f.consumers) if t in iterations}


def _depth_bound(f: _Fifo) -> int:
    """The least depth that cannot deadlock: ``p + c - gcd(p, c)`` per consumer (1 for a DMA end)."""
    p = f.counts.get(f.producer, 1)
    return max(p + c - math.gcd(p, c) for c in (f.counts.get(t, 1) for t in f.consumers))


def _set_dtypes(host: list, streams: list, layouts: dict) -> None:
    """``i32`` when every object is whole 32-bit words (host: every object and block of the tensor),
    else ``i8``."""
    def words(flows, block_bytes=0):
        return block_bytes % WORD_BYTES == 0 and all(f.elem % WORD_BYTES == 0 for flow in flows for f in flow.fifos)

    for flow in streams:
        flow.dtype = "i32" if words([flow]) else "i8"
    for tensor in {f.tensor for f in host}:
        flows = [f for f in host if f.tensor == tensor]
        for flow in flows:
            flow.dtype = "i32" if words(flows, layouts[tensor][1]) else "i8"


def _width(flow: _Flow) -> int:
    return WORD_BYTES if flow.dtype == "i32" else 1
