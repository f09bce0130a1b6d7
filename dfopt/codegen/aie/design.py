"""A physical design for an AMD NPU (AIE2), the input of the MLIR-AIE emitter.

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
``Core.steps`` (``Step``)     the same per step, one after another (an ``scf.for`` for a step
                              that repeats), each step calling its own kernel symbol
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
of them (both run the checks of :mod:`dfopt.codegen.aie.checks`). DMA channels are counted the
way mlir-aie's object-FIFO lowering allocates them: a FIFO that needs DMAs takes one MM2S (out)
channel on its producer tile and one S2MM (in) channel on each consumer tile (a broadcast is one
MM2S); a FIFO with one consumer, outside any link, between two compute tiles that share a data
memory (AIE2: a core reaches its own memory and those of its west, north and south neighbours)
or two neighbouring mem tiles takes none
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from dfopt.ir.itensor import DTYPE_BITS
from dfopt.ir.platform import Platform, load_preset

TILE_KINDS = ("shim", "mem", "compute")
PORTS = ("consume", "produce")
#: dfopt dtype -> MLIR element type of a memref (sub-byte and f8 types are not DMA-able as is).
MLIR_DTYPES = {"i8": "i8", "u8": "ui8", "i16": "i16", "u16": "ui16", "i32": "i32", "u32": "ui32",
               "i64": "i64", "bf16": "bf16", "f16": "f16", "f32": "f32", "f64": "f64"}
#: Stack bytes mlir-aie reserves on a core by default (``aie.core`` ``stack_size`` = 0x400).
STACK_BYTES = 1024


def _coord(value: Tile | tuple[int, int]) -> tuple[int, int]:
    if isinstance(value, Tile):
        return value.coord
    col, row = value
    return (int(col), int(row))


def memref_type(dtype: str, shape: Iterable[int]) -> str:
    """The MLIR memref type of one object.

    >>> memref_type("bf16", (32, 32)), memref_type("u8", (64,))
    ('memref<32x32xbf16>', 'memref<64xui8>')
    """
    return "memref<" + "x".join(str(s) for s in shape) + "x" + MLIR_DTYPES.get(dtype, dtype) + ">"



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
class Step:
    """``repeat`` calls of ``kernel``, each acquiring ``accesses`` (in order), calling the kernel
    with the acquired objects and releasing them: one piece of a core's program."""

    kernel: str
    accesses: tuple
    repeat: int = 1

    def __post_init__(self):
        object.__setattr__(self, "accesses", tuple(self.accesses))


@dataclass(frozen=True)
class Core:
    """The program of a compute tile: ``iterations`` times acquire, call ``kernel`` (linked from
    ``object_file``) with the acquired objects and then the ``scalars`` (``i32``), release. A core
    with ``steps`` runs them in order instead (each step its own kernel symbol and accesses; the
    core's ``kernel`` and ``accesses`` then name what the steps share: the base name, every FIFO
    end once, and ``iterations`` the number of calls)."""

    tile: tuple[int, int]
    kernel: str
    object_file: str
    accesses: tuple
    iterations: int = 1
    scalars: tuple = ()
    steps: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "tile", _coord(self.tile))
        object.__setattr__(self, "accesses", tuple(self.accesses))
        object.__setattr__(self, "scalars", tuple(self.scalars))
        object.__setattr__(self, "steps", tuple(self.steps))

    def schedule(self) -> list[tuple[Core, int]]:
        """The core's program as ``(call, repeat)`` pairs: ``call`` a Core whose ``kernel`` and
        ``accesses`` are those of one call, run ``repeat`` times in a row.

        >>> c = Core((1, 2), "k", "k.o", (FifoAccess("a", "consume"),), 3)
        >>> [(call.kernel, n) for call, n in c.schedule()]
        [('k', 3)]
        >>> s = Core((1, 2), "k", "k.o", (FifoAccess("a", "consume"), FifoAccess("b", "produce")), 3,
        ...          steps=(Step("k_0", (FifoAccess("a", "consume"),), 2), Step("k_1", (FifoAccess("b", "produce"),))))
        >>> [(call.kernel, [a.fifo for a in call.accesses], n) for call, n in s.schedule()]
        [('k_0', ['a'], 2), ('k_1', ['b'], 1)]
        """
        if not self.steps:
            return [(self, self.iterations)]
        return [(replace(self, kernel=s.kernel, accesses=s.accesses, iterations=s.repeat, steps=()), s.repeat)
                for s in self.steps]

    def calls(self) -> int:
        """How many times the core calls a kernel."""
        return sum(n for _, n in self.schedule())


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
    def linear(cls, fifo: str, buffer: str, count: int, offset: int = 0, id: int = 0) -> DmaTransfer:
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
    """The host-side runtime sequence: its arguments and its transfers and waits in order.
    ``planned``: per transfer as the design planned it, before it was legalised into the buffer
    descriptor's limits, ``(DmaTransfer, pieces)`` (empty when the design was written by hand)."""

    buffers: tuple
    ops: tuple
    name: str = "sequence"
    planned: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "buffers", tuple(self.buffers))
        object.__setattr__(self, "ops", tuple(self.ops))
        object.__setattr__(self, "planned", tuple(self.planned))


@dataclass(frozen=True)
class AieDesign:
    """A whole physical design on ``device`` (an NPU platform preset name)."""

    device: str = "npu1"
    tiles: Sequence[Tile] = ()           # each sequence is stored as a tuple
    fifos: Sequence[ObjectFifo] = ()
    links: Sequence[Link] = ()
    cores: Sequence[Core] = ()
    runtime: Runtime | None = None
    notes: Sequence[str] = ()            # what its builder chose that a reader should know

    def __post_init__(self):
        for name in ("tiles", "fifos", "links", "cores", "notes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def tile(self, coord: Tile | tuple[int, int]) -> Tile:
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

    >>> from dfopt.ir.platform import load_preset
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
    usage: dict[tuple[int, int], dict[str, list[str]]] = {t.coord: {"in": [], "out": []} for t in design.tiles}
    for f in design.fifos:
        if not requires_dma(design, f):
            continue
        usage.setdefault(f.producer, {"in": [], "out": []})["out"].append(f.name)
        for c in f.consumers:
            usage.setdefault(c, {"in": [], "out": []})["in"].append(f.name)
    return usage


def consumer_buffers(design: AieDesign, fifo: ObjectFifo, tile: tuple[int, int]) -> int:
    """The objects mlir-aie allocates at the consumer end ``tile`` of a FIFO that goes over DMA:
    one more than the most the tile's core acquires at once (1 when that is 1 and the depth is
    1), the depth when no core there acquires it (``findObjectFifoSize`` in
    ``AIEObjectFifoStatefulTransform.cpp``)."""
    most = 0
    for c in design.cores:
        if c.tile == tile:
            for call, _ in c.schedule():
                most = max([most] + [a.count for a in call.accesses if a.fifo == fifo.name and a.port == "consume"])
    if most == 0:
        return fifo.depth
    return 1 if most == 1 and fifo.depth == 1 else most + 1


def memory_bytes(design: AieDesign) -> dict:
    """Data memory per tile coordinate: the objects of every FIFO end on the tile (one side only of
    a link: the input of a distribute or 1-to-1 link, the output of a join) -- ``depth`` objects,
    but at a core's consumer end of a DMA FIFO what mlir-aie allocates there
    (:func:`consumer_buffers`) -- plus the default stack on each core's tile. An over-estimate for
    FIFOs through shared memory."""
    used = {t.coord: 0 for t in design.tiles if t.kind != "shim"}
    skip: set[tuple[str, tuple[int, int]]] = set()
    for ln in design.links:
        side = ln.inputs if len(ln.inputs) > 1 else ln.outputs
        skip.update((name, ln.via) for name in side)
    cores = {c.tile for c in design.cores}
    for f in design.fifos:
        dma = requires_dma(design, f)
        for end in {f.producer, *f.consumers}:
            if end in used and (f.name, end) not in skip:
                n = consumer_buffers(design, f, end) if dma and end != f.producer and end in cores else f.depth
                used[end] += n * f.element_bytes
    for c in design.cores:
        if c.tile in used:
            used[c.tile] += STACK_BYTES
    return used


def bank_fallbacks(design: AieDesign, platform: Platform | None = None) -> list[str]:
    """Why mlir-aie's bank-aware buffer allocation (``aie-assign-buffer-addresses``, the default)
    falls back to sequential placement on a tile: an object FIFO buffer larger than one of the
    tile's banks (a mem tile's 512 KiB in 8 banks of 64 KiB, a compute tile's 64 KiB in 4 of
    16 KiB: ``AIE2TargetModel::getNumBanks``). One message per such buffer; the design still
    builds, its buffers placed one after another."""
    npu = (platform if platform is not None else load_preset(design.device)).npu
    skip: set[tuple[str, tuple[int, int]]] = set()
    for ln in design.links:
        side = ln.inputs if len(ln.inputs) > 1 else ln.outputs
        skip.update((name, ln.via) for name in side)
    kinds = {t.coord: t.kind for t in design.tiles}
    out = []
    for f in design.fifos:
        for end in sorted({f.producer, *f.consumers}):
            kind = kinds.get(end)
            spec = npu.get(f"{kind}_tile", {}) if kind in ("mem", "compute") else {}
            if not spec.get("banks") or (f.name, end) in skip:
                continue
            bank = spec["memory_bytes"] // spec["banks"]
            if f.element_bytes > bank:
                out.append(f"{kind} tile {end}: a buffer of fifo {f.name} ({f.element_bytes} bytes) is larger than "
                           f"one of its {spec['banks']} banks of {bank // 1024} KiB: mlir-aie's bank-aware "
                           "allocation falls back to sequential placement on this tile")
    return out


def kernel_signature(design: AieDesign, core: Core) -> tuple:
    """The argument types of ``core``'s kernel: one memref per acquired object, then ``i32``s (of
    one call: a core with steps has one kernel per step, :meth:`Core.schedule`)."""
    fifos = {f.name: f for f in design.fifos}
    types = []
    for a in core.accesses:
        if a.fifo in fifos:
            types += [fifos[a.fifo].element_type] * a.count
    return tuple(types) + ("i32",) * len(core.scalars)


# -- checks (in dfopt.codegen.aie.checks, which imports this module) -------------------------------

def problems(design: AieDesign, platform: Platform | None = None) -> list[str]:
    """Every reason the design would not compile with mlir-aie on ``platform`` (default: the
    preset named by ``design.device``); :func:`dfopt.codegen.aie.checks.problems`."""
    from dfopt.codegen.aie import checks
    return checks.problems(design, platform)


def validate(design: AieDesign, platform: Platform | None = None) -> AieDesign:
    """Return ``design`` if :func:`problems` finds nothing, else raise one :class:`CodegenError`
    listing every problem; :func:`dfopt.codegen.aie.checks.validate`."""
    from dfopt.codegen.aie import checks
    return checks.validate(design, platform)
