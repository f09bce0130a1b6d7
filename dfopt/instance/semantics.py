"""Checks of an instance's meaning beyond its schema: names, endpoints, types, cycles, platforms,
options, and the numeric limits of products. Each check returns ``(path, message)`` issues;
nothing here raises on bad input.

The schema bounds every number on its own (times and tokens up to 2^40, widths up to 2^32, ...);
the limits here bound what the models compute from several of them (see :func:`_limit_issues`):

* :data:`OFFSET_LIMIT` (2^50 cycles): a stream end's last nominal event offset, ``delay +
  (tokens - 1) x produce_ii`` (write end) or ``(tokens - 1) x consume_ii`` (read end). The FIFO
  witness schedules ``floor(lam * earliest + (1 - lam) * latest)`` are exact in float64 only
  while 4 x time < 2^53, and the LPs keep cycle counts exact below 2^53.
* :func:`makespan_limit`: the makespan bound of the whole graph, the sum over its kernels of
  (last event offset + 1) plus one cycle per event; every event time of every simulation,
  bounded or not, is at most this. It must stay within 2^50 and within 2^61 / (kernels + 1),
  because the simulator lifts each kernel's times above the previous kernel's in one int64 array.
* :data:`BITS_LIMIT` (2^53): tokens x width of a stream, width x depth of a FIFO or a buffer, and
  the bits of all streams together (the DRAM traffic the fusion objective sums), exact in float64.
* :data:`RESOURCE_SUM_LIMIT` (2^53): a resource summed over all kernels (capacity rows).
* :data:`TENSOR_ELEMENTS_LIMIT` (2^40): elements of an operator tensor (tiled one element per
  token at worst, so within the token bound of a stream).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from dfopt.instance.common import _at, _duplicate_names, _entries, _Faulty, _itensor_from_dict, _name, _unknown, _who
from dfopt.instance.isl import _program_issues
from dfopt.instance.types import (
    NEEDS_DAG,
    NEEDS_GRAPH,
    NEEDS_OPERATORS,
    NEEDS_PLATFORM,
    NEEDS_PROGRAM,
    NEEDS_SPARSE,
    PROBLEMS,
)
from dfopt.ir.analyses import cyclic_nodes
from dfopt.ir.itensor import DTYPE_BITS, ITensorType
from dfopt.ir.opgraph import operator_issues
from dfopt.ir.platform import PRESET_NAMES, load_preset
from dfopt.ir.sparse.statement import statement_issues
from dfopt.ir.tokens import TokenSchedule, monotone_fault
from dfopt.models import registry
from dfopt.schema import did_you_mean, found

#: Tokens of one stream and width of one token (bits): the schema's bounds, for derived values.
TOKENS_LIMIT = 2**40
WIDTH_LIMIT = 2**32
#: Largest nominal event offset of one stream end, in cycles.
OFFSET_LIMIT = 2**50
#: Largest bit count of a stream, a FIFO, a buffer, and of all streams together.
BITS_LIMIT = 2**53
#: Largest sum of one resource kind over the kernels.
RESOURCE_SUM_LIMIT = 2**53
#: Largest element count of an operator tensor.
TENSOR_ELEMENTS_LIMIT = 2**40

# == semantic checks ==========================================================================

def _semantic_issues(data: dict, faulty: _Faulty) -> list:
    problem = data.get("problem") if data.get("problem") in PROBLEMS else None
    issues = _requirement_issues(data, problem)
    graph = data.get("graph")
    if isinstance(graph, dict):
        issues += _graph_issues(graph, ("graph",), faulty)
        if problem is not None and problem in NEEDS_DAG:
            issues += _cycle_issues(graph, ("graph",), problem)
    issues += _platform_issues(data.get("platform"), problem)
    if isinstance(data.get("program"), dict):
        issues += _program_issues(data["program"], ("program",))
    if isinstance(data.get("operators"), dict):
        issues += [(path, msg) for path, msg in operator_issues(data["operators"], ("operators",))
                   if faulty.clean(path)]
        issues += _operator_limit_issues(data["operators"], ("operators",), faulty)
    if isinstance(data.get("sparse"), dict):
        issues += [(path, msg) for path, msg in statement_issues(data["sparse"], ("sparse",)) if faulty.clean(path)]
    issues += _option_issues(data)
    return issues


def _requirement_issues(data: dict, problem: str | None) -> list:
    issues = []
    if problem in NEEDS_GRAPH and "graph" not in data:
        issues.append((("graph",), f"problem {problem!r} needs a graph (kernels and streams), "
                                   "but the instance has none"))
    if problem in NEEDS_OPERATORS and "operators" not in data:
        issues.append((("operators",), f"problem {problem!r} needs an operator graph (tensors, ops, outputs), "
                                       "but the instance has none"))
    if problem in NEEDS_SPARSE and "sparse" not in data:
        issues.append((("sparse",), f"problem {problem!r} needs a sparse statement (expression and tensors), "
                                    "but the instance has none"))
    if problem in NEEDS_PROGRAM and "program" not in data:
        issues.append((("program",), f"problem {problem!r} needs a program (params and statements "
                                     "with isl domains), but the instance has none"))
    if problem in NEEDS_PLATFORM and "platform" not in data:
        presets = ", ".join(sorted(PRESET_NAMES))
        issues.append((("platform",), f"problem {problem!r} needs a platform (a preset: {presets}; "
                                      "or an inline object), but the instance has none"))
    return issues


def _graph_issues(graph: dict, base: tuple, faulty: _Faulty) -> list:
    kernels = _entries(graph.get("kernels"))
    streams = _entries(graph.get("streams"))
    issues, kernel_at = _duplicate_names(kernels, base + ("kernels",), "kernel")
    more, _ = _duplicate_names(streams, base + ("streams",), "stream")
    issues += more
    for i, kernel in kernels:
        issues += _loop_issues(kernel, base + ("kernels", i))
    for i, stream in streams:
        path = base + ("streams", i)
        issues += _endpoint_issues(stream, path, _who("stream", stream, i), kernel_at)
        issues += _stream_type_issues(stream, path, _who("stream", stream, i), faulty)
    issues += _limit_issues(graph, base, faulty)
    return issues


def _loop_issues(kernel: dict, base: tuple) -> list:
    loops = _entries(kernel.get("loops"))
    issues, _ = _duplicate_names(loops, base + ("loops",), "loop")
    more, _ = _duplicate_names(_entries(kernel.get("buffers")), base + ("buffers",), "buffer")
    issues += more
    who = _who("kernel", kernel, base[-1])
    return [(path, f"{who}: {message}") for path, message in issues]


def _endpoint_issues(stream: dict, base: tuple, who: str, kernel_at: dict) -> list:
    issues = []
    for end in ("src", "dst"):
        name = stream.get(end)
        if isinstance(name, str) and name and name not in kernel_at:
            issues.append((base + (end,), f"{who}: {end} names {_unknown('kernel', name, kernel_at)}"))
    return issues


def _stream_type_issues(stream: dict, base: tuple, who: str, faulty: _Faulty) -> list:
    issues, types = [], {}
    for side in ("src_type", "dst_type"):
        if isinstance(stream.get(side), dict) and faulty.clean(base + (side,)):
            itype = _itensor_from_dict(stream[side])
            faults = itype.problems()
            issues += [(base + (side, name), f"{who}: {side} {message}") for name, message in faults]
            if not faults:
                more = _itensor_limit_issues(itype, base + (side,), f"{who}: {side}", side == "dst_type")
                issues += more
                if not more:
                    types[side] = itype
    src, dst = types.get("src_type"), types.get("dst_type")
    tokens = stream.get("tokens")
    if (src is not None and "tokens" in stream and faulty.clean(base + ("tokens",))
            and int(stream["tokens"]) != src.tokens):
        issues.append((base + ("tokens",), f"{who}: tokens is {found(tokens)}, but the src_type streams "
                                           f"{src.tokens} tokens (the product of its tripcounts "
                                           f"{list(src.tripcounts)}); drop tokens or make them agree"))
    if src is not None and dst is not None:
        issues += _same_tensor_issues(src, dst, base, who)
    return issues


def _same_tensor_issues(src: ITensorType, dst: ITensorType, base: tuple, who: str) -> list:
    issues = []
    for name, a, b in (("shape", list(src.shape), list(dst.shape)), ("dtype", src.dtype, dst.dtype)):
        if a != b:
            issues.append((base + ("dst_type", name),
                           f"{who}: dst_type {name} {found(b)} differs from src_type {name} {found(a)}; "
                           "both ends view one tensor (a converter changes only its tiling)"))
    return issues


# == numeric limits of products ===============================================================

def makespan_limit(kernels: int) -> int:
    """The largest makespan bound (cycles) of a graph of ``kernels`` kernels: 2^50, and at most
    2^61 / (kernels + 1) so that the simulator's per-kernel lift stays within int64.

    >>> makespan_limit(10) == 2**50, makespan_limit(100_000)
    (True, 23058199510141)
    """
    return min(OFFSET_LIMIT, 2**61 // (kernels + 1))


def power_text(limit: int) -> str:
    """A limit as ``2^50 (1125899906842624)`` when it is a power of two, else the number.

    >>> power_text(2**53), power_text(1000)
    ('2^53 (9007199254740992)', '1000')
    """
    if limit > 0 and limit & (limit - 1) == 0:
        return f"2^{limit.bit_length() - 1} ({limit})"
    return str(limit)


_ABSENT = object()


def _count(entry: dict, key: str, path: tuple, faulty: _Faulty, default=None):
    """An integral field of ``entry`` as an int (``default`` when absent); None when the schema
    already faulted it or it is not an integral number."""
    value = entry.get(key, _ABSENT)
    if value is _ABSENT:
        return default
    if faulty.paths and not faulty.clean(path + (key,)):
        return None
    if type(value) is int:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value)


def _clean_ints(value) -> list | None:
    """The entries of a list of integral numbers as ints, or None."""
    if not isinstance(value, list):
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
            return None
        out.append(int(v))
    return out


def _itensor_limit_issues(itype: ITensorType, base: tuple, who: str, view: bool) -> list:
    """Tokens and token bits of a well-formed itensor type within a stream's bounds; for the
    consumer's ``view`` also the bits it reads (tokens x token bits)."""
    issues = []
    if itype.tokens > TOKENS_LIMIT:
        issues.append((base + ("tripcounts",), f"{who} streams {itype.tokens} tokens (the product of its tripcounts "
                                               f"{list(itype.tripcounts)}), above the limit {power_text(TOKENS_LIMIT)} "
                                               "of a stream's tokens; use larger tiles (element and steps)"))
    if itype.token_bits > WIDTH_LIMIT:
        issues.append((base + ("element",), f"{who} tokens are {itype.token_bits} bits (the product of its element "
                                            f"{list(itype.element)} x {DTYPE_BITS[itype.dtype]} bits), above the limit "
                                            f"{power_text(WIDTH_LIMIT)} of a token's width; use smaller tiles"))
    if view and not issues and itype.tokens * itype.token_bits > BITS_LIMIT:
        issues.append((base + ("tripcounts",), f"{who} reads {itype.tokens * itype.token_bits} bits ({itype.tokens} "
                                               f"tokens x {itype.token_bits} bits), above the limit "
                                               f"{power_text(BITS_LIMIT)}; re-read fewer tiles"))
    return issues


def _src_type_tokens_width(stream: dict, path: tuple, faulty: _Faulty) -> tuple:
    """(tokens, token bits) of a stream's src_type when it is clean, else (None, None)."""
    src = stream.get("src_type")
    if not isinstance(src, dict) or not faulty.clean(path + ("src_type",)):
        return None, None
    trips, element = _clean_ints(src.get("tripcounts")), _clean_ints(src.get("element"))
    bits = DTYPE_BITS.get(src.get("dtype", ""))
    return (None if trips is None else math.prod(trips),
            None if element is None or bits is None else math.prod(element) * bits)


class _Timing:
    """Per kernel name: (index, delay, ii) of the kernels whose timing fields are clean, and the
    last nominal event offset found so far (its delay before any stream is seen)."""

    def __init__(self, kernels: list, base: tuple, faulty: _Faulty):
        self.at: dict = {}
        self.span: dict = {}
        self.complete = True
        for i, kernel in kernels:
            name = _name(kernel)
            if name is None or name in self.at:
                continue
            path = base + ("kernels", i)
            delay, ii = _count(kernel, "delay", path, faulty, 0), _count(kernel, "ii", path, faulty, 1)
            self.complete &= delay is not None and ii is not None
            self.at[name] = (i, delay, ii)
            self.span[name] = delay or 0

    def reach(self, kernel: str, offset: int) -> None:
        self.span[kernel] = max(self.span[kernel], offset)


def _limit_issues(graph: dict, base: tuple, faulty: _Faulty) -> list:
    """Products of the graph's numbers within what the simulator and the models hold exactly:
    stream end offsets, stream and FIFO bits, buffer bits, resource sums, the makespan bound."""
    kernels, streams = _entries(graph.get("kernels")), _entries(graph.get("streams"))
    timing = _Timing(kernels, base, faulty)
    issues: list = []
    events = total_bits = 0
    for i, stream in streams:
        tokens, width, more = _stream_limits(stream, base + ("streams", i), i, timing, faulty)
        issues += more
        if tokens is None:
            timing.complete = False
            continue
        events += 2 * tokens
        total_bits += tokens * (width or 0)
    for i, kernel in kernels:
        issues += _kernel_limit_issues(kernel, base + ("kernels", i), _who("kernel", kernel, i), faulty)
    issues += _resource_sum_issues(kernels, base, faulty)
    if not issues and total_bits > BITS_LIMIT:
        issues.append((base + ("streams",), f"the streams move {total_bits} bits together (the sum of tokens x width), "
                                            f"above the limit {power_text(BITS_LIMIT)} that keeps the traffic exact "
                                            "in float64; use fewer or narrower tokens"))
    if not issues and timing.complete:
        issues += _makespan_issues(timing, events, base)
    return issues


def _stream_limits(stream: dict, path: tuple, index: int, timing: _Timing, faulty: _Faulty) -> tuple:
    """(tokens, width, issues) of one stream: its bits and the last offset of each end."""
    src_tokens, src_bits = _src_type_tokens_width(stream, path, faulty) if "src_type" in stream else (None, None)
    tokens = _count(stream, "tokens", path, faulty, src_tokens)
    width = _count(stream, "width", path, faulty, src_bits if "src_type" in stream else 32)
    if tokens is None or tokens > TOKENS_LIMIT or (width is not None and width > WIDTH_LIMIT):
        return None, None, []          # faulted by the schema or by the itensor checks
    issues = []
    who = _who("stream", stream, index)
    depth = _count(stream, "depth", path, faulty)
    if width is not None and tokens * width > BITS_LIMIT:
        issues.append((path + ("tokens",), f"{who}: tokens x width = {tokens} x {width} = {tokens * width} bits, above "
                                           f"the limit {power_text(BITS_LIMIT)} that keeps FIFO bits and traffic "
                                           "exact in float64; use fewer or narrower tokens"))
    if width is not None and depth is not None and depth * width > BITS_LIMIT:
        issues.append((path + ("depth",), f"{who}: depth x width = {depth} x {width} = {depth * width} bits, above the "
                                          f"limit {power_text(BITS_LIMIT)}; a depth above the tokens ({tokens}) "
                                          "buys nothing"))
    if tokens == 0 and "src_schedule" not in stream and "dst_schedule" not in stream:
        return tokens, width, issues
    for end, key, kind in (("src", "produce_ii", "write"), ("dst", "consume_ii", "read")):
        issues += _end_offset_issues(stream, path, who, timing, tokens, end, key, kind, faulty)
    return tokens, width, issues


def _schedule_issues(stream: dict, path: tuple, who: str, tokens: int, end: str, kind: str) -> tuple:
    """(issues, last offset) of a stream end's per-token schedule: as many tokens as the stream,
    cycles that never decrease (checked on the blocks, not expanded), the last within
    :data:`OFFSET_LIMIT`. The schema has bounded every number and the list's length."""
    key = f"{end}_schedule"
    at = path + (key,)
    sched = TokenSchedule.from_json(stream[key])
    count = sched.count
    if count != tokens:
        return [(at, f"{who}: {key} has {count} tokens (its blocks' trip products), the stream {tokens}; "
                     "a schedule gives every token's cycle")], None
    fault = monotone_fault(sched.blocks)
    if fault is not None:
        plain = all(isinstance(v, int) for v in stream[key])
        if plain:
            n = sched.offsets()
            k = int(np.flatnonzero(np.diff(n) < 0)[0]) + 1
            return [(at + (k,), f"{who}: {key}[{k}] = {int(n[k])} comes before {key}[{k - 1}] = {int(n[k - 1])}; "
                                f"the {kind}s of a stream end happen in token order")], None
        return [(at + (fault[0],), f"{who}: {key} {fault[1]}; the {kind}s of a stream end happen in token order")], None
    if sched.last > OFFSET_LIMIT:
        return [(at, f"{who}: {key}'s last {kind} at cycle {sched.last}, above the limit {power_text(OFFSET_LIMIT)} "
                     "that keeps event times exact")], None
    return [], sched.last


def _end_offset_issues(stream: dict, path: tuple, who: str, timing: _Timing, tokens: int, end: str, key: str,
                       kind: str, faulty: _Faulty) -> list:
    """The last nominal offset of one end of a stream within :data:`OFFSET_LIMIT`."""
    kernel = stream.get(end)
    if not isinstance(kernel, str) or kernel not in timing.at:
        return []
    if f"{end}_schedule" in stream:
        if not faulty.clean(path + (f"{end}_schedule",)):
            timing.complete = False
            return []
        issues, last = _schedule_issues(stream, path, who, tokens, end, kind)
        if last is None or tokens == 0:
            timing.complete = False
        else:
            timing.reach(kernel, last)
        return issues
    if tokens == 0:
        return []
    _, delay, kernel_ii = timing.at[kernel]
    ii = _count(stream, key, path, faulty, kernel_ii)
    start = delay if kind == "write" else 0
    if ii is None or start is None:
        timing.complete = False
        return []
    offset = start + (tokens - 1) * ii
    timing.reach(kernel, offset)
    if offset <= OFFSET_LIMIT:
        return []
    formula = (f"delay + (tokens - 1) x {key} = {start} + {tokens - 1} x {ii}" if kind == "write"
               else f"(tokens - 1) x {key} = {tokens - 1} x {ii}")
    return [(path, f"{who}: its last {kind} comes {formula} = {offset} cycles after {kernel!r} starts, above the "
                   f"limit {power_text(OFFSET_LIMIT)} that keeps event times exact (int64 simulation, float64 "
                   f"schedules); use fewer tokens or a smaller {key} (or ii of {kernel!r})")]


def _kernel_limit_issues(kernel: dict, base: tuple, who: str, faulty: _Faulty) -> list:
    """Bits of the kernel's buffers (width x depth) within :data:`BITS_LIMIT`."""
    issues = []
    for j, buf in _entries(kernel.get("buffers")):
        path = base + ("buffers", j)
        width, depth = _count(buf, "width", path, faulty), _count(buf, "depth", path, faulty)
        if width is not None and depth is not None and width * depth > BITS_LIMIT:
            issues.append((path, f"{who}: buffer {_name(buf) or j!r} holds width x depth = {width} x {depth} = "
                                 f"{width * depth} bits, above the limit {power_text(BITS_LIMIT)}; split it"))
    return issues


def _resource_sum_issues(kernels: list, base: tuple, faulty: _Faulty) -> list:
    """Each resource kind summed over the kernels within :data:`RESOURCE_SUM_LIMIT`."""
    sums: dict = {}
    for i, kernel in kernels:
        res = kernel.get("resources")
        if not isinstance(res, dict) or not faulty.clean(base + ("kernels", i, "resources")):
            continue
        for key, value in res.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                sums[key] = sums.get(key, 0) + value
    return [(base + ("kernels",), f"the kernels need {total:g} {key} together, above the limit "
                                  f"{power_text(RESOURCE_SUM_LIMIT)} that keeps capacity sums exact; "
                                  "check the resource figures")
            for key, total in sums.items() if total > RESOURCE_SUM_LIMIT]


def _makespan_issues(timing: _Timing, events: int, base: tuple) -> list:
    """The graph's makespan bound within :func:`makespan_limit`."""
    n = len(timing.span)
    bound = sum(timing.span.values()) + n + events
    limit = makespan_limit(n)
    if bound <= limit:
        return []
    longest = max(timing.span, key=lambda k: timing.span[k])
    return [(base, f"the graph's makespan bound is {bound} cycles (over its {n} kernels, the sum of each one's last "
                   f"event offset + 1, plus one cycle per event: {events} events), above the limit {power_text(limit)} "
                   f"for {n} kernels (min(2^50, 2^61 / (kernels + 1)): event times must stay exact in the "
                   f"simulator's int64 arrays); shorten the longest kernels (e.g. {longest!r}, last event at "
                   f"{timing.span[longest]}) with fewer tokens or smaller ii and delay")]


def _operator_limit_issues(ops: dict, base: tuple, faulty: _Faulty) -> list:
    """Element counts of declared operator tensors and reshape shapes within
    :data:`TENSOR_ELEMENTS_LIMIT`."""
    issues = []
    tensors = ops.get("tensors")
    for name, decl in (tensors.items() if isinstance(tensors, dict) else ()):
        path = base + ("tensors", name, "shape")
        shape = _clean_ints(decl.get("shape")) if isinstance(decl, dict) else None
        if shape and faulty.clean(path) and math.prod(shape) > TENSOR_ELEMENTS_LIMIT:
            issues.append((path, f"tensor {name!r} has {math.prod(shape)} elements (the product of its shape {shape}), "
                                 f"above the limit {power_text(TENSOR_ELEMENTS_LIMIT)}; use a smaller shape"))
    for i, op in _entries(ops.get("ops")):
        path = base + ("ops", i, "shape")
        shape = _clean_ints(op.get("shape"))
        if shape and faulty.clean(path) and math.prod(shape) > TENSOR_ELEMENTS_LIMIT:
            issues.append((path, f"{_who('op', op, i)}: shape {shape} has {math.prod(shape)} elements, above the "
                                 f"limit {power_text(TENSOR_ELEMENTS_LIMIT)}; use a smaller shape"))
    return issues


def _cycle_issues(graph: dict, base: tuple, problem: str) -> list:
    """One cycle, named ``k0 -> k1 -> k0`` with its streams, when ``problem`` needs a DAG."""
    order: dict[str, int] = {}
    for _, kernel in _entries(graph.get("kernels")):
        name = _name(kernel)
        if name is not None and name not in order:
            order[name] = len(order)
    arcs = []
    for i, stream in _entries(graph.get("streams")):
        src, dst = stream.get("src"), stream.get("dst")
        if isinstance(src, str) and isinstance(dst, str) and src in order and dst in order:
            arcs.append((order[src], order[dst], i))
    cyclic = set(cyclic_nodes(len(order), ((u, v) for u, v, _ in arcs)))
    if not cyclic:
        return []
    names = list(order)
    g = nx.MultiDiGraph()                       # only what Kahn's algorithm left, to name one cycle
    g.add_nodes_from(names[u] for u in sorted(cyclic))
    g.add_edges_from((names[u], names[v], i) for u, v, i in arcs if u in cyclic and v in cyclic)
    try:
        edges = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return []
    start = min(range(len(edges)), key=lambda j: order[edges[j][0]])
    edges = edges[start:] + edges[:start]
    path = " -> ".join([u for u, _, _ in edges] + [edges[0][0]])
    streams = graph["streams"]
    listed = ", ".join(_name(streams[i]) or f"#{i}" for _, _, i in edges)
    return [(base + ("streams", edges[0][2]),
             f"problem {problem!r} needs an acyclic graph, but the kernels form the cycle {path} "
             f"(streams {listed}); remove one of these streams")]


def _platform_issues(platform, problem: str | None) -> list:
    if isinstance(platform, str):
        issues = _preset_issues(platform)
        slotless = platform in PRESET_NAMES and not load_preset(platform).slots
        kind = load_preset(platform).kind if platform in PRESET_NAMES else None
    elif isinstance(platform, dict):
        issues = _link_issues(platform)
        slotless = not platform.get("slots")
        kind = platform.get("kind")
    else:
        return []
    wants = registry.info(problem).platform if problem is not None and problem in NEEDS_PLATFORM else None
    if wants == "rda":
        if kind is not None and kind != "rda":
            issues.append((("platform",), f"problem {problem!r} needs a reconfigurable dataflow array platform "
                                          f"(kind 'rda', e.g. 'capstan'), but platform {_platform_label(platform)} "
                                          f"is of kind {kind!r}"))
    elif wants is not None and slotless:
        issues.append((("platform",), f"problem {problem!r} needs a platform with slots, "
                                      f"but platform {_platform_label(platform)} has none"))
    return issues


def _preset_issues(name: str) -> list:
    if name in PRESET_NAMES or not name:
        return []
    presets = ", ".join(sorted(PRESET_NAMES))
    return [(("platform",), f"unknown platform preset {name!r}{did_you_mean(name, PRESET_NAMES)} "
                            f"(expected one of: {presets}; or an inline platform object)")]


def _platform_label(platform) -> str:
    if isinstance(platform, str):
        return repr(platform)
    return repr(platform["name"]) if isinstance(platform.get("name"), str) else "(inline)"


def _link_issues(platform: dict) -> list:
    base = ("platform",)
    slots = _entries(platform.get("slots"))
    issues, slot_at = _duplicate_names(slots, base + ("slots",), "slot")
    for i, link in _entries(platform.get("links")):
        ends = [link.get("a"), link.get("b")]
        for end, name in zip(("a", "b"), ends):
            if isinstance(name, str) and name and name not in slot_at:
                issues.append((base + ("links", i, end), f"link #{i}: {end} names {_unknown('slot', name, slot_at)}"))
        if ends[0] == ends[1] and isinstance(ends[0], str) and ends[0]:
            issues.append((base + ("links", i, "b"), f"link #{i} joins slot {ends[0]!r} to itself; "
                                                      "a link joins two different slots"))
    return issues


def _slot_names(data: dict) -> list[str] | None:
    """The slot names of the instance's platform (preset or inline), or None when unknown."""
    platform = data.get("platform")
    if isinstance(platform, str):
        return [s.name for s in load_preset(platform).slots] if platform in PRESET_NAMES else None
    if isinstance(platform, dict):
        return [n for _, s in _entries(platform.get("slots")) if (n := _name(s))]
    return None


def _option_issues(data: dict) -> list:
    """Pinned kernels and slots of the placement options must exist."""
    pins = _at(data, ("options", "placement", "pins"))
    if not isinstance(pins, dict):
        pins = {}
    graph = data.get("graph")
    kernels = ([n for _, k in _entries(graph.get("kernels")) if (n := _name(k))]
               if isinstance(graph, dict) else None)
    slots = _slot_names(data)
    base = ("options", "placement", "pins")
    issues: list[tuple[tuple, str]] = []
    for kernel, slot in pins.items():
        if kernels is not None and kernel not in kernels:
            issues.append((base + (kernel,), f"the pin names {_unknown('kernel', str(kernel), kernels)}"))
        for one in ([slot] if isinstance(slot, str) else slot if isinstance(slot, list) else []):
            if slots is not None and isinstance(one, str) and one and one not in slots:
                issues.append((base + (kernel,), f"kernel {kernel!r} is pinned to {_unknown('slot', one, slots)}"))
    for i, group in enumerate(_at(data, ("options", "placement", "same_slot")) or []):
        for j, kernel in enumerate(group if isinstance(group, list) else []):
            if kernels is not None and isinstance(kernel, str) and kernel not in kernels:
                issues.append((("options", "placement", "same_slot", i, j),
                               f"same_slot group #{i} names {_unknown('kernel', kernel, kernels)}"))
    return issues
