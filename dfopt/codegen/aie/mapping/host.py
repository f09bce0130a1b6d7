"""Host transfers: the shim DMA access patterns (4-D, whole objects) of each host collection,
split into more shim FIFOs when its objects gather blocks no pattern reads, and the runtime sequence
(blocked host buffers, transfers, waits)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from dfopt.codegen.aie.bd import legalize, limits_of
from dfopt.codegen.aie.design import DmaTransfer, DmaWait, HostBuffer, Runtime
from dfopt.codegen.aie.mapping.flows import _Flow, _size, _width
from dfopt.codegen.aie.mapping.recount import _Mapping
from dfopt.errors import CodegenError
from dfopt.ir.itensor import DTYPE_BITS


def _plan_host(m: _Mapping, flow: _Flow) -> list[tuple]:
    """``(flow, transfers)`` per shim FIFO of a host collection: the collection itself when
    :func:`_plan` finds transfers for it, else its parts split greedily (in host order) into
    collections that each have them, one more shim FIFO each."""
    assert flow.hub is not None  # a host flow goes through its shim FIFO, the hub
    layout = m.layouts[flow.tensor]
    plan = _plan(flow, layout)
    if plan is not None:
        return [(flow, plan)]
    if flow.join:
        plan = _plan(flow, layout, partial=True)
        if plan is not None and len(plan) <= PARTIAL_MAX:
            m.notes.append(f"the output {flow.tensor} on {flow.hub.name}: its objects gather host blocks that no 4-D "
                           f"pattern writes, so {len(plan)} transfers write the runs of each object in turn")
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
    assert flow.hub is not None  # a host flow goes through its shim FIFO, the hub
    hub = replace(flow.hub, name=name, bytes=sum(p.bytes for p in parts))
    sub = _Flow(list(parts), hub, flow.via, flow.tensor)
    _size(sub, m.iterations)
    return sub


#: transfers an output collection may take when its objects need several each (before it is split
#: into more shim FIFOs instead): half of a shim tile's 16 buffer descriptors
PARTIAL_MAX = 8


def _plan(flow: _Flow, layout: tuple, partial: bool = False) -> list[tuple] | None:
    """Shim transfers ``(offsets, sizes, strides)`` in bytes for a host flow, or None. The parts go
    in the order of their host offsets. With ``partial`` (outputs only) an object no pattern writes
    whole is written run by run, a transfer each. Packed: the hub object is the parts side by side; when an
    object's host ranges fit no 4-D pattern (e.g. blocks 0, 2, 4 and 8 of a grid), the hub object of
    an input is instead the host range spanning them (a hull: the parts sit at their host offsets in
    it, the bytes between them travel to the mem tile too), if the parts keep their relative offsets
    and do not overlap. Never for an output: its transfer would write the hull's gaps over the host
    blocks between the parts, which other tiles write (found by the functional model)."""
    assert flow.hub is not None  # a host flow goes through its shim FIFO, the hub
    objects = _object_segments(flow, layout)
    order = sorted(range(len(flow.parts)), key=lambda r: objects[0][r][0][0])
    flow.parts = [flow.parts[r] for r in order]
    objects = [[obj[r] for r in order] for obj in objects]
    packed = _transfers([_merge([s for part in obj for s in part]) for obj in objects], partial=partial)
    if packed is not None:
        flow.offsets = tuple(sum(p.elem for p in flow.parts[:k]) for k in range(len(flow.parts)))
        return packed
    if flow.join or any(len(part) != 1 for obj in objects for part in obj):
        return None         # an output hull would write its gaps over the host blocks between the parts
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
    out: list[tuple[int, int]] = []
    for o, n in segs:
        if out and out[-1][0] + out[-1][1] == o:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((o, n))
    return out


def _transfers(objects: list, partial: bool = False) -> list[tuple] | None:
    """``(offsets, sizes, strides)`` per transfer, each the longest run of whole objects one 4-D
    pattern covers; when an object alone fits none: None, or with ``partial`` (outputs) the
    object's ranges in order, each run of them one pattern covers a transfer of its own (the shim
    S2MM channel continues the object's stream in the next buffer descriptor)."""
    out, i = [], 0
    while i < len(objects):
        for j in range(len(objects), i, -1):
            segs = [s for obj in objects[i:j] for s in obj]
            pattern = _pattern(_merge(segs)) or _pattern(segs)
            if pattern:
                break
        else:
            if not partial:
                return None
            segs, k = _merge(objects[i]), 0
            while k < len(segs):        # one segment alone is a linear pattern
                e, run = next((e, p) for e in range(len(segs), k, -1) if (p := _pattern(segs[k:e])) is not None)
                out.append(run)
                k = e
            i += 1
            continue
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
    descriptors numbered per shim tile), each legalised into the shim buffer descriptor's limits
    (:func:`dfopt.codegen.aie.bd.legalize`: refactored loops, or several transfers); a wait per
    output FIFO."""
    buffers: dict[str, HostBuffer] = {}
    ops: list[DmaTransfer | DmaWait] = []
    planned: list[tuple[DmaTransfer, int]] = []
    bd: Counter[tuple] = Counter()
    bds = m.platform.npu["shim_tile"].get("bds", 16)
    limits = limits_of(m.platform, "shim")
    for flow, transfers in sorted(host, key=lambda h: h[0].join):
        counts, block_bytes = m.layouts[flow.tensor]
        w = _width(flow)
        buffers.setdefault(flow.tensor, HostBuffer(flow.tensor, flow.dtype, (*counts, block_bytes // w)))
        shim = flow.hub.consumers[0] if flow.join else flow.hub.producer
        for offsets, sizes, strides in transfers:
            whole = DmaTransfer(flow.hub.name, flow.tensor, (*sizes[:3], sizes[3] // w),
                                (*(s // w for s in strides[:3]), 1), (0, 0, 0, offsets[3] // w))
            pieces = legalize(whole, DTYPE_BITS.get(flow.dtype, 32), limits)
            planned.append((whole, len(pieces)))
            if len(pieces) > 1:
                m.notes.append(f"the transfer of {flow.tensor} on {flow.hub.name} ({list(whole.sizes)} / "
                               f"{list(whole.strides)}) was split into {len(pieces)} transfers within the "
                               "shim buffer-descriptor limits")
            for piece in pieces:
                if bd[shim] >= bds:
                    raise CodegenError(f"shim tile {shim}: the transfers of its FIFOs need more than its {bds} "
                                       "buffer descriptors")
                ops.append(replace(piece, id=bd[shim]))
                bd[shim] += 1
    ops += [DmaWait(flow.hub.name) for flow, _ in host if flow.join]
    return Runtime(tuple(buffers.values()), tuple(ops), planned=tuple(planned))
