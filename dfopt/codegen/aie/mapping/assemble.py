"""The design's parts from the sized flows: tiles, object FIFOs, links through mem tiles and cores
(kernels and their FIFO accesses); and the depth lowering for tiles over their data memory."""

from __future__ import annotations

from dataclasses import replace

from dfopt.codegen.aie.design import (
    TILE_KINDS,
    AieDesign,
    Core,
    FifoAccess,
    Link,
    ObjectFifo,
    Tile,
    memory_bytes,
    memref_type,
    tile_kind_at,
)
from dfopt.codegen.aie.mapping.flows import _depth_bound, _Fifo, _Flow, _width
from dfopt.codegen.aie.mapping.recount import _Mapping
from dfopt.errors import CodegenError


def _tiles(m: _Mapping, flows: list) -> list[Tile]:
    coords = set(m.ev.members)
    coords |= {t for flow in flows for f in flow.fifos for t in (f.producer, *f.consumers)}
    tiles = [Tile(c, r, _kind(m, c, r)) for c, r in coords]
    return sorted(tiles, key=lambda t: (TILE_KINDS.index(t.kind), t.col, t.row))


def _kind(m: _Mapping, col: int, row: int) -> str:
    kind = tile_kind_at(m.platform, col, row)
    if kind is None:
        raise CodegenError(f"tile ({col}, {row}) is outside the {m.platform.name} array")
    return kind


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
    numbered variant per further signature; each core links its own object (its kernel's calls are
    its own, :mod:`dfopt.codegen.aie.mapping.glue`)."""
    fifos = {f.name: (flow, f) for flow in flows for f in flow.fifos}
    variants: dict = {}
    cores = []
    for t, vs in m.ev.members.items():
        seen: dict[tuple[str, str], None] = {}
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
        cores.append(Core(t, kernel, f"{kernel}_{t[0]}_{t[1]}.o", accesses, m.iterations[t]))
    return cores


# -- data memory -----------------------------------------------------------------------------------

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
