"""A physical MLIR-AIE design from a solved ``problem: mapping`` (docs/dato.md).

:func:`design_from_mapping` turns the ``mapping`` section of a solution into an
:class:`~dfopt.codegen.aie.design.AieDesign` that :func:`~dfopt.codegen.aie.checks.validate` accepts, or
raises :class:`~dfopt.errors.CodegenError` naming the tile and the streams it cannot express. The rules:

**Cores.** One per compute tile holding a physical node. One loop iteration runs one member of every
bundle on the tile, so ``iterations`` is the bundle factor (members per task; the mapping's rules
give every task on a tile as many members). A tile whose FIFO objects do not fit its data memory
even single-buffered runs each member in *steps* instead (the most tokens or blocks one member moves
on one port): ``iterations`` = bundle factor x steps, and each step moves a share of the member's
data. The kernel is named after the tasks in member order (``gemm``, ``gemm0_softmax``), object file
``<kernel>_<col>_<row>.o`` (each core's calls are its own: :mod:`dfopt.codegen.aie.mapping.glue`);
one symbol has one signature, so tiles whose kernels see other FIFO types get numbered variants
(``gemm_v1``, ``gemm_v2``). The accesses are the FIFO ends the members' ports use,
in member and port order, each once; the loop body is the same for every iteration, so when the
members of one class reach different FIFOs (peers on several tiles) each iteration moves a share of
each of them (the counts balance over the run; which member's data sits where is the kernel's
business). When the instance names its Dato program (``options.mapping.program``) and one loop
body cannot compute it (a core would have to send data its members compute only later, as in the
attention pipeline), every core gets a program of steps in its members' op order instead
(:mod:`dfopt.codegen.aie.mapping.order`), said in a note.

**Streams.** A stream inside a tile is a local buffer (no FIFO). Between tiles every port has the
mapping's channel class (task, role) and mode (``shared``: neighbours through a data memory, or
``dma``). The FIFO-merging rule:

* shared streams: one FIFO per (producer tile and class, consumer tile and class) pair, without
  DMA, as the mapping counts them (none);
* dma streams: the ports of one class on one tile use ONE FIFO at that tile, the one channel the
  mapping counted: *direct* when they all go to (come from) one class on one peer tile; a
  *distribute* through a mem tile when one out-class feeds in-classes on several tiles (one FIFO to
  the mem tile, a link splits each object into one part per peer class); a *join* through a mem
  tile for the reverse. A class group that fans out and in at once cannot be one FIFO at both ends
  (a link is a distribute or a join, not both): it gets one direct FIFO per pair of class ends,
  i.e. more DMA channels at those ends than the mapping counts (the validator checks the tiles'
  limits; a CodegenError then says so in a note). A link goes through the region's mem tile
  nearest the tiles' columns that has its channels free.

**Host traffic.** Per route (a broadcast group of the mapping) one FIFO from its mem tile to its
tiles (several consumers: a broadcast) or from its tile to the mem tile; per (mem tile, tensor,
direction) collection one FIFO from / to its shim tile, linked to the route FIFOs by a distribute
(inputs) or a join (outputs), the channels :mod:`dfopt.models.mapping.route` counts. A shim
transfer moves whole objects of its FIFO, so a collection whose objects gather host blocks that no
4-D access pattern reads in order (e.g. blocks 0, 2, 4 and 8) moves, for an input, the host range
spanning them instead (a *hull*: the parts sit at their host offsets in the hub object); an output
is written run by run (a transfer per run of each object, at most ``PARTIAL_MAX`` in all: a hull
would write its gaps over other tiles' blocks); when that fails too (parts at other relative offsets
per object, or overlapping) it is split into collections that each have a pattern, one more shim
and mem-tile channel each (checked against the limits).

**Objects.** A *flow* is one FIFO, or the FIFOs of one link (which move the same number ``N`` of
objects). ``N`` is the gcd of the tokens (blocks, for host routes) its FIFOs carry when the
iterations of every core at its ends divide it: an object is then one token (block), or several
when the FIFOs carry different amounts; otherwise ``N`` is the lcm of those iterations and an
object is a slice of the traffic. A core acquires ``N / iterations`` objects per iteration; a link's
hub object holds its parts side by side (the offsets). Objects are 1-D, ``i32`` when every object
of the flow (of every flow of the tensor, for host data) is a whole number of 32-bit words, else ``i8``.

**Depth.** The streams' depth (2 when unset; 2 for host FIFOs), at least ``p + c - gcd(p, c)`` for
the objects ``p`` and ``c`` the producer and each consumer take at a time (1 for a DMA end): a
shallower FIFO can deadlock, each side waiting for the other's chunk. When a tile's FIFO ends and
stack exceed its data memory (counted as :func:`~dfopt.codegen.aie.design.memory_bytes` does), the
FIFOs at that tile drop to that lower bound (single buffering), largest objects first.

**Runtime.** One host buffer per tensor in *blocked layout*: shape = the block counts per axis x the
elements of one block, i.e. the host stores the tensor's blocks one after another in row-major block
order, each block contiguous. Per shim FIFO as few ``dma_memcpy_nd`` as 4-D access patterns allow
(whole objects each, but for an output object no pattern writes whole, which is written run by run;
buffer descriptors numbered per shim tile), the inputs first, then the outputs, then one wait per
output FIFO. (The FFN's ``ffn2`` members get two kernels: only the last of each allreduce chain
stores ``Y``, so its signature differs.)

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> inst = load("instances/mapping/ffn-2x4.json")
>>> design = design_from_mapping(inst, solve_instance(inst))
>>> len(design.cores), sorted({c.kernel for c in design.cores}), sorted(b.name for b in design.runtime.buffers)
(8, ['ffn1', 'ffn2', 'ffn2_v1'], ['W1', 'W2', 'X', 'Y'])
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from dfopt.codegen.aie.checks import validate
from dfopt.codegen.aie.design import AieDesign
from dfopt.codegen.aie.mapping.assemble import _cores, _fifos, _fit_memory, _links, _over_memory, _tiles
from dfopt.codegen.aie.mapping.flows import _depth_bound, _host_flows, _mem_use, _set_dtypes, _size, _stream_flows
from dfopt.codegen.aie.mapping.host import _plan_host, _runtime
from dfopt.codegen.aie.mapping.recount import _load, _Mapping, _steps
from dfopt.errors import CodegenError

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.solution import Solution

# The modules of this package share their underscore names with each other (the package's internal
# API); only design_from_mapping is public.
__all__ = ["design_from_mapping"]


def design_from_mapping(instance: Instance, solution: Solution) -> AieDesign:
    """The validated AIE design of a solved mapping of ``instance`` (see the module docstring);
    CodegenError when no design expresses it."""
    return _design(instance, solution)[0]


def _design(instance: Instance, solution: Solution) -> tuple[AieDesign, _Mapping]:
    """The design and the recounted mapping it was built from (the FIFO of every port)."""
    m = _load(instance, solution)
    routes = solution.sections["mapping"]["routes"]
    design = _build(m, routes)
    over = [t for t in _over_memory(design, m.platform) if t in m.iterations]
    if over:
        steps = {t: m.iterations[t] * _steps(m, t) for t in over}
        m = replace(m, iterations={**m.iterations, **steps}, fifo_of={}, names=set(), notes=[])
        design = _build(m, routes)
    spec = (instance.options or {}).get("mapping", {}).get("program")
    if spec is not None and design.runtime is not None:
        design = _ordered(design, m, spec)
    try:
        return validate(replace(design, notes=tuple(m.notes)), m.platform), m
    except CodegenError as err:
        if not m.notes:
            raise
        raise CodegenError(f"{err}\n  note: " + "\n  note: ".join(m.notes)) from err


def _ordered(design: AieDesign, m: _Mapping, spec: dict) -> AieDesign:
    """The design with cores that follow their members' op order when one loop body cannot compute
    the program (:mod:`dfopt.codegen.aie.mapping.order`)."""
    from dfopt.codegen.aie.mapping.order import ordered_design
    from dfopt.dato.examples import program_from_spec
    from dfopt.dato.frontend import recording

    try:
        validate(design, m.platform)
    except CodegenError:
        return design                          # the validator's message comes below
    design, note = ordered_design(design, m, recording(program_from_spec(spec)))
    if note:
        m.notes.append(note)
    return design


def _build(m: _Mapping, routes: list) -> AieDesign:
    """The design for the loops ``m.iterations``, FIFO depths lowered where data memory is short."""
    host = []
    for flow in _host_flows(m, routes):
        _size(flow, m.iterations)
        host += _plan_host(m, flow)
    host_flows = [flow for flow, _ in host]
    streams = _stream_flows(m, _mem_use(host_flows))
    for flow in streams:
        _size(flow, m.iterations)
    _set_dtypes(host_flows, streams, m.layouts)
    flows = host_flows + streams
    design = AieDesign(m.d.platform, _tiles(m, flows), _fifos(flows), _links(flows), _cores(m, flows),
                       _runtime(m, host))
    return _fit_memory(design, {f.name: _depth_bound(f) for flow in flows for f in flow.fifos}, m.platform)
