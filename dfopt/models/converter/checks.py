"""The checker of a converter solution, written without Algorithm 1: element-by-element runs.

* ``converter-delivery`` — each reported buffer, run element by element with its phases
  (:func:`dfopt.sim.converter.simulate_converter`), delivers every element the consumer reads;
* ``converter-minimal`` — the same run with any one dimension of the buffer one element smaller
  fails (so no smaller buffer along any dimension serves the phases);
* ``converter-bytes`` — bytes recounted from the shape and dtype (ping-pong: two halves), streams
  whose types differ all have a converter, and the objective is their sum.

Streams too large to simulate are listed in the delivery check's details as not simulated.
"""

from __future__ import annotations

from dfopt.ir.converter import buffer_bytes, same_stream
from dfopt.sim.converter import simulable, simulate_converter
from dfopt.solution import Check


def converter_faults(stream, entry: dict) -> tuple[list[str], list[str], bool]:
    """(delivery faults, minimality faults, simulated) of one stream's reported buffer."""
    src, dst = stream.src_type, stream.dst_type
    if not simulable(src, dst):
        return [], [], False
    shape, shared = tuple(entry["shape"]), int(entry["shared_loops"])
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


def checks(instance, solution) -> list[Check]:
    graph = instance.graph
    sec = solution.sections.get("converter") or {}
    convs = sec.get("converters", {})
    delivery, minimal, bytes_bad, skipped = [], [], [], []
    total = 0
    for name, stream in graph.streams.items():
        entry = convs.get(name)
        typed = stream.src_type is not None and stream.dst_type is not None
        if stream.converter_bytes is not None:
            if entry is None or entry.get("bytes") != stream.converter_bytes:
                bytes_bad.append(f"stream {name}: explicit converter_bytes {stream.converter_bytes} not reported")
            total += stream.converter_bytes
            continue
        if not typed or same_stream(stream.src_type, stream.dst_type):
            if entry is not None and entry.get("bytes", 0) != 0:
                bytes_bad.append(f"stream {name}: equal types need no converter, reported {entry.get('bytes')} bytes")
            continue
        if entry is None:
            bytes_bad.append(f"stream {name}: types differ but no converter is reported")
            continue
        expect = buffer_bytes(entry["shape"], stream.src_type.dtype)
        if entry.get("bytes") != expect:
            bytes_bad.append(f"stream {name}: {entry.get('bytes')} bytes reported, shape {entry['shape']} "
                             f"x2 of {stream.src_type.dtype} is {expect}")
        total += expect
        d, m, ran = converter_faults(stream, entry)
        delivery += d
        minimal += m
        if not ran:
            skipped.append(f"stream {name}: too large to simulate element by element (not checked)")
    unknown = sorted(set(convs) - set(graph.streams))
    bytes_bad += [f"converter reported for unknown stream {n!r}" for n in unknown]
    if solution.objective is not None and solution.objective != total:
        bytes_bad.append(f"objective {solution.objective} differs from the recounted total {total}")
    return [Check("converter-delivery", not delivery, delivery + skipped),
            Check("converter-minimal", not minimal, minimal),
            Check("converter-bytes", not bytes_bad, bytes_bad)]


def check(instance, solution) -> list[str]:
    """Violations only (empty when every check passes)."""
    return [d for c in checks(instance, solution) if not c.ok for d in c.details]
