"""The numeric model of a mapped design: the design's data movement run with numbers, every core
running its members' ops with the AIE kernels compiled on the host, and the outputs compared with
the Dato program's own numbers (:func:`dfopt.dato.run.run`).

The data movement is :func:`dfopt.codegen.aie.sim.run`'s (object FIFOs with their depths, links
with their offsets, the runtime sequence's shim transfers) on 32-bit (or 8-bit) words: the host
buffers hold the tensors in the blocked layout the runtime sequence names (the blocks one after
another in row-major block order, each block row-major), bf16 as its 16 bits, two to a word.

Each core's kernel is what the design says a core runs: per loop iteration it gets the objects its
accesses acquired and fills the objects it produces. Inside, the members of the tile run their op
lists (the recording of the program: loads, gets, computes, allreduce steps, puts, stores) as far
as the data they have allows:

* **what it receives**: the words of every consumed object are placed by where they come from --
  a host block (buffer, element), or a word another core produced (core, running count) -- the
  tables a generated kernel would hold, taken here from the design's own data movement run on
  element identities (the same run as :mod:`dfopt.codegen.aie.mapping.functional`'s); a load waits
  until its whole block has arrived, a get until its whole token has;
* **what it sends**: the words of each FIFO a core produces are its members' puts, stores and
  partial sums on the ports that FIFO carries, in member order and, per member, in program order;
  an object must be filled when the loop releases it, so a word the members have not computed by
  then is a fault (*the kernel cannot send what it has not computed*: the loop acquires the FIFO
  too early for the op order), named with the core, the iteration, the FIFO and what the members
  wait for;
* a stream between members of one tile is a local buffer; an allreduce is a chain of partial sums
  along its axis (the mapping's reduction edges), each step an ``add`` kernel call;
* computes run the op kernels of :mod:`dfopt.codegen.aie.kernels` compiled on the host (g++) and
  called through ctypes (``kernels="numpy"`` runs their NumPy reference instead).

The outputs (what the shim transfers wrote into the host buffers, unblocked) must equal the
program's numbers from :func:`dfopt.dato.run.run` on the same inputs: bf16 within two bf16 ulps of
the larger magnitude (the kernels sum in another order than NumPy), that magnitude at least 1/256 of
the tensor's largest (a sum that cancels to near zero keeps its terms' rounding error) and, for a
sum, at least the sum of its terms' magnitudes at that element (the reference's
:attr:`~dfopt.dato.run.RunResult.scale`: a prefix rounded to bf16 along an allreduce chain is rounded
at its own magnitude, so 30.2 + -38.6 is exact only to the ulps of its terms), f32 within
``1e-4`` of the tensor's largest magnitude. A word never written, a member that never finishes
(what it waits for) and a FIFO left with unread words are faults too.

The run records what each core's kernel does, call by call (:class:`Trace`): the emitter writes
that as the core's C++ (:mod:`dfopt.codegen.aie.mapping.glue`), and ``make sim`` runs those
sources, compiled, in the same data movement.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> inst = load("instances/mapping/ffn-2x4.json")
>>> report = numeric_check(inst, solve_instance(inst), kernels="numpy")
>>> report.faults, sorted(report.errors)
([], ['Y'])
"""

from __future__ import annotations

import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dfopt.codegen.aie.design import AieDesign
from dfopt.codegen.aie.kernels import OPS, HostKernels, TileOp, from_bits, reference, to_bits
from dfopt.codegen.aie.mapping.host import _flat
from dfopt.codegen.aie.sim import CORE_BASE, UNWRITTEN, WRITER_SHIFT, AieRun, run
from dfopt.dato.record import Op, Recording, TaskInstance
from dfopt.dato.run import WAIT, Channels, RunError, Runner, tensor_data
from dfopt.dato.run import run as run_program
from dfopt.errors import CodegenError
from dfopt.ir.itensor import DTYPE_BITS
from dfopt.reference import to_bf16

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution

__all__ = ["numeric_check", "NumericReport", "Trace", "Buffer", "tile_ops", "host_buffers", "pack", "unblock",
           "compare_outputs", "report_text"]

_INDEX = (1 << WRITER_SHIFT) - 1
#: bf16 outputs: the error allowed, in bf16 ulps of the larger magnitude, that magnitude taken as at
#: least 1/BF16_FLOOR of the tensor's largest (a sum that cancels to near zero keeps the absolute
#: rounding error of its terms) and at least a sum's terms' magnitudes there; f32: relative to the max
BF16_ULPS = 2
BF16_FLOOR = 256
F32_RTOL = 1e-4


class _Unsent(Exception):
    """A core must fill an object with words its members have not computed."""


@dataclass
class NumericReport:
    """The numeric run: faults (empty: the design computes the program's numbers), the outputs it
    wrote (unblocked), the reference, the error per output (bf16 ulps, or relative for f32), the
    kernels called and the figures ``make sim`` prints."""

    design: AieDesign
    run: AieRun | None
    faults: list = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    kernels: list = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    dtypes: dict = field(default_factory=dict)
    traces: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict)
    scale: dict = field(default_factory=dict)     # output -> the reference's terms' magnitudes (dfopt.dato.run)


# -- bytes of values ------------------------------------------------------------------------------

def _encode(value: np.ndarray, dtype: str) -> np.ndarray:
    """A value's bytes (row-major) as its element type stores it."""
    flat = np.asarray(value, dtype=np.float32).reshape(-1)
    if dtype == "bf16":
        return to_bits(flat).astype("<u2").view(np.uint8)
    if dtype in ("f32", "float32"):
        return flat.astype("<f4").view(np.uint8)
    raise CodegenError(f"the numeric model moves bf16 and f32 values; got element type {dtype}")


def _decode(raw: np.ndarray, dtype: str, shape: tuple) -> np.ndarray:
    if dtype == "bf16":
        return from_bits(raw.view("<u2")).reshape(shape)
    return raw.view("<f4").astype(np.float32).reshape(shape)


def _word_bytes(words: np.ndarray, width: int) -> np.ndarray:
    """Words (int64 bit patterns) as their little-endian bytes."""
    return words.astype("<u4").view(np.uint8) if width == 4 else words.astype(np.uint8)


def _words(raw: np.ndarray, width: int) -> np.ndarray:
    return raw.view("<u4").astype(np.int64) if width == 4 else raw.astype(np.int64)


def _width(dtype: str) -> int:
    return DTYPE_BITS.get(dtype, 8) // 8


# -- host buffers ---------------------------------------------------------------------------------

def host_buffers(design: AieDesign, rec: Recording, layouts: dict, tensors: dict) -> dict:
    """The runtime sequence's input buffers as words: each tensor in blocked layout."""
    assert design.runtime is not None
    return {b.name: pack(tensors[b.name], layouts[b.name][0], rec.tensors[b.name].type.dtype, b.dtype)
            for b in design.runtime.buffers if b.name in tensors}


def pack(x: np.ndarray, counts, dtype: str, words: str = "i32") -> np.ndarray:
    """Tensor ``x`` in blocked layout on the block grid ``counts`` (each block row-major, the blocks
    in row-major block order), as the host buffer's words (``i32`` or ``i8``)."""
    return _words(_blocked(np.asarray(x, np.float32), tuple(counts), dtype), _width(words))


def _blocked(x: np.ndarray, counts: tuple, dtype: str) -> np.ndarray:
    """The bytes of ``x`` in blocked layout on the block grid ``counts``."""
    counts = tuple(counts) or (1,) * x.ndim
    shape = x.shape
    inner = tuple(n // c for n, c in zip(shape, counts))
    split = x.reshape([d for c, i in zip(counts, inner) for d in (c, i)])
    nd = len(shape)
    order = list(range(0, 2 * nd, 2)) + list(range(1, 2 * nd, 2))
    return _encode(np.ascontiguousarray(split.transpose(order)), dtype)


def unblock(raw: np.ndarray, counts: tuple, dtype: str, shape: tuple) -> np.ndarray:
    """The tensor of ``shape`` from its bytes in blocked layout (the inverse of the host packing)."""
    counts = tuple(counts) or (1,) * len(shape)
    inner = tuple(n // c for n, c in zip(shape, counts))
    nd = len(shape)
    x = _decode(raw, dtype, tuple(counts) + inner)
    order = [k for a in range(nd) for k in (a, nd + a)]
    return np.ascontiguousarray(x.transpose(order)).reshape(shape)


# -- what a core computes with ----------------------------------------------------------------------

def tile_ops(rec: Recording, op: Op, args: list) -> TileOp | None:
    """The kernel (op, tile shape, element types) a compute op runs on ``args``, or None for an op
    no kernel covers."""
    t = rec.out_types
    arg_types = [_dtype_of(a) for a in args]
    out = t.get(op.out, "f32")
    shapes = [np.shape(a) for a in args]
    if op.fn in ("matmul", "matmul_bt", "matmul_acc") and len(args) == (3 if op.fn == "matmul_acc" else 2) \
            and len(shapes[0]) == len(shapes[1]) == 2:
        (mm, kk), (b0, b1) = shapes[0], shapes[1]
        return TileOp(op.fn, (mm, kk, b0 if op.fn == "matmul_bt" else b1), (arg_types[0], arg_types[1], out))
    if op.fn == "gelu" and len(args) == 1:
        return TileOp("gelu", (int(np.prod(shapes[0])),), (arg_types[0], out))
    if op.fn == "softmax_block" and len(args) in (1, 3) and len(shapes[0]) == 2:
        return TileOp("softmax_block", shapes[0], (t.get(op.outs[2], "f32"),))
    if op.fn == "rescale" and len(args) == 2 and len(shapes[0]) == 2:
        return TileOp("rescale", shapes[0])
    if op.fn == "normalize" and len(args) == 2 and len(shapes[0]) == 2:
        return TileOp("normalize", shapes[0], (out,))
    if op.fn == "add" and len(args) == 2 and shapes[0] == shapes[1]:
        return TileOp("add", (int(np.prod(shapes[0])),), (arg_types[0], arg_types[1], out))
    return None


class _Typed(np.ndarray):
    """A float32 array that remembers the element type it stands for (bf16 or f32)."""

    dtype_name: str = "f32"

    def __array_finalize__(self, obj):
        self.dtype_name = getattr(obj, "dtype_name", "f32")


def _typed(x: np.ndarray, dtype: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float32).view(_Typed)
    arr.dtype_name = dtype
    return arr


def _dtype_of(x) -> str:
    return getattr(x, "dtype_name", "f32")


@dataclass
class _Deferred:
    """A float product ``a @ b`` not computed yet: the allreduce step that is its one use
    accumulates it on the partial sum before it (``matmul_acc``)."""

    op: TileOp
    a: np.ndarray
    b: np.ndarray
    shape: tuple


class _Kernels:
    """Compute ops through the op kernels: compiled on the host when first called (``folder``: where
    the libraries go) or, without a folder, their NumPy reference."""

    def __init__(self, folder=None):
        self.folder = folder
        self.compiled: dict[TileOp, HostKernels] = {}
        self.calls: dict[str, int] = {}

    def __call__(self, op: TileOp, args: list) -> list:
        self.calls[op.symbol] = self.calls.get(op.symbol, 0) + 1
        flat = [np.asarray(a, np.float32).reshape(-1) for a in args]
        if self.folder is None:
            return reference(op, flat)
        if op not in self.compiled:
            self.compiled[op] = HostKernels([op], self.folder)
        return self.compiled[op].call(op, flat)


# -- a core's trace: what its kernel does, call by call ----------------------------------------------

@dataclass
class Buffer:
    """A core's local buffer: ``nbytes`` of ``dtype`` elements, what it holds (``label``)."""

    nbytes: int
    dtype: str
    label: str


@dataclass
class Trace:
    """What one core's kernel does: per call (loop iteration) the actions, over its buffers.

    Actions: ``("in", arg, src, buf, dst, n)`` copies ``n`` bytes of the acquired object ``arg``
    from byte ``src`` into buffer ``buf`` at byte ``dst``; ``("out", buf, src, arg, dst, n)`` the
    other way into a produced object; ``("op", TileOp, [(buf, element), ...])`` one kernel call
    with a pointer per argument; ``("fill", buf, n, value)`` sets ``n`` elements;
    ``("convert", (buf, element), (buf, element), n)`` changes the element type of ``n`` elements,
    ``("copy", (buf, element), (buf, element), bytes)`` copies. ``entries``: per kernel symbol the
    core calls, its parameters, ``(fifo, port, element type)`` per acquired object in order;
    ``call_kernels``: the symbol of each call (one symbol for a core with one loop body, one per
    step signature for a core with steps)."""

    tile: tuple
    kernel: str
    members: list
    entries: dict = field(default_factory=dict)
    buffers: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    call_kernels: list = field(default_factory=list)
    faults: list = field(default_factory=list)


def _runs(src: np.ndarray, bufs: np.ndarray, offs: np.ndarray) -> list[tuple[int, int, int, int]]:
    """``(src start, buf, dst start, n)`` runs where ``src`` and ``offs`` both advance by one
    within one ``buf`` (``buf < 0``: dropped)."""
    if not src.size:
        return []
    cut = np.flatnonzero((np.diff(bufs) != 0) | (np.diff(offs) != 1) | (np.diff(src) != 1)) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [src.size]])
    return [(int(src[a]), int(bufs[a]), int(offs[a]), int(b - a)) for a, b in zip(starts, ends) if bufs[a] >= 0]


# -- the cores ------------------------------------------------------------------------------------

@dataclass
class _Token:
    """One value sent between cores: a stream token, an allreduce partial sum or a stored block."""

    key: tuple              # ("stream", name, index) | ("partial", edge key, k) | ("store", tensor, block)
    dtype: str
    shape: tuple
    size: int               # bytes


class _Core:
    """One core's kernel: its members' op lists over what the tile received (see the module
    docstring), recording its :class:`Trace`."""

    def __init__(self, net: _Net, index: int, core, members: list[str], numel: dict):
        self.net, self.index, self.core, self.members = net, index, core, members
        # the bytes this core sends lie FIFO after FIFO (``base``); ``word_start`` says where the word
        # of each running count of the tag run lies (the count runs over the core's schedule, so a
        # program of steps and a loop body sending the same bytes number them differently)
        schedule = core.schedule()
        totals: dict[str, int] = {}
        for call, repeat in schedule:
            for a in call.accesses:
                if a.port == "produce":
                    totals[a.fifo] = totals.get(a.fifo, 0) + numel[a.fifo] * a.count * repeat
        self.base, nbytes = {}, 0
        for fifo, words in totals.items():
            self.base[fifo] = nbytes
            nbytes += words * net.widths[fifo]
        starts, at = [], dict.fromkeys(totals, 0)
        for call, repeat in schedule:
            for _ in range(repeat):
                for a in call.accesses:
                    if a.port == "produce":
                        n, w = numel[a.fifo] * a.count, net.widths[a.fifo]
                        starts.append(self.base[a.fifo] + (at[a.fifo] + np.arange(n, dtype=np.int64)) * w)
                        at[a.fifo] += n
        self.word_start = np.concatenate(starts + [np.zeros(1, np.int64)])
        # where the bytes of every word this core produces come from: (token id, byte in the token)
        self.ident_token = np.zeros(nbytes, np.int64)
        self.ident_offset = np.zeros(nbytes, np.int64)
        self.local: dict[tuple, deque] = {}                        # stream / partial key -> values
        # ("block", name, b) | ("token", id) -> [bytes, have, buffer, value]
        self.slots: dict[tuple, list] = {}
        self.next_get: dict[str, int] = {}                         # stream -> index of the next get
        # (fifo, lane) -> per member: chunks of (bytes, token ids, byte in token, source buffer, byte in it)
        self.outbox: dict[tuple, list[list]] = {}
        self.sent: dict[str, int] = {}                             # fifo -> bytes sent
        self.lane_sent: dict[tuple, int] = {}                      # (fifo, lane) -> bytes sent on it
        self.received: dict[str, int] = {}                         # fifo -> words consumed so far
        self.trace = Trace(core.tile, core.kernel, list(members))
        self._mem: list[tuple[int, int, int, np.ndarray]] = []     # (start, end, buf, array): Python memory -> buffer
        self.channels = _CoreChannels(self)
        self.runner = Runner(net.rec, [net.rec.instances[v] for v in members], self.channels)

    # buffers ----------------------------------------------------------------------------------------
    def alloc(self, nbytes: int, dtype: str, label: str) -> int:
        self.trace.buffers.append(Buffer(nbytes, dtype, label))
        return len(self.trace.buffers) - 1

    def bind(self, arr: np.ndarray, buf: int) -> None:
        start = arr.__array_interface__["data"][0]
        self._mem.append((start, start + arr.nbytes, buf, arr))

    def new(self, shape: tuple, dtype: str, label: str, value: float | None = None) -> np.ndarray:
        """A fresh value in a buffer of its own (``value``: filled with it, an action)."""
        arr = _typed(np.zeros(shape, np.float32) if value is None else np.full(shape, value, np.float32), dtype)
        n = int(np.prod(shape))
        buf = self.alloc(n * _width(dtype), dtype, label)
        self.bind(arr, buf)
        if value is not None:
            self.act(("fill", buf, n, float(value)))
        return arr

    def where(self, arr: np.ndarray) -> tuple[int, int] | None:
        """(buffer, element) of a value's first element; None when it is not one contiguous run of
        a buffer (a strided view)."""
        ptr = arr.__array_interface__["data"][0]
        for start, end, buf, base in self._mem:
            if start <= ptr < end or (ptr == start and arr.nbytes == 0):
                if not arr.flags.c_contiguous or ptr + arr.nbytes > end:
                    return None
                return buf, (ptr - start) // base.itemsize
        return None

    def act(self, action: tuple) -> None:
        self.trace.calls[-1].append(action)

    # the kernel hook of dfopt.codegen.aie.sim.run ------------------------------------------------------
    def __call__(self, core, iteration: int, consumed: list, produce_sizes: list) -> list:
        self.trace.calls.append([])
        self.trace.call_kernels.append(core.kernel)
        self.trace.entries.setdefault(core.kernel, [(a.fifo, a.port, self.net.fifo_dtype[a.fifo])
                                                    for a in core.accesses for _ in range(a.count)])
        arg, objs = 0, iter(consumed)
        for a in core.accesses:
            if a.port == "consume":
                for obj in next(objs):
                    self._ingest(a.fifo, obj, arg)
                    arg += 1
            else:
                arg += a.count
        self.runner.settle()
        out, arg, sizes = [], 0, iter(produce_sizes)
        for a in core.accesses:
            for _ in range(a.count):
                if a.port == "produce":
                    out.append(self._fill(a.fifo, next(sizes), iteration, arg))
                arg += 1
        return out

    def _slot(self, key: tuple, nbytes: int, dtype: str, label: str) -> list:
        if key not in self.slots:
            self.slots[key] = [np.zeros(nbytes, np.uint8), np.zeros(nbytes, bool), self.alloc(nbytes, dtype, label),
                               None]
        return self.slots[key]

    def _ingest(self, fifo: str, words: np.ndarray, arg: int) -> None:
        net = self.net
        width = net.widths[fifo]
        pos = self.received.get(fifo, 0)
        tags = net.tags[(self.core.tile, fifo)][pos:pos + words.size]
        self.received[fifo] = pos + words.size
        raw = _word_bytes(words, width)
        writer, index = np.repeat(tags >> WRITER_SHIFT, width), np.repeat(tags & _INDEX, width)
        lane = np.tile(np.arange(width), words.size)
        dst_buf = np.full(raw.size, -1, np.int64)
        dst_off = np.zeros(raw.size, np.int64)
        written = np.repeat(tags != UNWRITTEN, width)
        for w in np.unique(writer[written]):
            sel = (writer == w) & written
            if w > CORE_BASE:
                src = net.cores[int(w) - CORE_BASE - 1]
                byte_pos = src.word_start[index[sel]] + lane[sel]
                tok, off = src.ident_token[byte_pos], src.ident_offset[byte_pos]
                keys = [("token", int(t)) for t in np.unique(tok)]
                for key in keys:
                    t = net.token_list[key[1]]
                    slot = self._slot(key, t.size, t.dtype, f"{t.key[0]} {t.key[1]} #{t.key[2]}")
                    k = tok == key[1]
                    self._place(slot, off[k], raw[sel][k], dst_buf, dst_off, np.flatnonzero(sel)[k])
            else:
                name = net.buffer_names[int(w) - 1]
                counts, block_bytes = net.layouts[name]
                byte_pos = index[sel] * width + lane[sel]
                blocks = byte_pos // block_bytes
                for b in np.unique(blocks):
                    k = blocks == b
                    slot = self._slot(("block", name, int(b)), block_bytes, net.rec.tensors[name].type.dtype,
                                      f"{name} block {int(b)}")
                    self._place(slot, byte_pos[k] - b * block_bytes, raw[sel][k], dst_buf, dst_off,
                                np.flatnonzero(sel)[k])
        for src_start, buf, dst, n in _runs(np.arange(raw.size), dst_buf, dst_off):
            self.act(("in", arg, src_start, buf, dst, n))

    @staticmethod
    def _place(slot: list, offsets, values, dst_buf, dst_off, where) -> None:
        slot[0][offsets] = values
        slot[1][offsets] = True
        dst_buf[where] = slot[2]
        dst_off[where] = offsets

    def value_of(self, key: tuple, dtype: str, shape: tuple):
        """The value in slot ``key`` once every byte arrived, else WAIT."""
        slot = self.slots.get(key)
        if slot is None or not slot[1].all():
            return WAIT
        if slot[3] is None:
            value = _typed(_decode(slot[0].copy(), dtype, shape), dtype)
            self.bind(value, slot[2])
            slot[3] = value
        return slot[3]

    def token(self, key: tuple):
        tid = self.net.token_ids.get(key)
        if tid is None:
            return WAIT
        t = self.net.token_list[tid]
        return self.value_of(("token", tid), t.dtype, t.shape)

    def _fill(self, fifo: str, n: int, iteration: int, arg: int) -> np.ndarray:
        """The next object of ``fifo``: ``n`` words, lane after lane (:meth:`_Net.lanes`), each
        lane's share of the members' outbox in member order."""
        width = self.net.widths[fifo]
        need = n * width
        sent = self.sent.get(fifo, 0)
        parts: list[list[np.ndarray]] = [[], [], [], [], []]
        for lane, share in enumerate(self.net.lanes(fifo, need)):
            self._take(fifo, lane, share, iteration, parts)
        self.sent[fifo] = sent + need
        raw, toks, offs, sbuf, soff = (np.concatenate(col) for col in parts)
        self._record(self.base[fifo] + sent, toks, offs)
        for src_start, buf, dst, k in _runs(soff, sbuf, np.arange(need)):
            self.act(("out", buf, src_start, arg, dst, k))
        return _words(raw, width)

    def _pieces(self, fifo: str, lane: int, need: int) -> tuple[list, tuple | None]:
        """The next ``need`` bytes of ``lane`` of ``fifo`` as ``(member, byte in its share, bytes)``
        pieces of the outbox, and what stops them short: None (all there), ``(None, byte)`` (the
        members send fewer bytes) or ``(member, byte)`` (that member has not computed them yet)."""
        net, tile = self.net, self.core.tile
        boxes = self.outbox.get((fifo, lane), [[] for _ in self.members])
        sent, got = self.lane_sent.get((fifo, lane), 0), 0
        out: list[tuple[int, int, int]] = []
        while got < need:
            j, within = net.member_at(tile, fifo, lane, sent + got)
            if j is None:
                return out, (None, sent + got)
            have = sum(chunk[0].size for chunk in boxes[j]) - within
            if have <= 0:
                return out, (j, within)
            take = min(need - got, have, net.plan(tile, fifo, lane)[j] - (sent + got))
            out.append((j, within, take))
            got += take
        return out, None

    def _take(self, fifo: str, lane: int, need: int, iteration: int, parts: list) -> None:
        """The next ``need`` bytes of ``lane`` of ``fifo`` from the members' outbox, into ``parts``;
        _Unsent when the members have not computed them."""
        tile = self.core.tile
        pieces, short = self._pieces(fifo, lane, need)
        if short is not None and short[0] is None:
            raise _Unsent(f"core {tile} iteration {iteration}: fifo {fifo} object needs more words than its "
                          f"members send on it ({short[1]} bytes sent of {self.net.lane_total(tile, fifo, lane)}"
                          f"{f' on part {lane}' if lane else ''})")
        if short is not None:
            waits = "; ".join(self.runner.waiting()) or "nothing (finished)"
            raise _Unsent(f"core {tile} iteration {iteration}: fifo {fifo} must carry member "
                          f"{self.members[short[0]]}'s data (byte {short[1]}) before it is computed; the members "
                          f"wait for: {waits}")
        boxes = self.outbox.setdefault((fifo, lane), [[] for _ in self.members])
        for j, within, take in pieces:
            box = boxes[j]
            if len(box) > 1:
                box[:] = [tuple(np.concatenate(col) for col in zip(*box))]
            for col, arr in zip(parts, box[0]):
                col.append(arr[within:within + take])
        self.lane_sent[(fifo, lane)] = self.lane_sent.get((fifo, lane), 0) + need

    def can_fill(self, fifo: str, n: int) -> bool:
        """Whether the members have computed the next ``n`` words this core sends on ``fifo``."""
        return all(self._pieces(fifo, lane, need)[1] is None
                   for lane, need in enumerate(self.net.lanes(fifo, n * self.net.widths[fifo])))

    def _record(self, start: int, toks: np.ndarray, offs: np.ndarray) -> None:
        """Where the produced bytes from ``start`` come from (for the cores that receive them)."""
        self.ident_token[start:start + toks.size] = toks
        self.ident_offset[start:start + toks.size] = offs

    def send(self, member: str, fifo: str, key: tuple, value: np.ndarray, dtype: str) -> None:
        raw = _encode(value, dtype)
        tid = self.net.register(_Token(key, dtype, tuple(np.shape(value)), raw.size))
        at = self.where(value)
        if at is None:
            self.trace.faults.append(f"{member}: sends {key[0]} {key[1]} from a strided view")
            at = (-1, 0)
        lane = self.net.lane_of(self.core.tile, fifo, member, key)
        boxes = self.outbox.setdefault((fifo, lane), [[] for _ in self.members])
        boxes[self.members.index(member)].append(
            (raw, np.full(raw.size, tid, np.int64), np.arange(raw.size, dtype=np.int64),
             np.full(raw.size, at[0], np.int64), at[1] * _width(dtype) + np.arange(raw.size, dtype=np.int64)))

    def kernel_call(self, kop: TileOp, arrays: list, where: str) -> None:
        """Call ``kop`` on ``arrays`` (the arguments, written ones in place) and record it."""
        results = self.net.kernels(kop, arrays)
        for i, name in enumerate(OPS[kop.op][1]):
            if name in OPS[kop.op][2]:
                np.copyto(arrays[i].reshape(-1), results[i])
        ptrs = [self.where(a) for a in arrays]
        if any(p is None for p in ptrs):
            self.trace.faults.append(f"{where}: {kop.op} reads a strided view")
        for a, t in zip(arrays, kop.arg_types()):
            if _dtype_of(a) != t:
                self.trace.faults.append(f"{where}: {kop.op} takes {t} where the value is {_dtype_of(a)}")
        self.act(("op", kop, ptrs))


class _CoreChannels(Channels):
    """The member ops' data at one core: local buffers, what the tile received, its outbox."""

    def __init__(self, core: _Core):
        self.c, self.net = core, core.net
        self.rec = core.net.rec

    def _fifo(self, inst: TaskInstance, name: str | None, dirn: str, kind: str) -> str | None:
        return self.net.fifo_of(inst.name, str(name), dirn, kind)

    def wanted(self, inst: TaskInstance, op: Op) -> str | None:
        """The FIFO whose data the op ``inst`` waits at comes on (None: a local buffer)."""
        if op.kind == "get":
            return self._fifo(inst, op.stream, "in", "stream")
        if op.kind == "load":
            return self._fifo(inst, op.name, "in", "host")
        if op.kind == "allreduce":
            group = self.rec.groups[op.group]
            me = group.members.index(inst.name)
            edge = self.net.edge_into.get((group.members[me - 1], inst.name)) if me > 0 else None
            return self._fifo(inst, edge, "in", "stream") if edge else None
        return None

    def get(self, inst, op):
        fifo = self._fifo(inst, op.stream, "in", "stream")
        if fifo is None:
            q = self.c.local.get(("stream", op.stream))
            return q.popleft() if q else WAIT
        k = self.c.next_get.get(str(op.stream), 0)
        value = self.c.token(("stream", op.stream, k))
        if value is not WAIT:
            self.c.next_get[str(op.stream)] = k + 1
        return value

    def put(self, inst, op, value):
        dtype = self.rec.streams[op.stream].type.elem.dtype
        fifo = self._fifo(inst, op.stream, "out", "stream")
        if fifo is None:
            self.c.local.setdefault(("stream", op.stream), deque()).append(value)
            return
        k = self.net.puts.get(str(op.stream), 0)
        self.net.puts[str(op.stream)] = k + 1
        self.c.send(inst.name, fifo, ("stream", op.stream, k), value, dtype)

    def load(self, inst, op):
        tensor = self.rec.tensors[op.name]
        counts, _ = self.net.layouts[op.name]
        shape = tuple(n // c for n, (c, _) in zip(tensor.type.shape, op.block))
        return self.c.value_of(("block", op.name, _flat(op.block, counts)), tensor.type.dtype, shape)

    def store(self, inst, op, value):
        dtype = self.rec.tensors[op.name].type.dtype
        fifo = self._fifo(inst, op.name, "out", "host")
        if fifo is None:
            raise CodegenError(f"virtual node {inst.name}: stores {op.name} but the design has no FIFO for it")
        self.c.send(inst.name, fifo, ("store", op.name, op.block), value, dtype)

    def partial(self, inst, op, before, k):
        edge = self.net.edge_into.get((before, inst.name))
        fifo = self._fifo(inst, edge, "in", "stream") if edge else None
        if fifo is None:
            q = self.c.local.get(("partial", before, k))
            return q.popleft() if q else WAIT
        return self.c.token(("partial", edge, k))

    def publish(self, inst, op, k, prefix):
        nxt = self.net.next_member.get(inst.name)
        if nxt is None:
            return
        edge = self.net.edge_into[(inst.name, nxt)]
        fifo = self._fifo(inst, edge, "out", "stream")
        if fifo is None:
            self.c.local.setdefault(("partial", inst.name, k), deque()).append(prefix)
            return
        self.c.send(inst.name, fifo, ("partial", edge, k), prefix, self.rec.out_types.get(op.out, "f32"))

    def combine(self, inst, op, before, x):
        out = self.rec.out_types.get(op.out, "f32")
        where = f"virtual node {inst.name} line {op.line}"
        if before is None:                                     # the chain's first member: its own value
            if _dtype_of(x) == out:
                return x
            res = self.c.new(np.shape(x), out, f"{inst.name} line {op.line} allreduce")
            res[...] = _typed(x, out) if out == "f32" else _typed(to_bf16(np.asarray(x, np.float32)), out)
            self.c.act(("convert", self.c.where(x), self.c.where(res), int(np.prod(np.shape(x)))))
            return res
        if isinstance(x, _Deferred):                           # before + a @ b: the product accumulates on it
            res = self.c.new(x.shape, out, f"{inst.name} line {op.line} allreduce")
            res[...] = before
            self.c.act(("copy", self.c.where(before), self.c.where(res), res.nbytes // 4 * _width(out)))
            self.c.kernel_call(TileOp("matmul_acc", x.op.shape, x.op.dtypes), [x.a, x.b, res], where)
            return res
        kop = TileOp("add", (int(np.prod(np.shape(x))),), (_dtype_of(before), _dtype_of(x), out))
        res = self.c.new(np.shape(x), out, f"{inst.name} allreduce line {op.line}")
        self.c.kernel_call(kop, [before, x, res], where)
        return res

    def _accumulates(self, inst, op, out: str) -> bool:
        """Whether a float product's one use is an allreduce step with a partial sum before it: then
        it accumulates on that partial sum in place (no buffer for the product)."""
        readers = [o for o in inst.ops if op.out in o.reads]
        if out != "f32" or len(readers) != 1 or readers[0].kind != "allreduce" \
                or any(v[0] == op.out for v in self.rec.views.values()):
            return False
        step = readers[0]
        group = self.rec.groups[step.group]
        return self.rec.out_types.get(step.out, "f32") == "f32" and group.members.index(inst.name) > 0

    def compute(self, inst, op, args):
        where = f"virtual node {inst.name} line {op.line}"
        kop = tile_ops(self.rec, op, args)
        if kop is None:
            raise CodegenError(f"{where}: compute {op.fn!r} on {[np.shape(a) for a in args]} has no AIE kernel "
                               "(dfopt.codegen.aie.kernels)")
        t = self.rec.out_types
        out = t.get(op.out, "f32")
        label = f"{inst.name} line {op.line} {op.fn}"
        new = self.c.new
        if kop.op == "matmul" and self._accumulates(inst, op, out):
            return _Deferred(kop, args[0], args[1], (kop.shape[0], kop.shape[2]))
        if kop.op in ("matmul", "matmul_bt"):
            m, _, n = kop.shape
            res = new((m, n), out, label)
            self.c.kernel_call(kop, [args[0], args[1], res], where)
            return res
        if kop.op == "matmul_acc":
            self.c.kernel_call(kop, [args[0], args[1], args[2]], where)
            return args[2]
        if kop.op == "gelu":
            res = new(np.shape(args[0]), out, label)
            self.c.kernel_call(kop, [args[0], res], where)
            return res
        if kop.op == "add":
            res = new(np.shape(args[0]), out, label)
            self.c.kernel_call(kop, [args[0], args[1], res], where)
            return res
        if kop.op == "softmax_block":
            r, c = kop.shape
            if len(args) == 3:
                m, l_ = args[1], args[2]
            else:
                m, l_ = new((r,), "f32", f"{label} m", -np.inf), new((r,), "f32", f"{label} l", 0.0)
            types = [t.get(v, "f32") for v in op.outs]
            p, alpha = new((r, c), types[2], f"{label} p"), new((r,), "f32", f"{label} alpha")
            self.c.kernel_call(kop, [args[0], m, l_, p, alpha], where)
            return (m, l_, p, alpha)
        if kop.op == "rescale":
            self.c.kernel_call(kop, [args[0], args[1]], where)
            return args[0]
        res = new(np.shape(args[0]), out, label)                            # normalize
        self.c.kernel_call(kop, [args[0], args[1], res], where)
        return res


class _Net:
    """Everything the cores share: the recording, the design's tables, the tokens sent."""

    def __init__(self, rec: Recording, design: AieDesign, m, tags: dict, kernels: _Kernels, core_class=None):
        assert design.runtime is not None
        self.rec, self.design, self.m, self.tags, self.kernels = rec, design, m, tags, kernels
        self.widths = {f.name: _width(f.dtype) for f in design.fifos}
        self.fifo_dtype = {f.name: f.dtype for f in design.fifos}
        self.layouts = m.layouts
        self.buffer_names = [b.name for b in design.runtime.buffers]
        self.token_list: list[_Token] = []
        self.token_ids: dict[tuple, int] = {}
        self.puts: dict[str, int] = {}
        self.edge_into: dict[tuple, str] = {}
        self.next_member: dict[str, str] = {}
        from dfopt.dato.graph import reduction_edges

        for src, dst, key, _ in reduction_edges(rec):
            self.edge_into[(src, dst)] = key
            self.next_member[src] = dst
        self._plan: dict[tuple, list] = {}
        numel = {f.name: f.numel for f in design.fifos}
        make = core_class or _Core
        self.cores = [make(self, i, c, list(m.ev.members[c.tile]), numel) for i, c in enumerate(design.cores)]

    def register(self, token: _Token) -> int:
        tid = len(self.token_list)
        self.token_list.append(token)
        self.token_ids[token.key] = tid
        return tid

    def fifo_of(self, node: str, name: str, dirn: str, kind: str) -> str | None:
        for i, p in enumerate(self.m.d.ports[node]):
            if p.kind == kind and p.name == name and p.dir == dirn:
                return self.m.fifo_of.get((node, i))
        return None

    def _split(self, fifo: str):
        """The distribute link ``fifo`` feeds (its parts go to several tiles), or None."""
        ln = self.design.link_of(fifo)
        return ln if ln is not None and len(ln.outputs) > 1 and ln.inputs[0] == fifo else None

    def lanes(self, fifo: str, nbytes: int) -> list[int]:
        """The bytes of each lane in one ``nbytes`` object sent on ``fifo``: one lane, or, for the
        input of a distribute link, one per output (its part of every object, in the link's
        order: each part goes to its own tile)."""
        ln = self._split(fifo)
        if ln is None:
            return [nbytes]
        return [self.design.fifo(name).numel * self.widths[fifo] for name in ln.outputs]

    def lane_of(self, tile: tuple, fifo: str, member: str, key: tuple) -> int:
        """The lane of ``fifo`` a value a member sends goes on: the output of the distribute link
        that reaches the tile of the stream's consumer (0 without a distribute)."""
        ln = self._split(fifo)
        if ln is None or key[0] == "store":
            return 0
        dst = self._dest(key[1])
        for lane, name in enumerate(ln.outputs):
            if dst in self.design.fifo(name).consumers:
                return lane
        raise CodegenError(f"virtual node {member}: sends {key[0]} {key[1]} on fifo {fifo}, whose link reaches no tile "
                           f"of its consumer {dst}")

    def _dest(self, stream: str) -> tuple | None:
        s = self.m.streams.get(stream)
        return self.m.where.get(s.dst) if s is not None else None

    def plan(self, tile: tuple, fifo: str, lane: int = 0) -> list:
        """Per member of ``tile``: the bytes it sends on ``lane`` of ``fifo`` over the run (cumulative
        ends)."""
        key = (tile, fifo, lane)
        if key not in self._plan:
            ln = self._split(fifo)
            reach = set(self.design.fifo(ln.outputs[lane]).consumers) if ln is not None else None
            ends, total = [], 0
            for v in self.m.ev.members[tile]:
                total += sum(p.bytes for i, p in enumerate(self.m.d.ports[v])
                             if p.dir == "out" and self.m.fifo_of.get((v, i)) == fifo
                             and (reach is None or self._dest(p.name) in reach))
                ends.append(total)
            self._plan[key] = ends
        return self._plan[key]

    def lane_total(self, tile: tuple, fifo: str, lane: int) -> int:
        """The bytes ``tile``'s members send on ``lane`` of ``fifo`` over the run."""
        ends = self.plan(tile, fifo, lane)
        return ends[-1] if ends else 0

    def fifo_total(self, tile: tuple, fifo: str) -> int:
        """The bytes ``tile``'s members send on ``fifo`` over the run."""
        return sum(self.lane_total(tile, fifo, lane) for lane in range(len(self.lanes(fifo, 0))))

    def member_at(self, tile: tuple, fifo: str, lane: int, pos: int) -> tuple:
        """(member index, byte within its share) of byte ``pos`` of what ``tile`` sends on ``lane``
        of ``fifo``."""
        start = 0
        for j, end in enumerate(self.plan(tile, fifo, lane)):
            if pos < end:
                return j, pos - start
            start = end
        return None, 0


# -- the check ------------------------------------------------------------------------------------

def numeric_check(instance: Instance, solution: Solution, program=None, tensors: dict | None = None,
                  seed: int = 0, kernels: str = "compiled", workdir=None, built: tuple | None = None) -> NumericReport:
    """Run the mapped design of ``instance`` / ``solution`` with numbers (see the module docstring).

    ``program``: the Dato program (a Program or Recording) the instance was made from (default: the
    one ``options.mapping.program`` names); ``tensors``: its inputs (default: seeded normal values,
    scaled by 1/2); ``kernels``: ``compiled`` (g++, through ctypes) or ``numpy``; ``built``: the design
    and recounted mapping when the caller has built them (``_design``)."""
    from dfopt.codegen.aie.mapping import _design
    from dfopt.dato.examples import check_program, program_of
    from dfopt.dato.frontend import recording

    if kernels not in ("compiled", "numpy"):
        raise ValueError(f"kernels must be 'compiled' or 'numpy', got {kernels!r}")
    rec = recording(program if program is not None else program_of(instance))
    check_program(instance, rec, "program")
    design, m = built if built is not None else _design(instance, solution)
    report = NumericReport(design, None)
    t0 = time.perf_counter()
    if tensors is None:
        tensors = _random_inputs(rec, seed)
    data, _ = tensor_data(rec, tensors)
    report.inputs = {name: data[name] for name in tensors}
    ref = run_program(rec, data)
    report.reference = {k: v for k, v in ref.tensors.items()
                        if any(op.kind == "store" and op.name == k for i in rec.instances.values() for op in i.ops)}
    report.scale = {k: v for k, v in ref.scale.items() if k in report.reference}
    ident = run(design)
    if not ident.ok:
        report.run = ident
        report.faults = [f"deadlock: {w}" for w in ident.blocked] + ident.faults
        return report
    with tempfile.TemporaryDirectory(prefix="dfopt-kernels-") as tmp:
        k = _Kernels((workdir or tmp) if kernels == "compiled" else None)
        net = _Net(rec, design, m, ident.received, k)
        inputs = host_buffers(design, rec, m.layouts, data)
        try:
            result = run(design, inputs, {c.core.tile: c for c in net.cores})
        except _Unsent as err:
            report.faults.append(str(err))
            return report
        except RunError as err:
            report.faults.append(f"a member cannot run: {err}")
            return report
    report.run = result
    report.traces = [c.trace for c in net.cores]
    report.kernels = sorted(k.calls)
    report.faults += [f"deadlock: {w}" for w in result.blocked] + result.faults
    for c in net.cores:
        report.faults += [f"core {c.core.tile}: {w}" for w in c.runner.waiting()]
        for fifo in sorted(set(c.sent) | {f for f, _ in c.outbox}):
            sent = c.sent.get(fifo, 0)
            if sent != net.fifo_total(c.core.tile, fifo):
                report.faults.append(f"core {c.core.tile}: sends {sent} bytes on fifo {fifo}, its members "
                                     f"{net.fifo_total(c.core.tile, fifo)}")
    assert design.runtime is not None
    compare_outputs(report, {b.name: (rec.tensors[b.name].type.dtype, m.layouts[b.name][0], b.dtype)
                             for b in design.runtime.buffers}, result)
    report.summary = {"cores": len(design.cores), "fifos": len(design.fifos),
                      "objects": sum(result.objects.values()), "kernel_calls": sum(k.calls.values()),
                      "kernels": len(k.calls), "wall_s": round(time.perf_counter() - t0, 3)}
    return report


def _random_inputs(rec: Recording, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    loaded = sorted({op.name for i in rec.instances.values() for op in i.ops if op.kind == "load"})
    return {name: (rng.standard_normal(rec.tensors[name].type.shape) * 0.5).astype(np.float32) for name in loaded}


def compare_outputs(report: NumericReport, tensors: dict, result: AieRun) -> None:
    """Unpack each output host buffer of ``result`` and compare it with ``report.reference``
    (``tensors``: name -> (element type, block grid, host word type)); faults and errors into
    ``report``."""
    for name, ref in sorted(report.reference.items()):
        words = result.outputs.get(name)
        dtype, counts, word_type = tensors[name]
        if words is None:
            report.faults.append(f"output {name}: no transfer writes it")
            continue
        if (words == UNWRITTEN).any():
            report.faults.append(f"output {name}: {int((words == UNWRITTEN).sum())} words never written")
            continue
        got = unblock(_word_bytes(words, _width(word_type)), counts, dtype, ref.shape)
        report.outputs[name] = got
        report.dtypes[name] = dtype
        errs = _errors(got, ref, dtype, report.scale.get(name))
        err = float(errs.max()) if errs.size else 0.0
        report.errors[name] = err
        limit = BF16_ULPS if dtype == "bf16" else F32_RTOL
        if not err <= limit:
            where = np.unravel_index(int(np.argmax(errs)), ref.shape)
            report.faults.append(f"output {name}: {err:.3g} {'bf16 ulps' if dtype == 'bf16' else 'relative'} from "
                                 f"the program's numbers (allowed {limit}); worst at {tuple(map(int, where))}: "
                                 f"{float(got[where]):.6g} vs {float(ref[where]):.6g}")


def _errors(got: np.ndarray, ref: np.ndarray, dtype: str, scale: np.ndarray | None = None) -> np.ndarray:
    """The error of every element: bf16 in ulps (of the larger magnitude, at least 1/BF16_FLOOR of
    the tensor's largest and at least ``scale``, the reference's terms' magnitudes there), f32
    relative to the tensor's largest magnitude; inf where NaN."""
    diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    if not diff.size:
        return diff
    if dtype == "bf16":
        mag = np.maximum(np.maximum(np.abs(got), np.abs(ref)).astype(np.float64), float(np.abs(ref).max()) / BF16_FLOOR)
        if scale is not None:
            mag = np.maximum(mag, np.abs(scale).astype(np.float64))
        err = diff / np.maximum(2.0 ** (np.floor(np.log2(np.maximum(mag, 1e-30))) - 7), 2.0 ** -133)
    else:
        err = diff / (float(np.abs(ref).max()) or 1.0)
    return np.where(np.isnan(got), np.inf, err)


def report_text(report: NumericReport, title: str = "numeric model") -> str:
    """What ``make sim`` prints for a numeric run: figures, the error per output, faults, PASS/FAIL."""
    s = report.summary
    lines = []
    if s:
        calls = f"{s['kernel_calls']} calls of {s['kernels']} kernels, " if "kernels" in s else ""
        lines.append(f"{title}: {s['cores']} cores, {calls}{s['objects']} objects moved in {s['wall_s']} s")
    for name, err in sorted(report.errors.items()):
        unit = "bf16 ulps" if report.dtypes.get(name) == "bf16" else "relative error"
        lines.append(f"  output {name}: {err:.3g} {unit} from the program's numbers")
    lines += [f"  {f}" for f in report.faults]
    lines.append("PASS" if not report.faults else "FAIL")
    return "\n".join(lines) + "\n"
