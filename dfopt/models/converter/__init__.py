"""Layout converters (``problem: converter``; StreamTensor Algorithm 1, DESIGN 5.2).

For every stream whose producer and consumer views differ (``src_type`` != ``dst_type``), the
minimal ping-pong buffer that reorders the stream: its shape, bytes, the shared outer loops and how
many times the buffer is reused (:func:`dfopt.ir.converter.converter_buffer`). Equal types need no
converter; a stream without a ``dst_type`` is read as produced; a stream with an explicit
``converter_bytes`` keeps that cost. The objective is the total converter bytes.

The checker (:mod:`.checks`) runs every converter element by element (:mod:`dfopt.sim.converter`)
with the reported buffer, and again with each dimension one smaller, which must fail.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/converter/fig5.json"))
>>> sol.sections["converter"]["converters"]["e"]["shape"], sol.objective
([8, 2], 128)
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dfopt.errors import InstanceError
from dfopt.ir.converter import ConverterBuffer, converter_buffer
from dfopt.models.converter.checks import check, checks
from dfopt.models.options import CommonOptions, check_formulation
from dfopt.solution import Solution

__all__ = [
    "DEFAULT_FORMULATION",
    "FORMULATIONS",
    "Options",
    "StreamConverter",
    "check",
    "checks",
    "solve",
    "stream_converter",
]

DEFAULT_FORMULATION = "algorithm1"


@dataclass(frozen=True)
class Options(CommonOptions):
    """Converter options (also CLI flags and ``options.converter`` fields)."""


@dataclass(frozen=True)
class StreamConverter:
    """The converter a stream needs when its two ends are fused: ``source`` is ``types``
    (Algorithm 1), ``explicit`` (the stream's ``converter_bytes``) or ``none``."""

    bytes: int
    source: str
    buffer: ConverterBuffer | None = None

    def to_dict(self) -> dict:
        d = {"bytes": self.bytes, "source": self.source}
        if self.buffer is not None:
            d.update(self.buffer.to_dict())
        return d


def stream_converter(stream) -> StreamConverter:
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


def _algorithm1(graph) -> dict:
    return {name: stream_converter(s) for name, s in graph.streams.items()}


FORMULATIONS = {"algorithm1": _algorithm1}


def solve(instance, options: Options) -> Solution:
    """Infer the converter of every stream of ``instance.graph``; checked before it is returned."""
    formulation = check_formulation("converter", instance, options, FORMULATIONS, DEFAULT_FORMULATION)
    t0 = time.perf_counter()
    convs = FORMULATIONS[formulation](instance.graph)
    total = sum(c.bytes for c in convs.values())
    needed = sorted(n for n, c in convs.items() if c.bytes > 0 or (c.buffer is not None and c.buffer.needed))
    solution = Solution(
        instance=instance.name, problem="converter", status="optimal", objective=total, bound=total,
        formulation=formulation, solver="none", seed=options.seed,
        sections={"converter": {"converters": {n: convs[n].to_dict() for n in needed},
                                "total_bytes": total, "streams": len(convs), "needed": len(needed)}},
        stats={"time_solve_s": time.perf_counter() - t0})
    solution.checks = checks(instance, solution)
    return solution
