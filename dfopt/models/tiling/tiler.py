"""Tiling an operator graph into a dataflow graph (StreamTensor section 5.1).

Each op becomes one kernel whose loops run over *tiles*; a token of a stream is one tile. Per op:

* **tile sizes** — every dimension of size S is tiled by its largest divisor that is at most
  the op's tile size: ``tile_sizes[op name]``, else ``tile_sizes[op kind]``, else
  ``default_tile_size`` (batch dimensions of a matmul by 1; the normalised axis of softmax and
  the norms is kept whole, since a row must be complete before it can be normalised);
* **loop order** — the tile loops keep the parallel loops outside and the reduction loops inside,
  so each output tile is complete after its reduction and streams out at once; inside a tile the
  point loops follow the paper's heuristic, reduction loops outward and parallel loops innermost
  (no loop-carried dependence on the innermost loop: II 1), recorded in ``attrs.point_loops``;
* **unrolling** — intensity-aware: every compute kernel starts with one lane and a max-heap keyed
  by kernel latency repeatedly doubles the lanes of the slowest kernel while the total stays within
  ``overall_unroll_size`` and the kernel has work for them;
* **vector width** — the elements a stream moves per beat, ``min(lanes, tile elements)`` rounded
  down to a power of two, in ``attrs.vector``;
* **port types** — the itensor type of every port from the tiled loops
  (:func:`dfopt.ir.itensor.loop_nest_type`); a stream whose two ends differ needs a converter.

Graph inputs and weights are read by one ``dma_in`` kernel each (in the type of their first
consumer), graph outputs written by one ``dma_out`` kernel each. Timing and resources come from
:mod:`.costs`; every stream end carries the cycle at which its kernel reads or writes each token
(:mod:`.schedules`), except a consumer's end that re-reads tiles, which fusion's converter or
DRAM reader in front of it completes.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dfopt.ir.graph import DataflowGraph, Kernel, Loop, Stream
from dfopt.ir.itensor import ITensorType, loop_nest_type
from dfopt.ir.opgraph import broadcast_kind
from dfopt.models.tiling import conv, costs, schedules

if TYPE_CHECKING:
    from dfopt.ir.opgraph import OpGraph

ELEMENTWISE = ("add", "mul", "gelu", "silu", "relu", "mask", "sub", "div", "unary")
ROW_OPS = ("softmax", "layernorm", "rmsnorm", "reduce", "rope")
BINARY = ("add", "sub", "mul", "div")   # elementwise ops of two operands, the second may be a trailing vector
MOVERS = ("transpose", "reshape", "concat", "slice", "expand", "embedding")


def tile_for(size: int, tile: int) -> int:
    """The largest divisor of ``size`` that is at most ``tile``.

    >>> tile_for(768, 64), tile_for(688, 64), tile_for(7, 4)
    (64, 43, 1)
    """
    best = 1
    for t in range(1, min(size, tile) + 1):
        if size % t == 0:
            best = t
    return best


@dataclass
class Plan:
    """One op's kernel before costing: its tile loops and the data-dimension index of each port."""

    name: str
    op: str
    dtype: str
    loops: list                    # dicts: name, tripcount, step, kind (tile loops, outermost first)
    ports: dict                    # tensor -> (shape, indices) for inputs and the output
    output: str
    inputs: tuple
    point_loops: list              # loop names inside a tile, outermost first
    lanes: int = 1
    max_lanes: int = 1
    attrs: dict = field(default_factory=dict)

    def port_type(self, tensor: str) -> ITensorType:
        shape, indices = self.ports[tensor]
        return loop_nest_type(self.dtype, shape, self.loops, indices, output=tensor == self.output)


def _loop(name: str, size: int, tile: int, kind: str = "parallel") -> dict:
    return {"name": name, "tripcount": size // tile, "step": tile, "kind": kind}


def _matmul_plan(op, graph, tile: int) -> Plan:
    a, b = (graph.tensors[t] for t in op.inputs)
    ta, tb = op.attrs.get("transpose_a", False), op.attrs.get("transpose_b", False)
    out = graph.tensors[op.output]
    *batch, m, n = out.shape
    k = a.shape[-2] if ta else a.shape[-1]
    loops = [_loop(f"b{i}", s, 1) for i, s in enumerate(batch)]
    loops += [_loop("m", m, tile_for(m, tile)), _loop("n", n, tile_for(n, tile)),
              _loop("k", k, tile_for(k, tile), "reduction")]
    bnames = [f"b{i}" for i in range(len(batch))]
    a_idx = bnames + (["k", "m"] if ta else ["m", "k"])
    b_idx = (bnames if len(b.shape) > 2 else []) + (["n", "k"] if tb else ["k", "n"])
    return Plan(op.name, "matmul", out.dtype, loops,
                {op.inputs[0]: (a.shape, a_idx), op.inputs[1]: (b.shape, b_idx),
                 op.output: (out.shape, bnames + ["m", "n"])},
                op.output, tuple(op.inputs), point_loops=["k", "m", "n"],
                max_lanes=tile_for(m, tile) * tile_for(n, tile) * tile_for(k, tile))


def _dims(shape, tile: int, whole_last: bool = False) -> tuple[list, list]:
    loops: list = []
    names: list[str | None] = []
    for i, s in enumerate(shape):
        name = f"d{i}"
        if whole_last and i == len(shape) - 1:
            names.append(None)
            continue
        loops.append(_loop(name, s, tile_for(s, tile)))
        names.append(name)
    return loops, names


def _elementwise_plan(op, graph, tile: int) -> Plan:
    out = graph.tensors[op.output]
    loops, names = _dims(out.shape, tile)
    ports = {op.output: (out.shape, names)}
    for t in op.inputs:
        shape = graph.tensors[t].shape
        lead = len(out.shape) - len(shape)
        # a dimension of size 1 against a larger one spans the whole (one value, read with each tile)
        ports[t] = (shape, [None if s == 1 and out.shape[lead + j] != 1 else names[lead + j]
                            for j, s in enumerate(shape)])
    tile_elems = math.prod(lp["step"] for lp in loops)
    return Plan(op.name, op.op, out.dtype, loops, ports, op.output, tuple(op.inputs),
                point_loops=[n for n in names if n], max_lanes=tile_elems)


def _row_plan(op, graph, tile: int) -> Plan:
    """Tiles of whole rows of the input's last axis; a ``reduce`` writes one value per row (its
    output drops the axis, or keeps it as size 1), ``rope`` reads the rows of its cos and sin
    tables at the tile's positions (the second to last axis)."""
    x, out = graph.tensors[op.inputs[0]], graph.tensors[op.output]
    loops, names = _dims(x.shape, tile, whole_last=True)
    ports = {op.output: (out.shape, names if len(out.shape) == len(x.shape) else names[:-1]),
             op.inputs[0]: (x.shape, names)}
    for t in op.inputs[1:]:                 # gamma, beta: the whole vector with every token
        ports[t] = (graph.tensors[t].shape, names[-2:] if op.op == "rope" else [None])
    row = x.shape[-1]
    tile_elems = math.prod(lp["step"] for lp in loops) * row
    return Plan(op.name, op.op, out.dtype, loops, ports, op.output, tuple(op.inputs),
                point_loops=["row"], max_lanes=tile_elems, attrs={"row": row})


def _mover_plan(op, graph, tile: int) -> Plan:
    """Reads each distinct input whole, one after another, each in its own tiled order, and writes
    the output in the output's order; the kernel buffers every input in between (each port has its
    own loop nest: ``attrs.input_tiling`` maps an input tensor to its loops and index names)."""
    out = graph.tensors[op.output]
    out_loops, out_names = _dims(out.shape, tile)
    plan = Plan(op.name, op.op, out.dtype, out_loops, {op.output: (out.shape, out_names)}, op.output,
                tuple(op.inputs), point_loops=[n for n in out_names if n],
                max_lanes=min(math.prod(lp["step"] for lp in out_loops), costs.mover_lanes(out.dtype, 1 << 30)))
    plan.attrs["input_tiling"] = {t: _dims(graph.tensors[t].shape, tile) for t in dict.fromkeys(op.inputs)}
    return plan


def _window_plan(op, graph, tile: int) -> Plan:
    """conv2d and pool (:mod:`.conv`): the output tiled over (n, o, h, w), X read whole in its own
    tiles, W and B one token per output tile."""
    return Plan(op.name, op.op, graph.tensors[op.output].dtype, output=op.output, inputs=tuple(op.inputs),
                **conv.plan_fields(op, graph, tile))


def _input_type(plan: Plan, tensor: str, graph) -> ITensorType:
    if tensor in plan.attrs.get("input_tiling", {}):     # a mover's or a window's own input tiling
        spec = graph.tensors[tensor]
        return loop_nest_type(spec.dtype, spec.shape, *plan.attrs["input_tiling"][tensor])
    return plan.port_type(tensor)


PLANNERS = {"matmul": _matmul_plan, **dict.fromkeys(ELEMENTWISE, _elementwise_plan),
            **dict.fromkeys(ROW_OPS, _row_plan), **dict.fromkeys(MOVERS, _mover_plan),
            **dict.fromkeys(conv.WINDOW_OPS, _window_plan)}


def _cost(plan: Plan, graph) -> costs.KernelCost:
    if plan.op == "matmul":
        steps = {lp["name"]: lp for lp in plan.loops}
        return costs.matmul_cost(plan.dtype, steps["m"]["step"], steps["n"]["step"], steps["k"]["step"],
                                 steps["k"]["tripcount"], plan.lanes)
    if plan.op in conv.WINDOW_OPS:
        return conv.window_cost(plan.op, plan.dtype, plan.attrs, plan.lanes)
    tile_elems = math.prod(lp["step"] for lp in plan.loops)
    if plan.op in ROW_OPS:
        row = plan.attrs["row"]
        return costs.row_cost(plan.op, plan.dtype, tile_elems * row, tile_elems * row, plan.lanes, row=row)
    if plan.op in MOVERS:
        reads = []
        for tensor, (loops, _) in plan.attrs["input_tiling"].items():
            reads.append((math.prod(lp["tripcount"] for lp in loops), math.prod(lp["step"] for lp in loops),
                          graph.tensors[tensor].dtype))
        return costs.mover_cost(plan.op, plan.dtype, reads, tile_elems, plan.lanes)
    return costs.elementwise_cost(plan.op, plan.dtype, tile_elems, len(plan.inputs), plan.lanes,
                                  period=_broadcast_period(plan, graph))


def _broadcast_period(plan: Plan, graph) -> int | None:
    """Elements of a broadcast operand's tile (a vector along the output's last dimensions)."""
    rank = len(graph.tensors[plan.output].shape)
    for t in plan.inputs:
        shape = graph.tensors[t].shape
        if plan.op in BINARY and broadcast_kind(shape, graph.tensors[plan.output].shape) == "vector":
            return math.prod(lp["step"] for lp in plan.loops[rank - len(shape):])
    return None


def _tokens(plan: Plan) -> int:
    return plan.port_type(plan.output).tokens


def latency(plan: Plan, graph: OpGraph) -> int:
    """Cycles of the plan's kernel: its last write (``delay + (tokens - 1) * ii``) + 1, as its
    port schedules give it (:func:`.schedules.latency`)."""
    c = _cost(plan, graph)
    return c.delay + (_tokens(plan) - 1) * c.ii + 1


def unroll(plans: list, graph: OpGraph, overall_unroll_size: int) -> None:
    """Intensity-aware unrolling: double the lanes of the slowest kernel while the budget lasts."""
    budget = overall_unroll_size - sum(p.lanes for p in plans)
    heap = [(-latency(p, graph), i) for i, p in enumerate(plans)]
    heapq.heapify(heap)
    while heap:
        _, i = heapq.heappop(heap)
        p = plans[i]
        if p.lanes * 2 > p.max_lanes or p.lanes > budget:
            continue
        budget -= p.lanes
        p.lanes *= 2
        heapq.heappush(heap, (-latency(p, graph), i))


def _vector(lanes: int, tile_elems: int) -> int:
    v = min(lanes, tile_elems)
    return 1 << (max(v, 1).bit_length() - 1)


def tile_graph(graph: OpGraph, default_tile_size: int = 64, overall_unroll_size: int = 1024,
               tile_sizes: Mapping[str, int] | None = None) -> DataflowGraph:
    """The dataflow graph of ``graph`` (an :class:`~dfopt.ir.opgraph.OpGraph`), tiled and costed;
    ``tile_sizes`` overrides ``default_tile_size`` per op name or op kind (the name wins)."""
    sizes = dict(tile_sizes or {})
    plans = [PLANNERS[op.op](op, graph, sizes.get(op.name, sizes.get(op.op, default_tile_size))) for op in graph.ops]
    unroll(plans, graph, overall_unroll_size)
    kernels, streams = [], []
    producer = {p.output: (p.name, p.port_type(p.output)) for p in plans}
    for p in plans:
        c = _cost(p, graph)
        tile_elems = math.prod(lp["step"] for lp in p.loops) * p.attrs.get("row", 1)
        loops = tuple(Loop(lp["name"], lp["tripcount"], lp["step"], lp["kind"]) for lp in p.loops)
        kernels.append(Kernel(p.name, p.op, loops, delay=c.delay, ii=c.ii, resources=c.resources,
                              attrs={"lanes": p.lanes, "vector": _vector(p.lanes, tile_elems),
                                     "point_loops": p.point_loops, "output": p.output, "inputs": list(p.inputs)}))
    for name, spec in graph.tensors.items():
        if spec.kind in ("input", "weight"):
            first = next(p for p in plans if name in p.inputs)
            t = _input_type(first, name, graph)
            c = costs.dma_cost(spec.dtype, math.prod(t.element))
            dma = f"{name}_in"
            kernels.append(Kernel(dma, "dma_in", delay=c.delay, ii=c.ii, resources=c.resources,
                                  attrs={"tensor": name, "vector": _vector(16, math.prod(t.element))}))
            producer[name] = (dma, t)
    for p in plans:
        for tensor in dict.fromkeys(p.inputs):
            src, src_type = producer[tensor]
            dst_type = _input_type(p, tensor, graph)
            streams.append(Stream(f"{tensor}__{p.name}", src, p.name, tokens=src_type.tokens,
                                  width=src_type.token_bits, src_type=src_type, dst_type=dst_type))
    for out in graph.outputs:
        src, t = producer[out]
        c = costs.dma_cost(t.dtype, math.prod(t.element))
        dma = f"{out}_out"
        kernels.append(Kernel(dma, "dma_out", delay=c.delay, ii=c.ii, resources=c.resources,
                              attrs={"tensor": out, "vector": _vector(16, math.prod(t.element))}))
        streams.append(Stream(f"{out}__{dma}", src, dma, tokens=t.tokens, width=t.token_bits, src_type=t, dst_type=t))
    return _scheduled(DataflowGraph(kernels, streams))


def _scheduled(graph: DataflowGraph) -> DataflowGraph:
    """The graph with every stream end's port schedule (:mod:`.schedules`) and every kernel's
    ``latency`` its last event + 1."""
    out = schedules.with_port_schedules(graph)
    for name, k in out.kernels.items():
        ends = schedules.kernel_schedules(out, name).values()
        k.latency = max((schedules.latency(e) for e in ends), default=0)
    return out
