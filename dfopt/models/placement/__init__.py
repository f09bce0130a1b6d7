"""Multi-die placement (``problem: placement``; StreamTensor 5.3, AutoBridge; DESIGN 5.3).

Every kernel goes to one slot of an FPGA platform (an SLR, or a finer grid slot). Per slot and
resource the kernels' sum is at most ``max_utilization`` x capacity; the streams crossing each
cut line fit its link wires; pinned kernels stay in their slots (``pins``: kernel -> slot or list
of slots) and ``same_slot`` groups share one. Objective: width-weighted Manhattan distance of
the streams plus ``balance_weight`` x the sum over resources of (max - min) slot utilisation.

Formulations (``FORMULATIONS``):

* ``greedy`` — topological fill, Kernighan–Lin between neighbouring slots, single moves
  (:mod:`.greedy`);
* ``bipartition`` — recursive two-way splits of the device, one small CP-SAT ILP per split
  (:mod:`.bipartition`), AutoBridge's method above ~200 tasks;
* ``cpsat`` (default) — the whole ILP (:mod:`.exact`) on CP-SAT, hinted with the greedy;
* ``mip`` — the same ILP through a MIP backend (``highs`` by default; ``scip``, ``cbc``): the
  AutoBridge formulation.

The exact formulations never return worse than their greedy hint. Kernel ``resources`` exclude
the memories listed apart (kernel ``buffers``, stream FIFOs with a depth, layout converters; see
:mod:`dfopt.models.memory.buffers`); ``memory_binding`` says how those count, beside their owner:
``bram`` (default) puts each in BRAM18 by its geometry (a FIFO of depth <= 2 in registers), as
HLS does by default; ``heuristic`` binds them first with the size-ordered heuristic of
:mod:`dfopt.models.memory`; ``joint`` lets the exact model choose LUTRAM, BRAM18 or URAM for
each buffer together with the slots (one binary per buffer, allowed slot and kind).
Infeasible instances raise :class:`~dfopt.errors.InfeasibleError` with the reason — from the
simple tests of :mod:`.presolve`, else a small conflicting set of constraints from CP-SAT
(:mod:`.conflict`).

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/placement/chain-u55c.json"))
>>> sol.status, sol.objective, sol.sections["placement"]["slot"]
('optimal', 64.0, {'load': 'SLR0', 'conv1': 'SLR0', 'conv2': 'SLR1', 'store': 'SLR1'})
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from dfopt.errors import (
    InfeasibleError,
    InstanceError,
    NoSolutionError,
    unknown_name_error,
)
from dfopt.ir.memory import KIND_RESOURCE
from dfopt.models.options import CommonOptions, check_formulation
from dfopt.models.placement.bipartition import bipartition_placement
from dfopt.models.placement.checks import check, checks
from dfopt.models.placement.conflict import explain_infeasible
from dfopt.models.placement.data import PlacementData, placement_data
from dfopt.models.placement.exact import (
    bound_margin,
    build,
    decode,
    decode_binding,
    set_hint,
    solve_exact,
)
from dfopt.models.placement.greedy import greedy_placement
from dfopt.models.placement.presolve import infeasibility_reasons
from dfopt.results import Termination
from dfopt.solution import Solution

__all__ = ["DEFAULT_FORMULATION", "FORMULATIONS", "Options", "check", "checks", "solve"]

DEFAULT_FORMULATION = "cpsat"
MIP_SOLVERS = ("highs", "scip", "cbc")
MEMORY_MODES = ("bram", "heuristic", "joint")


@dataclass(frozen=True)
class Options(CommonOptions):
    """Placement options (also CLI flags and ``options.placement`` fields)."""

    max_utilization: float = 0.8
    balance_weight: float = 0.0
    pins: dict = field(default_factory=dict)          # kernel -> slot name or list of slot names
    same_slot: tuple = ()                               # groups of kernels that share a slot
    memory_binding: str = "bram"                        # bram | heuristic | joint
    hint: bool = True                                   # exact formulations: start from the greedy
    workers: int = 8                                    # CP-SAT workers (deterministic: interleaved search)
    explain: bool = True                                # search a conflicting set when infeasible


@dataclass
class Outcome:
    assign: np.ndarray
    status: str
    solver: str
    bound: float | None = None
    stats: dict = field(default_factory=dict)
    binding: dict | None = None       # joint mode: the memory kinds the model chose


def _no_placement(ctx, what: str, proven: bool = False):
    """Raise the right error when ``what`` found no placement (``proven``: it proved none exists)."""
    d, opts = ctx["data"], ctx["options"]
    conflict = explain_infeasible(d, time_limit=min(30.0, opts.time_limit), seed=opts.seed) if opts.explain else None
    if conflict:
        raise InfeasibleError("no placement exists; these constraints conflict: " + "; ".join(conflict),
                              culprits=conflict)
    if proven:
        raise InfeasibleError(f"no placement exists ({what} proved it); no small set of conflicting constraints "
                              "was found within the limit: lower the demands, raise max_utilization, or relax pins")
    raise NoSolutionError(f"{what} found no placement within {opts.time_limit:g} s and infeasibility was not "
                          "proven; raise time_limit, lower the demands or raise max_utilization")


def _greedy(ctx) -> Outcome:
    if ctx["greedy"] is None:
        _no_placement(ctx, "the greedy fill and its refinement")
    return Outcome(ctx["greedy"], "feasible", "none")


def _bipartition(ctx) -> Outcome:
    d, opts = ctx["data"], ctx["options"]
    stats = {}
    hint = ctx["greedy"] if opts.hint else None
    assign = bipartition_placement(d, time_limit=opts.time_limit, seed=opts.seed, stats=stats, hint=hint,
                                   workers=opts.workers)
    if assign is None:
        if ctx["greedy"] is None:
            _no_placement(ctx, "bipartition")
        stats["fell_back_to_greedy"] = True
        return Outcome(ctx["greedy"], "feasible", "cpsat", stats=stats)
    return Outcome(assign, "feasible", "cpsat", stats=stats)


def _exact(ctx, backend: str) -> Outcome:
    d, opts, greedy = ctx["data"], ctx["options"], ctx["greedy"]
    choices = ctx["choices"]
    model_data = ctx["base"] if choices else d
    t0 = time.perf_counter()
    em = build(model_data, choices)
    if opts.hint and greedy is not None:
        set_hint(em, model_data, greedy, ctx["binding"])
    stats = {**em.stats, "hinted": bool(opts.hint and greedy is not None), "time_build_s": time.perf_counter() - t0}
    res = solve_exact(em, backend, opts.time_limit, opts.seed, opts.deterministic,
                      workers=opts.workers if backend == "cpsat" else None)
    stats.update(time_solver_s=res.wall_time_s, termination=res.termination.value)
    incumbents = res.stats.get("incumbents", [])
    stats["incumbents"] = [(round(t, 4), v) for t, v in incumbents]
    if res.termination is Termination.INFEASIBLE:
        _no_placement(ctx, backend, proven=True)
    bound = None if res.bound is None else res.bound - bound_margin(em, model_data)
    g_obj = d.evaluate(greedy).objective if greedy is not None else None
    if g_obj is not None:
        better = [t for t, v in incumbents if v < g_obj - 1e-9]
        stats["first_better_than_greedy_s"] = better[0] if better else None
    if res.values_array is not None:
        assign = decode(em, res.values_array)
        binding = decode_binding(em, res.values_array, ctx["binding"]) if choices else None
        ev = (model_data if not choices else _with_binding(ctx, binding)).evaluate(assign)
        if ev.feasible and (g_obj is None or ev.objective <= g_obj + 1e-9):
            proven = res.termination is Termination.OPTIMAL
            return Outcome(assign, "optimal" if proven else "feasible", backend, bound, stats, binding)
    if greedy is None:
        _no_placement(ctx, backend)
    stats["fell_back_to_greedy"] = True
    status = "time_limit" if res.termination is Termination.TIME_LIMIT else "feasible"
    return Outcome(greedy, status, backend, bound, stats)


def _with_binding(ctx, binding: dict) -> PlacementData:
    """The data with the resources of ``binding`` (joint mode: what the model chose)."""
    d = ctx["data"]
    extra = ctx["base"].demand.copy()
    for b in ctx["choices"]:
        kind = binding[b.key]
        r = d.kinds.index(KIND_RESOURCE[kind]) if KIND_RESOURCE[kind] in d.kinds else None
        if r is not None:
            extra[d.index[b.owner], r] += b.options[kind]
    out = PlacementData(**{**d.__dict__, "demand": extra})
    return out


FORMULATIONS = {
    "greedy": _greedy,
    "bipartition": _bipartition,
    "cpsat": lambda ctx: _exact(ctx, "cpsat"),
    "mip": lambda ctx: _exact(ctx, ctx["options"].solver or "highs"),
}


def _validate(instance, options: Options) -> str:
    formulation = check_formulation("placement", instance, options, FORMULATIONS, DEFAULT_FORMULATION,
                                    {"cpsat": ("cpsat",), "bipartition": ("cpsat",), "mip": MIP_SOLVERS})
    platform = instance.platform
    if platform is None or platform.kind != "fpga" or not platform.slots:
        raise InstanceError("the placement problem needs an FPGA platform with slots "
                            "(a preset: u55c, u280, u280_grid, vck190; or an inline object)", pointer="/platform")
    if not 0 < options.max_utilization <= 1:
        raise InstanceError(f"max_utilization must be in (0, 1], got {options.max_utilization}",
                            pointer="/options/placement/max_utilization")
    if options.balance_weight < 0:
        raise InstanceError(f"balance_weight must be >= 0, got {options.balance_weight}",
                            pointer="/options/placement/balance_weight")
    if options.workers < 1:
        raise InstanceError(f"workers must be >= 1, got {options.workers}", pointer="/options/placement/workers")
    if options.memory_binding not in MEMORY_MODES:
        raise unknown_name_error("memory_binding mode", options.memory_binding, MEMORY_MODES,
                                 pointer="/options/placement/memory_binding")
    _validate_names(instance, options)
    return formulation


def _validate_names(instance, options: Options) -> None:
    kernels, slots = instance.graph.kernels, [s.name for s in instance.platform.slots]
    for k, where in options.pins.items():
        if k not in kernels:
            raise unknown_name_error("kernel", k, kernels, pointer=f"/options/placement/pins/{k}")
        for s in ([where] if isinstance(where, str) else list(where)):
            if s not in slots:
                raise unknown_name_error(f"slot (pin of kernel {k})", s, slots, pointer=f"/options/placement/pins/{k}")
    for i, group in enumerate(options.same_slot):
        for j, k in enumerate(group):
            if k not in kernels:
                raise unknown_name_error("kernel", k, kernels, pointer=f"/options/placement/same_slot/{i}/{j}")


def _memory(instance, options: Options, formulation: str):
    """The buffers and, unless ``joint``, their binding before placement."""
    from dfopt.models.memory.buffers import graph_buffers

    buffers = graph_buffers(instance.graph)
    if options.memory_binding == "joint":
        if formulation not in ("cpsat", "mip"):
            raise InstanceError(f"memory_binding 'joint' chooses the memory kinds inside the exact model; "
                                f"the {formulation!r} formulation has none: use cpsat or mip, or "
                                "memory_binding 'heuristic'", pointer="/options/placement/memory_binding")
        return buffers, None
    if options.memory_binding == "heuristic":
        from dfopt.models.memory import bind_for_placement

        return buffers, bind_for_placement(instance.graph, instance.platform)[1]
    return buffers, {b.key: "bram18" if "bram18" in b.options else "register" for b in buffers}


def binding_resources(buffers, binding: dict) -> dict:
    """Per owner kernel, the resources its bound buffers take (kind costs of their geometry)."""
    extra: dict = {}
    for b in buffers:
        kind = binding[b.key]
        res = KIND_RESOURCE[kind]
        extra.setdefault(b.owner, {})
        extra[b.owner][res] = extra[b.owner].get(res, 0) + b.options[kind]
    return extra


def solve(instance, options: Options) -> Solution:
    """Place the kernels of ``instance.graph`` on the slots of ``instance.platform``; checked."""
    formulation = _validate(instance, options)
    t0 = time.perf_counter()
    buffers, binding = _memory(instance, options, formulation)
    joint = binding is None
    place = lambda extra: placement_data(instance.graph, instance.platform, options.max_utilization,
                                         options.balance_weight, options.pins,
                                         [list(g) for g in options.same_slot], extra)
    if joint:
        from dfopt.models.memory import bind_for_placement

        choices = [b for b in buffers if len(b.options) > 1]
        fixed = [b for b in buffers if len(b.options) == 1]
        base = place(binding_resources(fixed, {b.key: next(iter(b.options)) for b in fixed}))
        binding = bind_for_placement(instance.graph, instance.platform)[1]     # the hint's binding
    else:
        choices, base = [], None
    extra = binding_resources(buffers, binding)
    d = place(extra)
    reasons = infeasibility_reasons(base if joint else d)
    if reasons:
        raise InfeasibleError("no placement exists: " + "; ".join(reasons[:8])
                              + (f" (and {len(reasons) - 8} more)" if len(reasons) > 8 else ""), culprits=reasons)
    greedy = greedy_placement(d, options.seed)
    t_prep = time.perf_counter() - t0
    ctx = {"data": d, "options": options, "greedy": greedy, "base": base, "choices": choices,
           "binding": binding}
    t1 = time.perf_counter()
    out = FORMULATIONS[formulation](ctx)
    t_solve = time.perf_counter() - t1
    if out.binding is not None:
        binding = out.binding
        extra = binding_resources(buffers, binding)
        d = place(extra)
    ev = d.evaluate(out.assign)
    bound = _forced_distance(d) if out.bound is None else max(out.bound, _forced_distance(d))
    bound = min(bound, ev.objective)
    status = "optimal" if ev.objective <= bound + 1e-9 * max(1.0, ev.objective) else out.status
    solution = Solution(
        instance=instance.name, problem="placement", status=status, objective=ev.objective, bound=bound,
        formulation=formulation, solver=out.solver, seed=options.seed,
        sections={"placement": _section(d, ev, out.assign, greedy, options, extra, binding)},
        stats={**out.stats, "time_prepare_s": t_prep, "time_solve_s": t_solve})
    t = time.perf_counter()
    solution.checks = checks(instance, solution)
    solution.stats["time_check_s"] = time.perf_counter() - t
    return solution


def _forced_distance(d: PlacementData) -> float:
    """Distance no placement avoids: streams between kernels pinned to single slots."""
    single = d.allowed.sum(axis=1) == 1
    where = np.argmax(d.allowed, axis=1)
    both = single[d.src] & single[d.dst]
    return float((d.width[both] * d.distance_matrix()[where[d.src[both]], where[d.dst[both]]]).sum())


def _costs(ev) -> dict:
    return {"objective": ev.objective, "distance": ev.distance}


def _section(d: PlacementData, ev, assign, greedy, options: Options, extra: dict, binding) -> dict:
    slots = {}
    for s, name in enumerate(d.slots):
        slots[name] = {"kernels": int((assign == s).sum()),
                       "used": {r: float(ev.usage[s, i]) for i, r in enumerate(d.kinds)},
                       "capacity": {r: float(d.capacity[s, i]) for i, r in enumerate(d.kinds)},
                       "utilization": {r: float(ev.usage[s, i] / d.capacity[s, i]) if d.capacity[s, i] else 0.0
                                       for i, r in enumerate(d.kinds)}}
    a, b = assign[d.src], assign[d.dst]
    out = {
        "slot": {k: d.slots[s] for k, s in zip(d.names, assign.tolist())},
        "slots": slots,
        "cuts": [{"line": c.label, "wires_used": float(w), "wires": c.wires} for c, w in zip(d.cuts, ev.cut_wires.tolist())],
        "distance": ev.distance,
        "imbalance": {r: float(v) for r, v in zip(d.kinds, ev.imbalance.tolist())},
        "crossing_streams": int((a != b).sum()),
        "max_utilization": d.max_utilization, "balance_weight": d.balance_weight,
        "greedy": None if greedy is None else _costs(d.evaluate(greedy)),
    }
    out["pins"] = dict(options.pins)
    out["same_slot"] = [list(g) for g in options.same_slot]
    out["memory"] = {"mode": options.memory_binding, "binding": binding,
                     "resources": {k: {r: float(v) for r, v in res.items()} for k, res in extra.items()}}
    return out
