"""The placement formulations.

* ``cpsat`` (default) — the whole ILP (:mod:`.exact`) on CP-SAT, hinted with the greedy;
* ``greedy`` — topological fill, Kernighan–Lin between neighbouring slots, single moves
  (:mod:`.greedy`);
* ``bipartition`` — recursive two-way splits of the device, one small CP-SAT ILP per split
  (:mod:`.bipartition`), AutoBridge's method above ~200 tasks;
* ``mip`` — the same ILP through a MIP backend (``highs`` by default; ``scip``, ``cbc``): the
  AutoBridge formulation;
* ``lns`` — large-neighbourhood search from the better of greedy and bipartition (the exact model's
  first placement when neither finds one): neighbourhoods
  of the whole placement re-solved exactly on CP-SAT, the rest fixed (:mod:`.lns`); on the
  500- and 2,000-kernel scale instances level with bipartition (docs/benchmarks.md).

The exact formulations never return worse than their greedy hint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from dfopt.errors import InfeasibleError, NoSolutionError
from dfopt.ir.memory import KIND_RESOURCE
from dfopt.models.base import Bounded, Outcome, Unbounded, incumbent_stats
from dfopt.models.placement.bipartition import bipartition_placement
from dfopt.models.placement.conflict import explain_infeasible
from dfopt.models.placement.data import PlacementData
from dfopt.models.placement.decision import Placement
from dfopt.models.placement.exact import bound_margin, build, decode, decode_binding, set_hint, solve_exact
from dfopt.models.placement.lns import START_SHARE, SUB_BUDGET, lns_placement, min_distance, start_budget
from dfopt.results import Termination

if TYPE_CHECKING:
    from dfopt.models.memory.buffers import BufferUse
    from dfopt.models.placement import Options

MIP_SOLVERS = ("highs", "scip", "cbc")


@dataclass
class PlacementProblem:
    """What the formulations share. ``data`` counts the memories at ``binding`` (the hint's
    binding in joint mode); ``base`` (joint mode) counts only the memories with one kind, and
    ``choices`` are the memories whose kind the exact model chooses."""

    data: PlacementData
    greedy: np.ndarray | None
    buffers: list
    binding: dict
    place: Callable[[dict], PlacementData]      # extra resources -> PlacementData
    base: PlacementData | None = None
    choices: list = field(default_factory=list)

    def data_for(self, binding: dict) -> PlacementData:
        """The arrays with the memories bound as ``binding`` says."""
        if binding == self.binding:
            return self.data
        return self.place(binding_resources(self.buffers, binding))

    def decision(self, assign: np.ndarray, binding: dict | None = None) -> Placement:
        d = self.data
        return Placement({k: d.slots[s] for k, s in zip(d.names, assign.tolist())}, binding or self.binding)


def binding_resources(buffers: Iterable[BufferUse], binding: Mapping[str, str]) -> dict:
    """Per owner kernel, the resources its bound buffers take (kind costs of their geometry)."""
    extra: dict = {}
    for b in buffers:
        kind = binding[b.key]
        res = KIND_RESOURCE[kind]
        extra.setdefault(b.owner, {})
        extra[b.owner][res] = extra[b.owner].get(res, 0) + b.options[kind]
    return extra


def no_placement(pp: PlacementProblem, options: Options, what: str, proven: bool = False) -> NoReturn:
    """Raise the right error when ``what`` found no placement (``proven``: it proved none exists)."""
    conflict = explain_infeasible(pp.data, time_limit=min(30.0, options.time_limit), seed=options.seed) \
        if options.explain else None
    if conflict:
        raise InfeasibleError("no placement exists; these constraints conflict: " + "; ".join(conflict),
                              culprits=conflict)
    if proven:
        raise InfeasibleError(f"no placement exists ({what} proved it); no small set of conflicting constraints "
                              "was found within the limit: lower the demands, raise max_utilization, or relax pins")
    raise NoSolutionError(f"{what} found no placement within {options.time_limit:g} s and infeasibility was not "
                          "proven; raise time_limit, lower the demands or raise max_utilization")


@dataclass(frozen=True)
class Greedy(Unbounded):
    name: str = "greedy"

    def solve(self, pp: PlacementProblem, options: Options) -> Outcome:
        if pp.greedy is None:
            no_placement(pp, options, "the greedy fill and its refinement")
        return Outcome(pp.decision(pp.greedy), Termination.FEASIBLE, solver="none")


@dataclass(frozen=True)
class Bipartition(Unbounded):
    name: str = "bipartition"
    solvers: tuple = ("cpsat",)

    def solve(self, pp: PlacementProblem, options: Options) -> Outcome:
        stats: dict = {}
        hint = pp.greedy if options.hint else None
        assign = bipartition_placement(pp.data, time_limit=options.time_limit, seed=options.seed, stats=stats,
                                       hint=hint, workers=options.workers)
        if assign is None:
            if pp.greedy is None:
                no_placement(pp, options, "bipartition")
            stats["fell_back_to_greedy"] = True
            return Outcome(pp.decision(pp.greedy), Termination.FEASIBLE, solver="cpsat", stats=stats)
        return Outcome(pp.decision(assign), Termination.FEASIBLE, solver="cpsat", stats=stats)


@dataclass(frozen=True)
class Exact(Bounded):
    """The exact placement model (:mod:`.exact`) on CP-SAT or a MIP backend, hinted with the greedy
    placement; the greedy one when the model returns nothing better."""

    def solve(self, pp: PlacementProblem, options: Options) -> Outcome:
        backend = self.backend(options)
        d, greedy, choices = pp.data, pp.greedy, pp.choices
        model_data = d
        if choices:
            assert pp.base is not None  # joint binding: the base counts the memories of one kind
            model_data = pp.base
        t0 = time.perf_counter()
        em = build(model_data, choices)
        if options.hint and greedy is not None:
            set_hint(em, model_data, greedy, pp.binding)
        stats = {**em.stats, "hinted": bool(options.hint and greedy is not None),
                 "time_build_s": time.perf_counter() - t0}
        res = solve_exact(em, backend, options.time_limit, options.seed, options.deterministic,
                          workers=options.workers if backend == "cpsat" else None)
        stats.update(time_solver_s=res.wall_time_s, termination=res.termination.value)
        if res.termination is Termination.INFEASIBLE:
            no_placement(pp, options, backend, proven=True)
        bound = None if res.bound is None else res.bound - bound_margin(em, model_data)
        g_obj = d.evaluate(greedy).objective if greedy is not None else None
        stats.update(incumbent_stats(res.stats.get("incumbents", []), g_obj))
        limit = res.termination is Termination.TIME_LIMIT
        if res.values_array is not None:
            assign = decode(em, res.values_array)
            binding = decode_binding(em, res.values_array, pp.binding) if choices else pp.binding
            ev = pp.data_for(binding).evaluate(assign)
            if ev.feasible and (g_obj is None or ev.objective <= g_obj + 1e-9):
                proven = res.termination is Termination.OPTIMAL
                return Outcome(pp.decision(assign, binding), Termination.OPTIMAL if proven else Termination.FEASIBLE,
                               bound, backend, stats, limit_reached=limit)
        if greedy is None:
            no_placement(pp, options, backend)
        stats["fell_back_to_greedy"] = True
        status = Termination.TIME_LIMIT if limit else Termination.FEASIBLE
        return Outcome(pp.decision(greedy), status, bound, backend, stats, limit_reached=limit)


@dataclass(frozen=True)
class Lns(Unbounded):
    """Large-neighbourhood search (:mod:`.lns`) from the better of the greedy placement and
    bipartition (run on ``START_SHARE`` of the limit, in CP-SAT deterministic time); its bound is
    :func:`~.lns.min_distance`."""

    name: str = "lns"
    solvers: tuple = ("cpsat",)
    bound: bool = True

    def solve(self, pp: PlacementProblem, options: Options) -> Outcome:
        t0 = time.perf_counter()
        d = pp.data
        starts: dict[str, np.ndarray] = {}
        if pp.greedy is not None:
            starts["greedy"] = pp.greedy
        share = START_SHARE * options.time_limit
        bip_stats: dict = {}
        bip = bipartition_placement(d, time_limit=min(2 * share, 0.85 * options.time_limit), seed=options.seed,
                                    stats=bip_stats, hint=pp.greedy if options.hint else None,
                                    workers=options.workers,
                                    deterministic_time=start_budget(share, d.n))
        if bip is not None:
            starts["bipartition"] = bip
        if not starts:                       # neither heuristic placed it: the exact model looks for a start
            left = options.time_limit - (time.perf_counter() - t0)
            em = build(d)
            res = solve_exact(em, "cpsat", max(left / 2, 0.1), options.seed, options.deterministic,
                              workers=options.workers)
            if res.termination is Termination.INFEASIBLE:
                no_placement(pp, options, "the exact model", proven=True)
            if res.values_array is None:
                no_placement(pp, options, "greedy, bipartition and the exact model")
            starts["exact"] = decode(em, res.values_array)
        scores = {k: d.evaluate(a).objective for k, a in starts.items()}
        first = min(scores, key=lambda k: (scores[k], k != "bipartition"))
        stats: dict = {"start": first, "start_objectives": scores, "bipartition_splits": bip_stats.get("splits"),
                       "time_start_s": time.perf_counter() - t0}
        left = options.time_limit - (time.perf_counter() - t0)
        assign = lns_placement(d, starts[first], time_limit=max(left, 0.0), seed=options.seed, stats=stats,
                               budget=SUB_BUDGET, workers=options.workers)
        proven = bool(stats.get("proven_optimal"))
        objective = d.evaluate(assign).objective
        bound = objective if proven else min_distance(d)
        return Outcome(pp.decision(assign), Termination.OPTIMAL if proven else Termination.FEASIBLE, bound,
                       "cpsat", stats, limit_reached=not proven)


def formulations() -> tuple:
    return (Exact("cpsat", ("cpsat",)), Greedy(), Bipartition(), Exact("mip", MIP_SOLVERS), Lns())
