"""Memory binding (``problem: memory``; StreamTensor section 5.3; docs/memory.md).

Binds every on-chip memory of the graph (:func:`.buffers.graph_buffers`: kernel buffers, stream
FIFOs with a depth, layout converters) to registers, LUTRAM, BRAM18 or URAM by its geometry
(:func:`dfopt.ir.memory.memory_options`; a FIFO costs what Vitis builds for it,
:func:`dfopt.ir.memory.fifo_storage`, and one of depth <= 2 is registers). Each memory lives in
the slot of its owner (option ``placement``; without it a one-slot platform, or the whole device
pooled as one slot ``device``). Per slot and resource (``lut``, ``ff``, ``bram`` in BRAM36,
``uram``) the kernels' own resources plus the buffers' cost stay within the slot's capacity times
``max_utilization``. Objective: the least peak weighted utilisation ``weight[r] * used /
capacity``; then, with that peak fixed, the least sum of the weighted utilisations.

The formulations are in :mod:`.formulations` (default ``cpsat``). ``bound`` is the proven
optimum, or a lower bound from the solver's bound and the kernels' own usage. Infeasible
instances raise :class:`~dfopt.errors.InfeasibleError` naming the slot, the resource, the need and
the capacity.

>>> import dfopt
>>> sol = dfopt.solve("instances/memory/tight.json")
>>> sec = sol.sections["memory"]
>>> sol.status.value, round(sol.objective, 4), round(sec["heuristic"]["peak"], 4), sec["peak_at"]
('optimal', 0.6667, 0.8333, ['PL', 'bram'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from dfopt.errors import InfeasibleError
from dfopt.ir.memory import KIND_RESOURCE, MEMORY_KINDS
from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.memory.buffers import BufferUse, graph_buffers
from dfopt.models.memory.checks import check, checks
from dfopt.models.memory.decision import Binding
from dfopt.models.memory.diagnose import base_fault, lonely_fault
from dfopt.models.memory.formulations import MemoryData, floor_bound, formulations
from dfopt.models.memory.heuristic import size_ordered
from dfopt.models.memory.problem import RESOURCES, memory_problem
from dfopt.models.memory.summary import summary
from dfopt.models.options import CommonOptions, option, where

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.platform import Platform
    from dfopt.solution import Solution

__all__ = ["PROBLEM", "Options", "Binding", "BufferUse", "bind", "bind_for_placement", "check", "checks",
           "graph_buffers"]

_POSITIVE = {"type": "number", "exclusiveMinimum": 0, "maximum": 1e6}


@dataclass(frozen=True)
class Options(CommonOptions):
    """Memory-binding options (``options.memory``, ``dfopt solve`` flags, keywords)."""

    placement: dict | None = option(None, "kernel -> slot; default: the only slot, or the whole device pooled as "
                                          "one slot", schema={"type": "object", "additionalProperties":
                                                              {"type": "string", "minLength": 1}},
                                    metavar="JSON")
    max_utilization: float = option(1.0, "capacity = slot resources x this", exclusive_minimum=0, maximum=1)
    weights: dict | None = option(None, "resource (lut, ff, bram, uram) -> positive weight of its utilisation "
                                        "(default 1 each)",
                                  schema={"type": "object", "properties": {r: _POSITIVE for r in RESOURCES},
                                          "additionalProperties": False}, metavar="JSON")
    hint: bool = option(True, "exact formulations: start from the size-ordered binding")


def prepare(instance: Instance, options: Options) -> MemoryData:
    assert instance.graph is not None  # the driver checks the parts a problem needs
    problem = memory_problem(instance.graph, instance.platform, options.placement, options.weights,
                             options.max_utilization, where=lambda name, *path: where(options, name, *path))
    fault = base_fault(problem) or lonely_fault(problem)
    if fault is not None:
        raise InfeasibleError(*fault)
    # lonely_fault leaves no buffer without an allowed kind, so the heuristic binds every one
    return MemoryData(problem, cast("list[str]", size_ordered(problem)))


def _binding_list(data: MemoryData, decision: Binding) -> list:
    return [decision.binding[b.key] for b in data.problem.buffers]


def objective(data: MemoryData, decision: Binding) -> float:
    return data.problem.peak(_binding_list(data, decision))[0]


def report(data: MemoryData, outcome: Outcome, options: Options) -> dict:
    """The ``memory`` section beside the binding: costs, owners, usage per slot, peak, baseline."""
    problem, binding, heur = data.problem, _binding_list(data, outcome.decision), data.heuristic
    used = problem.usage(binding)
    slots = {}
    for s, slot in enumerate(problem.slots):
        slots[slot.name] = {r: {"used": used[s][r], "capacity": slot.capacity[r],
                                "utilization": used[s][r] / slot.capacity[r]}
                            for r in RESOURCES if slot.has(r)}
    peak, at = problem.peak(binding)
    outcome.stats.update(buffers=len(problem.buffers), with_choice=sum(len(o) > 1 for o in problem.options))
    return {
        "cost": {b.key: b.options[k] for b, k in zip(problem.buffers, binding)},
        "owner": {b.key: b.owner for b in problem.buffers},
        "placement": dict(problem.placement),
        "slots": slots,
        "peak": peak,
        "peak_at": list(at) if at else None,
        "sum": problem.weighted_sum(binding),
        "heuristic": {"peak": problem.peak(heur)[0], "sum": problem.weighted_sum(heur), "fits": problem.fits(heur)},
        "counts": {k: sum(1 for x in binding if x == k) for k in MEMORY_KINDS},
        "max_utilization": problem.max_utilization,
        "weights": dict(problem.weights),
        "pooled": problem.pooled,
    }


def _weights(instance, options: Options) -> dict:
    return {**{r: 1.0 for r in RESOURCES}, **(options.weights or {})}


def _placement(instance, options: Options) -> dict:
    if options.placement is not None:
        return dict(options.placement)
    names = [s.name for s in instance.platform.slots]
    return {k: names[0] if len(names) == 1 else "device" for k in instance.graph.kernels}


PROBLEM = Problem(
    recount=True,
    info=registry.info("memory"), options=Options, decision=Binding, prepare=prepare,
    formulations=formulations(), default="cpsat", objective=objective,
    lower_bound=lambda data: floor_bound(data.problem), report=report, checks=checks, summary=summary,
    recorded={"max_utilization": lambda inst, o: o.max_utilization, "weights": _weights,
              "placement": _placement})


def bind(graph: DataflowGraph, platform: Platform | str, **options: Any) -> Solution:
    """Bind every memory of ``graph`` on ``platform`` (a Platform or a preset name); returns the
    checked :class:`~dfopt.solution.Solution` (``.decision.binding``: memory -> kind).

    Examples
    --------
    >>> from dfopt.ir.graph import Buffer, DataflowGraph, Kernel
    >>> g = DataflowGraph([Kernel("a", buffers=(Buffer("w", 512, 4096),))])
    >>> dict(bind(g, "u55c").decision.binding)
    {'a.w': 'uram'}
    """
    from dfopt.api import solve_graph

    return solve_graph("memory", graph, platform, **options)


def bind_for_placement(graph: DataflowGraph, platform: Platform) -> tuple[dict, dict]:
    """Bind every memory before placement (the placement model's ``memory_binding: heuristic``):
    the size-ordered heuristic on the device pooled as one slot. Returns the resources the bound
    memories add to each owner kernel and the binding (key -> kind).

    >>> from dfopt.ir.graph import Buffer, DataflowGraph, Kernel, Stream
    >>> from dfopt.ir.platform import load_preset
    >>> g = DataflowGraph([Kernel("a", buffers=(Buffer("w", 512, 4096),)), Kernel("b")],
    ...                   [Stream("e", "a", "b", tokens=8, width=64, depth=2)])
    >>> bind_for_placement(g, load_preset("u55c"))
    ({'a': {'uram': 8}, 'b': {'ff': 128}}, {'a.w': 'uram', 'fifo.e': 'register'})
    """
    problem = memory_problem(graph, platform)
    binding = size_ordered(problem)
    extra: dict = {}
    for b, kind in zip(problem.buffers, binding):
        if kind is not None:
            r = KIND_RESOURCE[kind]
            extra.setdefault(b.owner, {})[r] = extra.get(b.owner, {}).get(r, 0) + b.options[kind]
    return extra, {b.key: kind for b, kind in zip(problem.buffers, binding) if kind is not None}
