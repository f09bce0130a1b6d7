"""The fused design as IR for the next stages, and its on-chip memory.

:func:`fused_graph` turns a partition into one :class:`DataflowGraph` whose connected parts are the
fused groups (kernel ``attrs["group"]``): kernels keep their fields; an internal stream whose two
views differ passes through a converter kernel (op ``converter``, its ping-pong bytes as
``resources.bytes``); a cut stream becomes a ``dma_out`` kernel in the producer's group and a
``dma_in`` kernel in the consumer's group (DRAM in between). FIFO sizing and placement run on it.

Converter timing (an estimate, documented in docs/fusion.md): it must take one phase of the
producer's tokens (``Ps`` per reuse) before it emits the phase in the consumer's order (``Pd``), so
``delay = Ps * consume_ii`` with ``consume_ii = max(1, Pd // Ps)`` and ``produce_ii = ceil(Ps / Pd)``:
each output phase starts after its input phase is complete.

Port schedules: when the graph carries per-token schedules (the pipeline's tiled graph,
:mod:`dfopt.models.tiling.schedules`), so does the fused design: a stream keeps its ends'
schedules on the streams that replace it, a converter reads each phase's ``Ps`` tokens and then
writes its ``Pd`` tokens, the next phase's reads overlapping (its ping-pong halves;
:func:`~dfopt.models.tiling.schedules.converter_schedules`), and the ends left (a DRAM writer's or
reader's, a consumer's that re-reads tiles) get their kernel's
(:func:`~dfopt.models.tiling.schedules.with_port_schedules`). A graph without them stays steady.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

from dfopt.ir.converter import same_stream
from dfopt.ir.graph import DataflowGraph, Kernel, Stream
from dfopt.models.converter import stream_converter
from dfopt.models.tiling.schedules import converter_schedules, with_port_schedules

DEFAULT_FIFO_DEPTH = 2


def _tensor_bytes(stream) -> int:
    t = stream.src_type
    if t is not None:
        return math.ceil(math.prod(t.shape) * t.token_bits / t.element_count / 8)
    return math.ceil(stream.tokens * stream.width / 8)


def _needs_converter(stream) -> bool:
    if stream.converter_bytes is not None:
        return stream.converter_bytes > 0
    return (stream.src_type is not None and stream.dst_type is not None
            and not same_stream(stream.src_type, stream.dst_type))


def _converter_kernel(stream, group: int, exact: bool = False) -> tuple[Kernel, Stream, Stream]:
    conv = stream_converter(stream)
    dst_tokens = stream.dst_type.tokens if stream.dst_type is not None else stream.tokens
    dst_width = stream.dst_type.token_bits if stream.dst_type is not None else stream.width
    reuse = conv.buffer.reuse if conv.buffer is not None else 1
    ps, pd = max(1, stream.tokens // reuse), max(1, dst_tokens // reuse)
    c_ii, p_ii = max(1, pd // ps), max(1, -(-ps // pd))
    name = f"cvt_{stream.name}"
    kernel = Kernel(name, op="converter", delay=ps * c_ii, ii=1, resources={"bytes": conv.bytes},
                    attrs={"group": group, "stream": stream.name})
    into = Stream(f"{stream.name}_in", stream.src, name, stream.tokens, stream.width,
                  produce_ii=stream.produce_ii, consume_ii=c_ii, src_type=stream.src_type,
                  dst_type=stream.src_type)
    out = Stream(f"{stream.name}_out", name, stream.dst, dst_tokens, dst_width, produce_ii=p_ii,
                 consume_ii=stream.consume_ii, src_type=stream.dst_type, dst_type=stream.dst_type)
    if exact and ps * reuse == stream.tokens and pd * reuse == dst_tokens:
        sched = converter_schedules(reuse, ps, pd, c_ii, p_ii)
        into.src_schedule, into.dst_schedule = stream.src_schedule, sched.reads
        out.src_schedule = sched.writes
        if stream.dst_schedule is not None and stream.dst_schedule.count == dst_tokens:
            out.dst_schedule = stream.dst_schedule
    return kernel, into, out


def fused_graph(graph: DataflowGraph, where: Mapping[str, int]) -> DataflowGraph:
    """The fused design: groups as connected parts, converters and DMA kernels inserted."""
    out = DataflowGraph()
    exact = graph.has_token_schedules
    for name, k in graph.kernels.items():
        out.add_kernel(dataclasses.replace(k, attrs={**k.attrs, "group": where[name]}))
    for s in graph.streams.values():
        gs, gd = where[s.src], where[s.dst]
        if gs == gd and _needs_converter(s):
            kernel, into, after = _converter_kernel(s, gs, exact)
            out.add_kernel(kernel)
            out.add_stream(into)
            out.add_stream(after)
        elif gs == gd:
            out.add_stream(dataclasses.replace(s, converter_bytes=None, depth=None))
        else:
            wr, rd = f"{s.name}_wr", f"{s.name}_rd"
            out.add_kernel(Kernel(wr, op="dma_out", attrs={"group": gs, "stream": s.name}))
            out.add_kernel(Kernel(rd, op="dma_in", attrs={"group": gd, "stream": s.name}))
            out.add_stream(Stream(f"{s.name}_dram_w", s.src, wr, s.tokens, s.width,
                                  produce_ii=s.produce_ii, src_type=s.src_type, dst_type=s.src_type,
                                  src_schedule=s.src_schedule))
            view = s.dst_type or s.src_type
            tokens = view.tokens if view is not None else s.tokens
            width = view.token_bits if view is not None else s.width
            out.add_stream(Stream(f"{s.name}_dram_r", rd, s.dst, tokens, width,
                                  consume_ii=s.consume_ii, src_type=view, dst_type=view,
                                  dst_schedule=s.dst_schedule if s.dst_schedule is not None
                                  and s.dst_schedule.count == tokens else None))
    return with_port_schedules(out) if exact else out


def onchip_memory(graph: DataflowGraph, where: Mapping[str, int]) -> dict:
    """On-chip bytes of the fused design vs. a design that buffers every intermediate whole.

    Fused: kernel bytes + converters of internal streams + FIFOs of internal streams at depth 2.
    Buffered: kernel bytes + each internal stream's whole tensor (one copy). The comparison is
    over the same internal streams.
    """
    kernel = sum(int(k.resources.get("bytes", 0)) for k in graph.kernels.values())
    conv = fifo = whole = 0
    for s in graph.streams.values():
        if where[s.src] != where[s.dst]:
            continue
        conv += stream_converter(s).bytes
        fifo += math.ceil(DEFAULT_FIFO_DEPTH * s.width / 8)
        whole += _tensor_bytes(s)
    fused, buffered = kernel + conv + fifo, kernel + whole
    return {"kernel_bytes": kernel, "converter_bytes": conv, "fifo_bytes": fifo,
            "fused_bytes": fused, "whole_tensor_bytes": whole, "buffered_bytes": buffered,
            "ratio": fused / buffered if buffered else 1.0,
            "intermediate_ratio": (conv + fifo) / whole if whole else 1.0}
