"""A physical design for an AMD NPU (AIE2), the input of the MLIR-AIE emitter (DESIGN 5.7).

What a mapping solution turns into: which tiles are used, the object FIFOs between them, the
links that split (distribute) or merge (join) FIFOs through a memory tile, the cores with the
kernel they call in a loop, and the host-side runtime sequence of shim DMA transfers.

============================  =================================================================
design                        MLIR-AIE (see :mod:`dfopt.codegen.aie.emit`)
============================  =================================================================
``AieDesign.device``          ``aie.device(npu1)``; also the platform preset checked against
``Tile(col, row, kind)``      ``%tile_c_r = aie.tile(c, r)`` (kind: shim / mem / compute)
``ObjectFifo``                ``aie.objectfifo @name(%prod, {%cons...}, depth : i32)`` with the
                              element type ``memref<shape x dtype>``
``Link``                      ``aie.objectfifo.link [@in...] -> [@out...]([src] [dst])``
``Core`` + ``FifoAccess``     ``aie.core(%tile) { scf.for { acquire; subview.access; func.call;
                              release } aie.end } {link_with = "k.o"}`` and one
                              ``func.func private @kernel(...)`` declaration per kernel
``Runtime``                   ``aiex.runtime_sequence @name(%arg0: memref<...>, ...)``
``DmaTransfer`` / ``DmaWait`` ``aiex.npu.dma_memcpy_nd`` / ``aiex.npu.dma_wait``
============================  =================================================================

Coordinates are ``(col, row)``; endpoints, link tiles and core tiles refer to tiles by their
coordinates (a :class:`Tile` is accepted too). A ``FifoAccess`` port is the core's side of the
FIFO: ``consume`` on a consumer tile, ``produce`` on the producer tile. The kernel is called
with one memref per acquired object, in access order, then the ``scalars`` as ``i32``.

:func:`problems` lists every fault it knows that would stop mlir-aie from compiling the design
for the platform preset named by ``device`` (``npu1``: 5 columns, row 0 shim, row 1 mem, rows 2-5
compute, no shim DMA in column 0); :func:`validate` raises one :class:`CodegenError` with all
of them. DMA channels are counted the way mlir-aie's object-FIFO lowering allocates them: a FIFO
that needs DMAs takes one MM2S (out) channel on its producer tile and one S2MM (in) channel on
each consumer tile (a broadcast is one MM2S); a FIFO with one consumer, outside any link, between
two compute tiles that share a data memory (AIE2: a core reaches its own memory and those of its
west, north and south neighbours) or two neighbouring mem tiles takes none
(``AIEObjectFifoStatefulTransform.cpp``, ``requiresDMAs`` / ``isSharedMemory``;
``AIETargetModel.cpp``, ``AIE2TargetModel::isLegalMemAffinity``).
Data memory is counted conservatively: every endpoint holds ``depth`` objects (one side of a
link), plus the 1 KiB default stack on compute tiles.

>>> d = AieDesign(tiles=(Tile(1, 0, "shim"), Tile(1, 2, "compute")),
...               fifos=(ObjectFifo("of_in", (1, 0), ((1, 2),), "i32", (16,)),))
>>> d.fifo("of_in").element_type, d.tile((1, 2)).name
('memref<16xi32>', 'tile_1_2')
>>> problems(d)
[]
>>> dma_channels(d)[(1, 2)]
{'in': ['of_in'], 'out': []}
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from dfopt.errors import CodegenError
from dfopt.ir.itensor import DTYPE_BITS
from dfopt.ir.platform import PRESET_NAMES, Platform, load_preset

TILE_KINDS = ("shim", "mem", "compute")
PORTS = ("consume", "produce")
#: dfopt dtype -> MLIR element type of a memref (sub-byte and f8 types are not DMA-able as is).
MLIR_DTYPES = {"i8": "i8", "u8": "ui8", "i16": "i16", "u16": "ui16", "i32": "i32", "u32": "ui32",
               "i64": "i64", "bf16": "bf16", "f16": "f16", "f32": "f32", "f64": "f64"}
#: Stack bytes mlir-aie reserves on a core by default (``aie.core`` ``stack_size`` = 0x400).
STACK_BYTES = 1024
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _coord(value) -> tuple[int, int]:
    if isinstance(value, Tile):
        return value.coord
    col, row = value
    return (int(col), int(row))


def memref_type(dtype: str, shape) -> str:
    """The MLIR memref type of one object.

    >>> memref_type("bf16", (32, 32)), memref_type("u8", (64,))
    ('memref<32x32xbf16>', 'memref<64xui8>')
    """
    return "memref<" + "x".join(str(s) for s in shape) + "x" + MLIR_DTYPES.get(dtype, dtype) + ">"


def _check_type(where: str, dtype, shape) -> list[str]:
    out = []
    if dtype not in MLIR_DTYPES:
        out.append(f"{where}: dtype {dtype!r} is not supported; expected one of {sorted(MLIR_DTYPES)}")
    if not shape or not all(isinstance(s, int) and s >= 1 for s in shape):
        out.append(f"{where}: shape must be a non-empty list of positive integers, got {list(shape)}")
    return out


# -- the design ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Tile:
    """One tile of the array: ``kind`` is ``shim``, ``mem`` or ``compute``."""

    col: int
    row: int
    kind: str

    @property
    def coord(self) -> tuple[int, int]:
        return (self.col, self.row)

    @property
    def name(self) -> str:
        """SSA name as mlir-aie prints it (``TileOp::getAsmResultNames``)."""
        prefix = {"shim": "shim_noc_", "mem": "mem_"}.get(self.kind, "")
        return f"{prefix}tile_{self.col}_{self.row}"


@dataclass(frozen=True)
class ObjectFifo:
    """A circular buffer of ``depth`` objects of ``dtype`` x ``shape`` from one producer tile to
    one or more consumer tiles (several consumers: a broadcast)."""

    name: str
    producer: tuple[int, int]
    consumers: tuple
    dtype: str
    shape: tuple
    depth: int = 2

    def __post_init__(self):
        object.__setattr__(self, "producer", _coord(self.producer))
        object.__setattr__(self, "consumers", tuple(_coord(c) for c in self.consumers))
        object.__setattr__(self, "shape", tuple(self.shape))

    @property
    def element_type(self) -> str:
        return memref_type(self.dtype, self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def element_bytes(self) -> int:
        return self.numel * DTYPE_BITS.get(self.dtype, 8) // 8


@dataclass(frozen=True)
class Link:
    """FIFOs joined through the tile ``via``: one input to several outputs (distribute; the
    ``dst_offsets`` say where each output's object starts in the input's, in elements), several
    inputs to one output (join; ``src_offsets``), or one to one (no offsets)."""

    inputs: tuple
    outputs: tuple
    via: tuple[int, int]
    src_offsets: tuple = ()
    dst_offsets: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "via", _coord(self.via))
        for name in ("inputs", "outputs", "src_offsets", "dst_offsets"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


@dataclass(frozen=True)
class FifoAccess:
    """Per loop iteration a core acquires ``count`` objects of ``fifo`` on its ``port`` side
    (``consume`` or ``produce``), passes them to the kernel and releases them."""

    fifo: str
    port: str
    count: int = 1


@dataclass(frozen=True)
class Core:
    """The program of a compute tile: ``iterations`` times acquire, call ``kernel`` (linked from
    ``object_file``) with the acquired objects and then the ``scalars`` (``i32``), release."""

    tile: tuple[int, int]
    kernel: str
    object_file: str
    accesses: tuple
    iterations: int = 1
    scalars: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "tile", _coord(self.tile))
        object.__setattr__(self, "accesses", tuple(self.accesses))
        object.__setattr__(self, "scalars", tuple(self.scalars))


@dataclass(frozen=True)
class HostBuffer:
    """A runtime-sequence argument: a host buffer of ``dtype`` x ``shape``."""

    name: str
    dtype: str
    shape: tuple

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))

    @property
    def memref(self) -> str:
        return memref_type(self.dtype, self.shape)


@dataclass(frozen=True)
class DmaTransfer:
    """One shim DMA task between host buffer ``buffer`` and the shim end of ``fifo``: the access
    pattern ``offsets`` / ``sizes`` / ``strides`` (4 entries each, outermost first, in elements,
    as ``aiex.npu.dma_memcpy_nd``), on buffer descriptor ``id``. Host-to-array when the fifo's
    producer is a shim tile, array-to-host when a consumer is. The first element is
    ``sum(offsets[i] * strides[i])`` (mlir-aie 2025; older releases scaled offsets by the memref
    shape instead; both agree when only the innermost offset is non-zero)."""

    fifo: str
    buffer: str
    sizes: tuple
    strides: tuple
    offsets: tuple = (0, 0, 0, 0)
    id: int = 0
    issue_token: bool = True

    def __post_init__(self):
        for name in ("sizes", "strides", "offsets"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @classmethod
    def linear(cls, fifo: str, buffer: str, count: int, offset: int = 0, id: int = 0) -> "DmaTransfer":
        """``count`` consecutive elements from ``offset``.

        >>> DmaTransfer.linear("of_in", "a", 64).sizes
        (1, 1, 1, 64)
        """
        return cls(fifo, buffer, (1, 1, 1, count), (0, 0, 0, 1), (0, 0, 0, offset), id)

    @property
    def elements(self) -> int:
        return math.prod(self.sizes)


@dataclass(frozen=True)
class DmaWait:
    """Block until the last transfer on ``fifo``'s shim DMA completes (``aiex.npu.dma_wait``)."""

    fifo: str


@dataclass(frozen=True)
class Runtime:
    """The host-side runtime sequence: its arguments and its transfers and waits in order."""

    buffers: tuple
    ops: tuple
    name: str = "sequence"

    def __post_init__(self):
        object.__setattr__(self, "buffers", tuple(self.buffers))
        object.__setattr__(self, "ops", tuple(self.ops))


@dataclass(frozen=True)
class AieDesign:
    """A whole physical design on ``device`` (an NPU platform preset name)."""

    device: str = "npu1"
    tiles: tuple = ()
    fifos: tuple = ()
    links: tuple = ()
    cores: tuple = ()
    runtime: Runtime | None = None

    def __post_init__(self):
        for name in ("tiles", "fifos", "links", "cores"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def tile(self, coord) -> Tile:
        """The tile at ``coord``; KeyError if the design has none."""
        coord = _coord(coord)
        for t in self.tiles:
            if t.coord == coord:
                return t
        raise KeyError(coord)

    def fifo(self, name: str) -> ObjectFifo:
        """The FIFO called ``name``; KeyError if the design has none."""
        for f in self.fifos:
            if f.name == name:
                return f
        raise KeyError(name)

    def link_of(self, fifo: str) -> Link | None:
        """The link ``fifo`` takes part in, if any."""
        return next((ln for ln in self.links if fifo in ln.inputs or fifo in ln.outputs), None)


# -- platform geometry and mlir-aie's DMA rules ----------------------------------------------------

def _npu(platform: Platform) -> dict:
    return platform.npu


def tile_kind_at(platform: Platform, col: int, row: int) -> str | None:
    """The kind of tile the platform has at (col, row), or None outside the array.

    >>> tile_kind_at(load_preset("npu1"), 0, 1), tile_kind_at(load_preset("npu1"), 5, 2)
    ('mem', None)
    """
    npu = _npu(platform)
    if not 0 <= col < npu["columns"]:
        return None
    rows = npu["rows"]
    if row == rows["shim"]:
        return "shim"
    if row == rows["mem"]:
        return "mem"
    if row in rows["compute"]:
        return "compute"
    return None


def _is_legal_mem_affinity(core: tuple, mem: tuple, mem_is_mem_tile: bool, core_is_mem_tile: bool) -> bool:
    # AIE2TargetModel::isLegalMemAffinity: west neighbour, own tile, north, south (not a mem tile);
    # mem tiles reach their east and west neighbours.
    (cc, cr), (mc, mr) = core, mem
    west, internal, east = (mc == cc - 1 and mr == cr), (core == mem), (mc == cc + 1 and mr == cr)
    north, south = (mc == cc and mr == cr + 1), (mc == cc and mr == cr - 1)
    if core_is_mem_tile:
        return east or internal or west
    return (south and not mem_is_mem_tile) or north or west or internal


def shares_memory(a: Tile, b: Tile) -> bool:
    """Whether two tiles share a data memory, as mlir-aie's ``isSharedMemory`` decides for AIE2.
    Shim tiles have no data memory here (their FIFOs always use the shim DMA).

    >>> shares_memory(Tile(1, 2, "compute"), Tile(1, 3, "compute"))
    True
    >>> shares_memory(Tile(1, 2, "compute"), Tile(3, 2, "compute"))
    False
    """
    if a.kind == "shim" or b.kind == "shim" or (a.kind == "mem") != (b.kind == "mem"):
        return False
    a_mem, b_mem = a.kind == "mem", b.kind == "mem"
    return (_is_legal_mem_affinity(a.coord, b.coord, b_mem, a_mem)
            or _is_legal_mem_affinity(b.coord, a.coord, a_mem, b_mem))


def requires_dma(design: AieDesign, fifo: ObjectFifo) -> bool:
    """Whether mlir-aie lowers ``fifo`` onto DMAs: always, unless it has one consumer that shares
    a data memory with the producer and the FIFO is in no link (``requiresDMAs``)."""
    if len(fifo.consumers) != 1 or design.link_of(fifo.name) is not None:
        return True
    try:
        return not shares_memory(design.tile(fifo.producer), design.tile(fifo.consumers[0]))
    except KeyError:
        return True


def dma_channels(design: AieDesign) -> dict:
    """Per tile coordinate, the FIFOs that take an S2MM (``in``) and an MM2S (``out``) channel."""
    usage = {t.coord: {"in": [], "out": []} for t in design.tiles}
    for f in design.fifos:
        if not requires_dma(design, f):
            continue
        usage.setdefault(f.producer, {"in": [], "out": []})["out"].append(f.name)
        for c in f.consumers:
            usage.setdefault(c, {"in": [], "out": []})["in"].append(f.name)
    return usage


def memory_bytes(design: AieDesign) -> dict:
    """Data memory per tile coordinate: ``depth`` objects of every FIFO end on the tile (one side
    only of a link: the input of a distribute or 1-to-1 link, the output of a join), plus the
    default stack on each core's tile. An over-estimate for FIFOs through shared memory."""
    used = {t.coord: 0 for t in design.tiles if t.kind != "shim"}
    skip = set()
    for ln in design.links:
        side = ln.inputs if len(ln.inputs) > 1 else ln.outputs
        skip.update((name, ln.via) for name in side)
    for f in design.fifos:
        for end in {f.producer, *f.consumers}:
            if end in used and (f.name, end) not in skip:
                used[end] += f.depth * f.element_bytes
    for c in design.cores:
        if c.tile in used:
            used[c.tile] += STACK_BYTES
    return used


def kernel_signature(design: AieDesign, core: Core) -> tuple:
    """The argument types of ``core``'s kernel: one memref per acquired object, then ``i32``s."""
    fifos = {f.name: f for f in design.fifos}
    types = []
    for a in core.accesses:
        if a.fifo in fifos:
            types += [fifos[a.fifo].element_type] * a.count
    return tuple(types) + ("i32",) * len(core.scalars)


# -- checks ----------------------------------------------------------------------------------------

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
    out, used = [], {}
    for ln in design.links:
        out += _check_link(design, ln, fifos)
        for n in ln.inputs + ln.outputs:
            used[n] = used.get(n, 0) + 1
    out += [f"fifo {n!r}: takes part in {k} links; at most one" for n, k in used.items() if k > 1]
    return out


def _check_cores(design: AieDesign) -> list[str]:
    out, seen, signatures = [], set(), {}
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
        out += _check_accesses(where, c, fifos)
        sig = kernel_signature(design, c)
        if signatures.setdefault(c.kernel, sig) != sig:
            out.append(f"{where}: kernel {c.kernel!r} is called with {list(sig)} here and "
                       f"{list(signatures[c.kernel])} on another core")
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
    issued = {}
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
        out += _check_transfer(where, op, f, buffers.get(op.buffer), bds)
    return out


def _check_transfer(where: str, op: DmaTransfer, f: ObjectFifo, buf: HostBuffer | None, bds: int) -> list[str]:
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
    if op.elements % f.numel:
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
