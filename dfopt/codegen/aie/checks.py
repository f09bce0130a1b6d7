"""The checks of an :class:`~dfopt.codegen.aie.design.AieDesign` against an NPU platform preset.

:func:`problems` lists every fault it knows that would stop mlir-aie from compiling the design,
one message each, in this order: the platform, the tiles (kind, row and column on the array,
repeats), the object FIFOs (symbol names, types, depth, endpoints, shim DMA columns), the links
(through a mem tile, 1-to-N or N-to-1, offsets), the cores (on compute tiles, kernel symbols and
signatures, accesses), the runtime sequence (buffers, transfers and waits, 32-bit shim DMA
words, the shim buffer-descriptor limits of :mod:`dfopt.codegen.aie.bd`) and the resources per
tile (DMA channels and data memory, counted by
:func:`~dfopt.codegen.aie.design.dma_channels` and
:func:`~dfopt.codegen.aie.design.memory_bytes`). :func:`validate` raises one
:class:`CodegenError` with all of them. Both are re-exported by :mod:`dfopt.codegen.aie.design`.

>>> from dfopt.codegen.aie.design import AieDesign, ObjectFifo, Tile
>>> d = AieDesign(tiles=(Tile(1, 0, "shim"), Tile(1, 2, "compute")),
...               fifos=(ObjectFifo("of_in", (1, 0), ((1, 2),), "i32", (16,), depth=0),))
>>> problems(d)
["fifo 'of_in': depth must be an integer >= 1, got 0"]
"""

from __future__ import annotations

import math
import re

from dfopt.codegen.aie.bd import limits_of, pattern_faults
from dfopt.codegen.aie.design import (
    MLIR_DTYPES,
    PORTS,
    TILE_KINDS,
    AieDesign,
    Core,
    DmaTransfer,
    DmaWait,
    HostBuffer,
    Link,
    ObjectFifo,
    _npu,
    dma_channels,
    kernel_signature,
    memory_bytes,
    tile_kind_at,
)
from dfopt.errors import CodegenError
from dfopt.ir.itensor import DTYPE_BITS
from dfopt.ir.platform import PRESET_NAMES, Platform, load_preset

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _check_type(where: str, dtype, shape) -> list[str]:
    out = []
    if dtype not in MLIR_DTYPES:
        out.append(f"{where}: dtype {dtype!r} is not supported; expected one of {sorted(MLIR_DTYPES)}")
    if not shape or not all(isinstance(s, int) and s >= 1 for s in shape):
        out.append(f"{where}: shape must be a non-empty list of positive integers, got {list(shape)}")
    return out


def _platform(design: AieDesign, platform: Platform | None) -> tuple[Platform | None, list[str]]:
    if platform is not None:
        if platform.kind != "npu":
            return None, [f"platform {platform.name!r} is not an NPU"]
        if not {"columns", "rows"} <= set(platform.npu):
            return None, [f"platform {platform.name!r}: its npu section needs 'columns' and 'rows'"]
        return platform, []
    npus = [n for n in PRESET_NAMES if load_preset(n).kind == "npu"]
    if design.device not in npus:
        return None, [f"device {design.device!r} is not an NPU platform preset; expected one of {npus}"]
    return load_preset(design.device), []


def _check_tiles(design: AieDesign, platform: Platform) -> list[str]:
    out, seen = [], set()
    npu = _npu(platform)
    for t in design.tiles:
        where = f"tile ({t.col}, {t.row})"
        if t.coord in seen:
            out.append(f"{where}: listed twice")
        seen.add(t.coord)
        if t.kind not in TILE_KINDS:
            out.append(f"{where}: kind {t.kind!r} is not one of {list(TILE_KINDS)}")
            continue
        actual = tile_kind_at(platform, t.col, t.row)
        if not 0 <= t.col < npu["columns"]:
            out.append(f"{where}: column {t.col} is outside {platform.name}'s columns 0-{npu['columns'] - 1}")
        elif actual != t.kind:
            rows = npu["rows"].get(t.kind, [])
            rows = rows if isinstance(rows, list) else [rows]
            out.append(f"{where}: a {t.kind} tile must be in row(s) {rows} of {platform.name}, got row {t.row}")
    return out


def _check_fifos(design: AieDesign, platform: Platform) -> list[str]:
    out, names = [], set()
    tiles = {t.coord: t for t in design.tiles}
    no_dma = set(_npu(platform).get("shim_tile", {}).get("no_dma_columns", []))
    for f in design.fifos:
        where = f"fifo {f.name!r}"
        if not isinstance(f.name, str) or not _SYMBOL.match(f.name):
            out.append(f"{where}: not a valid symbol name (letters, digits, '_'; not starting with a digit)")
        if f.name in names:
            out.append(f"{where}: the name is used twice")
        names.add(f.name)
        out += _check_type(where, f.dtype, f.shape)
        if not isinstance(f.depth, int) or f.depth < 1:
            out.append(f"{where}: depth must be an integer >= 1, got {f.depth!r}")
        if not f.consumers:
            out.append(f"{where}: has no consumer tile")
        if len(set(f.consumers)) != len(f.consumers) or f.producer in f.consumers:
            out.append(f"{where}: producer and consumer tiles must all differ, got {f.producer} -> "
                       f"{list(f.consumers)}")
        for role, end in [("producer", f.producer)] + [("consumer", c) for c in f.consumers]:
            if end not in tiles:
                out.append(f"{where}: {role} {end} is not a tile of the design; add it to tiles")
            elif tiles[end].kind == "shim" and end[0] in no_dma:
                out.append(f"{where}: {role} {end} is a shim tile in column {end[0]}, which has no "
                           f"shim DMA on {platform.name}; use a shim tile in another column")
    return out


def _check_link(design: AieDesign, ln: Link, fifos: dict) -> list[str]:
    where = f"link {list(ln.inputs)} -> {list(ln.outputs)}"
    out = []
    via = next((t for t in design.tiles if t.coord == ln.via), None)
    if via is None:
        out.append(f"{where}: tile {ln.via} is not a tile of the design")
    elif via.kind != "mem":
        out.append(f"{where}: links go through a mem tile, {ln.via} is a {via.kind} tile")
    if not ln.inputs or not ln.outputs:
        return out + [f"{where}: needs at least one input and one output fifo"]
    if len(ln.inputs) > 1 and len(ln.outputs) > 1:
        return out + [f"{where}: cannot join and distribute at once (mlir-aie links are 1-to-N or N-to-1)"]
    unknown = [n for n in ln.inputs + ln.outputs if n not in fifos]
    if unknown:
        return out + [f"{where}: unknown fifo(s) {unknown}"]
    for n in ln.inputs:
        if fifos[n].consumers != (ln.via,):
            out.append(f"{where}: input fifo {n!r} must have the link tile {ln.via} as its only consumer")
    for n in ln.outputs:
        if fifos[n].producer != ln.via:
            out.append(f"{where}: output fifo {n!r} must be produced by the link tile {ln.via}")
    if len({fifos[n].dtype for n in ln.inputs + ln.outputs}) > 1:
        out.append(f"{where}: all fifos of a link must have the same dtype")
    if len(ln.outputs) > 1:
        out += _check_offsets(where, "dst_offsets", ln.dst_offsets, ln.src_offsets,
                              fifos[ln.inputs[0]], [fifos[n] for n in ln.outputs])
    elif len(ln.inputs) > 1:
        out += _check_offsets(where, "src_offsets", ln.src_offsets, ln.dst_offsets,
                              fifos[ln.outputs[0]], [fifos[n] for n in ln.inputs])
    elif ln.src_offsets or ln.dst_offsets:
        out.append(f"{where}: a 1-to-1 link takes no offsets")
    return out


def _check_offsets(where, name, offsets, other, whole: ObjectFifo, parts: list) -> list[str]:
    other_name = "src_offsets" if name == "dst_offsets" else "dst_offsets"
    if other:
        return [f"{where}: {other_name} must be empty here"]
    if len(offsets) != len(parts):
        return [f"{where}: {name} needs one offset per fifo ({len(parts)}), got {list(offsets)}"]
    out, end = [], 0
    for off, part in sorted(zip(offsets, parts), key=lambda p: p[0]):
        if off < end:
            out.append(f"{where}: fifo {part.name!r} at offset {off} overlaps the part before it")
        end = off + part.numel
        if end > whole.numel:
            out.append(f"{where}: fifo {part.name!r} at offset {off} ({part.numel} elements) runs past "
                       f"the {whole.numel} elements of {whole.name!r}")
    return out


def _check_links(design: AieDesign) -> list[str]:
    fifos = {f.name: f for f in design.fifos}
    out: list[str] = []
    used: dict[str, int] = {}
    for ln in design.links:
        out += _check_link(design, ln, fifos)
        for n in ln.inputs + ln.outputs:
            used[n] = used.get(n, 0) + 1
    out += [f"fifo {n!r}: takes part in {k} links; at most one" for n, k in used.items() if k > 1]
    return out


def _check_cores(design: AieDesign) -> list[str]:
    out: list[str] = []
    seen: set = set()
    signatures: dict = {}
    fifos = {f.name: f for f in design.fifos}
    tiles = {t.coord: t for t in design.tiles}
    for c in design.cores:
        where = f"core {c.tile}"
        if c.tile in seen:
            out.append(f"{where}: the tile has two cores")
        seen.add(c.tile)
        if c.tile not in tiles:
            out.append(f"{where}: {c.tile} is not a tile of the design")
        elif tiles[c.tile].kind != "compute":
            out.append(f"{where}: cores run on compute tiles, {c.tile} is a {tiles[c.tile].kind} tile")
        if not isinstance(c.kernel, str) or not _SYMBOL.match(c.kernel):
            out.append(f"{where}: kernel name {c.kernel!r} is not a valid symbol name")
        if not c.object_file:
            out.append(f"{where}: needs the object file of kernel {c.kernel!r}")
        if not isinstance(c.iterations, int) or c.iterations < 1:
            out.append(f"{where}: iterations must be an integer >= 1, got {c.iterations!r}")
        calls = [call for call, _ in c.schedule()] if c.steps else [c]
        for s in c.steps:
            if not isinstance(s.kernel, str) or not _SYMBOL.match(s.kernel):
                out.append(f"{where}: step kernel name {s.kernel!r} is not a valid symbol name")
            if not isinstance(s.repeat, int) or s.repeat < 1:
                out.append(f"{where}: step {s.kernel!r} repeats {s.repeat!r} times; expected an integer >= 1")
            if not s.accesses:
                out.append(f"{where}: step {s.kernel!r} acquires nothing")
        for call in calls:
            out += _check_accesses(where, call, fifos)
            sig = kernel_signature(design, call)
            if signatures.setdefault(call.kernel, sig) != sig:
                out.append(f"{where}: kernel {call.kernel!r} is called with {list(sig)} here and "
                           f"{list(signatures[call.kernel])} elsewhere")
    clash = sorted(set(signatures) & set(fifos))
    if clash:
        out.append(f"kernel and fifo names share one symbol table; rename {clash}")
    return out


def _check_accesses(where: str, c: Core, fifos: dict) -> list[str]:
    out, seen = [], set()
    for a in c.accesses:
        if a.fifo not in fifos:
            out.append(f"{where}: accesses unknown fifo {a.fifo!r}")
            continue
        f = fifos[a.fifo]
        if (a.fifo, a.port) in seen:
            out.append(f"{where}: accesses fifo {a.fifo!r} ({a.port}) twice; use count instead")
        seen.add((a.fifo, a.port))
        if a.port not in PORTS:
            out.append(f"{where}: port {a.port!r} of fifo {a.fifo!r} is not one of {list(PORTS)}")
        elif a.port == "consume" and c.tile not in f.consumers:
            out.append(f"{where}: consumes fifo {a.fifo!r} but is not one of its consumers {list(f.consumers)}")
        elif a.port == "produce" and c.tile != f.producer:
            out.append(f"{where}: produces into fifo {a.fifo!r} but its producer is {f.producer}")
        if not isinstance(a.count, int) or not 1 <= a.count <= max(f.depth, 1):
            out.append(f"{where}: acquires {a.count!r} objects of fifo {a.fifo!r}; expected 1..depth ({f.depth})")
    return out


def _check_runtime(design: AieDesign, platform: Platform) -> list[str]:
    rt = design.runtime
    if rt is None:
        return []
    out = []
    if not _SYMBOL.match(rt.name or ""):
        out.append(f"runtime sequence {rt.name!r}: not a valid symbol name")
    buffers = {}
    for b in rt.buffers:
        if b.name in buffers:
            out.append(f"host buffer {b.name!r}: the name is used twice")
        buffers[b.name] = b
        out += _check_type(f"host buffer {b.name!r}", b.dtype, b.shape)
    fifos = {f.name: f for f in design.fifos}
    tiles = {t.coord: t for t in design.tiles}
    bds = _npu(platform).get("shim_tile", {}).get("bds", 16)
    issued: dict = {}
    moved: dict = {}       # array-to-host elements per fifo
    for i, op in enumerate(rt.ops):
        where = f"runtime op {i}"
        if isinstance(op, DmaWait):
            if op.fifo not in issued:
                out.append(f"{where}: waits on fifo {op.fifo!r}, which has no transfer before it")
            elif not issued[op.fifo]:
                out.append(f"{where}: waits on fifo {op.fifo!r}, whose host-to-array transfer has "
                           f"issue_token=False, so the wait would never return")
            continue
        if not isinstance(op, DmaTransfer):
            out.append(f"{where}: expected a DmaTransfer or DmaWait, got {type(op).__name__}")
            continue
        f = fifos.get(op.fifo)
        if f is None:
            out.append(f"{where}: transfer on unknown fifo {op.fifo!r}")
            continue
        shim_prod = f.producer in tiles and tiles[f.producer].kind == "shim"
        shim_cons = any(c in tiles and tiles[c].kind == "shim" for c in f.consumers)
        if not (shim_prod or shim_cons):
            out.append(f"{where}: fifo {op.fifo!r} has no shim tile end, so the host cannot reach it")
        issued[op.fifo] = op.issue_token or not shim_prod  # S2MM always issues a token
        out += _check_transfer(where, op, f, buffers.get(op.buffer), bds, whole=shim_prod)
        if shim_cons and not shim_prod:
            moved[op.fifo] = moved.get(op.fifo, 0) + op.elements
        buf = buffers.get(op.buffer)
        if buf is not None and len(op.sizes) == len(op.strides) == len(op.offsets) == 4:
            faults = pattern_faults(op.sizes, op.strides, op.offsets, DTYPE_BITS.get(buf.dtype, 32),
                                    limits_of(platform, "shim"))
            out += [f"{where} (fifo {op.fifo!r}, sizes {list(op.sizes)}, strides {list(op.strides)}): "
                    f"the shim buffer descriptor cannot hold it: {m}" for m in faults]
    for name, n in moved.items():
        if n % fifos[name].numel:
            out.append(f"the transfers out of fifo {name!r} move {n} elements, not a whole number of its objects "
                       f"({fifos[name].numel} elements each)")
    return out


def _check_transfer(where: str, op: DmaTransfer, f: ObjectFifo, buf: HostBuffer | None, bds: int,
                    whole: bool = True) -> list[str]:
    """One transfer's faults; ``whole``: it must move whole objects (host to array; an array-to-host
    transfer may end inside an object, the next one continuing its stream)."""
    out = []
    if buf is None:
        return [f"{where}: unknown host buffer {op.buffer!r}"]
    if buf.dtype != f.dtype:
        out.append(f"{where}: host buffer {buf.name!r} is {buf.dtype}, fifo {f.name!r} is {f.dtype}")
    if not isinstance(op.id, int) or not 0 <= op.id < bds:
        out.append(f"{where}: buffer descriptor id {op.id!r} is outside 0-{bds - 1}")
    pattern = (op.offsets, op.sizes, op.strides)
    if any(len(p) != 4 for p in pattern):
        return out + [f"{where}: offsets, sizes and strides need 4 entries each, got {[list(p) for p in pattern]}"]
    if any(s < 1 for s in op.sizes) or any(s < 0 for s in op.strides) or any(o < 0 for o in op.offsets):
        return out + [f"{where}: sizes must be >= 1, strides and offsets >= 0"]
    if any(n > 1 and s == 0 for n, s in zip(op.sizes[1:], op.strides[1:])):
        out.append(f"{where}: only the outermost dimension may repeat with stride 0, got sizes {list(op.sizes)} "
                   f"and strides {list(op.strides)}")
    out += _check_words(where, op, DTYPE_BITS.get(buf.dtype, 32) // 8 or 1)
    # first element: sum(offset_i * stride_i), as mlir-aie's NpuDmaMemcpyNdOp::getOffsetInBytes
    last = sum(o * s for o, s in zip(op.offsets, op.strides))
    last += sum((n - 1) * s for n, s in zip(op.sizes, op.strides))
    if last >= math.prod(buf.shape):
        out.append(f"{where}: the access pattern reaches element {last} of host buffer {buf.name!r}, "
                   f"which has {math.prod(buf.shape)}")
    if whole and op.elements % f.numel:
        out.append(f"{where}: moves {op.elements} elements, not a whole number of fifo {f.name!r} "
                   f"objects ({f.numel} elements each)")
    return out


def _check_words(where: str, op: DmaTransfer, width: int) -> list[str]:
    # the shim DMA addresses 32-bit words (NpuDmaMemcpyNdOp::verify): the start, the length of a
    # row and the strides of the outer dimensions must be whole words
    first = sum(o * s for o, s in zip(op.offsets, op.strides)) * width
    row = op.sizes[3] * width if op.strides[3] == 1 else 4
    outer = [s * width for n, s in zip(op.sizes[:3], op.strides[:3]) if n > 1]
    if first % 4 or row % 4 or any(b % 4 for b in outer):
        return [f"{where}: the start ({first} B), the innermost length ({row} B) and the outer strides "
                f"({outer} B) must be multiples of 4 bytes"]
    return []


def _check_resources(design: AieDesign, platform: Platform) -> list[str]:
    out = []
    npu = _npu(platform)
    spec = {kind: npu.get(f"{kind}_tile", {}) for kind in TILE_KINDS}
    tiles = {t.coord: t for t in design.tiles}
    for coord, use in dma_channels(design).items():
        t = tiles.get(coord)
        if t is None or t.kind not in spec:
            continue
        for side, key, kind in (("in", "dma_in", "S2MM"), ("out", "dma_out", "MM2S")):
            limit = spec[t.kind].get(key)
            if limit is not None and len(use[side]) > limit:
                out.append(f"tile {coord} ({t.kind}): {len(use[side])} fifos need a {kind} ({side}) DMA "
                           f"channel, {platform.name} has {limit}: {use[side]}; move fifos to another tile")
    for coord, used in memory_bytes(design).items():
        t = tiles[coord]
        limit = spec[t.kind].get("memory_bytes") if t.kind in spec else None
        if limit is not None and used > limit:
            out.append(f"tile {coord} ({t.kind}): fifo objects and stack need {used} bytes, the tile has "
                       f"{limit}; lower depths or split the objects")
    return out


def problems(design: AieDesign, platform: Platform | None = None) -> list[str]:
    """Every reason the design would not compile with mlir-aie on ``platform`` (default: the
    preset named by ``design.device``), one message each; empty when it is valid."""
    platform, out = _platform(design, platform)
    if platform is None:
        return out
    out += _check_tiles(design, platform)
    out += _check_fifos(design, platform)
    out += _check_links(design)
    out += _check_cores(design)
    out += _check_runtime(design, platform)
    return out + _check_resources(design, platform)


def validate(design: AieDesign, platform: Platform | None = None) -> AieDesign:
    """Return ``design`` if :func:`problems` finds nothing, else raise one :class:`CodegenError`
    listing every problem."""
    found = problems(design, platform)
    if found:
        err = CodegenError(f"the AIE design has {len(found)} problem(s):\n  " + "\n  ".join(found))
        err.problems = found
        raise err
    return design
