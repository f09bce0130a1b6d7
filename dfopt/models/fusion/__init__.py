"""Kernel fusion (``problem: fusion``; StreamTensor sections 4.2 and 5.2, DESIGN 5.2).

Partitions the kernels into fused groups: each group convex, the groups runnable one after another
(no cycle between them), each group's kernel bytes plus the converter bytes of its internal
streams at most ``C_max``; the streams between groups go through DRAM. Objective: least DRAM
traffic. Converters come from the streams' ``src_type``/``dst_type`` (Algorithm 1,
:mod:`dfopt.models.converter`) or their explicit ``converter_bytes``.

Formulations (``FORMULATIONS``):

* ``greedy`` — the paper's Algorithm 2 (:mod:`.greedy`);
* ``cpsat`` — the exact model (:mod:`.exact`) solved by OR-Tools CP-SAT, hinted with the greedy
  solution after merging its consecutive groups;
* ``mip`` — the same model through a MIP backend (``highs`` by default; ``scip``, ``cbc``).

The exact formulations never return worse than that hint. ``bound`` is the best of a
combinatorial bound (:mod:`.bound`) and the solver's proven bound. The fused design is returned
as IR (:mod:`.fused`), with its on-chip memory against buffering every intermediate tensor whole.

>>> from dfopt.instance import load
>>> from dfopt.api import solve_instance
>>> sol = solve_instance(load("instances/fusion/greedy-trap.json"))
>>> sol.status, sol.objective, sol.sections["fusion"]["greedy"]["dram_bytes"], sol.sections["fusion"]["groups"]
('optimal', 64.0, 512.0, [['a'], ['b', 'c'], ['d']])
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dfopt.errors import (
    InfeasibleError,
    InstanceError,
)
from dfopt.instance.convert import graph_to_dict
from dfopt.models.fusion.bound import lower_bound
from dfopt.models.fusion.checks import check, checks
from dfopt.models.fusion.data import FusionData, fusion_data
from dfopt.models.fusion.exact import build, decode, set_hint, solve_exact
from dfopt.models.fusion.fused import fused_graph, onchip_memory
from dfopt.models.fusion.greedy import algorithm2, merge_consecutive
from dfopt.models.options import CommonOptions, check_formulation
from dfopt.results import Termination
from dfopt.solution import Solution

__all__ = ["DEFAULT_FORMULATION", "FORMULATIONS", "Options", "c_max_of", "check", "checks", "solve"]

DEFAULT_FORMULATION = "cpsat"
MIP_SOLVERS = ("highs", "scip", "cbc")


@dataclass(frozen=True)
class Options(CommonOptions):
    """Fusion options (also CLI flags and ``options.fusion`` fields)."""

    c_max: int | None = None     # bytes per fused group; default the platform's onchip_bytes
    dominance: bool = True       # exact model: consecutive groups must not fit together
    hint: bool = True            # exact model: start from the (merged) greedy solution
    workers: int = 1             # CP-SAT workers (deterministic with interleaved search)


@dataclass
class Outcome:
    assign: np.ndarray
    status: str
    solver: str
    bound: float | None = None
    stats: dict | None = None


def c_max_of(instance, options: Options) -> int:
    """C_max from the options, else the platform's on-chip bytes; an error says where to set it."""
    if options.c_max is not None:
        return int(options.c_max)
    if instance.platform is not None and instance.platform.onchip_bytes:
        return int(instance.platform.onchip_bytes)
    raise InstanceError("fusion needs C_max: set options.fusion.c_max (bytes) or a platform with "
                        "onchip_bytes", pointer="/options/fusion/c_max")


def _check_kernels_fit(data: FusionData, graph) -> None:
    over = np.flatnonzero(data.bytes > data.c_max)
    if len(over):
        worst = sorted(over.tolist(), key=lambda i: -data.bytes[i])
        parts = [f"kernel {data.names[i]} alone needs {_fmt_bytes(data.bytes[i])}" for i in worst[:5]]
        more = f" (and {len(over) - 5} more)" if len(over) > 5 else ""
        raise InfeasibleError("; ".join(parts) + more + f", C_max is {_fmt_bytes(data.c_max)}: "
                              "tile these kernels smaller or raise c_max")


def _fmt_bytes(b) -> str:
    b = int(b)
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if b >= size:
            return f"{b / size:.1f} {unit} ({b} bytes)"
    return f"{b} bytes"


def _greedy(ctx) -> Outcome:
    return Outcome(ctx["greedy"], "feasible", "none")


def _exact(ctx, backend: str) -> Outcome:
    data, opts = ctx["data"], ctx["options"]
    t0 = time.perf_counter()
    em = build(data, dominance=opts.dominance)
    hinted = set_hint(em, data, ctx["merged"]) if opts.hint else False
    t_build = time.perf_counter() - t0
    res = solve_exact(em, backend, opts.time_limit, opts.seed, opts.deterministic,
                      workers=opts.workers if backend == "cpsat" else None)
    stats = {**em.stats, "hinted": hinted, "time_build_s": t_build, "time_solver_s": res.wall_time_s,
             "termination": res.termination.value}
    greedy_bytes = data.cut_traffic(ctx["merged"])
    incumbents = [(t, v * em.scale) for t, v in res.stats.get("incumbents", [])]
    better = [t for t, v in incumbents if v < greedy_bytes - 1e-9]
    stats["first_better_than_greedy_s"] = better[0] if better else None
    stats["incumbents"] = [(round(t, 4), v) for t, v in incumbents]
    bound = res.bound * em.scale if res.bound is not None else None
    if res.values_array is not None:
        assign = decode(em, res.values_array)
        if np.all(assign >= 0) and data.cut_traffic(assign) <= greedy_bytes:
            proven = res.termination is Termination.OPTIMAL
            return Outcome(assign, "optimal" if proven else "feasible", backend, bound, stats)
    stats["fell_back_to_greedy"] = True
    status = "time_limit" if res.termination is Termination.TIME_LIMIT else "feasible"
    return Outcome(ctx["merged"], status, backend, bound, stats)


FORMULATIONS = {
    "greedy": _greedy,
    "cpsat": lambda ctx: _exact(ctx, "cpsat"),
    "mip": lambda ctx: _exact(ctx, ctx["options"].solver or "highs"),
}


def _validate(instance, options: Options) -> str:
    formulation = check_formulation("fusion", instance, options, FORMULATIONS, DEFAULT_FORMULATION,
                                    {"cpsat": ("cpsat",), "mip": MIP_SOLVERS})
    if options.workers < 1:
        raise InstanceError(f"workers must be >= 1, got {options.workers}", pointer="/options/fusion/workers")
    return formulation


def solve(instance, options: Options) -> Solution:
    """Fuse the kernels of ``instance.graph``; the partition is checked before it is returned."""
    formulation = _validate(instance, options)
    graph = instance.graph
    t0 = time.perf_counter()
    data = fusion_data(graph, c_max_of(instance, options))
    _check_kernels_fit(data, graph)
    greedy = algorithm2(data)
    merged = merge_consecutive(data, greedy)
    comb = lower_bound(data)
    t_prep = time.perf_counter() - t0
    ctx = {"data": data, "options": options, "greedy": greedy, "merged": merged}
    t1 = time.perf_counter()
    out = FORMULATIONS[formulation](ctx)
    t_solve = time.perf_counter() - t1
    objective = data.cut_traffic(out.assign)
    bound = max(comb, out.bound or 0.0)
    bound = min(bound, objective)
    status = "optimal" if objective <= bound + 1e-9 else out.status
    solution = Solution(
        instance=instance.name, problem="fusion", status=status, objective=objective, bound=bound,
        formulation=formulation, solver=out.solver, seed=options.seed,
        sections={"fusion": _section(graph, data, out.assign, greedy, merged, comb)},
        stats={**(out.stats or {}), "time_prepare_s": t_prep, "time_solve_s": t_solve})
    t = time.perf_counter()
    solution.checks = checks(instance, solution)
    solution.stats["time_check_s"] = time.perf_counter() - t
    return solution


def _section(graph, data: FusionData, assign, greedy, merged, comb) -> dict:
    names = data.names
    groups = [[names[k] for k in np.flatnonzero(assign == g).tolist()] for g in range(int(assign.max()) + 1)]
    where = {k: g for g, members in enumerate(groups) for k in members}
    internal = [s for s in graph.streams.values() if where[s.src] == where[s.dst]]
    converters = {s.name: data.converters[s.name].to_dict() for s in internal if data.converters[s.name].bytes > 0}
    unfused = data.total_traffic()
    dram = data.cut_traffic(assign)
    return {
        "groups": groups, "group_costs": data.group_costs(assign).tolist(), "c_max": data.c_max,
        "converters": converters,
        "cut_streams": [s.name for s in graph.streams.values() if where[s.src] != where[s.dst]],
        "dram_bytes": dram, "unfused_dram_bytes": unfused,
        "dram_ratio": dram / unfused if unfused else 1.0,
        "greedy": {"dram_bytes": data.cut_traffic(greedy), "groups": int(greedy.max()) + 1,
                   "merged_dram_bytes": data.cut_traffic(merged), "merged_groups": int(merged.max()) + 1},
        "combinatorial_bound": comb,
        "onchip": onchip_memory(graph, where),
        "fused_graph": graph_to_dict(fused_graph(graph, where)),
    }
