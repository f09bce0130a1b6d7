"""Multi-die placement (``problem: placement``; StreamTensor 5.3, AutoBridge; docs/placement.md).

Every kernel goes to one slot of an FPGA platform (an SLR, or a finer grid slot). Per slot and
resource the kernels' sum is at most ``max_utilization`` x capacity; the streams crossing each
cut line fit its link wires; pinned kernels stay in their slots (``pins``: kernel -> slot or list
of slots) and ``same_slot`` groups share one. Objective: width-weighted Manhattan distance of
the streams plus ``balance_weight`` x the sum over resources of (max - min) slot utilisation.
The formulations are in :mod:`.formulations` (default ``cpsat``).

Kernel ``resources`` exclude the memories listed apart (kernel ``buffers``, stream FIFOs with a
depth, layout converters; see :mod:`dfopt.models.memory.buffers`); ``memory_binding`` says how
those count, beside their owner: ``bram`` (default) puts each in BRAM18 by its geometry (a FIFO of
depth <= 2 in registers), as HLS does by default; ``heuristic`` binds them first with the
size-ordered heuristic of :mod:`dfopt.models.memory`; ``joint`` lets the exact model choose
LUTRAM, BRAM18 or URAM for each buffer together with the slots. Infeasible instances raise
:class:`~dfopt.errors.InfeasibleError` with the reason — from the simple tests of
:mod:`.presolve`, else a small conflicting set of constraints from CP-SAT (:mod:`.conflict`).

>>> import dfopt
>>> sol = dfopt.solve("instances/placement/chain-u55c.json")
>>> sol.status.value, sol.objective, dict(sol.decision.slot)
('optimal', 64.0, {'load': 'SLR0', 'conv1': 'SLR0', 'conv2': 'SLR1', 'store': 'SLR1'})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dfopt.errors import InfeasibleError, InstanceError, unknown_name_error
from dfopt.models import registry
from dfopt.models.base import Outcome, Problem
from dfopt.models.options import CommonOptions, option, where
from dfopt.models.placement.checks import check, checks
from dfopt.models.placement.data import PlacementData, placement_data
from dfopt.models.placement.decision import Placement
from dfopt.models.placement.formulations import PlacementProblem, binding_resources, formulations
from dfopt.models.placement.greedy import greedy_placement
from dfopt.models.placement.presolve import infeasibility_reasons
from dfopt.models.placement.summary import summary

if TYPE_CHECKING:
    from dfopt.instance.types import Instance
    from dfopt.ir.graph import DataflowGraph
    from dfopt.ir.platform import Platform
    from dfopt.solution import Solution

__all__ = ["PROBLEM", "Options", "Placement", "binding_resources", "place", "check", "checks"]

MEMORY_MODES = ("bram", "heuristic", "joint")
_NAMES = {"type": "string", "minLength": 1}


@dataclass(frozen=True)
class Options(CommonOptions):
    """Placement options (``options.placement``, ``dfopt solve`` flags, keywords)."""

    max_utilization: float = option(0.8, "per slot and resource, the kernels may use this share of the capacity",
                                    exclusive_minimum=0, maximum=1)
    balance_weight: float = option(0.0, "weight of the summed (max - min) slot utilisation in the objective",
                                   minimum=0, maximum=1e12)
    pins: dict = option(None, "kernel -> slot, or a list of slots the kernel may use", default_factory=dict,
                        schema={"type": "object", "additionalProperties": {
                            "oneOf": [_NAMES, {"type": "array", "minItems": 1, "items": _NAMES}]}},
                        metavar="JSON")
    same_slot: tuple = option((), "groups of kernels that must share a slot",
                              schema={"type": "array", "items": {"type": "array", "minItems": 2, "items": _NAMES}},
                              metavar="JSON")
    memory_binding: str = option("bram", "how kernel buffers, FIFOs and converters count: BRAM18 by geometry "
                                         "(bram), bound first by the size-ordered heuristic (heuristic), or "
                                         "chosen inside the exact model (joint)", choices=MEMORY_MODES)
    hint: bool = option(True, "exact formulations: start from the greedy placement")
    workers: int = option(8, "CP-SAT workers (deterministic: interleaved search)", minimum=1, maximum=256)
    explain: bool = option(True, "when no placement exists, search a small set of conflicting constraints")


def _check_names(instance, options: Options) -> None:
    kernels, slots = instance.graph.kernels, [s.name for s in instance.platform.slots]
    for k, at in options.pins.items():
        if k not in kernels:
            raise unknown_name_error("kernel", k, kernels, pointer=where(options, "pins", k))
        for s in ([at] if isinstance(at, str) else list(at)):
            if s not in slots:
                raise unknown_name_error(f"slot (pin of kernel {k})", s, slots, pointer=where(options, "pins", k))
    for i, group in enumerate(options.same_slot):
        for j, k in enumerate(group):
            if k not in kernels:
                raise unknown_name_error("kernel", k, kernels, pointer=where(options, "same_slot", i, j))


def _memory(instance, options: Options, formulation: str):
    """The buffers and, unless ``joint``, their binding before placement."""
    from dfopt.models.memory.buffers import graph_buffers

    buffers = graph_buffers(instance.graph)
    if options.memory_binding == "joint":
        if formulation not in ("cpsat", "mip"):
            raise InstanceError(f"memory_binding 'joint' chooses the memory kinds inside the exact model; "
                                f"the {formulation!r} formulation has none: use cpsat or mip, or "
                                "memory_binding 'heuristic'", pointer=where(options, "memory_binding"))
        return buffers, None
    if options.memory_binding == "heuristic":
        from dfopt.models.memory import bind_for_placement

        return buffers, bind_for_placement(instance.graph, instance.platform)[1]
    return buffers, {b.key: "bram18" if "bram18" in b.options else "register" for b in buffers}


def prepare(instance: Instance, options: Options) -> PlacementProblem:
    graph, platform = instance.graph, instance.platform
    assert graph is not None and platform is not None  # the driver checks the parts a problem needs
    if platform.kind != "fpga" or not platform.slots:
        raise InstanceError("the placement problem needs an FPGA platform with slots "
                            "(a preset: u55c, u280, u280_grid, vck190; or an inline object)", pointer="/platform")
    _check_names(instance, options)
    buffers, binding = _memory(instance, options, options.formulation or PROBLEM.default)

    def place(extra: dict) -> PlacementData:
        return placement_data(graph, platform, options.max_utilization, options.balance_weight,
                              options.pins, [list(g) for g in options.same_slot], extra)

    choices, base = [], None
    if binding is None:       # joint: the exact model chooses; the heuristic's binding is the hint
        from dfopt.models.memory import bind_for_placement

        choices = [b for b in buffers if len(b.options) > 1]
        fixed = [b for b in buffers if len(b.options) == 1]
        base = place(binding_resources(fixed, {b.key: next(iter(b.options)) for b in fixed}))
        binding = bind_for_placement(graph, platform)[1]
    d = place(binding_resources(buffers, binding))
    reasons = infeasibility_reasons(base if base is not None else d)
    if reasons:
        raise InfeasibleError("no placement exists: " + "; ".join(reasons[:8])
                              + (f" (and {len(reasons) - 8} more)" if len(reasons) > 8 else ""), culprits=reasons)
    return PlacementProblem(d, greedy_placement(d, options.seed), buffers, binding, place, base, choices)


def _assign(d: PlacementData, decision: Placement) -> np.ndarray:
    index = {s: i for i, s in enumerate(d.slots)}
    return np.array([index[decision.slot[k]] for k in d.names], dtype=np.int64)


def objective(pp: PlacementProblem, decision: Placement) -> float:
    d = pp.data_for(dict(decision.binding))
    return d.evaluate(_assign(d, decision)).objective


def forced_distance(pp: PlacementProblem) -> float:
    """Distance no placement avoids: streams between kernels pinned to single slots."""
    d = pp.data
    single = d.allowed.sum(axis=1) == 1
    at = np.argmax(d.allowed, axis=1)
    both = single[d.src] & single[d.dst]
    return float((d.width[both] * d.distance_matrix()[at[d.src[both]], at[d.dst[both]]]).sum())


def report(pp: PlacementProblem, outcome: Outcome, options: Options) -> dict:
    """The ``placement`` section beside the slots: usage per slot, cut wires, distance, imbalance,
    the greedy baseline, the options it was placed under and the memories' resources."""
    binding = dict(outcome.decision.binding)
    d = pp.data_for(binding)
    assign = _assign(d, outcome.decision)
    ev = d.evaluate(assign)
    slots = {}
    for s, name in enumerate(d.slots):
        slots[name] = {"kernels": int((assign == s).sum()),
                       "used": {r: float(ev.usage[s, i]) for i, r in enumerate(d.kinds)},
                       "capacity": {r: float(d.capacity[s, i]) for i, r in enumerate(d.kinds)},
                       "utilization": {r: float(ev.usage[s, i] / d.capacity[s, i]) if d.capacity[s, i] else 0.0
                                       for i, r in enumerate(d.kinds)}}
    a, b = assign[d.src], assign[d.dst]
    greedy = None if pp.greedy is None else pp.data.evaluate(pp.greedy)
    extra = binding_resources(pp.buffers, binding)
    return {
        "slots": slots,
        "cuts": [{"line": c.label, "wires_used": float(w), "wires": c.wires}
                 for c, w in zip(d.cuts, ev.cut_wires.tolist())],
        "distance": ev.distance,
        "imbalance": {r: float(v) for r, v in zip(d.kinds, ev.imbalance.tolist())},
        "crossing_streams": int((a != b).sum()),
        "max_utilization": d.max_utilization, "balance_weight": d.balance_weight,
        "greedy": None if greedy is None else {"objective": greedy.objective, "distance": greedy.distance},
        "pins": dict(options.pins),
        "same_slot": [list(g) for g in options.same_slot],
        "memory": {"mode": options.memory_binding,
                   "resources": {k: {r: float(v) for r, v in res.items()} for k, res in extra.items()}},
    }


def _plot(instance, solution, path, streams=None) -> None:
    from dfopt.plot import plot_placement

    plot_placement(instance, solution, path)


PROBLEM = Problem(
    recount=True,
    info=registry.info("placement"), options=Options, decision=Placement, prepare=prepare,
    formulations=formulations(), default="cpsat", objective=objective, lower_bound=forced_distance,
    report=report, checks=checks, summary=summary, plot=_plot,
    recorded={"max_utilization": lambda inst, o: o.max_utilization,
              "balance_weight": lambda inst, o: o.balance_weight,
              "pins": lambda inst, o: dict(o.pins), "same_slot": lambda inst, o: [list(g) for g in o.same_slot],
              "memory.mode": lambda inst, o: o.memory_binding})


def place(graph: DataflowGraph, platform: Platform | str, **options: Any) -> Solution:
    """Place the kernels of ``graph`` on the slots of ``platform`` (a Platform or a preset name:
    ``u55c``, ``u280``, ``u280_grid``, ``vck190``); returns the checked
    :class:`~dfopt.solution.Solution` (``.decision.slot``: kernel -> slot).

    Examples
    --------
    >>> from dfopt.ir.graph import DataflowGraph, Kernel, Stream
    >>> g = DataflowGraph([Kernel("a", resources={"lut": 300000}), Kernel("b", resources={"lut": 300000})],
    ...                   [Stream("e", "a", "b", tokens=4, width=64)])
    >>> sol = place(g, "u55c")
    >>> len(set(sol.decision.slot.values())), sol.objective    # two neighbouring SLRs: one crossing
    (2, 64.0)
    """
    from dfopt.api import solve_graph

    return solve_graph("placement", graph, platform, **options)
