"""The checker of a converter solution, written without Algorithm 1: element-by-element runs.

* ``converter-delivery`` — each reported buffer, run element by element with its phases
  (:func:`dfopt.sim.converter.simulate_converter`), delivers every element the consumer reads;
* ``converter-minimal`` — the same run with any one dimension of the buffer one element smaller
  fails (so no smaller buffer along any dimension serves the phases);
* ``converter-bytes`` — bytes recounted from the shape and dtype (ping-pong: two halves), streams
  whose types differ all have a converter, and the objective is their sum (the reported
  ``streams`` and ``needed`` are recounted too).

Streams too large to simulate are listed in the delivery check's details as not simulated.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dfopt.ir.converter import buffer_bytes, nest, same_stream
from dfopt.ir.graph import Stream
from dfopt.models.converter.decision import ConverterEntry
from dfopt.sim.converter import simulable, simulate_converter
from dfopt.solution import Check, Solution

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.converter import Options


def converter_faults(stream: Stream, entry: ConverterEntry) -> tuple[list[str], list[str], bool]:
    """(delivery faults, minimality faults, simulated) of one stream's reported buffer (a stream
    with both types, and an entry with a buffer shape and its shared loops)."""
    src, dst = stream.src_type, stream.dst_type
    assert src is not None and dst is not None and entry.shape is not None and entry.shared_loops is not None
    if not simulable(src, dst):
        return [], [], False
    shape, shared = tuple(entry.shape), int(entry.shared_loops)
    run = simulate_converter(src, dst, shape, shared)
    delivery = [] if run.ok else [(f"stream {stream.name}: buffer {list(shape)} gives {run.wrong} of "
                                   f"{run.reads} reads wrong; {run.first}")]
    minimal = []
    for d, size in enumerate(shape):
        if size > 1:
            smaller = shape[:d] + (size - 1,) + shape[d + 1:]
            if simulate_converter(src, dst, smaller, shared).ok:
                minimal.append(f"stream {stream.name}: the smaller buffer {list(smaller)} also works")
    return delivery, minimal, True


def _figure_faults(name: str, stream: Stream, entry: ConverterEntry) -> list[str]:
    """The entry's figures recounted from the types and its shared loops: the buffer serves
    ``reuse`` = the product of the shared loops' tripcounts phases, each of ``tokens / reuse``
    tokens per side; it is needed and comes from the types."""
    src, dst = stream.src_type, stream.dst_type
    assert src is not None and dst is not None and entry.shared_loops is not None
    loops = nest(src)[:int(entry.shared_loops)]
    reuse = math.prod(trip for trip, _, _ in loops)
    want = {"source": "types", "needed": True, "reuse": reuse, "src_tokens_per_phase": src.tokens // reuse,
            "dst_tokens_per_phase": dst.tokens // reuse}
    got = {"source": entry.source, **entry.extra}
    return [f"stream {name}: {k} reported {got.get(k)!r}, the types and {entry.shared_loops} shared loops give {v!r}"
            for k, v in want.items() if got.get(k) != v or type(got.get(k)) is not type(v)]


def checks(instance: Instance, options: Options | None, solution: Solution) -> list[Check]:
    graph = instance.graph
    assert graph is not None  # the driver checks the parts a problem needs
    convs = solution.decision.converters
    delivery: list[str] = []
    minimal: list[str] = []
    bytes_bad: list[str] = []
    skipped: list[str] = []
    total = 0
    for name, stream in graph.streams.items():
        entry = convs.get(name)
        src, dst = stream.src_type, stream.dst_type
        if stream.converter_bytes is not None:
            if entry is None or entry.bytes != stream.converter_bytes:
                bytes_bad.append(f"stream {name}: explicit converter_bytes {stream.converter_bytes} not reported")
            total += stream.converter_bytes
            continue
        if src is None or dst is None or same_stream(src, dst):
            if entry is not None and entry.bytes != 0:
                bytes_bad.append(f"stream {name}: equal types need no converter, reported {entry.bytes} bytes")
            continue
        if entry is None:
            bytes_bad.append(f"stream {name}: types differ but no converter is reported")
            continue
        if entry.shape is None:
            bytes_bad.append(f"stream {name}: types differ but the converter reports no buffer shape")
            continue
        if len(entry.shape) != len(src.shape):
            bytes_bad.append(f"stream {name}: buffer shape {list(entry.shape)} has {len(entry.shape)} dimensions, "
                             f"the tensor {len(src.shape)}")
            continue
        if any(b > t for b, t in zip(entry.shape, src.shape)):
            bytes_bad.append(f"stream {name}: buffer shape {list(entry.shape)} exceeds the tensor "
                             f"{list(src.shape)}")
            continue
        expect = buffer_bytes(list(entry.shape), src.dtype)
        if entry.bytes != expect:
            bytes_bad.append(f"stream {name}: {entry.bytes} bytes reported, shape {list(entry.shape)} "
                             f"x2 of {src.dtype} is {expect}")
        total += expect
        bytes_bad += _figure_faults(name, stream, entry)
        d, m, ran = converter_faults(stream, entry)
        delivery += d
        minimal += m
        if not ran:
            skipped.append(f"stream {name}: too large to simulate element by element (not checked)")
    unknown = sorted(set(convs) - set(graph.streams))
    bytes_bad += [f"converter reported for unknown stream {n!r}" for n in unknown]
    if solution.objective is None or solution.objective != total:
        bytes_bad.append(f"objective {solution.objective} differs from the recounted total {total}")
    sec = solution.sections.get("converter") or {}
    for key, want in (("streams", len(graph.streams)), ("needed", len(convs)), ("total_bytes", total)):
        if key in sec and sec[key] != want:
            bytes_bad.append(f"reported {key} {sec[key]!r} differs from the recount {want}")
    return [Check("converter-delivery", not delivery, delivery + skipped),
            Check("converter-minimal", not minimal, minimal),
            Check("converter-bytes", not bytes_bad, bytes_bad)]


def check(instance: Instance, solution: Solution, options: Options | None = None) -> list[str]:
    """Violations only (empty when every check passes)."""
    return [d for c in checks(instance, options, solution) if not c.ok for d in c.details]
