"""A physical MLIR-AIE design from a solved ``problem: mapping`` (DESIGN 5.5 -> 5.7).

:func:`design_from_mapping` turns the ``mapping`` section of a solution into an
:class:`~dfopt.codegen.aie.design.AieDesign` that :func:`~dfopt.codegen.aie.checks.validate` accepts, or
raises :class:`~dfopt.errors.CodegenError` naming the tile and the streams it cannot express. The rules:

**Cores.** One per compute tile holding a physical node. One loop iteration runs one member of every
bundle on the tile, so ``iterations`` is the bundle factor (members per task; a tile whose bundles
differ in size is not one loop: CodegenError). A tile whose FIFO objects do not fit its data memory
even single-buffered runs each member in *steps* instead (the most tokens or blocks one member moves
on one port): ``iterations`` = bundle factor x steps, and each step moves a share of the member's
data. The kernel is named after the tasks in member order (``gemm``, ``gemm0_softmax``), object file
``<kernel>.o``; one symbol has one signature, so tiles whose kernels see other FIFO types get
numbered variants (``gemm_v1``, ``gemm_v2``). The accesses are the FIFO ends the members' ports use,
in member and port order, each once; the loop body is the same for every iteration, so when the
members of one class reach different FIFOs (peers on several tiles) each iteration moves a share of
each of them (the counts balance over the run; which member's data sits where is the kernel's
business).

**Streams.** A stream inside a tile is a local buffer (no FIFO). Between tiles every port has the
mapping's channel class (task, role) and mode (``shared``: neighbours through a data memory, or
``dma``). The FIFO-merging rule:

* shared streams: one FIFO per (producer tile and class, consumer tile and class) pair, without
  DMA, as the mapping counts them (none);
* dma streams: the ports of one class on one tile use ONE FIFO at that tile, the one channel the
  mapping counted: *direct* when they all go to (come from) one class on one peer tile; a
  *distribute* through a mem tile when one out-class feeds in-classes on several tiles (one FIFO to
  the mem tile, a link splits each object into one part per peer class); a *join* through a mem
  tile for the reverse. A class group that fans out and in at once cannot be one FIFO at both ends
  (CodegenError). A link goes through the region's mem tile nearest the tiles' columns that has
  its channels free.

**Host traffic.** Per route (a broadcast group of the mapping) one FIFO from its mem tile to its
tiles (several consumers: a broadcast) or from its tile to the mem tile; per (mem tile, tensor,
direction) collection one FIFO from / to its shim tile, linked to the route FIFOs by a distribute
(inputs) or a join (outputs), the channels :mod:`dfopt.models.mapping.route` counts. A shim
transfer moves whole objects of its FIFO, so a collection whose objects gather host blocks that no
4-D access pattern reads in order (e.g. blocks 0, 2, 4 and 8) moves the host range spanning them
instead (a *hull*: the parts sit at their host offsets in the hub object), and when that fails too
(parts at other relative offsets per object, or overlapping) it is split into collections that each
have a pattern, one more shim and mem-tile channel each (checked against the limits).

**Objects.** A *flow* is one FIFO, or the FIFOs of one link (which move the same number ``N`` of
objects). ``N`` is the gcd of the tokens (blocks, for host routes) its FIFOs carry when the
iterations of every core at its ends divide it: an object is then one token (block), or several
when the FIFOs carry different amounts; otherwise ``N`` is the lcm of those iterations and an
object is a slice of the traffic. A core acquires ``N / iterations`` objects per iteration; a link's
hub object holds its parts side by side (the offsets). Objects are 1-D, ``i32`` when every object
of the flow (of every flow of the tensor, for host data) is a whole number of 32-bit words, else ``i8``.

**Depth.** The streams' depth (2 when unset; 2 for host FIFOs), at least ``p + c - gcd(p, c)`` for
the objects ``p`` and ``c`` the producer and each consumer take at a time (1 for a DMA end): a
shallower FIFO can deadlock, each side waiting for the other's chunk. When a tile's FIFO ends and
stack exceed its data memory (counted as :func:`~dfopt.codegen.aie.design.memory_bytes` does), the
FIFOs at that tile drop to that lower bound (single buffering), largest objects first.

**Runtime.** One host buffer per tensor in *blocked layout*: shape = the block counts per axis x the
elements of one block, i.e. the host stores the tensor's blocks one after another in row-major block
order, each block contiguous. Per shim FIFO as few ``dma_memcpy_nd`` as 4-D access patterns allow
(whole objects each, buffer descriptors numbered per shim tile), the inputs first, then the
outputs, then one wait per output FIFO.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> inst = load("instances/mapping/ffn-2x4.json")
>>> design = design_from_mapping(inst, solve_instance(inst))
>>> len(design.cores), sorted({c.kernel for c in design.cores}), [b.name for b in design.runtime.buffers]
(8, ['ffn1', 'ffn2'], ['W1', 'X', 'W2', 'Y'])
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace

import networkx as nx

from dfopt.codegen.aie.checks import validate
from dfopt.codegen.aie.design import (TILE_KINDS, AieDesign, Core, DmaTransfer, DmaWait, FifoAccess, HostBuffer,
                                      Link, ObjectFifo, Runtime, Tile, memory_bytes, memref_type, tile_kind_at)
from dfopt.errors import CodegenError
from dfopt.models.mapping.data import MappingData, mapping_data
from dfopt.models.mapping.evaluate import Evaluation, class_text, evaluate

#: Depth of a stream FIFO whose stream sets none, and of every host FIFO (ping-pong).
DEFAULT_DEPTH = 2
WORD_BYTES = 4


def design_from_mapping(instance, solution) -> AieDesign:
    """The validated AIE design of a solved mapping of ``instance`` (see the module docstring);
    CodegenError when no design expresses it."""
    m = _load(instance, solution)
    routes = solution.sections["mapping"]["routes"]
    design = _build(m, routes)
    over = [t for t in _over_memory(design, m.platform) if t in m.iterations]
    if over:
        steps = {t: m.iterations[t] * _steps(m, t) for t in over}
        m = replace(m, iterations={**m.iterations, **steps}, fifo_of={}, names=set(), notes=[])
        design = _build(m, routes)
    try:
        return validate(design, m.platform)
    except CodegenError as err:
        if not m.notes:
            raise
        raise CodegenError(f"{err}\n  note: " + "\n  note: ".join(m.notes)) from err


def _build(m: _Mapping, routes: list) -> AieDesign:
    """The design for the loops ``m.iterations``, FIFO depths lowered where data memory is short."""
    host = []
    for flow in _host_flows(m, routes):
        _size(flow, m.iterations)
        host += _plan_host(m, flow)
    host_flows = [flow for flow, _ in host]
    streams = _stream_flows(m, _mem_use(host_flows))
    for flow in streams:
        _size(flow, m.iterations)
    _set_dtypes(host_flows, streams, m.layouts)
    flows = host_flows + streams
    design = AieDesign(m.d.platform, _tiles(m, flows), _fifos(flows), _links(flows), _cores(m, flows),
                       _runtime(m, host))
    return _fit_memory(design, {f.name: _depth_bound(f) for flow in flows for f in flow.fifos}, m.platform)


# -- the mapping -----------------------------------------------------------------------------------

@dataclass
class _Mapping:
    """The solved mapping recounted: data, evaluation, where each node is, loop iterations per tile,
    host tensor layouts, streams, platform; and, filled by the flow builders, the FIFO each (node,
    port index) uses, the symbols taken and notes for an error message."""

    d: MappingData
    ev: Evaluation
    where: dict
    iterations: dict
    layouts: dict
    streams: dict
    platform: object
    fifo_of: dict = field(default_factory=dict)
    names: set = field(default_factory=set)
    notes: list = field(default_factory=list)   # what a CodegenError should also say

    def port(self, node: str, stream: str, dirn: str) -> int:
        return next(i for i, p in enumerate(self.d.ports[node])
                    if p.kind == "stream" and p.name == stream and p.dir == dirn)

    def cls(self, node: str, i: int) -> tuple:
        return (self.d.task[node], self.d.ports[node][i].role)

    def unique(self, base: str) -> str:
        """A fresh symbol from ``base`` (non-word characters become ``_``; ``_2``, ``_3`` on repeats)."""
        base = re.sub(r"\W", "_", base)
        base = base if re.match(r"[A-Za-z_]", base) else f"s_{base}"
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name


def _tile_text(t: tuple) -> str:
    return f"tile({t[0]},{t[1]})"


def _load(instance, solution) -> _Mapping:
    section = solution.sections.get("mapping") if solution.problem == "mapping" else None
    if not section or not section.get("nodes"):
        raise CodegenError(f"design_from_mapping needs a solved problem: mapping solution; got a {solution.problem} "
                           f"solution with status {solution.status!r} and no mapping section")
    d = mapping_data(instance, section["region"])
    assign = {v: tuple(n["tile"]) for n in section["nodes"] for v in n["members"]}
    ev = evaluate(d, assign)
    if ev.faults:
        raise CodegenError("the mapping breaks its own rules, so no design expresses it: " + "; ".join(ev.faults[:5]))
    return _Mapping(d, ev, assign, _iterations(d, ev.members), _layouts(d), dict(instance.graph.streams),
                    instance.platform)


def _iterations(d: MappingData, members: dict) -> dict:
    """Loop iterations per tile: the bundle factor, the same for every task on the tile."""
    out = {}
    for t, vs in members.items():
        per_task = Counter(d.task[v] for v in vs)
        if len(set(per_task.values())) > 1:
            sizes = ", ".join(f"{n} x {task}" for task, n in per_task.items())
            raise CodegenError(f"{_tile_text(t)} holds bundles of different sizes ({sizes}): its core runs one member "
                               "of every bundle per loop iteration, so every task on the tile needs as many members")
        out[t] = next(iter(per_task.values()))
    return out


def _layouts(d: MappingData) -> dict:
    """Per host tensor: (block counts per axis, bytes per block), the same for every port."""
    out = {}
    for v in d.nodes:
        for p in d.ports[v]:
            if p.kind != "host":
                continue
            blocks = p.blocks or ((),)
            if p.bytes % len(blocks):
                raise CodegenError(f"tensor {p.name}: node {v} moves {p.bytes} bytes in {len(blocks)} blocks of "
                                   "unequal size")
            for b in blocks:
                layout = (tuple(ax[0] for ax in b), p.bytes // len(blocks))
                if out.setdefault(p.name, layout) != layout:
                    raise CodegenError(f"tensor {p.name}: node {v} moves blocks of {layout[1]} bytes on a {layout[0]} "
                                       f"grid, another port {out[p.name][1]} bytes on a {out[p.name][0]} grid; one "
                                       "host buffer needs one block grid")
    return out


# -- flows -----------------------------------------------------------------------------------------

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
    """The FIFOs of the inter-tile streams (the merging rule of the module docstring)."""
    flows = []
    for outs, ins, edges in _stream_groups(m):
        if len(outs) > 1 and len(ins) > 1:
            ends = ", ".join(f"{_tile_text(t)} {class_text(c)}" for t, c in outs + ins)
            raise CodegenError(f"streams {', '.join(e[0].name for e in edges)} fan out and in at once between the "
                               f"class ends {ends}: no single FIFO per class end (a link is a distribute or a join, "
                               "not both)")
        if len(outs) == 1 and len(ins) == 1:
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
    """Objects per flow, bytes per object and objects per core iteration (module docstring)."""
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


def _over_memory(design: AieDesign, platform) -> list:
    """Tiles whose FIFO objects and stack exceed their data memory."""
    kinds = {t.coord: t.kind for t in design.tiles}
    used = memory_bytes(design)
    return [t for t in sorted(used) if used[t] > platform.npu[f"{kinds[t]}_tile"]["memory_bytes"]]


def _fit_memory(design: AieDesign, bounds: dict, platform) -> AieDesign:
    """Lower FIFO depths to their bound at tiles over their data memory, largest objects first."""
    while True:
        movable = next((fs for t in _over_memory(design, platform)
                        if (fs := [f for f in design.fifos if t in (f.producer, *f.consumers)
                                   and f.depth > bounds[f.name]])), None)
        if not movable:
            return design
        big = max(movable, key=lambda f: (f.element_bytes, f.name))
        design = replace(design, fifos=tuple(replace(f, depth=bounds[f.name]) if f is big else f
                                             for f in design.fifos))


def _steps(m: _Mapping, tile: tuple) -> int:
    """Steps per member for a tile short of memory: the most tokens (blocks) a member moves on one port."""
    units = [m.streams[p.name].tokens if p.kind == "stream" else max(1, len(p.blocks))
             for v in m.ev.members[tile] for i, p in enumerate(m.d.ports[v]) if m.ev.mode[(v, i)] != "internal"]
    return max(units, default=1)


# -- the design ------------------------------------------------------------------------------------

def _tiles(m: _Mapping, flows: list) -> list[Tile]:
    coords = set(m.ev.members)
    coords |= {t for flow in flows for f in flow.fifos for t in (f.producer, *f.consumers)}
    tiles = [Tile(c, r, tile_kind_at(m.platform, c, r)) for c, r in coords]
    return sorted(tiles, key=lambda t: (TILE_KINDS.index(t.kind), t.col, t.row))


def _width(flow: _Flow) -> int:
    return WORD_BYTES if flow.dtype == "i32" else 1


def _shape(flow: _Flow, f: _Fifo) -> tuple:
    return (f.elem // _width(flow),)


def _fifos(flows: list) -> list[ObjectFifo]:
    return [ObjectFifo(f.name, f.producer, f.consumers, flow.dtype, _shape(flow, f), max(f.depth, _depth_bound(f)))
            for flow in flows for f in flow.fifos]


def _links(flows: list) -> list[Link]:
    """Distribute (hub -> parts, ``dst_offsets``) or join (parts -> hub, ``src_offsets``), offsets
    in elements (none for a 1-to-1 link)."""
    out = []
    for flow in flows:
        if flow.hub is None:
            continue
        offsets = tuple(o // _width(flow) for o in flow.offsets) if len(flow.parts) > 1 else ()
        names = tuple(p.name for p in flow.parts)
        if flow.join:
            out.append(Link(names, (flow.hub.name,), flow.via, src_offsets=offsets))
        else:
            out.append(Link((flow.hub.name,), names, flow.via, dst_offsets=offsets))
    return out


def _cores(m: _Mapping, flows: list) -> list[Core]:
    """One core per tile: accesses in member and port order; kernels named after the tasks, with a
    numbered variant per further signature."""
    fifos = {f.name: (flow, f) for flow in flows for f in flow.fifos}
    variants: dict = {}
    cores = []
    for t, vs in m.ev.members.items():
        seen = {}
        for v in vs:
            for i, p in enumerate(m.d.ports[v]):
                if (v, i) in m.fifo_of:
                    seen.setdefault((m.fifo_of[(v, i)], "consume" if p.dir == "in" else "produce"), None)
        accesses = tuple(FifoAccess(name, port, fifos[name][1].counts[t]) for name, port in seen)
        signature = tuple((memref_type(fifos[a.fifo][0].dtype, _shape(*fifos[a.fifo])), a.count) for a in accesses)
        base = "_".join(dict.fromkeys(m.d.task[v] for v in vs))
        kinds = variants.setdefault(base, {})
        if signature not in kinds:
            kinds[signature] = m.unique(base if not kinds else f"{base}_v{len(kinds)}")
        kernel = kinds[signature]
        cores.append(Core(t, kernel, f"{kernel}.o", accesses, m.iterations[t]))
    return cores


# -- the runtime sequence --------------------------------------------------------------------------

def _plan_host(m: _Mapping, flow: _Flow) -> list[tuple]:
    """``(flow, transfers)`` per shim FIFO of a host collection: the collection itself when
    :func:`_plan` finds transfers for it, else its parts split greedily (in host order) into
    collections that each have them, one more shim FIFO each."""
    layout = m.layouts[flow.tensor]
    plan = _plan(flow, layout)
    if plan is not None:
        return [(flow, plan)]
    groups = [[flow.parts[0]]]
    for part in flow.parts[1:]:
        if _plan(_sub_flow(m, flow, groups[-1] + [part], flow.hub.name), layout) is not None:
            groups[-1].append(part)
        else:
            groups.append([part])
    m.notes.append(f"the {len(flow.parts)} routes of {flow.tensor} through mem tile {flow.via} were split into "
                   f"{len(groups)} shim FIFOs: their objects gather host blocks that no 4-D shim DMA pattern reads")
    out = []
    for k, parts in enumerate(groups):
        sub = _sub_flow(m, flow, parts, m.unique(flow.hub.name) if k else flow.hub.name)
        plan = _plan(sub, layout)
        if plan is None:
            raise CodegenError(f"fifo {parts[0].name} ({flow.tensor}): its objects gather host ranges that no 4-D "
                               "shim DMA pattern reads in order")
        out.append((sub, plan))
    return out


def _sub_flow(m: _Mapping, flow: _Flow, parts: list, name: str) -> _Flow:
    """The collection of ``flow`` with only ``parts``, through a hub FIFO called ``name``, sized."""
    hub = replace(flow.hub, name=name, bytes=sum(p.bytes for p in parts))
    sub = _Flow(list(parts), hub, flow.via, flow.tensor)
    _size(sub, m.iterations)
    return sub


def _plan(flow: _Flow, layout: tuple) -> list[tuple] | None:
    """Shim transfers ``(offsets, sizes, strides)`` in bytes for a host flow, or None. The parts go
    in the order of their host offsets. Packed: the hub object is the parts side by side; when an
    object's host ranges fit no 4-D pattern (e.g. blocks 0, 2, 4 and 8 of a grid), the hub object is
    instead the host range spanning them (a hull: the parts sit at their host offsets in it, the
    bytes between them travel too), if the parts keep their relative offsets and do not overlap."""
    objects = _object_segments(flow, layout)
    order = sorted(range(len(flow.parts)), key=lambda r: objects[0][r][0][0])
    flow.parts = [flow.parts[r] for r in order]
    objects = [[obj[r] for r in order] for obj in objects]
    packed = _transfers([_merge([s for part in obj for s in part]) for obj in objects])
    if packed is not None:
        flow.offsets = tuple(sum(p.elem for p in flow.parts[:k]) for k in range(len(flow.parts)))
        return packed
    if any(len(part) != 1 for obj in objects for part in obj):
        return None
    spans = [[part[0] for part in obj] for obj in objects]
    bases = [min(o for o, _ in span) for span in spans]
    rel = [o - bases[0] for o, _ in spans[0]]
    ends = sorted((r, r + n) for r, (_, n) in zip(rel, spans[0]))
    if any([o - b for o, _ in span] != rel for span, b in zip(spans, bases)) or \
            any(a[1] > b[0] for a, b in zip(ends, ends[1:])):
        return None
    flow.offsets, flow.hub.elem = tuple(rel), ends[-1][1]
    return _transfers([[(b, ends[-1][1])] for b in bases])


def _object_segments(flow: _Flow, layout: tuple) -> list[list]:
    """Per object of the hub FIFO and per part, the host byte ranges ``(offset, length)`` of the
    part's object, a part's traffic being its blocks one after another."""
    counts, block_bytes = layout
    objects = []
    for j in range(flow.n):
        obj = []
        for p in flow.parts:
            lo, hi = j * p.elem, (j + 1) * p.elem
            segs = []
            for k in range(lo // block_bytes, -(-hi // block_bytes)):
                start = _flat(p.blocks[k], counts) * block_bytes
                a, b = max(lo, k * block_bytes) - k * block_bytes, min(hi, (k + 1) * block_bytes) - k * block_bytes
                segs.append((start + a, b - a))
            obj.append(_merge(segs))
        objects.append(obj)
    return objects


def _flat(block: tuple, counts: tuple) -> int:
    """Row-major index of a block (``[count, index]`` per axis) in the block grid."""
    index = 0
    for (_, i), n in zip(block, counts):
        index = index * n + i
    return index


def _merge(segs: list) -> list:
    """Adjacent ``(offset, length)`` ranges that continue each other, merged."""
    out = []
    for o, n in segs:
        if out and out[-1][0] + out[-1][1] == o:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((o, n))
    return out


def _transfers(objects: list) -> list[tuple] | None:
    """``(offsets, sizes, strides)`` per transfer, each the longest run of whole objects one 4-D
    pattern covers; None when an object alone fits none."""
    out, i = [], 0
    while i < len(objects):
        for j in range(len(objects), i, -1):
            segs = [s for obj in objects[i:j] for s in obj]
            pattern = _pattern(_merge(segs)) or _pattern(segs)
            if pattern:
                break
        else:
            return None
        out.append(pattern)
        i = j
    return out


def _pattern(segs: list) -> tuple | None:
    """One 4-D pattern visiting ``segs`` in order: equal lengths (the contiguous innermost
    dimension), offsets ``base + i0 s0 + i1 s1 + i2 s2``; only the outermost stride may be 0."""
    length = segs[0][1]
    if any(n != length for _, n in segs):
        return None
    offs = [o for o, _ in segs]
    total = len(offs)
    for d2 in (k for k in range(total, 0, -1) if total % k == 0):
        for d1 in (k for k in range(total // d2, 0, -1) if total // d2 % k == 0):
            d0 = total // d2 // d1
            s = (offs[d1 * d2] - offs[0] if d0 > 1 else 0, offs[d2] - offs[0] if d1 > 1 else 0,
                 offs[1] - offs[0] if d2 > 1 else 0)
            if min(s) < 0 or (d1 > 1 and s[1] == 0) or (d2 > 1 and s[2] == 0):
                continue
            if all(offs[(i0 * d1 + i1) * d2 + i2] == offs[0] + i0 * s[0] + i1 * s[1] + i2 * s[2]
                   for i0 in range(d0) for i1 in range(d1) for i2 in range(d2)):
                return (0, 0, 0, offs[0]), (d0, d1, d2, length), (*s, 1)
    return None


def _runtime(m: _Mapping, host: list) -> Runtime:
    """Host buffers in blocked layout; the transfers per shim FIFO (inputs, then outputs, buffer
    descriptors numbered per shim tile); a wait per output FIFO."""
    buffers, ops, bd = {}, [], Counter()
    bds = m.platform.npu["shim_tile"].get("bds", 16)
    for flow, transfers in sorted(host, key=lambda h: h[0].join):
        counts, block_bytes = m.layouts[flow.tensor]
        w = _width(flow)
        buffers.setdefault(flow.tensor, HostBuffer(flow.tensor, flow.dtype, (*counts, block_bytes // w)))
        shim = flow.hub.consumers[0] if flow.join else flow.hub.producer
        for offsets, sizes, strides in transfers:
            if bd[shim] >= bds:
                raise CodegenError(f"shim tile {shim}: the transfers of its FIFOs need more than its {bds} buffer "
                                   "descriptors")
            ops.append(DmaTransfer(flow.hub.name, flow.tensor, (*sizes[:3], sizes[3] // w),
                                   (*(s // w for s in strides[:3]), 1), (0, 0, 0, offsets[3] // w), bd[shim]))
            bd[shim] += 1
    ops += [DmaWait(flow.hub.name) for flow, _ in host if flow.join]
    return Runtime(tuple(buffers.values()), tuple(ops))
