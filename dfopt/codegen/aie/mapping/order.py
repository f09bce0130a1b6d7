"""Core programs that follow the members' op order, for designs whose one loop body cannot compute
the program.

A core's uniform loop acquires every FIFO end it uses in every iteration and releases what it
produced in the same iteration. That fits a tile whose members send a share of their data every
iteration (GEMM, FFN), not one whose members send only at the end what they computed from many
objects (a query block that arrives in quarters but is needed whole, an output block that exists
only after the last key block): there the kernel would have to send words it has not computed (the
numeric model's fault, :mod:`dfopt.codegen.aie.mapping.numeric`).

:func:`ordered_design` then gives every core a program of *steps*
(:class:`~dfopt.codegen.aie.design.Step`), found by running the design with numbers, each core
deciding its next call as it goes (:meth:`_Ordered.next_call`):

1. its members run as far as what the tile received allows;
2. a produce FIFO whose next object the members have computed (its words in member and program
   order, as the numeric model sends them) gets that object: one call acquiring it, filling it and
   releasing it;
3. else the next object of a FIFO a waiting member needs (the first member in member order whose
   FIFO has an object there at that moment): one call acquiring it, taking in its words (and
   running the members on them) and releasing it; a core with nothing it can acquire waits;
4. once every member finished, the objects still to come on each consume FIFO are taken and
   dropped; the core is done when every FIFO end has moved the objects the design moves on it.

The word identities do not depend on timing, and a bounded network of blocking processes
deadlocks or not whatever the timing, so the calls found are the core's static program and the
run that found them is its check; the numeric model and the data-movement model run it again on
the design with steps. The calls are then joined (:data:`JOINS`): the objects a call waits for
before its members compute go into that call, and the objects it fills right after it too, so
the values live in place in the objects; the most joined program that runs and whose FIFO buffers
fit the tiles (as mlir-aie allocates them) is kept, preferring one whose kernels' arenas fit too,
and FIFO depths are lowered where an arena needs the room (:func:`_fit`). Consecutive equal calls
become one step that repeats; each distinct call signature is its own kernel symbol
(``<kernel>_<n>``), all of them in one core's file with one call counter
(:mod:`dfopt.codegen.aie.mapping.glue`).
"""

from __future__ import annotations

import math
from dataclasses import replace

from dfopt.codegen.aie.checks import problems
from dfopt.codegen.aie.design import AieDesign, Core, FifoAccess, Step, memory_bytes, memref_type
from dfopt.codegen.aie.mapping.numeric import (
    _Core,
    _Kernels,
    _Net,
    _random_inputs,
    _Unsent,
    host_buffers,
)
from dfopt.codegen.aie.sim import run
from dfopt.dato.record import Recording
from dfopt.dato.run import RunError, tensor_data

__all__ = ["ordered_design", "computes"]


class _Ordered(_Core):
    """A core kernel that decides its calls in its members' op order (the module docstring)."""

    def __init__(self, net, index, core, members, numel):
        super().__init__(net, index, core, members, numel)
        self.totals = {(a.fifo, a.port): a.count * core.iterations for a in core.accesses}
        self.moved = dict.fromkeys(self.totals, 0)
        self.numel = numel
        self.views = {key: replace(core, accesses=(FifoAccess(key[0], key[1], 1),), iterations=1, steps=())
                      for key in self.totals}
        self.sequence: list[tuple[str, str]] = []

    def _next(self, key: tuple) -> Core:
        self.moved[key] += 1
        self.sequence.append(key)
        return self.views[key]

    def next_call(self, iteration: int, can) -> Core | str | None:
        """The next call (the module docstring): a Core, None when done, or what it waits for."""
        self.runner.settle()
        ready = [key for key, total in self.totals.items()
                 if key[1] == "produce" and self.moved[key] < total and self.can_fill(key[0], self.numel[key[0]])]
        wanted = []
        for st in self.runner.states:
            if st.pc < len(st.inst.ops):
                key = (self.channels.wanted(st.inst, st.inst.ops[st.pc]), "consume")
                if key[0] is not None and self.moved.get(key, 0) < self.totals.get(key, 0) and key not in wanted:
                    wanted.append(key)
        if self.runner.finished():
            wanted = [key for key, total in self.totals.items() if key[1] == "consume" and self.moved[key] < total]
        for key in ready + wanted:
            if can(self.views[key].accesses[0]):
                return self._next(key)
        if ready or wanted:
            return "waits to " + " or ".join(f"{'send on' if port == 'produce' else 'receive from'} fifo {fifo}"
                                             for fifo, port in ready + wanted)
        if not self.runner.finished():
            raise _Unsent(f"core {self.core.tile} call {iteration}: its members wait for data no FIFO it can still "
                          f"acquire brings: {'; '.join(self.runner.waiting())}")
        left = [f for (f, port), total in self.totals.items() if port == "produce" and self.moved[(f, port)] < total]
        if left:
            raise _Unsent(f"core {self.core.tile}: its members finished, but fifo {left[0]} is not full: "
                          f"{self.moved[(left[0], 'produce')]} of {self.totals[(left[0], 'produce')]} objects")
        return None


def _inputs(design: AieDesign, m, rec: Recording) -> dict:
    data, _ = tensor_data(rec, _random_inputs(rec, 0))
    return host_buffers(design, rec, m.layouts, data)


def _run(design: AieDesign, m, rec: Recording, ident, core_class=None):
    """The design run with numbers (NumPy kernels) on the tags of the identity run ``ident``: the
    cores and the run, or the reason it stopped (a word sent before it is computed, a member that
    cannot run)."""
    net = _Net(rec, design, m, ident.received, _Kernels(None), core_class=core_class)
    try:
        return net.cores, run(design, _inputs(design, m, rec), {c.core.tile: c for c in net.cores})
    except (_Unsent, RunError) as err:
        return net.cores, str(err)


def computes(design: AieDesign, m, rec: Recording, ident=None) -> list | None:
    """The cores' traces when the design's cores, as the design says they run, compute the program
    (NumPy kernels: no deadlock, no word sent before it is computed, every member finished), else
    None. ``ident``: the design's identity run, when the caller has it."""
    ident = ident if ident is not None else run(design)
    if not ident.ok:
        return None
    cores, result = _run(design, m, rec, ident)
    if isinstance(result, str) or not result.ok or not all(c.runner.finished() for c in cores):
        return None
    return [c.trace for c in cores]


def _derive(design: AieDesign, m, rec: Recording, ident) -> list[_Ordered] | str:
    """The cores' calls in op order (one FIFO object each), or why they cannot run."""
    cores, result = _run(design, m, rec, ident, _Ordered)
    if isinstance(result, str):
        return result
    if not result.ok:
        return "; ".join(result.blocked[:3])
    return [c for c in cores if isinstance(c, _Ordered)]


#: How much of a core's calls join into one call: nothing; the objects a call waits for before its
#: members compute (those values then live in the objects); those and the objects it fills right
#: after. Tried from the most joined down to nothing, the first that runs kept.
JOINS = ("objects in and out", "objects in", "none")


def _groups(c: _Ordered, depth: dict, join: str) -> list[tuple]:
    """The core's calls as steps' access lists, joined as ``join`` (:data:`JOINS`) says, at most
    ``depth`` objects of a FIFO in one call."""
    out: list[list[tuple]] = []
    busy = False                     # the current group has a call whose members computed
    for key, actions in zip(c.sequence, c.trace.calls):
        computes = any(a[0] not in ("in", "out") for a in actions)
        group = out[-1] if out else None
        fits = group is not None and sum(1 for k in group if k == key) < depth[key[0]]
        joins = (key[1] == "consume" and not busy and join != "none") or \
            (key[1] == "produce" and busy and join == "objects in and out")
        if fits and joins:
            assert group is not None
            group.append(key)
        else:
            out.append([key])
            busy = False
        busy = busy or computes
    steps = []
    for group in out:
        counts: dict[tuple, int] = {}
        for key in group:
            counts[key] = counts.get(key, 0) + 1
        steps.append(tuple(FifoAccess(fifo, port, n) for (fifo, port), n in counts.items()))
    return steps


def _with_steps(design: AieDesign, cores: list[_Ordered], join: str) -> AieDesign:
    """The design with each core's calls as steps (runs of equal calls repeat); one symbol per
    (kernel, step signature)."""
    fifos = {f.name: f for f in design.fifos}
    depth = {f.name: f.depth for f in design.fifos}
    symbols: dict[tuple, str] = {}
    numbered: dict[str, int] = {}                # kernel -> symbols made from it so far
    out = []
    for c in cores:
        runs: list[list] = []
        for accesses in _groups(c, depth, join):
            if runs and runs[-1][0] == accesses:
                runs[-1][1] += 1
            else:
                runs.append([accesses, 1])
        steps = []
        for accesses, repeat in runs:
            sig = (c.core.kernel,) + tuple((memref_type(fifos[a.fifo].dtype, fifos[a.fifo].shape), a.port, a.count)
                                           for a in accesses)
            if sig not in symbols:
                k = numbered.get(c.core.kernel, 0)
                symbols[sig], numbered[c.core.kernel] = f"{c.core.kernel}_{k}", k + 1
            steps.append(Step(symbols[sig], accesses, repeat))
        out.append(replace(c.core, steps=tuple(steps), iterations=sum(s.repeat for s in steps)))
    return replace(design, cores=tuple(out))


def ordered_design(design: AieDesign, m, rec: Recording) -> tuple[AieDesign, str]:
    """``design`` with every core following its members' op order, when its one loop body cannot
    compute the program (the module docstring); unchanged when the loop body can, or when the
    op order cannot run either. The design and a note (empty: nothing to say)."""
    ident = run(design)
    if not ident.ok or computes(design, m, rec, ident) is not None:
        return design, ""
    cores = _derive(design, m, rec, ident)
    if isinstance(cores, str):
        return design, f"the cores cannot follow their members' op order either: {cores}"
    # the most joined program that runs, fits its FIFO buffers (as mlir-aie allocates them) and, if
    # any does, its kernels' arenas too
    best = None
    for join in JOINS:
        candidate = _with_steps(design, cores, join)
        traces = computes(candidate, m, rec)
        if traces is None or problems(candidate, m.platform):
            continue
        fitted, lowered, over = _fit(candidate, m, rec, traces)
        if best is None or (best[3] and not over):
            best = (fitted, join, lowered, over)
        if not over:
            break
    if best is None:
        return design, "the cores cannot follow their members' op order within the tiles' data memory"
    chosen, join, lowered, over = best
    rename: dict[str, str] = {}
    for c in chosen.cores:
        for st in c.steps:
            rename.setdefault(st.kernel, m.unique(st.kernel))
    renamed = [replace(c, steps=tuple(replace(st, kernel=rename[st.kernel]) for st in c.steps)) for c in chosen.cores]
    chosen = replace(chosen, cores=tuple(renamed))
    note = (f"the cores follow their members' op order, a program of steps each (one loop body would have to send "
            f"data before computing it); joined into one call: {join}")
    if lowered:
        note += f"; FIFO depths lowered for the kernels' working memory at {', '.join(map(str, lowered))}"
    if over:
        note += (f"; the kernels' arenas and FIFO buffers exceed the data memory at {', '.join(map(str, over))} "
                 "(their values do not fit beside the FIFOs)")
    return chosen, note


def _least_depth(design: AieDesign, fifo) -> int:
    """The least depth of ``fifo`` the cores' steps allow: ``p + c - gcd(p, c)`` for the most
    objects its producer and each consumer take in one call (1 at a DMA or link end)."""
    most: dict[tuple, int] = {}
    for c in design.cores:
        for call, _ in c.schedule():
            for a in call.accesses:
                if a.fifo == fifo.name:
                    most[c.tile] = max(most.get(c.tile, 1), a.count)
    p = most.get(fifo.producer, 1)
    return max(p + q - math.gcd(p, q) for q in (most.get(t, 1) for t in fifo.consumers))


def _fit(design: AieDesign, m, rec: Recording, traces: list) -> tuple[AieDesign, list, list]:
    """Lower the depths of FIFOs at compute tiles whose FIFO buffers, stack and kernel arena (from
    the traces, :class:`~dfopt.codegen.aie.mapping.glue.Memory`) exceed the data memory, largest
    objects first, down to what the steps allow; kept when the design still computes. The design,
    the tiles lowered and the tiles still over."""
    from dfopt.codegen.aie.mapping.glue import Memory

    arena = {t.tile: Memory(t).arena_bytes for t in traces}
    limit = m.platform.npu["compute_tile"]["memory_bytes"]
    fitted, tiles = design, []
    while True:
        used = memory_bytes(fitted)
        over = [t for t in sorted(arena) if used.get(t, 0) + arena[t] > limit]
        movable = next(((t, fs) for t in over if (fs := [f for f in fitted.fifos if t in (f.producer, *f.consumers)
                                                         and f.depth > _least_depth(fitted, f)])), None)
        if movable is None:
            break
        tile, fs = movable
        big = max(fs, key=lambda f: (f.element_bytes, f.name))
        fitted = replace(fitted, fifos=tuple(replace(f, depth=_least_depth(fitted, f)) if f is big else f
                                             for f in fitted.fifos))
        if tile not in tiles:
            tiles.append(tile)
    if fitted is not design and computes(fitted, m, rec) is None:
        fitted, tiles = design, []
    used = memory_bytes(fitted)
    return fitted, tiles, [t for t in sorted(arena) if used.get(t, 0) + arena[t] > limit]
