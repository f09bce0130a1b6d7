"""Layout converters (``problem: converter``; StreamTensor Algorithm 1; docs/fusion.md).

For every stream whose producer and consumer views differ (``src_type`` != ``dst_type``), the
minimal ping-pong buffer that reorders the stream: its shape, bytes, the shared outer loops and how
many times the buffer is reused (:func:`dfopt.ir.converter.converter_buffer`). Equal types need no
converter; a stream without a ``dst_type`` is read as produced; a stream with an explicit
``converter_bytes`` keeps that cost. The objective is the total converter bytes.

The checker (:mod:`.checks`) runs every converter element by element (:mod:`dfopt.sim.converter`)
with the reported buffer, and again with each dimension one smaller, which must fail.

>>> import dfopt
>>> sol = dfopt.solve("instances/converter/fig5.json")
>>> sol.decision.converters["e"].shape, sol.objective
((8, 2), 128)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dfopt.errors import InstanceError
from dfopt.ir.converter import ConverterBuffer, converter_buffer
from dfopt.models import registry
from dfopt.models.base import Outcome, Problem, Simple
from dfopt.models.converter.checks import check, checks
from dfopt.models.converter.decision import ConverterEntry, Converters
from dfopt.models.options import CommonOptions
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.ir.graph import DataflowGraph, Stream
    from dfopt.solution import Solution

__all__ = ["PROBLEM", "Options", "Converters", "ConverterEntry", "StreamConverter", "stream_converter",
           "infer", "check", "checks"]


@dataclass(frozen=True)
class Options(CommonOptions):
    """Converter options (``options.converter``): only the common ones."""


@dataclass(frozen=True)
class StreamConverter:
    """The converter a stream needs when its two ends are fused: ``source`` is ``types``
    (Algorithm 1), ``explicit`` (the stream's ``converter_bytes``) or ``none``."""

    bytes: int
    source: str
    buffer: ConverterBuffer | None = None

    def to_dict(self) -> dict:
        return self.entry().to_json()

    def entry(self) -> ConverterEntry:
        if self.buffer is None:
            return ConverterEntry(self.bytes, self.source)
        extra = {k: v for k, v in self.buffer.to_dict().items() if k not in ("shape", "shared_loops", "bytes")}
        return ConverterEntry(self.bytes, self.source, tuple(self.buffer.shape), self.buffer.shared_loops, extra)


def stream_converter(stream: Stream) -> StreamConverter:
    """The converter cost of one stream (an explicit ``converter_bytes`` wins over the types)."""
    if stream.converter_bytes is not None:
        return StreamConverter(int(stream.converter_bytes), "explicit")
    if stream.src_type is None or stream.dst_type is None:
        return StreamConverter(0, "none")
    try:
        buf = converter_buffer(stream.src_type, stream.dst_type)
    except ValueError as err:
        raise InstanceError(f"stream {stream.name}: {err}", pointer=f"/graph/streams/{stream.name}") from None
    return StreamConverter(buf.bytes, "types", buf)


def _prepare(instance, options) -> dict:
    return {name: stream_converter(s) for name, s in instance.graph.streams.items()}


def _algorithm1(convs: dict, options) -> Outcome:
    needed = sorted(n for n, c in convs.items() if c.bytes > 0 or (c.buffer is not None and c.buffer.needed))
    decision = Converters({n: convs[n].entry() for n in needed})
    return Outcome(decision, Termination.OPTIMAL, bound=float(decision.total_bytes))


def _report(convs: dict, outcome: Outcome, options) -> dict:
    d = outcome.decision
    return {"total_bytes": d.total_bytes, "streams": len(convs), "needed": len(d.converters)}


def _summary(instance, solution) -> list[str]:
    from dfopt.units import format_bytes

    sec, convs = solution.sections["converter"], solution.decision.converters
    lines = [f"  {len(convs)} of {sec['streams']} streams need a converter, {format_bytes(sec['total_bytes'])} in all"]
    for name, c in list(convs.items())[:10]:
        shape = "x".join(map(str, c.shape)) if c.shape is not None else "explicit"
        lines.append(f"    {name}: buffer {shape} (ping-pong {format_bytes(c.bytes)}), "
                     f"reused {c.extra.get('reuse', 1)} times over {c.shared_loops or 0} shared loops")
    return lines


PROBLEM = Problem(
    recount=True,
    info=registry.info("converter"), options=Options, decision=Converters, prepare=_prepare,
    formulations=(Simple("algorithm1", _algorithm1, exact=True, bound=True,
                         description="StreamTensor's Algorithm 1 (exact: the buffer is minimal)"),),
    default="algorithm1", objective=lambda convs, d: d.total_bytes, report=_report, checks=checks,
    summary=_summary)


def infer(graph: DataflowGraph, **options: Any) -> Solution:
    """The converter of every stream of ``graph`` whose two views differ; returns the checked
    :class:`~dfopt.solution.Solution` (``.decision.converters``: stream -> buffer).

    Examples
    --------
    >>> from dfopt.ir import DataflowGraph, Kernel, Stream
    >>> from dfopt.ir.itensor import ITensorType
    >>> src = ITensorType("f32", (8, 8), (4, 2), (4, 2), (2, 4), (1, 0))
    >>> dst = ITensorType("f32", (8, 8), (4, 2), (4, 2, 2), (2, 1, 4), (2, 0))
    >>> g = DataflowGraph([Kernel("p"), Kernel("c")], [Stream("e", "p", "c", tokens=8, src_type=src, dst_type=dst)])
    >>> infer(g).decision.converters["e"].bytes
    128
    """
    from dfopt.api import solve_graph

    return solve_graph("converter", graph, **options)
