"""Memory-block geometry: what one buffer or one FIFO costs in each kind of on-chip memory.

Two geometries, both of the AMD UltraScale+ fabric:

* **buffers** (kernel arrays, layout converters): :func:`bram18_count`, the cheapest single BRAM18
  true-dual-port ratio — 1Kx18, 2Kx9, 4Kx4, 8Kx2, 16Kx1 — at the buffer's depth;
* **FIFOs** (stream channels): :func:`fifo_storage`, how Vitis HLS implements one FIFO, and its
  vectorised BRAM18 count :func:`fifo_bram18_counts`; the FIFO objective ``bram18`` and the memory
  stage (:func:`memory_options` with ``fifo=True``) both count with them (docs/memory.md, "How a
  FIFO is implemented").

The FIFO rule, with its sources:

1. Vitis HLS (UG1399, ``config_storage``, https://docs.amd.com/r/en-US/ug1399-vitis-hls/config_storage)
   implements a FIFO by default (``-impl auto``/``autosrl``) as a shift register (SRL) when its depth
   is at most ``-auto_srl_max_depth`` (default 2) or its bits ``depth x width`` are at most
   ``-auto_srl_max_bits`` (default 1024), else as a RAM (``impl memory``; ``bind_storage -type
   fifo -impl {srl, lutram, bram, uram, memory}`` chooses per FIFO, UG1399 ``pragma HLS
   bind_storage``). The generated modules say which: ``*_fifo_w<W>_d<D>_S`` are shift registers,
   ``*_A`` RAMs; Xilinx/RecoNIC ``sim/scripts/xsim_compile.do`` (Vitis 2021.2) lists w1024_d2_S and
   w1024_d4_A, w145_d4_S (580 bits) and w145_d8_A (1160 bits), w128_d3_S and w128_d16_A. Dataflow
   FIFOs are 2 deep unless sized (UG1399 ``config_dataflow -fifo_depth``, default 2).
2. A shift-register FIFO of depth <= 2 is flip-flops (``width x depth``); deeper, one SRLC32E LUT
   per bit and 32 entries (UG974 SRLC32E: a LUT shifts 1 to 32 bits): ``width x ceil(depth / 32)``
   LUTs, counted as ``lutram``.
3. A RAM FIFO is one write and one read port, so a BRAM18 may also run simple-dual-port 512x36
   (UG953 RAMB18E1: "36-bit wide by 512 deep simple dual port"; the UltraScale+ 18 Kb block has the
   same ratios, AMD "Internal Memory", https://docs.amd.com/r/en-US/conversion-methodology/Internal-Memory).
   Vivado infers the RAM at its address space, the depth rounded up to a power of two (UG906,
   "Optimizing RAMB Utilization when Memory Depth is not a Power of 2": a 40K-deep RAM is mapped as
   64K), and lays it out by default as columns side by side (UG912 ``RAM_DECOMP``: "a RAM specified
   as 2K x 36 would often be configured as two 2K x 18 block RAMs arranged side by side"). A
   column of ratio DxW over ``P`` entries takes ``ceil(P / D)`` BRAM18 (a RAMB36 is two stacked,
   deeper ones cascade); :func:`fifo_bram18_count` is the least total over columns of mixed ratios
   covering the width (27 x 2048: a 2Kx18 RAMB36 + a 2Kx9 RAMB18 = 3, not four 1Kx18).
4. A FIFO bound to URAM takes ``ceil(depth / 4096) x ceil(width / 72)`` UltraRAMs (4Kx72, UG949
   "Mapping Memories to UltraRAM Blocks").

Not modelled: Vivado's own choice for ``impl memory`` (``ram_style "auto"``, undocumented
heuristics, UG901 ``RAM_STYLE``) may put a shallow wide RAM FIFO in LUTRAM, which is counted as
BRAM here; above 16K entries Vivado cascades 1-bit columns by default (UG906: 40K x 36 in 72
RAMB36) where the packing counts 2Kx9 stacks (64 BRAM36).

Sources (also in docs/memory.md):
https://docs.amd.com/r/en-US/ug1399-vitis-hls/pragma-HLS-bind_storage,
https://docs.amd.com/r/en-US/ug1399-vitis-hls/config_dataflow,
https://docs.amd.com/r/en-US/ug974-vivado-ultrascale-libraries/SRLC32E,
https://docs.amd.com/r/2022.1-English/ug953-vivado-7series-libraries/RAMB18E1,
https://docs.amd.com/r/en-US/ug906-vivado-design-analysis/Optimizing-RAMB-Utilization-when-Memory-Depth-is-not-a-Power-of-2,
https://docs.amd.com/r/2023.1-English/ug912-vivado-properties/RAM_DECOMP,
https://docs.amd.com/r/2023.1-English/ug949-vivado-design-methodology/Mapping-Memories-to-UltraRAM-Blocks,
https://docs.amd.com/r/2023.1-English/ug901-vivado-synthesis/RAM_STYLE.

>>> bram18_count(32, 2), bram18_count(32, 3), bram18_count(32, 1024), bram18_count(1, 16384)
(0, 2, 2, 1)
>>> bram18_count(512, 64)
29
>>> fifo_storage(32, 2), fifo_storage(32, 32)
(FifoStorage(kind='register', impl='srl', amount=64), FifoStorage(kind='lutram', impl='srl', amount=32))
>>> fifo_storage(32, 33), fifo_storage(1024, 2).kind, fifo_storage(145, 8).kind
(FifoStorage(kind='bram18', impl='memory', amount=0.5), 'register', 'bram18')
>>> fifo_bram18_count(27, 2048), fifo_bram18_count(36, 512), fifo_bram18_count(13, 3000)
(3, 1, 3)
>>> fifo_bram18_counts([32, 32, 32, 64, 512], [2, 32, 1024, 3000, 512]).tolist()
[0, 0, 2, 15, 15]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import product

import numpy as np
import numpy.typing as npt

BRAM18_SHAPES = ((1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
BRAM18_SDP_SHAPES = ((512, 36),) + BRAM18_SHAPES   # a FIFO: one write and one read port
REGISTER_DEPTH = 2
SRL_MAX_DEPTH = 2          # config_storage -auto_srl_max_depth, default
SRL_MAX_BITS = 1024        # config_storage -auto_srl_max_bits, default
SRL_ENTRIES = 32           # SRLC32E: one LUT shifts up to 32 entries of one bit
FIFO_IMPLS = ("auto", "srl", "lutram", "bram", "memory", "uram")
LUTRAM_BITS_PER_LUT = 64
URAM_SHAPE = (4096, 72)
MEMORY_KINDS = ("register", "lutram", "bram18", "uram")
# The platform resource each memory kind consumes; ``bram`` counts 36Kb blocks (two BRAM18).
KIND_RESOURCE = {"register": "ff", "lutram": "lut", "bram18": "bram", "uram": "uram"}
# The bind_storage implementation a FIFO bound to each kind is emitted with (register: srl, depth <= 2).
KIND_IMPL = {"register": "srl", "lutram": "lutram", "bram18": "bram", "uram": "uram"}


def bram18_count(width: int, depth: int) -> int:
    """BRAM18 blocks of a ``width``-bit, ``depth``-entry buffer: the cheapest single true-dual-port
    ratio at the exact depth, 0 for depth <= 2. The buffer geometry of :func:`memory_cost`; a FIFO
    counts with :func:`fifo_bram18_count`."""
    if depth <= REGISTER_DEPTH or width <= 0:
        return 0
    return min(-(-depth // d) * -(-width // w) for d, w in BRAM18_SHAPES)


def bram18_counts(widths: npt.ArrayLike, depths: npt.ArrayLike) -> np.ndarray:
    """Vectorised :func:`bram18_count` over arrays of widths and depths."""
    widths = np.asarray(widths, dtype=np.int64)
    depths = np.asarray(depths, dtype=np.int64)
    best = np.full(widths.shape, np.iinfo(np.int64).max, dtype=np.int64)
    for d, w in BRAM18_SHAPES:
        best = np.minimum(best, (-(-depths // d)) * (-(-widths // w)))
    return np.where((depths <= REGISTER_DEPTH) | (widths <= 0), 0, best)


# == FIFOs ======================================================================================

@lru_cache(maxsize=64)
def _columns(p: int) -> tuple[tuple[int, int], ...]:
    """(bits, BRAM18) of one column of each SDP ratio over ``p`` entries, dominated ones left out."""
    cols = [(w, max(1, p // d)) for d, w in BRAM18_SDP_SHAPES]
    return tuple(c for c in cols if not any(o != c and o[0] >= c[0] and o[1] <= c[1] for o in cols))


@lru_cache(maxsize=1 << 16)
def fifo_bram18_count(width: int, depth: int) -> int:
    """BRAM18 blocks of a FIFO held in block RAM (``impl bram`` / ``memory``): the depth rounded up
    to a power of two ``P``, the width covered by side-by-side columns of the SDP ratios, a column
    of ratio DxW taking ``ceil(P / D)`` blocks; the least total. Two column ratios always suffice
    (``k`` columns of one, the rest of another, ``k`` the floor or ceiling of what the first can
    cover; tests/test_fifo_storage.py checks it against a brute force).

    >>> fifo_bram18_count(32, 1024), fifo_bram18_count(32, 1500), fifo_bram18_count(72, 512)
    (2, 4, 2)
    """
    if width <= 0 or depth <= 0:
        return 0
    cols = _columns(1 << (depth - 1).bit_length())
    best = -(-width // cols[0][0]) * cols[0][1]
    for (wa, ca), (wb, cb) in product(cols, cols):
        for k in (width // wa, -(-width // wa)):
            best = min(best, ca * k + cb * -(-max(0, width - wa * k) // wb))
    return best


@lru_cache(maxsize=1)
def _remainder_table() -> np.ndarray:
    """``[e, r]``: BRAM18 of the least column mix for ``r`` < 36 bits over ``2**e`` entries, e <= 14
    (every mix tried). A 36-bit column is always among the cheapest per bit, so the least mix for
    ``w`` bits is ``w // 36`` of them plus the least mix for ``w % 36`` (tests/test_fifo_storage.py
    checks it against every mix up to 2000 bits; once it holds over 72 consecutive widths it holds
    for all, by induction on the width). From 16K entries on every column doubles with the depth."""
    table = np.zeros((15, 36), dtype=np.int64)
    for e in range(15):
        cols = _columns(1 << e)
        for r in range(1, 36):
            table[e, r] = min(c + table[e, max(0, r - w)] for w, c in cols)
    return table


def _packing(widths: np.ndarray, depths: np.ndarray) -> np.ndarray:
    """Vectorised :func:`fifo_bram18_count` (widths and depths at least 1)."""
    e = np.frexp((depths - 1).astype(np.float64))[1].astype(np.int64)    # depth rounded up: 2**e
    low = np.minimum(e, 14)
    per36 = np.maximum(1, np.left_shift(np.int64(1), low) // BRAM18_SDP_SHAPES[0][0])
    return np.left_shift((widths // 36) * per36 + _remainder_table()[low, widths % 36], np.maximum(e - 14, 0))


def srl_luts(width: int, depth: int) -> int:
    """LUTs of a shift-register FIFO: one SRLC32E per bit and 32 entries."""
    return width * -(-depth // SRL_ENTRIES)


@dataclass(frozen=True)
class FifoStorage:
    """How Vitis implements one FIFO: dfopt's memory ``kind`` (register, lutram, bram18, uram), the
    ``bind_storage`` implementation ``impl`` it comes from (srl, lutram, bram, memory, uram) and
    its ``amount`` in units of ``KIND_RESOURCE[kind]`` (FFs, LUTs, BRAM36 blocks, URAMs)."""

    kind: str
    impl: str
    amount: float

    @property
    def bram18(self) -> int:
        """BRAM18 blocks (0 unless the kind is bram18)."""
        return round(2 * self.amount) if self.kind == "bram18" else 0


def fifo_storage(width: int, depth: int, impl: str = "auto", srl_max_depth: int = SRL_MAX_DEPTH,
                 srl_max_bits: int = SRL_MAX_BITS) -> FifoStorage:
    """How Vitis HLS implements a ``width``-bit, ``depth``-entry FIFO under ``impl`` (``auto``: the
    ``config_storage`` rule with its thresholds; or a ``bind_storage`` implementation), and what
    it costs. ``srl`` of depth <= 2 is registers; ``memory`` (Vivado's choice) counts as BRAM.

    >>> fifo_storage(64, 16), fifo_storage(64, 17).kind, fifo_storage(64, 17, srl_max_bits=2048).kind
    (FifoStorage(kind='lutram', impl='srl', amount=64), 'bram18', 'lutram')
    >>> fifo_storage(512, 3, srl_max_depth=3)
    FifoStorage(kind='lutram', impl='srl', amount=512)
    >>> fifo_storage(32, 1024, "uram"), fifo_storage(32, 1024, "lutram").amount
    (FifoStorage(kind='uram', impl='uram', amount=1), 512)
    """
    if impl not in FIFO_IMPLS:
        raise ValueError(f"unknown FIFO implementation {impl!r}: expected one of {', '.join(FIFO_IMPLS)}")
    if width <= 0 or depth <= 0:
        width = depth = 0                      # holds nothing: no cost in any kind
    if impl == "auto":
        impl = "srl" if depth <= srl_max_depth or width * depth <= srl_max_bits else "memory"
    if impl == "srl":
        if depth <= REGISTER_DEPTH:
            return FifoStorage("register", impl, width * depth)
        return FifoStorage("lutram", impl, srl_luts(width, depth))
    if impl == "lutram":
        return FifoStorage("lutram", impl, -(-width * depth // LUTRAM_BITS_PER_LUT))
    if impl == "uram":
        return FifoStorage("uram", impl, -(-depth // URAM_SHAPE[0]) * -(-width // URAM_SHAPE[1]))
    return FifoStorage("bram18", impl, fifo_bram18_count(width, depth) / 2)


def fifo_bram18_counts(widths: npt.ArrayLike, depths: npt.ArrayLike, *, srl_max_depth: int = SRL_MAX_DEPTH,
                       srl_max_bits: int = SRL_MAX_BITS) -> np.ndarray:
    """BRAM18 blocks per FIFO under the ``auto`` rule of :func:`fifo_storage`: 0 for register and
    SRL FIFOs, the block-RAM packing (:func:`fifo_bram18_count`) of the others; numpy throughout.

    >>> fifo_bram18_counts([32, 33, 27], [32, 32, 2048]).tolist()
    [0, 1, 3]
    """
    widths, depths = np.broadcast_arrays(np.asarray(widths, dtype=np.int64), np.asarray(depths, dtype=np.int64))
    ram = (depths > srl_max_depth) & (widths * depths > srl_max_bits) & (widths > 0) & (depths > 0)
    out = np.zeros(widths.shape, dtype=np.int64)
    if ram.any():
        out[ram] = _packing(widths[ram], depths[ram])
    return out


# == binding a buffer to a memory kind ========================================================


def memory_cost(kind: str, width: int, depth: int, fifo: bool = False) -> float:
    """Platform resource units (``KIND_RESOURCE[kind]``) a ``width`` x ``depth`` buffer takes in
    ``kind``: flip-flops for registers, LUTs for LUTRAM (64 bits each), BRAM36 blocks for BRAM18
    (half a block per BRAM18), URAM blocks (4Kx72). A FIFO (``fifo``) costs what
    :func:`fifo_storage` says for the kind's implementation (``KIND_IMPL``): its BRAM18 count is
    the SDP packing of :func:`fifo_bram18_count`.

    >>> [memory_cost(k, 32, 1024) for k in MEMORY_KINDS]
    [32768, 512, 1.0, 1]
    >>> memory_cost("uram", 144, 5000), memory_cost("bram18", 8, 100)
    (4, 0.5)
    >>> memory_cost("bram18", 36, 512), memory_cost("bram18", 36, 512, fifo=True)
    (1.0, 0.5)
    """
    if width <= 0 or depth <= 0:
        return 0
    if kind not in KIND_RESOURCE:
        raise KeyError(kind)
    if kind == "register":
        return width * depth
    if fifo:
        return fifo_storage(width, depth, KIND_IMPL[kind]).amount
    if kind == "lutram":
        return -(-width * depth // LUTRAM_BITS_PER_LUT)
    if kind == "bram18":
        return bram18_count(width, max(depth, REGISTER_DEPTH + 1)) / 2
    return -(-depth // URAM_SHAPE[0]) * -(-width // URAM_SHAPE[1])


def memory_options(width: int, depth: int, fifo: bool = False) -> dict[str, float]:
    """The kinds a buffer may take with their cost: a FIFO the ``auto`` rule puts in registers
    (depth <= 2) is registers only; anything else is LUTRAM, BRAM18 or URAM.

    >>> memory_options(32, 2, fifo=True)
    {'register': 64}
    >>> memory_options(16, 64), memory_options(16, 64, fifo=True)
    ({'lutram': 16, 'bram18': 0.5, 'uram': 1}, {'lutram': 16, 'bram18': 0.5, 'uram': 1})
    """
    return dict(_options(width, depth, fifo))


@lru_cache(maxsize=1 << 16)
def _options(width: int, depth: int, fifo: bool) -> tuple[tuple[str, float], ...]:
    if fifo and fifo_storage(width, depth).kind == "register":
        return (("register", memory_cost("register", width, depth)),)
    return tuple((k, memory_cost(k, width, depth, fifo)) for k in ("lutram", "bram18", "uram"))
