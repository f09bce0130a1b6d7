"""Memory binding (``problem: memory``; StreamTensor section 5.3, DESIGN 5.3).

Binds every on-chip memory of the graph (:func:`.buffers.graph_buffers`: kernel buffers, stream
FIFOs with a depth, layout converters) to registers, LUTRAM, BRAM18 or URAM by its geometry
(:func:`dfopt.ir.memory.memory_options`; a FIFO of depth <= 2 is registers). Each memory lives in
the slot of its owner (option ``placement``; without it a one-slot platform, or the whole device
pooled as one slot ``device``). Per slot and resource (``lut``, ``ff``, ``bram`` in BRAM36,
``uram``) the kernels' own resources plus the buffers' cost stay within the slot's capacity times
``max_utilization``. Objective: the least peak weighted utilisation ``weight[r] * used /
capacity``; then, with that peak fixed, the least sum of the weighted utilisations.

Formulations (``FORMULATIONS``):

* ``heuristic`` — size-ordered baseline (:mod:`.heuristic`);
* ``cpsat`` — the exact model (:mod:`.exact`) solved by CP-SAT, hinted with the heuristic;
* ``mip`` — the same model through a MIP backend (``highs`` by default; ``scip``, ``cbc``).

The exact formulations never return worse than the heuristic. ``bound`` is the proven optimum,
or a lower bound from the solver's bound and the kernels' own usage. Infeasible instances raise
:class:`~dfopt.errors.InfeasibleError` naming the slot, the resource, the need and the capacity.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/memory/tight.json"))
>>> sec = sol.sections["memory"]
>>> sol.status, round(sol.objective, 4), round(sec["heuristic"]["peak"], 4), sec["peak_at"]
('optimal', 0.6667, 0.8333, ['PL', 'bram'])
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from dfopt.errors import (
    InfeasibleError,
    NoSolutionError,
)
from dfopt.ir.memory import KIND_RESOURCE, MEMORY_KINDS
from dfopt.models.memory.buffers import BufferUse, graph_buffers
from dfopt.models.memory.checks import check, checks
from dfopt.models.memory.diagnose import (
    base_fault,
    capacity_text,
    fmt,
    lonely_fault,
    overflow_error,
)
from dfopt.models.memory.exact import (
    ExactOutcome,
    least_overflow,
    lexicographically_better,
    minimise_peak,
    minimise_sum,
)
from dfopt.models.memory.heuristic import size_ordered
from dfopt.models.memory.problem import (
    RESOURCES,
    UNIT_NAMES,
    MemoryProblem,
    memory_problem,
)
from dfopt.models.options import CommonOptions, check_formulation
from dfopt.solution import Solution

__all__ = ["DEFAULT_FORMULATION", "FORMULATIONS", "BufferUse", "Options", "bind_for_placement", "check",
           "checks", "graph_buffers", "solve"]

DEFAULT_FORMULATION = "cpsat"
MIP_SOLVERS = ("highs", "scip", "cbc")
EXPLAIN_SECONDS = 10.0  # extra time to find a least-overflow binding for the infeasibility message


@dataclass(frozen=True)
class Options(CommonOptions):
    """Memory-binding options (also CLI flags and ``options.memory`` fields). ``placement`` and
    ``weights`` may be given as JSON text on the command line."""

    placement: dict | None = None     # kernel -> slot; default: the one slot, or the pooled device
    max_utilization: float = 1.0      # capacity = slot resources x this
    weights: dict | None = None       # resource (lut, ff, bram, uram) -> positive weight, default 1
    hint: bool = True                 # exact model: start from the heuristic binding


@dataclass
class Outcome:
    binding: list
    status: str
    solver: str
    bound: float | None = None
    stats: dict | None = None


def _floor_bound(problem: MemoryProblem) -> float:
    """The peak of the kernels and register FIFOs alone: no binding does better."""
    used = [dict(slot.base) for slot in problem.slots]
    for i, options in enumerate(problem.options):
        if len(options) == 1:
            kind, cost = next(iter(options.items()))
            used[problem.slot_of[i]][KIND_RESOURCE[kind]] += cost
    return max((problem.weights[r] * used[s][r] / problem.slots[s].capacity[r] for s, r in problem.rows()),
               default=0.0)


def _decide(ctx, backend: str) -> ExactOutcome:
    """The exact least-peak search; an instance with no fitting binding raises InfeasibleError."""
    problem, opts = ctx["problem"], ctx["options"]
    deadline = time.perf_counter() + opts.time_limit
    out = minimise_peak(problem, ctx["heuristic"], backend, opts, deadline)
    if out.infeasible:
        shown = least_overflow(problem, ctx["heuristic"], backend, opts, deadline + EXPLAIN_SECONDS, out)
        raise overflow_error(problem, shown or ctx["heuristic"], least=shown is not None)
    out.deadline = deadline
    return out


def _no_fit(ctx, what: str) -> NoSolutionError:
    problem = ctx["problem"]
    s, r, u = problem.over_capacity(ctx["heuristic"])[0]
    return NoSolutionError(f"{what}; the size-ordered binding needs {fmt(u)} {UNIT_NAMES[r]} in slot "
                           f"{problem.slots[s].name}, {capacity_text(problem, s, r)}")


def _heuristic(ctx) -> Outcome:
    problem = ctx["problem"]
    if problem.fits(ctx["heuristic"]):
        return Outcome(ctx["heuristic"], "feasible", "none", _floor_bound(problem))
    out = _decide(ctx, "cpsat")  # raises InfeasibleError when no binding fits
    if out.binding is None:
        raise _no_fit(ctx, "the size-ordered heuristic overfills a slot and CP-SAT did not decide in time "
                           "whether any binding fits")
    raise _no_fit(ctx, "the size-ordered heuristic overfills a slot although a binding that fits exists; "
                       "use formulation cpsat")


def _exact(ctx, backend: str) -> Outcome:
    problem, opts, heur = ctx["problem"], ctx["options"], ctx["heuristic"]
    out = _decide(ctx, backend)
    if out.binding is None:
        raise _no_fit(ctx, f"{backend} found no binding within the time limit ({opts.time_limit:g} s)")
    binding = minimise_sum(problem, out.binding, backend, opts, out.deadline, out)
    stats = {"solves": out.solves, "proven": out.proven}
    if problem.fits(heur) and lexicographically_better(problem, heur, binding):
        binding, stats["fell_back_to_heuristic"] = heur, True
    status = "optimal" if out.proven else ("time_limit" if out.timed_out else "feasible")
    return Outcome(binding, status, backend, out.bound, stats)


FORMULATIONS = {
    "heuristic": _heuristic,
    "cpsat": lambda ctx: _exact(ctx, "cpsat"),
    "mip": lambda ctx: _exact(ctx, ctx["options"].solver or "highs"),
}


def _validate(instance, options: Options) -> str:
    formulation = check_formulation("memory", instance, options, FORMULATIONS, DEFAULT_FORMULATION,
                                    {"cpsat": ("cpsat",), "mip": MIP_SOLVERS})
    return formulation


def solve(instance, options: Options) -> Solution:
    """Bind every memory of ``instance.graph``; the binding is checked before it is returned."""
    formulation = _validate(instance, options)
    t0 = time.perf_counter()
    problem = memory_problem(instance.graph, instance.platform, options.placement, options.weights,
                             options.max_utilization)
    fault = base_fault(problem) or lonely_fault(problem)
    if fault is not None:
        raise InfeasibleError(*fault)
    heur = size_ordered(problem)
    t_prep = time.perf_counter() - t0
    t1 = time.perf_counter()
    out = FORMULATIONS[formulation]({"problem": problem, "options": options, "heuristic": heur})
    t_solve = time.perf_counter() - t1
    peak = problem.peak(out.binding)[0]
    bound = min(max(out.bound or 0.0, _floor_bound(problem)), peak)
    status = "optimal" if peak <= bound + 1e-12 else out.status
    solution = Solution(
        instance=instance.name, problem="memory", status=status, objective=peak, bound=bound,
        formulation=formulation, solver=out.solver, seed=options.seed,
        sections={"memory": _section(problem, out.binding, heur)},
        stats={**(out.stats or {}), "buffers": len(problem.buffers),
               "with_choice": sum(len(o) > 1 for o in problem.options),
               "time_prepare_s": t_prep, "time_solve_s": t_solve})
    t = time.perf_counter()
    solution.checks = checks(instance, solution)
    solution.stats["time_check_s"] = time.perf_counter() - t
    return solution


def bind_for_placement(graph, platform) -> tuple[dict, dict]:
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


def _section(problem: MemoryProblem, binding, heur) -> dict:
    keys = [b.key for b in problem.buffers]
    used = problem.usage(binding)
    slots = {}
    for s, slot in enumerate(problem.slots):
        slots[slot.name] = {r: {"used": used[s][r], "capacity": slot.capacity[r],
                                "utilization": used[s][r] / slot.capacity[r]}
                            for r in RESOURCES if slot.has(r)}
    peak, where = problem.peak(binding)
    return {
        "binding": dict(zip(keys, binding)),
        "cost": {b.key: b.options[k] for b, k in zip(problem.buffers, binding)},
        "owner": {b.key: b.owner for b in problem.buffers},
        "placement": dict(problem.placement),
        "slots": slots,
        "peak": peak,
        "peak_at": list(where) if where else None,
        "sum": problem.weighted_sum(binding),
        "heuristic": {"peak": problem.peak(heur)[0], "sum": problem.weighted_sum(heur),
                      "fits": problem.fits(heur)},
        "counts": {k: sum(1 for x in binding if x == k) for k in MEMORY_KINDS},
        "max_utilization": problem.max_utilization,
        "weights": dict(problem.weights),
        "pooled": problem.pooled,
    }
