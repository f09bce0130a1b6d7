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
3. else the first member (in member order) that waits for data on a FIFO gets the next object of
   that FIFO: one call acquiring it, taking in its words (and running the members on them) and
   releasing it;
4. once every member finished, the objects still to come on each consume FIFO are taken and
   dropped; the core is done when every FIFO end has moved the objects the design moves on it.

The word identities do not depend on timing, so the calls found are the core's static program.
Consecutive calls of one kind become one step that repeats (an ``scf.for``); each distinct call
signature is its own kernel symbol (``<kernel>_<n>``), all of them one core's file with one call
counter (:mod:`dfopt.codegen.aie.mapping.glue`). A bounded network of blocking processes deadlocks
or not whatever the timing, so the run that found the program is its check too; the numeric model
and the data-movement model run it again on the design with steps.
"""

from __future__ import annotations

from dataclasses import replace

from dfopt.codegen.aie.design import AieDesign, Core, FifoAccess, Step, memref_type
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

__all__ = ["ordered_design", "uniform_computes"]


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


def uniform_computes(design: AieDesign, m, rec: Recording, ident) -> bool:
    """Whether the design's cores, each one loop body, compute the program (NumPy kernels)."""
    net = _Net(rec, design, m, ident.received, _Kernels(None))
    try:
        result = run(design, _inputs(design, m, rec), {c.core.tile: c for c in net.cores})
    except (_Unsent, RunError):
        return False
    return result.ok and all(c.runner.finished() for c in net.cores)


def ordered_design(design: AieDesign, m, rec: Recording) -> tuple[AieDesign, str]:
    """``design`` with every core following its members' op order, when its one loop body cannot
    compute the program (the module docstring); unchanged when the loop body can, or when the
    op order cannot run either. The design and a note (empty: nothing to say)."""
    ident = run(design)
    if not ident.ok or uniform_computes(design, m, rec, ident):
        return design, ""
    net = _Net(rec, design, m, ident.received, _Kernels(None), core_class=_Ordered)
    try:
        result = run(design, _inputs(design, m, rec), {c.core.tile: c for c in net.cores})
    except (_Unsent, RunError) as err:
        return design, f"the cores cannot follow their members' op order either: {err}"
    if not result.ok:
        return design, f"the cores cannot follow their members' op order either: {'; '.join(result.blocked[:3])}"
    fifos = {f.name: f for f in design.fifos}
    symbols: dict[tuple, str] = {}
    cores = []
    for c in net.cores:
        assert isinstance(c, _Ordered)
        runs: list[list] = []
        for key in c.sequence:
            if runs and runs[-1][0] == key:
                runs[-1][1] += 1
            else:
                runs.append([key, 1])
        steps = []
        for (fifo, port), repeat in runs:
            types = (c.core.kernel, memref_type(fifos[fifo].dtype, fifos[fifo].shape), port)
            if types not in symbols:
                symbols[types] = m.unique(f"{c.core.kernel}_{sum(1 for t in symbols if t[0] == c.core.kernel)}")
            steps.append(Step(symbols[types], (FifoAccess(fifo, port, 1),), repeat))
        cores.append(replace(c.core, steps=tuple(steps), iterations=len(c.sequence)))
    note = ("the cores follow their members' op order, a program of steps each (one loop body would have to send "
            "data before computing it)")
    return replace(design, cores=tuple(cores)), note
