"""A functional model of an AIE design's data movement: object FIFOs with their depths, links
through mem tiles with their offsets, the cores' acquire / call / release loops and the runtime
sequence's shim transfers, run on the host element by element.

What it models (mlir-aie's object FIFO semantics, ``AIEObjectFifoStatefulTransform.cpp``):

* a FIFO that needs DMAs has ``depth`` buffers at its producer and ``depth`` at each consumer; a
  DMA moves the oldest full producer buffer to every consumer once each has a free one (a
  broadcast waits for all); a FIFO through shared memory has one pool of ``depth`` buffers;
* a core runs ``iterations`` times (a core with steps: each step, ``repeat`` times, in order,
  :meth:`~dfopt.codegen.aie.design.Core.schedule`): it acquires the call's accesses in order,
  each blocking until the objects are there (``consume``) or free (``produce``) while it holds what it already has; then
  the kernel runs on the acquired objects; then it releases them all;
* a distribute link at a mem tile takes the oldest object of its input and, once every output has
  a free producer buffer, writes each output its slice from ``dst_offsets``; a join takes one
  object of every input and writes them at ``src_offsets`` into one output object (the mem tile's
  buffers are counted on both sides of a link, one more than mlir-aie allocates);
* the shim DMA of a FIFO runs that FIFO's transfers in runtime-sequence order; a transfer reads
  (writes) the host buffer at its access pattern's addresses (``sum(offsets * strides)`` plus the
  walk of ``sizes`` / ``strides``) over one stream of the FIFO's objects: a transfer may end
  inside an object, the next one continues it; the last must end on an object boundary.

:func:`run` moves *element identities*: every input host element carries its buffer and index,
and the kernel (default: :func:`tag_kernel`) writes, into every object it produces, its core and
the running element count. The run ends when every core finished its loop and every transfer
completed, or when nothing can move (a deadlock: :attr:`AieRun.blocked` names each waiting party,
the FIFO and how many objects it has). :func:`dfopt.codegen.aie.mapping.functional` checks a run
against what the mapping says each tile reads and writes.

>>> from dfopt.codegen.aie.design import AieDesign, Core, DmaTransfer, DmaWait, FifoAccess, HostBuffer, \\
...     ObjectFifo, Runtime, Tile
>>> d = AieDesign(tiles=(Tile(1, 0, "shim"), Tile(1, 2, "compute")),
...               fifos=(ObjectFifo("a", (1, 0), ((1, 2),), "i32", (4,)),
...                      ObjectFifo("b", (1, 2), ((1, 0),), "i32", (4,))),
...               cores=(Core((1, 2), "k", "k.o", (FifoAccess("a", "consume"), FifoAccess("b", "produce")), 3),),
...               runtime=Runtime((HostBuffer("x", "i32", (12,)), HostBuffer("y", "i32", (12,))),
...                               (DmaTransfer.linear("a", "x", 12), DmaTransfer.linear("b", "y", 12),
...                                DmaWait("b"))))
>>> r = run(d)
>>> r.ok, r.objects["a"], {int(w) - CORE_BASE for w in r.outputs["y"] >> WRITER_SHIFT}  # y by core 1
(True, 3, {1})
>>> run(d.__class__(d.device, d.tiles, d.fifos, d.links,
...                 (Core((1, 2), "k", "k.o", (FifoAccess("a", "consume", 4),), 3),), d.runtime)).blocked[0]
'core (1, 2) iteration 0: acquire 4 of fifo a (consume) — 2 there, depth 2'
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dfopt.codegen.aie.bd import address_array
from dfopt.codegen.aie.design import AieDesign, Core, DmaTransfer, ObjectFifo, requires_dma

#: tag layout: bits 40.. the writer (input buffer index + 1 for host data, 2**14 + core index +
#: 1 for cores), bits 0..39 the element's index (host) or the writer's running count (cores)
WRITER_SHIFT = 40
CORE_BASE = 1 << 14
UNWRITTEN = -1


@dataclass
class AieRun:
    """The outcome of :func:`run`: ``ok`` when everything finished; ``blocked`` names who waits on
    what when nothing can move; ``outputs`` the output host buffers (tags; ``UNWRITTEN`` where no
    transfer wrote); ``received[(tile, fifo)]`` every element a core consumed from a FIFO, in
    order; ``objects[fifo]`` objects that crossed each FIFO; ``writes[buffer]`` how many times
    each output element was written; ``faults`` transfers past a buffer or ending inside an
    object."""

    ok: bool
    blocked: list = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    received: dict = field(default_factory=dict)
    objects: dict = field(default_factory=dict)
    writes: dict = field(default_factory=dict)
    faults: list = field(default_factory=list)
    steps: int = 0
    wall_s: float = 0.0


def tag_kernel(core_index: int) -> Callable:
    """The default kernel: writes ``(writer, running count)`` tags into every produced object."""
    count = [0]

    def kernel(core: Core, iteration: int, consumed: list, produce_sizes: list) -> list:
        out = []
        for n in produce_sizes:
            out.append(((CORE_BASE + core_index + 1) << WRITER_SHIFT) + count[0] + np.arange(n, dtype=np.int64))
            count[0] += n
        return out

    return kernel


class _Buf:
    """``capacity`` object buffers: ``full`` objects waiting, ``held`` of them acquired by a
    consumer, ``reserved`` free ones acquired by a producer."""

    def __init__(self, capacity: int):
        self.capacity, self.held, self.reserved = capacity, 0, 0
        self.full: deque[np.ndarray] = deque()

    def room(self) -> int:
        return self.capacity - len(self.full) - self.reserved


class _Model:
    def __init__(self, design: AieDesign, kernels: dict):
        self.d = design
        self.fifos = {f.name: f for f in design.fifos}
        self.objects = {f.name: 0 for f in design.fifos}
        self.prod: dict[str, _Buf] = {}
        self.cons: dict[tuple, _Buf] = {}
        self.dma = {f.name: requires_dma(design, f) for f in design.fifos}
        for f in design.fifos:
            self.prod[f.name] = _Buf(f.depth)
            for c in f.consumers:
                self.cons[(f.name, c)] = _Buf(f.depth) if self.dma[f.name] else self.prod[f.name]
        self.kernels = kernels
        self.received: dict = {}

    # -- DMAs between buffers ----------------------------------------------------------------------
    def move(self, f: ObjectFifo) -> bool:
        """One object from the producer's buffers to every consumer's, when each has room."""
        if not self.dma[f.name]:
            return False
        src = self.prod[f.name]
        if not src.full or any(self.cons[(f.name, c)].room() < 1 for c in f.consumers):
            return False
        obj = src.full.popleft()
        for c in f.consumers:
            self.cons[(f.name, c)].full.append(obj)
        return True

    def push(self, name: str, obj: np.ndarray) -> None:
        self.prod[name].full.append(obj)
        self.objects[name] += 1


def _calls(m: _Model, core: Core, kernel):
    """The core's calls in order: its schedule, or, for a kernel that decides its next call as it
    goes, what it asks for: ``next_call(iteration, can)`` returns a Core naming the call's kernel and
    accesses, None when it is done, or a text saying what it waits for (it is asked again once
    something moved); ``can(access)`` says whether an acquire would succeed now. A text yielded
    here is a wait."""
    if hasattr(kernel, "next_call"):
        def can(a) -> bool:
            if a.port == "consume":
                buf = m.cons[(a.fifo, core.tile)]
                return len(buf.full) - buf.held >= a.count
            return m.prod[a.fifo].room() >= a.count

        it = 0
        while (call := kernel.next_call(it, can)) is not None:
            if isinstance(call, str):
                yield f"core {core.tile} call {it}: {call}"
                continue
            yield call
            it += 1
        return
    for call, repeat in core.schedule():
        for _ in range(repeat):
            yield call


def _core_process(m: _Model, core: Core, index: int):
    """A generator: yields a wait text while blocked, returns when the loop is done."""
    kernel = m.kernels.get(core.tile) or tag_kernel(index)
    it = -1
    for call in _calls(m, core, kernel):
        if isinstance(call, str):
            yield call
            continue
        it += 1
        held: list = []
        for a in call.accesses:
            f = m.fifos[a.fifo]
            if a.port == "consume":
                buf = m.cons[(a.fifo, core.tile)]
                while len(buf.full) - buf.held < a.count:
                    yield (f"core {core.tile} iteration {it}: acquire {a.count} of fifo {a.fifo} (consume) — "
                           f"{len(buf.full) - buf.held} there, depth {f.depth}")
                buf.held += a.count
            else:
                buf = m.prod[a.fifo]
                while buf.room() < a.count:
                    yield (f"core {core.tile} iteration {it}: acquire {a.count} of fifo {a.fifo} (produce) — "
                           f"{buf.room()} free, depth {f.depth}")
                buf.reserved += a.count
            held.append((a, f, buf))
        consumed = []
        for a, _, buf in held:
            if a.port == "consume":
                objs = [buf.full[i] for i in range(a.count)]
                consumed.append(objs)
                m.received.setdefault((core.tile, a.fifo), []).extend(objs)
        sizes = [f.numel for a, f, _ in held if a.port == "produce" for _ in range(a.count)]
        produced = iter(kernel(call, it, consumed, sizes))
        for a, _, buf in held:
            if a.port == "consume":
                buf.held -= a.count
                for _ in range(a.count):
                    buf.full.popleft()
            else:
                buf.reserved -= a.count
                for _ in range(a.count):
                    m.push(a.fifo, next(produced))
        yield None


def _link_process(m: _Model, link):
    """Distribute or join objects through the mem tile ``link.via`` until its inputs run dry
    (the run ends it when everything else finished)."""
    join = len(link.inputs) > 1
    while True:
        if join:
            bufs = [m.cons[(name, link.via)] for name in link.inputs]
            out = m.prod[link.outputs[0]]
            while any(not b.full for b in bufs) or out.room() < 1:
                yield f"link at mem tile {link.via}: join {', '.join(link.inputs)} -> {link.outputs[0]}"
            hub = m.fifos[link.outputs[0]]
            obj = np.full(hub.numel, UNWRITTEN, dtype=np.int64)
            offsets = link.src_offsets or (0,) * len(link.inputs)
            for b, o in zip(bufs, offsets):
                part = b.full.popleft()
                obj[o:o + len(part)] = part
            m.push(link.outputs[0], obj)
        else:
            buf = m.cons[(link.inputs[0], link.via)]
            outs = [m.prod[name] for name in link.outputs]
            while not buf.full or any(o.room() < 1 for o in outs):
                yield f"link at mem tile {link.via}: distribute {link.inputs[0]} -> {', '.join(link.outputs)}"
            obj = buf.full.popleft()
            offsets = link.dst_offsets or (0,) * len(link.outputs)
            for name, o in zip(link.outputs, offsets):
                n = m.fifos[name].numel
                m.push(name, obj[o:o + n].copy())
        yield None


def _shim_process(m: _Model, fifo: str, ops: list, host: dict, outputs: dict, writes: dict, faults: list):
    """The shim DMA of ``fifo``: its transfers in order, over one stream of the FIFO's objects (a
    transfer may end inside an object; the next one continues it)."""
    f = m.fifos[fifo]
    shim = _shim_of(m, fifo)
    into = f.producer == shim                                     # host to array
    pending = np.zeros(0, dtype=np.int64)                         # the current object's words
    k = 0
    for op in ops:
        idx = address_array(op.sizes, op.strides, op.offsets)
        buf = host[op.buffer] if into else outputs[op.buffer]
        if idx.size and (idx.min() < 0 or idx.max() >= buf.size):
            faults.append(f"transfer on fifo {fifo} reaches element {int(idx.max())} of {op.buffer}, which has "
                          f"{buf.size}")
            idx = np.clip(idx, 0, buf.size - 1)
        pos = 0
        while pos < idx.size:
            if into:
                take = min(f.numel - pending.size, idx.size - pos)
                pending = np.concatenate([pending, buf[idx[pos:pos + take]]])
                pos += take
                if pending.size == f.numel:
                    while m.prod[fifo].room() < 1:
                        yield f"shim {shim}: transfer into fifo {fifo} (object {k}) — no free buffer"
                    m.push(fifo, pending)
                    pending, k = np.zeros(0, dtype=np.int64), k + 1
            else:
                if not pending.size:
                    src = m.cons[(fifo, shim)]
                    while not src.full:
                        yield f"shim {shim}: transfer out of fifo {fifo} (object {k}) — none arrived"
                    pending, k = src.full.popleft(), k + 1
                take = min(pending.size, idx.size - pos)
                buf[idx[pos:pos + take]] = pending[:take]
                np.add.at(writes[op.buffer], idx[pos:pos + take], 1)
                pending, pos = pending[take:], pos + take
            yield None
    if pending.size:
        faults.append(f"the transfers on fifo {fifo} end inside an object ({pending.size} of its {f.numel} "
                      "elements left)")


def _shim_of(m: _Model, fifo: str) -> tuple:
    f = m.fifos[fifo]
    kinds = {t.coord: t.kind for t in m.d.tiles}
    if kinds.get(f.producer) == "shim":
        return f.producer
    return next(c for c in f.consumers if kinds.get(c) == "shim")


def host_inputs(design: AieDesign) -> dict:
    """Tagged input host buffers: element ``i`` of the ``b``-th buffer holds ``(b + 1) << 40 | i``."""
    assert design.runtime is not None
    return {b.name: ((k + 1) << WRITER_SHIFT) + np.arange(int(np.prod(b.shape)), dtype=np.int64)
            for k, b in enumerate(design.runtime.buffers)}


def run(design: AieDesign, inputs: dict | None = None, kernels: dict | None = None,
        max_steps: int = 10_000_000) -> AieRun:
    """Run the design (see the module docstring). ``inputs``: host buffer -> flat array (default
    :func:`host_inputs`); ``kernels``: core tile -> ``kernel(call, iteration, consumed objects per
    consume access, sizes of the produced objects) -> produced objects`` (default tags), ``call``
    the Core of this call (its kernel and accesses, :meth:`~dfopt.codegen.aie.design.Core.schedule`);
    a kernel with a ``next_call`` method decides the core's calls as it goes (:func:`_calls`)."""
    t0 = time.perf_counter()
    if design.runtime is None:
        raise ValueError("the design has no runtime sequence to run")
    m = _Model(design, dict(kernels or {}))
    host = inputs if inputs is not None else host_inputs(design)
    outputs: dict = {}
    writes: dict = {}
    per_fifo: dict = {}
    for op in design.runtime.ops:
        if isinstance(op, DmaTransfer):
            per_fifo.setdefault(op.fifo, []).append(op)
    kinds = {t.coord: t.kind for t in design.tiles}
    for name, ops in per_fifo.items():
        if kinds.get(m.fifos[name].producer) != "shim":
            for op in ops:
                size = int(np.prod(next(b.shape for b in design.runtime.buffers if b.name == op.buffer)))
                outputs.setdefault(op.buffer, np.full(size, UNWRITTEN, dtype=np.int64))
                writes.setdefault(op.buffer, np.zeros(size, dtype=np.int64))
    faults: list = []
    procs = {f"core {c.tile}": _core_process(m, c, i) for i, c in enumerate(design.cores)}
    procs.update({f"shim dma of {name}": _shim_process(m, name, ops, host, outputs, writes, faults)
                  for name, ops in per_fifo.items()})
    links = [_link_process(m, ln) for ln in design.links]
    waits: dict = {}
    steps = 0
    while procs and steps < max_steps:
        progress = False
        for f in design.fifos:
            while m.move(f):
                progress = True
        for ln in links:
            while next(ln) is None:
                progress = True
        for name in list(procs):
            try:
                while (wait := next(procs[name])) is None:
                    progress = True
                    steps += 1
                waits[name] = wait
            except StopIteration:
                procs.pop(name)
                waits.pop(name, None)
                progress = True
        if not progress:
            break
    blocked = [waits[name] for name in procs if name in waits]
    received = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in m.received.items()}
    return AieRun(not procs and not faults, blocked, outputs, received, m.objects, writes, faults, steps,
                  time.perf_counter() - t0)
