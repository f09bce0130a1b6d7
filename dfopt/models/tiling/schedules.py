"""Exact per-token port schedules of the kernels the pipeline builds (docs/pipeline.md, exact port
schedules).

The emitted process of a kernel (:mod:`dfopt.codegen.hls.kernels`) reads and writes its streams
in its own loop order. These functions say at which nominal cycle (relative to the kernel's start,
docs/design.md, the token timing model) it does each, with the cycle counts of the cost model
(:mod:`.costs`), as :class:`~dfopt.ir.tokens.TokenSchedule` s for ``Stream.src_schedule`` and
``Stream.dst_schedule``. The kernel keeps its steady fields: its writes are the cost model's
``delay + k * ii`` and its ``latency`` is its last event + 1 (:func:`latency`).

* **compute kernels** (matmul, add, sub, mul, div, gelu, silu, relu, unary, mask, softmax,
  layernorm, rmsnorm, reduce, rope;
  :func:`tile_schedules`): per output tile (one iteration of the parallel tile loops) the
  reduction loops run ``steps`` steps (1 without a reduction) of ``ii // steps`` cycles; a step
  reads one token of every input at its start, and the tile's token is written at the end of the
  last step. The first tile's write also waits for the pipeline (``delay = ii + PIPELINE_DEPTH``);
  each later tile starts the cycle after the previous write, so its write comes ``ii`` later;
* **data movers** (transpose, reshape, concat, slice, expand, embedding; :func:`phase_schedules`):
  every token of input 0, ``read_ii`` apart, then every token of input 1, ... (the kernel's input
  streams in the op's input order), then every output token at ``delay + k * ii``;
* **window kernels** (conv2d, pool; :func:`dfopt.models.tiling.conv.window_schedules`): every
  token of X ``read_ii`` apart from 0 (the whole feature map), then the compute kernels' tile
  schedule shifted past that read phase: per output tile its W and B tokens, then its write;
* **DMA kernels**: a ``dma_in`` writes at ``delay + k * ii``, a ``dma_out`` reads at ``k * ii``;
* **layout converters** (:func:`converter_schedules`, built by fusion): per phase (an iteration
  of the loops both nests share) the phase's source tokens, then its destination tokens; the next
  phase's reads overlap this phase's writes (the ping-pong buffer), phases ``max(ps * c_ii,
  pd * p_ii)`` cycles apart.

Several events at one cycle happen reads first, then in the order of the streams in the graph
(docs/design.md, the token timing model): the order the emitted code reads its operands (the
op's inputs) and hands a token to its outputs. So the order of each kernel's events is the order
of the stream operations of its emitted process (a converter's reads are its fill half's, its
writes its drain half's; ``tests/test_port_schedules.py`` compares them with a run).

A matmul of 2 output tiles, 3 reduction steps of 4 cycles each:

>>> s = tile_schedules(tiles=2, steps=3, ii=12, delay=24)
>>> s.reads.offsets().tolist(), s.writes.offsets().tolist(), latency(s)
([0, 4, 8, 25, 29, 33], [24, 36], 37)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.ir.tokens import Block, TokenSchedule
from dfopt.models.tiling import costs

COMPUTE_OPS = ("matmul", "add", "mul", "gelu", "silu", "relu", "mask", "softmax", "layernorm", "rmsnorm",
               "sub", "div", "unary", "reduce", "rope")
MOVER_OPS = ("transpose", "reshape", "concat", "slice", "expand", "embedding")
WINDOW_OPS = ("conv2d", "pool")     # their schedules: dfopt.models.tiling.conv.window_schedules
TIMINGS = ("exact", "steady")

__all__ = ["PortSchedules", "tile_schedules", "phase_schedules", "dma_in_schedules", "dma_out_schedules",
           "converter_schedules", "kernel_schedules", "with_port_schedules", "steady_graph", "latency",
           "TIMINGS"]


@dataclass(frozen=True)
class PortSchedules:
    """A kernel's reads (``None``: it reads nothing, or each input differs: see ``per_input``) and
    its writes (every output alike, ``None``: it writes nothing)."""

    reads: TokenSchedule | None
    writes: TokenSchedule | None


def latency(s: PortSchedules) -> int:
    """The kernel's last event + 1 (0 without events).

    >>> latency(dma_out_schedules(tokens=4, ii=3))
    10
    """
    lasts = [x.last for x in (s.reads, s.writes) if x is not None and x.count]
    return max(lasts) + 1 if lasts else 0


def tile_schedules(tiles: int, steps: int, ii: int, delay: int) -> PortSchedules:
    """A compute kernel: ``tiles`` output tiles of ``steps`` steps of ``ii // steps`` cycles; step
    r of tile t reads its tokens at its start, tile t is written at ``delay + t * ii``.

    Tile 0 starts at cycle 0, tile t >= 1 the cycle after tile t-1's write, so its last step's
    reads come no later than its write (``delay >= ii - 1`` is required; the cost model's is
    ``ii + PIPELINE_DEPTH``). An elementwise kernel of 3 tiles, 5 cycles each:

    >>> s = tile_schedules(tiles=3, steps=1, ii=5, delay=17)
    >>> s.reads.offsets().tolist(), s.writes.offsets().tolist()
    ([0, 18, 23], [17, 22, 27])
    """
    tiles, steps, ii, delay = int(tiles), max(1, int(steps)), max(1, int(ii)), int(delay)
    step = ii // steps
    if delay < (steps - 1) * step:
        raise ValueError(f"delay {delay} comes before the last step of the first tile ({(steps - 1) * step})")
    if tiles <= 0:
        return PortSchedules(TokenSchedule(()), TokenSchedule(()))
    blocks = [Block(0, ((steps, step),))]
    if tiles > 1:
        blocks.append(Block(delay + 1, ((tiles - 1, ii), (steps, step))))
    return PortSchedules(TokenSchedule(tuple(_trim(b) for b in blocks)), TokenSchedule.steady(delay, ii, tiles))


def phase_schedules(reads: list[tuple[int, int]], write_tokens: int, delay: int, ii: int) -> list[PortSchedules]:
    """A data mover, one :class:`PortSchedules` per input: input ``j``'s ``reads[j] = (tokens,
    read_ii)`` ``read_ii`` apart, from the cycle after input ``j - 1``'s read phase (input 0 from
    cycle 0), then the writes at ``delay + k * ii`` (``delay`` after the last read).

    >>> a, b = phase_schedules([(4, 2), (2, 3)], write_tokens=2, delay=20, ii=4)
    >>> a.reads.offsets().tolist(), b.reads.offsets().tolist(), b.writes.offsets().tolist()
    ([0, 2, 4, 6], [8, 11], [20, 24])
    """
    writes = TokenSchedule.steady(int(delay), max(1, int(ii)), int(write_tokens))
    out, start = [], 0
    for tokens, read_ii in reads:
        sched = TokenSchedule.steady(start, max(1, int(read_ii)), int(tokens))
        out.append(PortSchedules(sched, writes))
        start += int(tokens) * max(1, int(read_ii))
    last = max((s.reads.last for s in out if s.reads is not None and s.reads.count), default=None)
    if last is not None and write_tokens > 0 and delay <= last:
        raise ValueError(f"the first write (cycle {delay}) must follow the last read (cycle {last})")
    return out


def dma_in_schedules(tokens: int, delay: int, ii: int) -> PortSchedules:
    """A ``dma_in`` kernel: it writes its tokens at ``delay + k * ii`` and reads no stream."""
    return PortSchedules(None, TokenSchedule.steady(int(delay), max(1, int(ii)), int(tokens)))


def dma_out_schedules(tokens: int, ii: int) -> PortSchedules:
    """A ``dma_out`` kernel: it reads its tokens at ``k * ii`` and writes no stream."""
    return PortSchedules(TokenSchedule.steady(0, max(1, int(ii)), int(tokens)), None)


def converter_schedules(phases: int, ps: int, pd: int, c_ii: int, p_ii: int) -> PortSchedules:
    """A layout converter of ``phases`` phases: phase p reads its ``ps`` source tokens ``c_ii``
    apart from ``p * L``, then writes its ``pd`` destination tokens ``p_ii`` apart from
    ``p * L + ps * c_ii``, with ``L = max(ps * c_ii, pd * p_ii)``. Its fill half reads phase p + 1
    while its drain half writes phase p (one buffer half each); a phase is written only once it
    is read whole.

    >>> s = converter_schedules(phases=2, ps=2, pd=4, c_ii=2, p_ii=1)
    >>> s.reads.offsets().tolist(), s.writes.offsets().tolist()
    ([0, 2, 4, 6], [4, 5, 6, 7, 8, 9, 10, 11])
    """
    phases, ps, pd = max(1, int(phases)), max(1, int(ps)), max(1, int(pd))
    c_ii, p_ii = max(1, int(c_ii)), max(1, int(p_ii))
    span = max(ps * c_ii, pd * p_ii)
    reads = Block(0, ((phases, span), (ps, c_ii)))
    writes = Block(ps * c_ii, ((phases, span), (pd, p_ii)))
    return PortSchedules(TokenSchedule((_trim(reads),)), TokenSchedule((_trim(writes),)))


def _trim(b: Block) -> Block:
    """The block without its loops of one trip (the same tokens at the same cycles)."""
    loops = tuple(lp for lp in b.loops if lp[0] != 1)
    return Block(b.offset, loops or ((1, 0),))


# -- a graph's kernels ----------------------------------------------------------------------------

def _tiles_and_steps(kernel: Kernel) -> tuple[int, int]:
    tiles = math.prod(lp.tripcount for lp in kernel.loops if lp.kind != "reduction")
    steps = math.prod(lp.tripcount for lp in kernel.loops if lp.kind == "reduction")
    return tiles, steps


def _read_tokens(s: Stream) -> int:
    """Tokens the consumer reads: its own view's (re-read tiles included)."""
    return s.dst_type.tokens if s.dst_type is not None else s.tokens


def kernel_schedules(graph: DataflowGraph, name: str) -> dict[str, PortSchedules]:
    """Per stream of kernel ``name`` (its inputs and outputs), the schedules of its end at this
    kernel: a compute kernel, a mover or a DMA kernel of the pipeline (other kernels, converters
    among them, get none: fusion gives a converter its own, :func:`converter_schedules`).

    >>> from dfopt.ir.graph import Loop
    >>> g = DataflowGraph([Kernel("a", "dma_in", delay=3, ii=2), Kernel("b", "relu", (Loop("d0", 2, 4),),
    ...                    delay=16, ii=4), Kernel("c", "dma_out", ii=2)],
    ...                   [Stream("x", "a", "b", 2), Stream("y", "b", "c", 2)])
    >>> s = kernel_schedules(g, "b")
    >>> s["x"].reads.offsets().tolist(), s["y"].writes.offsets().tolist()
    ([0, 17], [16, 20])
    """
    k = graph.kernels[name]
    ins, outs = graph.in_streams(name), graph.out_streams(name)
    out_tokens = outs[0].tokens if outs else 0
    if k.op in COMPUTE_OPS:
        tiles, steps = _tiles_and_steps(k)
        one = tile_schedules(tiles, steps, k.ii, k.delay)
        return {s.name: one for s in ins + outs}
    if k.op in MOVER_OPS and ins:
        lanes = int(k.attrs.get("lanes", 1))
        reads = [(_read_tokens(s), costs.mover_read_ii(s.dst_type.dtype, math.prod(s.dst_type.element), lanes)
                  if s.dst_type is not None else 1) for s in ins]
        per_input = phase_schedules(reads, out_tokens, k.delay, k.ii)
        return {**{s.name: per_input[-1] for s in outs}, **dict(zip((s.name for s in ins), per_input))}
    if k.op in WINDOW_OPS:
        from dfopt.models.tiling.conv import window_schedules  # lazily: conv builds on this module

        return window_schedules(graph, name)
    if k.op == "dma_in" and not ins:
        return {s.name: dma_in_schedules(s.tokens, k.delay, k.ii) for s in outs}
    if k.op == "dma_out" and not outs:
        return {s.name: dma_out_schedules(_read_tokens(s), k.ii) for s in ins}
    return {}


def with_port_schedules(graph: DataflowGraph) -> DataflowGraph:
    """A copy of ``graph`` whose stream ends carry their kernels' schedules
    (:func:`kernel_schedules`) where they have none; an end whose schedule would count other
    tokens than the stream carries (a consumer that re-reads tiles before fusion puts a converter
    in front of it) stays steady."""
    out = graph.copy()
    for name in out.kernels:
        for stream, sched in kernel_schedules(out, name).items():
            s = out.streams[stream]
            if s.src == name and s.src_schedule is None and sched.writes is not None \
                    and sched.writes.count == s.tokens:
                s.src_schedule = sched.writes
            if s.dst == name and s.dst_schedule is None and sched.reads is not None \
                    and sched.reads.count == s.tokens:
                s.dst_schedule = sched.reads
    return out


def steady_graph(graph: DataflowGraph) -> DataflowGraph:
    """A copy of ``graph`` without per-token schedules: every end steady (``delay + k * ii``
    writes, ``k * ii`` reads), the FIFO timing before exact port schedules."""
    return DataflowGraph([dataclasses.replace(k) for k in graph.kernels.values()],
                         [dataclasses.replace(s, src_schedule=None, dst_schedule=None)
                          for s in graph.streams.values()])


def port_timing(graph: DataflowGraph, timing: str) -> DataflowGraph:
    """The graph FIFO sizing runs on under ``timing``: ``exact`` (the graph with its port
    schedules) or ``steady`` (:func:`steady_graph`)."""
    if timing not in TIMINGS:
        raise ValueError(f"fifo timing {timing!r}: expected one of {', '.join(TIMINGS)}")
    return graph if timing == "exact" else steady_graph(graph)
