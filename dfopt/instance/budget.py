"""Memory estimates of a solve, from counts only, before any array is allocated.

:func:`estimate_memory` lists what the solve of an instance would allocate, part by part, as
``(what, bytes)``; :func:`check_budget` raises :class:`~dfopt.errors.ResourceLimitError` (bad
input, exit code 2) when the parts together exceed a budget, naming the largest one. Both read
only counts off the instance (kernels, streams, tokens, slots, tiles), in time linear in the
graph, so they are cheap for 100k-kernel graphs. The figures are upper estimates, calibrated on
measured peaks (``tracemalloc``) of the simulator and the models:

==========================  ==================================================================
part                        bytes
==========================  ==================================================================
graph objects               2 KiB per kernel and per stream (parsed JSON and the IR objects)
compiled event arrays       32 per event (code, offset, position, next; E = 2 x tokens) + 4 per
                            token (its stream) + 64 per event of one sort chunk (<= 2^20 events)
simulated event times       24 per event (the reference run, its copy, one bounded run)
witness schedules           72 per event (earliest, latest, mixed releases, schedules, the
                            kernel of each event)
delay LP (flow, potentials, 2 KiB per kernel and per stream
paths)
fusion ancestor matrix      kernels^2 (one boolean per pair)
fusion exact model          x[kernel, group] with G = min(kernels, 2 U / C_max + 1) groups (U:
                            kernel and converter bytes), f per kernel pair, y and z per pair
                            with a converter and group; 3 nonzeros per variable
placement exact model       x[kernel, slot], z[stream, cut line]; nonzeros kernels x slots x 8
                            + streams x cuts x 2 (2 slots + 1)
memory exact model          buffers x 4 kinds x slots variables, 3 nonzeros each
mapping reachability        kernels (kernels - 1) / 2 x 48 (descendant sets of every node)
mapping exact model         3 x nodes x tiles variables, 4 nonzeros each
(every exact model)         4 KiB per variable and 1 KiB per nonzero: names, bounds, the
                            Python lists and the solver's own copies (CP-SAT, measured)
pipeline                    the parts above for the tiled graph of the operators (fusion on
                            it; FIFO sizing, memory and placement on the fused graph, counted
                            as twice its kernels, streams and tokens)
==========================  ==================================================================

The fifo figures add up to 128 bytes per event; the measured peak of a default (``slack``) FIFO
solve is about 106. Heuristic formulations (greedy, heuristic, bipartition, search) build no
exact model, so only their data is counted.

>>> from dfopt.instance import from_dict
>>> inst = from_dict({"format": "dfopt-instance/1", "name": "pair", "problem": "fifo",
...     "graph": {"kernels": [{"name": "a"}, {"name": "b"}],
...               "streams": [{"name": "e", "src": "a", "dst": "b", "tokens": 1000000}]}})
>>> [(what.split(" (")[0], format_bytes(b)) for what, b in estimate_memory(inst)]  # doctest: +NORMALIZE_WHITESPACE
[('graph objects', '6.00 KiB'), ('compiled event arrays', '128.85 MiB'), ('simulated event times', '45.78 MiB'),
 ('witness schedules', '137.33 MiB')]
>>> check_budget(inst, DEFAULT_MAX_MEMORY)
>>> try:
...     check_budget(inst, 256 * 2**20)
... except ResourceLimitError as err:
...     print(err)  # doctest: +NORMALIZE_WHITESPACE
/graph/streams: the witness schedules (earliest, latest and mixed event times of the FIFO proofs) would need
about 137.33 MiB (311.96 MiB for the whole solve), above the memory budget of 256.00 MiB; raise the budget with
--max-memory BYTES, or shrink the instance: fewer tokens (2000000 events from 1000000 tokens in 1 stream)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dfopt.errors import ResourceLimitError
from dfopt.units import format_bytes

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.models.options import CommonOptions

__all__ = ["DEFAULT_MAX_MEMORY", "estimate_memory", "check_budget"]

#: The default memory budget of a solve: 8 GiB.
DEFAULT_MAX_MEMORY = 8 << 30

GRAPH_OBJECT_BYTES = 2048       # per kernel and per stream
EVENT_ARRAY_BYTES = 32          # per event: ev_code, ev_n, ev_pos, ev_next (int64 at worst)
TOKEN_ARRAY_BYTES = 4           # per token: its stream (int32)
SORT_CHUNK_EVENTS = 1 << 20     # events sorted at once while compiling (dfopt.sim.events)
SORT_BYTES = 64                 # per event of one sort chunk: keys and their temporaries
EVENT_TIME_BYTES = 24           # per event: reference times, their copy, one bounded run
WITNESS_BYTES = 72              # per event: the witness family's schedules and temporaries
LP_ENTITY_BYTES = 2048          # per kernel and per stream of the delay LPs
VAR_BYTES = 4096                # per model variable: name, bounds, the solver's copies and search
NONZERO_BYTES = 1024            # per model coefficient: arrays, Python lists, the solver's copies
REACH_PAIR_BYTES = 48           # per (node, descendant) pair of the mapping's reachability sets
MEMORY_KINDS = 4                # register, lutram, bram18, uram
RESOURCE_KINDS = 6              # lut, ff, dsp, bram, uram, bytes

HEURISTICS = frozenset({"greedy", "heuristic", "bipartition", "search", "lns"})
LP_FORMULATIONS = frozenset({"flow", "potentials", "paths"})

Part = tuple  # (what, bytes)


def estimate_memory(instance: Instance, formulation: str | None = None,
                    options: CommonOptions | None = None) -> list[Part]:
    """What solving ``instance`` would allocate, as ``(what, bytes)`` parts (see the module
    docstring); ``formulation`` overrides the instance's (default: the problem's default);
    ``options`` (the problem's resolved Options, as the driver has them) override the instance's
    ``options`` for the formulation, ``c_max`` and ``memory_binding``.

    >>> from dfopt.instance import from_dict
    >>> inst = from_dict({"format": "dfopt-instance/1", "name": "x", "problem": "fusion",
    ...     "graph": {"kernels": [{"name": f"k{i}"} for i in range(1000)]}, "options": {"fusion": {"c_max": 64}}})
    >>> [(what.split(" (")[0], format_bytes(b)) for what, b in estimate_memory(inst)]
    [('graph objects', '1.95 MiB'), ('fusion ancestor matrix', '976.56 KiB'), ('fusion exact model', '6.84 MiB')]
    """
    problem = instance.problem
    chosen = (formulation or getattr(options, "formulation", None)
              or instance.options_for(problem).get("formulation"))
    parts = _graph_parts(instance.graph)
    graph = instance.graph
    if problem == "fifo" and graph is not None:
        parts += _fifo_parts(_counts(graph), chosen)
    elif problem == "fusion" and graph is not None:
        parts += _fusion_parts(graph, _c_max(instance, "fusion", options), _exact(problem, chosen))
    elif problem == "placement" and graph is not None:
        parts += _placement_parts(graph, instance.platform, _exact(problem, chosen), _joint(instance, options))
    elif problem == "memory" and graph is not None:
        parts += _memory_parts(graph, instance.platform, _exact(problem, chosen))
    elif problem == "mapping" and graph is not None:
        parts += _mapping_parts(graph, instance, _exact(problem, chosen))
    elif problem == "pipeline" and instance.operators is not None:
        parts += _pipeline_parts(instance)
    return [(what, int(size)) for what, size in parts if size > 0]


def check_budget(instance: Instance, max_bytes: int = DEFAULT_MAX_MEMORY, formulation: str | None = None,
                 options: CommonOptions | None = None) -> None:
    """Raise :class:`~dfopt.errors.ResourceLimitError` when the parts of
    :func:`estimate_memory` together exceed ``max_bytes``; the message names the largest part,
    its estimate, the whole estimate and the budget, and says how to raise the budget or shrink
    the instance. A pipeline's tiled graph must also keep the numeric limits of
    :mod:`dfopt.instance.semantics` (an :class:`~dfopt.errors.InstanceError` at ``/operators``).

    >>> from dfopt.instance import Instance
    >>> from dfopt.ir.graph import DataflowGraph, Kernel
    >>> graph = DataflowGraph([Kernel(f"k{i}") for i in range(100000)])
    >>> inst = Instance("x", "fusion", graph=graph, options={"fusion": {"c_max": 64}})
    >>> try:
    ...     check_budget(inst)
    ... except ResourceLimitError as err:
    ...     print(err.part, format_bytes(err.estimate), format_bytes(err.budget))
    fusion ancestor matrix 10.17 GiB 8.00 GiB
    """
    parts = estimate_memory(instance, formulation, options)
    total = sum(size for _, size in parts)
    if total <= max_bytes:
        return
    what, size = max(parts, key=lambda p: p[1])
    name, _, why = what.partition(" (")
    pointer, hint = _remedy(name, instance)
    raise ResourceLimitError(
        f"the {name} ({why} would need about {format_bytes(size)} ({format_bytes(total)} for the whole solve), "
        f"above the memory budget of {format_bytes(max_bytes)}; raise the budget with --max-memory BYTES, "
        f"or shrink the instance: {hint}", pointer=pointer, part=name, estimate=total, budget=max_bytes)


# -- counts ------------------------------------------------------------------------------------

class _Counts:
    """Kernels, streams, tokens and events of a graph (or of an estimate of one)."""

    def __init__(self, kernels: int, streams: int, tokens: int):
        self.kernels, self.streams, self.tokens = kernels, streams, tokens

    @property
    def events(self) -> int:
        return 2 * self.tokens

    def scaled(self, factor: int) -> _Counts:
        return _Counts(self.kernels * factor, self.streams * factor, self.tokens * factor)


def _counts(graph) -> _Counts:
    return _Counts(len(graph.kernels), len(graph.streams), sum(s.tokens for s in graph.streams.values()))


def _exact(problem: str, formulation: str | None) -> bool:
    """Whether the formulation (default: the problem's) builds an exact model."""
    from dfopt.models.registry import get_problem

    return (formulation or get_problem(problem).default) not in HEURISTICS


def _c_max(instance, problem: str, options=None) -> int | None:
    given = getattr(options, "c_max", None)
    if given is None:
        given = instance.options_for(problem).get("c_max")
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given > 0:
        return int(given)
    platform = instance.platform
    return int(platform.onchip_bytes) if platform is not None and platform.onchip_bytes else None


def _joint(instance, options=None) -> bool:
    mode = getattr(options, "memory_binding", None) or instance.options_for("placement").get("memory_binding")
    return mode == "joint"


def _model(what: str, variables: int, nonzeros: int) -> Part:
    return what, variables * VAR_BYTES + nonzeros * NONZERO_BYTES


# -- parts ---------------------------------------------------------------------------------------

def _graph_parts(graph) -> list[Part]:
    if graph is None:
        return []
    return [("graph objects (parsed JSON and IR of kernels and streams)",
             (len(graph.kernels) + len(graph.streams)) * GRAPH_OBJECT_BYTES)]


def _fifo_parts(c: _Counts, formulation: str | None, prefix: str = "") -> list[Part]:
    """The simulator's compiled events and times, and the witness schedules of FIFO sizing."""
    e = c.events
    parts = [(f"{prefix}compiled event arrays (per event its code, offset, position and successor)",
              e * EVENT_ARRAY_BYTES + c.tokens * TOKEN_ARRAY_BYTES + min(e, SORT_CHUNK_EVENTS) * SORT_BYTES),
             (f"{prefix}simulated event times (the reference run and the bounded runs of the checks)",
              e * EVENT_TIME_BYTES),
             (f"{prefix}witness schedules (earliest, latest and mixed event times of the FIFO proofs)",
              e * WITNESS_BYTES)]
    if formulation in LP_FORMULATIONS:
        parts.append((f"{prefix}delay LP (a variable per kernel and per stream)",
                      (c.kernels + c.streams) * LP_ENTITY_BYTES))
    return parts


def _fusion_parts(graph, c_max: int | None, exact: bool, prefix: str = "", scale: int = 1) -> list[Part]:
    """The ancestor matrix every fusion formulation builds, and the exact model's size."""
    k = len(graph.kernels) * scale
    parts = [(f"{prefix}fusion ancestor matrix (a boolean per pair of kernels)", k * k)]
    if exact:
        pairs = len({(s.src, s.dst) for s in graph.streams.values()}) * scale
        converted = len({(s.src, s.dst) for s in graph.streams.values() if _converts(s)}) * scale
        used = sum(kr.resources.get("bytes", 0) for kr in graph.kernels.values()) * scale
        used += sum(s.converter_bytes or 0 for s in graph.streams.values()) * scale
        groups = k if not c_max else min(k, int(2 * used // c_max) + 1)
        variables = k * groups + pairs + groups + 2 * converted * groups
        parts.append(_model(f"{prefix}fusion exact model (kernels x groups assignment, pairs x groups)",
                            variables, 3 * variables))
    return parts


def _converts(stream) -> bool:
    """Whether a stream may need a layout converter (given bytes, or two different tilings)."""
    if stream.converter_bytes:
        return True
    return stream.src_type is not None and stream.dst_type is not None and stream.src_type != stream.dst_type


def _cut_lines(platform) -> int:
    xs = {s.x for s in platform.slots}
    ys = {s.y for s in platform.slots}
    return max(len(xs) - 1, 0) + max(len(ys) - 1, 0)


def _placement_parts(graph, platform, exact: bool, joint: bool, prefix: str = "", scale: int = 1) -> list[Part]:
    """The exact model's assignment and crossing variables."""
    if not exact or platform is None or not platform.slots:
        return []
    k, s = len(graph.kernels) * scale, len(graph.streams) * scale
    slots, cuts = len(platform.slots), _cut_lines(platform)
    variables = k * slots + s * cuts
    nonzeros = k * slots * (RESOURCE_KINDS + 2) + s * cuts * 2 * (2 * slots + 1)
    if joint:
        buffers = sum(len(kr.buffers) for kr in graph.kernels.values()) * scale
        variables += buffers * slots * MEMORY_KINDS
        nonzeros += 3 * buffers * slots * MEMORY_KINDS
    return [_model(f"{prefix}placement exact model (kernels x slots assignment, streams x cut lines)",
                   variables, nonzeros)]


def _memory_parts(graph, platform, exact: bool, prefix: str = "", scale: int = 1) -> list[Part]:
    """The exact binding model: a variable per buffer, memory kind and slot."""
    if not exact:
        return []
    buffers = sum(len(kr.buffers) for kr in graph.kernels.values()) * scale
    slots = max(1, len(platform.slots)) if platform is not None else 1
    variables = buffers * MEMORY_KINDS * slots
    return [_model(f"{prefix}memory exact model (buffers x memory kinds x slots)", variables, 3 * variables)]


def _region_tiles(instance) -> int:
    """Compute tiles of the mapping region (default: columns 0-3, every compute row)."""
    npu = instance.platform.npu if instance.platform is not None else {}
    if not npu:
        return 0
    columns, rows = int(npu.get("columns", 0)), list(npu.get("rows", {}).get("compute", []))
    region = instance.options_for("mapping").get("region") or {}
    spans = []
    for key, default in (("columns", min(columns, 4)), ("rows", len(rows))):
        value = region.get(key)
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
            spans.append(max(0, value[1] - value[0] + 1))
        else:
            spans.append(default)
    return spans[0] * spans[1]


def _mapping_parts(graph, instance, exact: bool) -> list[Part]:
    """The reachability sets of the virtual graph, and the exact model over nodes x tiles."""
    k = len(graph.kernels)
    parts = [("mapping reachability (the descendants of every node)", k * (k - 1) // 2 * REACH_PAIR_BYTES)]
    if exact:
        variables = 3 * k * _region_tiles(instance)
        parts.append(_model("mapping exact model (nodes x tiles assignment)", variables, 4 * variables))
    return parts


def _pipeline_parts(instance) -> list[Part]:
    """The stages on the tiled graph: fusion on it, the rest on the fused graph (at most twice
    its kernels, streams and tokens: each cut stream gains a DMA write and read)."""
    tiled = _tiled_graph(instance)
    options = instance.options_for("pipeline")
    c_max = options.get("c_max") or (instance.platform.onchip_bytes if instance.platform is not None else None)
    fusion_exact = _exact("fusion", options.get("fusion_formulation"))
    placement_exact = _exact("placement", options.get("placement_formulation"))
    parts = [("pipeline tiled graph (IR of its kernels and streams)",
              (len(tiled.kernels) + len(tiled.streams)) * GRAPH_OBJECT_BYTES * 3)]
    parts += _fusion_parts(tiled, c_max, fusion_exact, "pipeline ")
    parts += _fifo_parts(_counts(tiled).scaled(2), None, "pipeline ")
    parts += _memory_parts(tiled, instance.platform, True, "pipeline ", 2)
    parts += _placement_parts(tiled, instance.platform, placement_exact, False, "pipeline ", 2)
    return parts


def _tiled_graph(instance):
    """The pipeline's tiled graph (tiling is cheap: one kernel per op, counts only), checked
    against the numeric limits the instance's own graphs must keep."""
    from dfopt.errors import InstanceError
    from dfopt.instance.common import _Faulty
    from dfopt.instance.convert import graph_to_dict
    from dfopt.instance.semantics import _limit_issues
    from dfopt.models.tiling.tiler import tile_graph

    options = instance.options_for("pipeline")
    sizes = options.get("tile_sizes")
    tiled = tile_graph(instance.operators, int(options.get("default_tile_size", 64)),
                       int(options.get("overall_unroll_size", 1024)), sizes if isinstance(sizes, dict) else None)
    issues = _limit_issues(graph_to_dict(tiled), (), _Faulty([]))
    if issues:
        raise InstanceError(f"the tiled design of the operators breaks a numeric limit: {issues[0][1]}; use "
                            "smaller tensor shapes or another default_tile_size", pointer="/operators")
    return tiled


# -- messages ------------------------------------------------------------------------------------

def _remedy(part: str, instance) -> tuple[str, str]:
    """(JSON pointer, how to shrink) for the largest part."""
    graph = instance.graph
    if part.startswith("pipeline"):
        return "/operators", "smaller tensor shapes, or a larger default_tile_size"
    if part == "graph objects":
        return "/graph", f"fewer kernels and streams ({len(graph.kernels)} kernels, {len(graph.streams)} streams)"
    if part in ("compiled event arrays", "simulated event times", "witness schedules", "delay LP"):
        c = _counts(graph)
        return "/graph/streams", (f"fewer tokens ({c.events} events from {c.tokens} tokens in {c.streams} "
                                  f"stream{'s' if c.streams != 1 else ''})")
    if part.endswith("exact model"):
        return "/graph/kernels", (f"fewer kernels ({len(graph.kernels)}), or a heuristic formulation "
                                  "(e.g. --formulation greedy)")
    return "/graph/kernels", f"fewer kernels ({len(graph.kernels)})"
